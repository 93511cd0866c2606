// The gateway's downstream stdio transport (`toolfence-mcp serve`) against the SDK v2
// `StdioServerTransport` it replaces: the same input bytes give the same messages, the same
// errors and the same close, and what it writes is the same line. Real streams (PassThrough), no
// mocks of either transport.
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { describe, expect, it } from 'vitest';
import {
  STDIO_FRONT_MAX_BUFFER_BYTES,
  StdioFrontTransport,
} from '../src/gateway/stdio-front-transport.js';

interface Seen {
  readonly messages: JSONRPCMessage[];
  errors: number;
  closed: boolean;
}

async function feed(
  make: (stdin: PassThrough, stdout: PassThrough) => Transport,
  chunks: readonly (string | Buffer)[],
): Promise<Seen & { readonly stdin: PassThrough }> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const transport = make(stdin, stdout);
  const seen: Seen = { messages: [], errors: 0, closed: false };
  transport.onmessage = (message) => {
    seen.messages.push(message);
  };
  transport.onerror = () => {
    seen.errors += 1;
  };
  transport.onclose = () => {
    seen.closed = true;
  };
  await transport.start();
  for (const chunk of chunks) stdin.write(chunk);
  await new Promise((resolve) => setImmediate(resolve));
  await transport.close();
  return { ...seen, stdin };
}

const sdk = (stdin: PassThrough, stdout: PassThrough) => new StdioServerTransport(stdin, stdout);
const ours = (stdin: PassThrough, stdout: PassThrough) =>
  new StdioFrontTransport({ stdin, stdout });

const call =
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}';

describe('StdioFrontTransport reads what the SDK v2 stdio transport reads', () => {
  it.each([
    ['a plain request', [`${call}\n`]],
    ['a request split across chunks', [call.slice(0, 10), `${call.slice(10)}\n`]],
    ['two requests in one chunk', [`${call}\n${call}\n`]],
    ['a line ending in CRLF', [`${call}\r\n`]],
    ['a line that is not JSON, skipped', ['{nope\n', `${call}\n`]],
    ['an empty line, skipped', ['\n', `${call}\n`]],
    ['a message the schema refuses (no jsonrpc)', ['{"id":1,"method":"x"}\n', `${call}\n`]],
    ['a JSON value that is not a message', ['7\n', '[]\n', 'null\n', `${call}\n`]],
    [
      'a message the schema copies (an extra key, an error with extra keys)',
      [
        '{"jsonrpc":"2.0","id":1,"method":"x","extra":1}\n',
        '{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m","more":true}}\n',
      ],
    ],
    [
      'a result with a related-task _meta (rebuilt by the schema)',
      [
        '{"jsonrpc":"2.0","id":3,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t","x":1}}}}\n',
      ],
    ],
    [
      'a __proto__ key in params',
      ['{"jsonrpc":"2.0","id":4,"method":"m","params":{"__proto__":{"a":1}}}\n'],
    ],
    [
      'a notification',
      ['{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n'],
    ],
    ['no newline yet', [call]],
    [
      'a multi-byte character split across chunks',
      [
        Buffer.from(`${call.slice(0, -2)}}`),
        Buffer.from(',"é":1}\n'.slice(0, 2)),
        Buffer.from(',"é":1}\n'.slice(2)),
      ],
    ],
  ])('%s', async (_name, chunks) => {
    const expected = await feed(sdk, chunks);
    const actual = await feed(ours, chunks);
    expect(actual.messages).toStrictEqual(expected.messages);
    expect(actual.errors).toBe(expected.errors);
    expect(actual.closed).toBe(expected.closed);
  });

  it('reports a message handler that throws and reads on, as the SDK does', async () => {
    const seen: { messages: number; errors: number; closed: boolean }[] = [];
    for (const make of [sdk, ours]) {
      const stdin = new PassThrough();
      const transport = make(stdin, new PassThrough());
      const own = { messages: 0, errors: 0, closed: false };
      transport.onmessage = () => {
        own.messages += 1;
        if (own.messages === 1) throw new Error('handler failed');
      };
      transport.onerror = () => {
        own.errors += 1;
      };
      transport.onclose = () => {
        own.closed = true;
      };
      await transport.start();
      stdin.write(`${call}\n${call}\n`);
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(own);
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]).toEqual({ messages: 2, errors: 1, closed: false });
  });

  it('closes on an unfinished line over the limit, as the SDK does (the limit is the SDK default)', async () => {
    const big = Buffer.alloc(STDIO_FRONT_MAX_BUFFER_BYTES + 1, 0x20);
    const expected = await feed(sdk, [big]);
    const actual = await feed(ours, [big]);
    expect(expected.errors).toBe(1);
    expect(actual.errors).toBe(1);
    expect(expected.closed).toBe(true);
    expect(actual.closed).toBe(true);
  });

  it.each([
    ['stdin ends', (stdin: PassThrough) => stdin.end()],
    ['stdin is destroyed', (stdin: PassThrough) => stdin.destroy()],
  ])('closes when %s, as the SDK does (the client went away)', async (_name, end) => {
    const closedBy: boolean[] = [];
    for (const make of [sdk, ours]) {
      const stdin = new PassThrough();
      const transport = make(stdin, new PassThrough());
      let closed = false;
      transport.onclose = () => {
        closed = true;
      };
      await transport.start();
      end(stdin);
      stdin.resume();
      await new Promise((resolve) => setTimeout(resolve, 20));
      closedBy.push(closed);
    }
    expect(closedBy).toEqual([true, true]);
  });

  it('closes at start when stdin has already ended, as the SDK does', async () => {
    const closedBy: boolean[] = [];
    for (const make of [sdk, ours]) {
      const stdin = new PassThrough();
      stdin.destroy();
      const transport = make(stdin, new PassThrough());
      let closed = false;
      transport.onclose = () => {
        closed = true;
      };
      await transport.start();
      await new Promise((resolve) => setTimeout(resolve, 20));
      closedBy.push(closed);
    }
    expect(closedBy).toEqual([true, true]);
  });

  it('swallows a stdout error after close, and reports one before it', async () => {
    for (const make of [sdk, ours]) {
      const stdout = new PassThrough();
      const transport = make(new PassThrough(), stdout);
      let errors = 0;
      transport.onerror = () => {
        errors += 1;
      };
      await transport.start();
      stdout.emit('error', new Error('EPIPE'));
      expect(errors).toBe(1);
      await transport.close();
      expect(() => stdout.emit('error', new Error('EPIPE'))).not.toThrow();
      expect(errors).toBe(1);
    }
  });

  it('writes the same line, and refuses to send once closed', async () => {
    const message = { jsonrpc: '2.0', id: 1, result: { content: [] } } as JSONRPCMessage;
    const lines: string[] = [];
    for (const make of [sdk, ours]) {
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      const transport = make(stdin, stdout);
      await transport.start();
      await transport.send(message);
      lines.push(String(stdout.read()));
      await transport.close();
      await expect(transport.send(message)).rejects.toThrow(/closed/);
    }
    expect(lines[1]).toBe(lines[0]);
    expect(lines[0]).toBe(`${JSON.stringify(message)}\n`);
  });
});
