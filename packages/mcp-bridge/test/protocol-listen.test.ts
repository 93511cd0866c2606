import { fileURLToPath } from 'node:url';
import { McpClient, type McpClientOptions } from '@toolfence/mcp-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowLoopback, CHILD_ENV, type RecordedRequest } from './helpers.js';
import {
  eventually,
  type ListenTasksServer,
  startListenTasksServer,
} from './listen-tasks-server.js';

const listens = (log: readonly RecordedRequest[]): readonly RecordedRequest[] =>
  log.filter((entry) => entry.body?.method === 'subscriptions/listen');
const lists = (log: readonly RecordedRequest[]): number =>
  log.filter((entry) => entry.body?.method === 'tools/list').length;

interface Logged {
  readonly level: string;
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;
}

function recordingLogger(into: Logged[]): NonNullable<McpClientOptions['logger']> {
  return {
    debug: (message, details) => into.push({ level: 'debug', message, details }),
    warn: (message, details) => into.push({ level: 'warn', message, details }),
  };
}

const hasAdded = async (client: McpClient): Promise<boolean> =>
  (await client.tools()).some((tool) => tool.name === 'added');

describe('subscriptions/listen against an SDK v2 server (stateless modern Streamable HTTP)', () => {
  let server: ListenTasksServer;
  beforeAll(async () => {
    server = await startListenTasksServer('tasks');
  });
  afterAll(async () => {
    await server.close();
  });

  it('opens one listen stream instead of the GET stream and relists after tools/list_changed', async () => {
    const before = (await server.log()).length;
    let announced = 0;
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      onToolsListChanged: () => {
        announced++;
      },
    });
    try {
      expect(await hasAdded(client)).toBe(false);
      await eventually(async () => listens((await server.log()).slice(before)).length === 1);
      // The acknowledgement marks the listing stale but is not a change the host hears about.
      expect(announced).toBe(0);
      // The listing has a 10-minute TTL: without the stream the change below would never be seen.
      await server.control('change');
      await eventually(() => hasAdded(client));
      expect(announced).toBe(1);
      const log = (await server.log()).slice(before);
      const [listen] = listens(log);
      expect(listen?.headers['mcp-method']).toBe('subscriptions/listen');
      expect(listen?.headers['mcp-protocol-version']).toBe('2026-07-28');
      expect(listen?.headers['mcp-session-id']).toBeUndefined();
      expect(listen?.body?.params?.notifications).toEqual({ toolsListChanged: true });
      expect(listen?.body?.params?._meta?.['io.modelcontextprotocol/protocolVersion']).toBe(
        '2026-07-28',
      );
      expect(log.filter((entry) => entry.method !== 'POST')).toEqual([]);
      expect(listens(log)).toHaveLength(1);
      // Cached again until the next change: no relisting without a notification. (The ack and
      // the change may both have arrived during the listing that saw the change: settle first.)
      await client.tools();
      const listed = lists((await server.log()).slice(before));
      await client.tools();
      await client.tools();
      expect(lists((await server.log()).slice(before))).toBe(listed);
    } finally {
      await client.close();
      await server.control('change');
    }
  });

  it.each([
    ['over maxRecordBytes', 'poison?bytes=65536', 'TRANSPORT_RESPONSE_TOO_LARGE'],
    ['over maxRecordDepth', 'poison-deep?depth=40', 'TRANSPORT_RESPONSE_TOO_COMPLEX'],
    ['over maxRecordTokens', 'poison-wide?count=2000', 'TRANSPORT_RESPONSE_TOO_COMPLEX'],
  ])(
    'cuts a listen stream that sends a record %s, reopens it, and keeps the client usable',
    async (_name, poison, code) => {
      const before = (await server.log()).length;
      const logged: Logged[] = [];
      let announced = 0;
      const client = new McpClient({
        url: server.url,
        allowNonPublic: allowLoopback,
        onToolsListChanged: () => {
          announced++;
        },
        maxRecordBytes: 16 * 1024,
        maxRecordDepth: 16,
        maxRecordTokens: 500,
        listenBackoffInitialMs: 20,
        logger: recordingLogger(logged),
      });
      try {
        await client.tools();
        await eventually(async () => listens((await server.log()).slice(before)).length === 1);
        await server.control(poison);
        await eventually(async () => listens((await server.log()).slice(before)).length === 2);
        expect(logged).toContainEqual({
          level: 'debug',
          message: 'Reopening subscriptions/listen',
          details: expect.objectContaining({ code, delayMs: 20 }),
        });
        // The over-limit notification was never delivered: the host heard of no change.
        expect(announced).toBe(0);
        // The transport survived: calls work, and the reopened stream follows the next change.
        const echoed = await client.callTool('echo', { message: 'still here' });
        expect(echoed.content).toEqual([{ type: 'text', text: 'Echo: still here' }]);
        await server.control('change');
        await eventually(() => hasAdded(client));
      } finally {
        await client.close();
        await server.control('change');
      }
    },
  );

  it('reopens a failing stream with a capped backoff, never hot, and stops on close()', async () => {
    const logged: Logged[] = [];
    await server.control('drop-listens?count=100000');
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      listenBackoffInitialMs: 10,
      listenBackoffMaxMs: 80,
      logger: recordingLogger(logged),
    });
    try {
      await client.connect();
      const start = (await server.state()).listens;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const opened = (await server.state()).listens - start;
      // Capped at 80 ms: at most 2000 / 80 + a few in the window; uncapped doubling would stop
      // near 8, and no backoff would give hundreds.
      expect(opened).toBeGreaterThanOrEqual(12);
      expect(opened).toBeLessThanOrEqual(30);
      const delays = logged
        .filter((entry) => entry.message === 'Reopening subscriptions/listen')
        .map((entry) => entry.details?.delayMs as number);
      expect(delays.slice(0, 4)).toEqual([10, 20, 40, 80]);
      expect(Math.max(...delays)).toBe(80);
    } finally {
      await client.close();
    }
    const closedAt = (await server.state()).listens;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await server.state()).listens).toBe(closedAt);
    await server.control('drop-listens?count=0');
  });

  it('starts the backoff over only after a stream was acknowledged and stayed open for listenBackoffMaxMs', async () => {
    const logged: Logged[] = [];
    const delays = (): number[] =>
      logged
        .filter((entry) => entry.message === 'Reopening subscriptions/listen')
        .map((entry) => entry.details?.delayMs as number);
    await server.control('drop-listens?count=5');
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      maxRecordBytes: 16 * 1024,
      listenBackoffInitialMs: 10,
      listenBackoffMaxMs: 100,
      logger: recordingLogger(logged),
    });
    try {
      await client.connect();
      // Five dropped streams: 10, 20, 40, 80, 100 ms; the sixth is acknowledged and stays open.
      await eventually(async () => delays().length === 5);
      expect(delays()).toEqual([10, 20, 40, 80, 100]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(delays()).toHaveLength(5);
      await server.control('poison?bytes=65536');
      await eventually(async () => delays().length === 6);
      expect(delays()[5]).toBe(10);
    } finally {
      await client.close();
      await server.control('drop-listens?count=0');
    }
  });

  it('waits out a 429 answer for its Retry-After (within listenBackoffMaxMs), then listens again', async () => {
    const before = (await server.log()).length;
    const logged: Logged[] = [];
    await server.control('limit-listens?count=1');
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      listenBackoffInitialMs: 10,
      listenBackoffMaxMs: 5000,
      logger: recordingLogger(logged),
    });
    try {
      await client.connect();
      await eventually(async () => listens((await server.log()).slice(before)).length === 2);
      const reopenings = logged.filter(
        (entry) => entry.message === 'Reopening subscriptions/listen',
      );
      expect(reopenings).toEqual([
        expect.objectContaining({
          details: expect.objectContaining({ code: 'TRANSPORT_RATE_LIMITED', delayMs: 1000 }),
        }),
      ]);
      await server.control('change');
      await eventually(() => hasAdded(client));
    } finally {
      await client.close();
      await server.control('change');
    }
  });

  it('opens no listen stream when the host passes standaloneStream: false', async () => {
    const before = (await server.log()).length;
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      standaloneStream: false,
    });
    try {
      await client.tools();
      await client.callTool('echo', { message: 'x' });
    } finally {
      await client.close();
    }
    expect(listens((await server.log()).slice(before))).toEqual([]);
  });

  it.each([
    ['a non-integer', { listenBackoffMaxMs: 1.5 }],
    ['zero', { listenBackoffInitialMs: 0 }],
    ['an initial delay above the cap', { listenBackoffInitialMs: 5000, listenBackoffMaxMs: 100 }],
  ])('refuses %s listen backoff', (_name, options) => {
    expect(
      () => new McpClient({ url: server.url, allowNonPublic: allowLoopback, ...options }),
    ).toThrow(/listenBackoff/);
  });
});

describe('subscriptions/listen against a server that declares no tools.listChanged', () => {
  it('never opens the stream', async () => {
    const server = await startListenTasksServer('no-tasks');
    const client = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      await client.tools();
      await client.callTool('echo', { message: 'x' });
      expect(listens(await server.log())).toEqual([]);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('subscriptions/listen over stdio against an SDK v2 server (serveStdio)', () => {
  it('sends subscriptions/listen once on the channel and relists after tools/list_changed', async () => {
    const client = new McpClient({
      command: [
        process.execPath,
        fileURLToPath(new URL('./fixtures/v2-listen-tasks-server.mjs', import.meta.url)),
        'stdio',
      ],
      env: { ...CHILD_ENV },
    });
    try {
      expect(await hasAdded(client)).toBe(false);
      expect(client.protocolVersion).toBe('2026-07-28');
      await client.callTool('change');
      await eventually(() => hasAdded(client));
    } finally {
      await client.close();
    }
  });
});
