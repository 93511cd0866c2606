// What the client's JSON-RPC peer does with what a server sends besides answers, against a
// hand-written legacy server (fixtures/peer-probe-server.mjs) that logs every line the client
// writes: a ping is answered `{}`, a method without a handler `MethodNotFound`, a request that
// does not fit its schema `InternalError` (the host's callback is not asked), a cancelled request
// not at all; a progress notification for no request and an answer to no request are reported
// (logger.debug), and so is an error answer without an id; the session goes on.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';

const SERVER = fileURLToPath(new URL('./fixtures/peer-probe-server.mjs', import.meta.url));

let folder: string;
let log: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-peer-'));
  log = join(folder, 'client-lines.log');
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** The client's lines the server logged, parsed. */
const written = async (): Promise<Record<string, unknown>[]> =>
  (await readFile(log, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const answerTo = (lines: Record<string, unknown>[], id: string) =>
  lines.filter((line) => line.id === id && !('method' in line));

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the client');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the client's JSON-RPC peer, on what a server sends it", () => {
  it('answers, refuses, drops and reports as a JSON-RPC peer does, and the session goes on', async () => {
    const debug: { message: string; name: unknown }[] = [];
    let rootsAsked = 0;
    let elicitationsAsked = 0;
    const client = new McpClient({
      command: [process.execPath, SERVER],
      env: { PEER_LOG: log },
      roots: async () => {
        rootsAsked += 1;
        // Long enough for the cancellation to arrive first.
        await new Promise((resolve) => setTimeout(resolve, 300));
        return [{ uri: 'file:///tmp/a' }];
      },
      elicitation: {
        handler: async () => {
          elicitationsAsked += 1;
          return { action: 'decline' };
        },
      },
      logger: {
        debug: (message, details) => debug.push({ message, name: details?.name }),
      },
    });
    try {
      await client.connect();
      // The handshake's own lines, then the answers to the server's requests.
      await until(async () => answerTo(await written(), 'server-elicit').length > 0);
      // Past the roots callback's 300 ms: a cancelled request is never answered.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const lines = await written();
      expect(answerTo(lines, 'server-ping')).toEqual([
        { jsonrpc: '2.0', id: 'server-ping', result: {} },
      ]);
      expect(answerTo(lines, 'server-unknown')).toEqual([
        {
          jsonrpc: '2.0',
          id: 'server-unknown',
          error: { code: -32601, message: 'Method not found' },
        },
      ]);
      expect(rootsAsked).toBe(1);
      expect(answerTo(lines, 'server-roots')).toEqual([]);
      const [elicit] = answerTo(lines, 'server-elicit');
      expect(elicit).toMatchObject({
        jsonrpc: '2.0',
        id: 'server-elicit',
        error: { code: -32603 },
      });
      expect(String((elicit?.error as { message?: unknown } | undefined)?.message)).toMatch(
        /message/,
      );
      expect(elicitationsAsked).toBe(0);
      // The progress notification, the answer to id 987654 and the error answer without an id
      // name nothing of the client's.
      await until(async () => debug.length >= 3);
      expect(debug).toEqual([
        { message: 'MCP client error', name: 'Error' },
        { message: 'MCP client error', name: 'Error' },
        { message: 'MCP client error', name: 'Error' },
      ]);
      // And the session answers calls as before.
      const result = await client.callTool('echo', {});
      expect(result.content).toEqual([{ type: 'text', text: 'ok' }]);
    } finally {
      await client.close();
    }
  }, 30_000);
});
