// McpClient.callTool's per-call `meta`: W3C trace context only, checked before anything is sent,
// and delivered in `params._meta` to a real SDK v2 server. And `onToolsListChanged`.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientConfigurationError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';

const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

let folder: string;
let log: string;
let client: McpClient;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-call-meta-'));
  log = join(folder, 'sent.log');
  client = new McpClient({
    command: [process.execPath, V2_SERVER, 'stdio'],
    env: { V2_LOG: log },
  });
  await client.connect();
});
afterAll(async () => {
  await client.close();
  await rm(folder, { recursive: true, force: true });
});

const whoami = async (options: Parameters<McpClient['callTool']>[2]) => {
  const result = await client.callTool('whoami', {}, options);
  return JSON.parse((result.content[0] as { text: string }).text) as Record<string, unknown>;
};

describe('McpClient.callTool meta', () => {
  it('adds traceparent and tracestate to params._meta of that one call', async () => {
    expect(await whoami({ meta: { traceparent: TRACEPARENT, tracestate: 'a=1,b=2' } })).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'a=1,b=2',
    });
    const without = await client.callTool('whoami', {});
    expect((without.content[0] as { text: string }).text).not.toContain('traceparent');
  }, 30_000);

  it.each<[string, unknown]>([
    ['an unknown key', { baggage: 'x=1' }],
    ['a protocol key', { 'io.modelcontextprotocol/protocolVersion': '2025-11-25' }],
    ['a malformed traceparent', { traceparent: 'not-a-traceparent' }],
    ['an upper-case traceparent', { traceparent: TRACEPARENT.toUpperCase() }],
    ['a number', { traceparent: 1 }],
    ['a tracestate over 512 characters', { tracestate: `a=${'x'.repeat(511)}` }],
    ['a tracestate with a control character', { tracestate: 'a=1\nb=2' }],
    ['an array', [TRACEPARENT]],
    ['null', null],
  ])('refuses %s before anything is sent', async (_label, meta) => {
    const before = await readFile(log, 'utf8');
    const error = await client
      .callTool('whoami', {}, { meta: meta as Record<string, string> })
      .catch((caught: unknown) => caught);
    expect(ClientConfigurationError.isInstance(error)).toBe(true);
    expect((error as ClientConfigurationError).details).toEqual({ option: 'meta' });
    expect(await readFile(log, 'utf8')).toBe(before);
  });

  it('refuses an unknown per-call option key', async () => {
    const error = await client
      .callTool('whoami', {}, { metadata: {} } as never)
      .catch((caught: unknown) => caught);
    expect(ClientConfigurationError.isInstance(error)).toBe(true);
    expect(String((error as Error).message)).toMatch(/metadata/);
  });

  it('accepts a tracestate of exactly 512 characters', async () => {
    const tracestate = `a=${'x'.repeat(510)}`;
    expect((await whoami({ meta: { tracestate } })).tracestate).toBe(tracestate);
  }, 30_000);
});

describe('McpClient onToolsListChanged', () => {
  it('refuses a value that is not a function', () => {
    expect(
      () => new McpClient({ command: [process.execPath, TOOLKIT], onToolsListChanged: 1 as never }),
    ).toThrow(/onToolsListChanged must be a function/);
  });

  it('is called when the server says its tools changed, and a throwing callback breaks nothing', async () => {
    const calls = join(folder, 'toolkit-calls.jsonl');
    let heard = 0;
    let resolveHeard: () => void = () => undefined;
    const changed = new Promise<void>((resolve) => {
      resolveHeard = resolve;
    });
    const toolkit = new McpClient({
      command: [process.execPath, TOOLKIT],
      env: { CALLS_FILE: calls, MUTATE_DESCRIPTION: 'Changed while connected.' },
      onToolsListChanged: () => {
        heard += 1;
        resolveHeard();
        throw new Error('a careless callback');
      },
    });
    try {
      const before = await toolkit.tools();
      expect(before.find((tool) => tool.name === 'note')?.description).toBe('Reads a note by id.');
      await toolkit.callTool('note', { id: 'x' });
      const { pid } = JSON.parse((await readFile(calls, 'utf8')).trim()) as { pid: number };
      process.kill(pid, 'SIGUSR2');
      await changed;
      expect(heard).toBe(1);
      const after = await toolkit.tools();
      expect(after.find((tool) => tool.name === 'note')?.description).toBe(
        'Changed while connected.',
      );
    } finally {
      await toolkit.close();
    }
  }, 30_000);
});
