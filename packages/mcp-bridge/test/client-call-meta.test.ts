// McpClient.callTool's per-call `meta`: W3C trace context only, checked before anything is sent,
// and delivered in `params._meta` to a real SDK v2 server.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientConfigurationError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';

const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
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
