import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { MAX_CORKED_RECORDS } from '../src/transport/stdio-transport.js';
import { CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';

const COMMAND = [process.execPath, EVERYTHING_ENTRY, 'stdio'];

/** Counts the writes handed to the pipes (each `_write` or `_writev` is one system call). */
function countWrites() {
  const writes: number[] = [];
  const single = Socket.prototype._write;
  const vector = Socket.prototype._writev;
  vi.spyOn(Socket.prototype, '_write').mockImplementation(function (this: Socket, ...args) {
    writes.push(1);
    return single.apply(this, args);
  });
  vi.spyOn(Socket.prototype, '_writev').mockImplementation(function (this: Socket, ...args) {
    writes.push(args[0].length);
    return (vector as NonNullable<typeof vector>).apply(this, args);
  });
  return writes;
}

/** Lets the handshake's last record (`notifications/initialized`) leave before counting. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.restoreAllMocks();
});

describe('stdio writes', () => {
  it.each([3, 16, 17, 64, 400])(
    'sends the %i calls of a burst as the first at once, then writes of at most 16 records',
    async (count) => {
      const client = new McpClient({
        command: COMMAND,
        env: CHILD_ENV,
        maxConcurrentRequests: count,
      });
      try {
        await client.connect();
        await settle();
        const writes = countWrites();
        const results = await Promise.all(
          Array.from({ length: count }, (_, index) =>
            client.callTool('echo', { message: `m${index}` }),
          ),
        );
        vi.restoreAllMocks();
        // Every call got its own answer, in the order asked.
        expect(results.map((result) => (result.content[0] as { text?: string }).text)).toEqual(
          Array.from({ length: count }, (_, index) => `Echo: m${index}`),
        );
        // The first call left at once (nothing was in flight); the rest of the burst, issued in the
        // same tick, left in writes of MAX_CORKED_RECORDS (the last one holding what is left), so
        // the server starts on a long burst before all of it is built (the child's stdin is the
        // only pipe written to).
        const batches: number[] = [];
        for (let left = count - 1; left > 0; left -= MAX_CORKED_RECORDS) {
          batches.push(Math.min(left, MAX_CORKED_RECORDS));
        }
        expect(MAX_CORKED_RECORDS).toBe(16);
        expect(writes).toEqual([1, ...batches]);
      } finally {
        await client.close();
      }
    },
  );

  it('still sends a lone call at once, and sequential calls one write each', async () => {
    const client = new McpClient({ command: COMMAND, env: CHILD_ENV });
    try {
      await client.connect();
      await settle();
      const writes = countWrites();
      for (let index = 0; index < 5; index++) {
        const result = await client.callTool('echo', { message: `s${index}` });
        expect((result.content[0] as { text?: string }).text).toBe(`Echo: s${index}`);
      }
      vi.restoreAllMocks();
      expect(writes).toEqual([1, 1, 1, 1, 1]);
    } finally {
      await client.close();
    }
  });

  describe('with a standing subscriptions/listen request (modern stdio server declaring tools.listChanged)', () => {
    const LISTEN_SERVER = fileURLToPath(
      new URL('./fixtures/v2-listen-tasks-server.mjs', import.meta.url),
    );

    /** Runs `body` on a connected modern client whose listen request is open, counting writes. */
    async function withListening(
      body: (client: McpClient, writes: number[]) => Promise<void>,
    ): Promise<void> {
      const client = new McpClient({
        command: [process.execPath, LISTEN_SERVER, 'stdio'],
        env: CHILD_ENV,
      });
      try {
        await client.connect();
        expect(client.protocolVersion).toBe('2026-07-28');
        await settle();
        await body(client, countWrites());
      } finally {
        vi.restoreAllMocks();
        await client.close();
      }
    }

    it('writes each sequential call at once (the unanswered listen request is not in flight)', async () => {
      await withListening(async (client, writes) => {
        const corks = vi.spyOn(Socket.prototype, 'cork');
        for (let index = 0; index < 3; index++) {
          const result = await client.callTool('echo', { message: `s${index}` });
          expect(JSON.stringify(result.content)).toContain(`s${index}`);
        }
        expect(corks).not.toHaveBeenCalled();
        expect(writes).toEqual([1, 1, 1]);
      });
    });

    it('still corks the rest of a burst', async () => {
      await withListening(async (client, writes) => {
        const results = await Promise.all(
          Array.from({ length: 3 }, (_, index) =>
            client.callTool('echo', { message: `b${index}` }),
          ),
        );
        expect(results.map((result) => JSON.stringify(result.content))).toEqual(
          Array.from({ length: 3 }, (_, index) => expect.stringContaining(`b${index}`)),
        );
        expect(writes).toEqual([1, 2]);
      });
    });
  });
});
