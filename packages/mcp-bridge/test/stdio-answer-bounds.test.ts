// A stdio server that stops reading its stdin while it floods the client with its own requests
// (real child processes): the answers the client owes are bounded in number and in bytes.
import { afterEach, describe, expect, it } from 'vitest';
import { AmbiguousDeliveryError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import { TransportError } from '../src/transport/errors.js';
import { CHILD_ENV } from './helpers.js';

/** Answers the legacy handshake and tools/list; on tools/call it stops reading stdin and sends `count` pings with `idBytes`-byte ids. */
function floodServer(count: number, idBytes: number): string[] {
  return [
    process.execPath,
    '-e',
    `const rl = require('node:readline').createInterface({ input: process.stdin });
const out = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'server/discover') out({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'nf' } });
  else if (msg.method === 'initialize') out({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'flood', version: '1' } } });
  else if (msg.method === 'tools/list') out({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] } });
  else if (msg.method === 'tools/call') {
    rl.close(); process.stdin.pause();
    const big = 'x'.repeat(${idBytes});
    let n = 0;
    const pump = () => {
      let ok = true;
      while (ok && n < ${count}) ok = process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: n++ + '-' + big, method: 'ping' }) + '\\n');
      if (n < ${count}) process.stdout.once('drain', pump);
    };
    pump();
  }
});
setInterval(() => {}, 1000);`,
  ];
}

const clients: McpClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

describe('stdio: answers to a server that stopped reading', () => {
  it('drops the requests beyond maxConcurrentRequests unanswered, and logs why', async () => {
    const warnings: unknown[][] = [];
    let dropped = 0;
    const client = new McpClient({
      command: floodServer(3000, 16 * 1024),
      env: CHILD_ENV,
      maxConcurrentRequests: 4,
      readTimeoutMs: 30_000,
      logger: {
        warn: (...args: unknown[]) => warnings.push(args),
        debug: (message: string) => {
          if (message.startsWith('Dropped a server request')) dropped++;
        },
      },
    });
    clients.push(client);
    await client.tools();
    void client.callTool('t', {}).catch(() => undefined);
    // The pipe takes the first few answers (its buffer), then at most 4 wait for it.
    for (let waited = 0, last = -1; dropped !== last && waited < 40; waited++) {
      last = dropped;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(dropped).toBeGreaterThan(2900);
    expect(
      warnings.find((warning) => String(warning[0]).includes('maxConcurrentRequests'))?.[1],
    ).toMatchObject({
      reason: 'server-request-limit',
      maxConcurrentRequests: 4,
    });
  });

  it('fails the transport once more than maxRecordBytes of answers wait unread in its stdin', async () => {
    const client = new McpClient({
      command: floodServer(200, 64 * 1024),
      env: CHILD_ENV,
      maxConcurrentRequests: 8,
      maxRecordBytes: 256 * 1024,
      readTimeoutMs: 30_000,
    });
    clients.push(client);
    await client.tools();
    const error = await client.callTool('t', {}).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as AmbiguousDeliveryError).cause;
    expect(cause).toBeInstanceOf(TransportError);
    expect((cause as TransportError).details).toMatchObject({
      reason: 'stdin-backlog',
      maxRecordBytes: 256 * 1024,
    });
  });
});

describe('stdio: maxInputPrompts over a legacy server', () => {
  it('bounds untied sampling requests per session, refilled when a tools/call starts', async () => {
    const server = [
      process.execPath,
      '-e',
      `const rl = require('node:readline').createInterface({ input: process.stdin });
const out = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
let call; const answers = [];
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.method === 'server/discover') out({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'nf' } });
  else if (msg.method === 'initialize') out({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } } });
  else if (msg.method === 'tools/list') out({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] } });
  else if (msg.method === 'tools/call') {
    call = msg.id; answers.length = 0;
    for (let i = 0; i < 10; i++) out({ jsonrpc: '2.0', id: 's' + call + '-' + i, method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'x' } }], maxTokens: 5 } });
  } else if (msg.id !== undefined && (msg.result || msg.error)) {
    answers.push(msg.error ? msg.error.code : 'ok');
    if (answers.length === 10) out({ jsonrpc: '2.0', id: call, result: { content: [{ type: 'text', text: answers.join(',') }] } });
  }
});`,
    ];
    let asked = 0;
    const client = new McpClient({
      command: server,
      env: CHILD_ENV,
      maxInputPrompts: 3,
      maxConcurrentRequests: 16,
      sampling: {
        handler: async () => {
          asked++;
          return { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };
        },
      },
    });
    clients.push(client);
    const first = await client.callTool('t', {});
    expect(asked).toBe(3);
    const text = (first.content[0] as { text: string }).text.split(',');
    expect(text.filter((answer) => answer === 'ok')).toHaveLength(3);
    expect(text.filter((answer) => answer === '-32600')).toHaveLength(7);
    await client.callTool('t', {});
    expect(asked).toBe(6);
  });
});
