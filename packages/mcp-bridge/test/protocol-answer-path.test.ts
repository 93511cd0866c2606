// How a call's answer reaches its caller: a result goes from the transport to its request's
// handler without the SDK's response schemas (which the SDK 1.x engine's own response handler ran
// twice per answer), its deadline forgotten; an error answer becomes the SDK's `McpError`.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  JSONRPCErrorResponseSchema,
  JSONRPCResultResponseSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ServerRpcError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import { isSchemaError } from '../src/client/schema-error.js';
import { RESULT_CHECK } from '../src/protocol/protocol-session.js';

const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
const LEGACY_SERVER = fileURLToPath(new URL('./fixtures/legacy-2024-server.mjs', import.meta.url));

let folder: string;
let log: string;
let modern: McpClient;
let legacy: McpClient;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-answer-path-'));
  log = join(folder, 'sent.log');
  modern = new McpClient({ command: [process.execPath, V2_SERVER, 'stdio'], env: { V2_LOG: log } });
  legacy = new McpClient({ command: [process.execPath, LEGACY_SERVER] });
  await Promise.all([modern.connect(), legacy.connect()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([modern.close(), legacy.close()]);
  await rm(folder, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

const textOf = (result: { content: readonly unknown[] }): string =>
  (result.content[0] as { text: string }).text;

describe('a call answer', () => {
  it.each([
    ['modern (2026-07-28)', () => modern, 'echo', { message: 'one' }, 'Echo: one'],
    ['legacy (2024-11-05)', () => legacy, 'echo', { text: 'one' }, 'echo: one'],
  ] as const)(
    '%s: a plain result reaches the caller without the SDK response schemas',
    async (_era, client, tool, args, expected) => {
      // Only answers count: a notification the server sends meanwhile goes through the SDK's
      // dispatch, which asks these schemas first.
      const answers = (spy: { mock: { calls: unknown[][] } }) =>
        spy.mock.calls.filter(([value]) => {
          const message = value as Record<string, unknown>;
          return 'result' in message || 'error' in message;
        }).length;
      const results = vi.spyOn(JSONRPCResultResponseSchema, 'safeParse');
      const errors = vi.spyOn(JSONRPCErrorResponseSchema, 'safeParse');
      const result = await client().callTool(tool, args);
      expect(textOf(result)).toContain(expected);
      expect(answers(results)).toBe(0);
      expect(answers(errors)).toBe(0);
    },
    30_000,
  );

  it('concurrent answers each reach their own caller', async () => {
    const texts = Array.from({ length: 12 }, (_, index) => `call-${index}`);
    const results = await Promise.all(texts.map((message) => modern.callTool('echo', { message })));
    expect(results.map(textOf)).toEqual(texts.map((message) => `Echo: ${message}`));
  }, 30_000);

  it("clears the request's timer: an answered call is never cancelled when its timeout passes", async () => {
    await modern.callTool('echo', { message: 'timed' }, { timeoutMs: 200 });
    await new Promise((resolve) => setTimeout(resolve, 700));
    // A timer left running would have sent notifications/cancelled for the answered request.
    expect(await readFile(log, 'utf8')).not.toContain('notifications/cancelled');
    // And the session still answers.
    expect(textOf(await modern.callTool('echo', { message: 'after' }))).toBe('Echo: after');
  }, 30_000);

  it('an error answer still becomes a ServerRpcError', async () => {
    const error = await legacy.callTool('missing', {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ServerRpcError);
    expect((error as ServerRpcError).rpcCode).toBe(-32601);
    // The connection is still usable afterwards.
    expect(textOf(await legacy.callTool('echo', { text: 'two' }))).toContain('echo: two');
  }, 30_000);
});

describe("the peer's result check", () => {
  it.each([
    ['modern (2026-07-28)', () => modern, 'echo', { message: 'checked' }],
    ['legacy (2024-11-05)', () => legacy, 'echo', { text: 'checked' }],
  ] as const)(
    '%s: the peer asks the check (no zod parse) and gets the result object back',
    async (_era, client, tool, args) => {
      const check = vi.spyOn(RESULT_CHECK, 'safeParse');
      const result = await client().callTool(tool, args);
      // Asked once, for this call's answer, and the caller got the very object it passed.
      expect(check).toHaveBeenCalledTimes(1);
      const [[given]] = check.mock.calls as unknown as [[unknown]];
      expect(given).toBe(result);
    },
    30_000,
  );

  it.each([
    ['an empty object', {}],
    ['a call result', { content: [{ type: 'text', text: 'x' }], isError: false }],
    ['nested objects', { structuredContent: { a: { b: [1, 2] } } }],
  ])('%s passes the check as it is', (_name, value) => {
    const outcome = RESULT_CHECK.safeParse(value);
    expect(outcome).toEqual({ success: true, data: value });
    expect(outcome.success && outcome.data).toBe(value);
  });

  it.each([
    ['null', null],
    ['an array', [{ content: [] }]],
    ['a string', 'result'],
    ['a number', 42],
    ['a boolean', true],
  ])('%s is refused with the zod schema error the client maps as malformed', (_name, value) => {
    const outcome = RESULT_CHECK.safeParse(value);
    const error = outcome.success ? undefined : outcome.error;
    expect(outcome.success).toBe(false);
    expect(isSchemaError(error)).toBe(true);
    expect(String(error)).toContain('the result must be a JSON object');
  });
});
