import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ClientConfigurationError,
  McpClient,
  UnsupportedProtocolVersionError,
  VersionNegotiationError,
} from '@toolfence/mcp-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allowLoopback,
  CHILD_ENV,
  EVERYTHING_ENTRY,
  type EverythingHttp,
  type RecordedBody,
  type RecordedRequest,
  scripted,
  startEverythingHttp,
  startV2Http,
  V2_SERVER,
  type V2Http,
} from './helpers.js';

const MODERN = '2026-07-28';
const META_KEYS = [
  'io.modelcontextprotocol/protocolVersion',
  'io.modelcontextprotocol/clientCapabilities',
  'io.modelcontextprotocol/clientInfo',
];

function posts(log: readonly RecordedRequest[]): readonly RecordedRequest[] {
  return log.filter((entry) => entry.method === 'POST');
}

describe('modern mode against an SDK v2 server (stateless Streamable HTTP)', () => {
  let server: V2Http;
  beforeAll(async () => {
    server = await startV2Http('http');
  });
  afterAll(async () => {
    await server.close();
  });

  it('negotiates 2026-07-28 in one round trip and sends _meta and the standard headers on every POST', async () => {
    const client = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      await client.connect();
      expect(client.protocolVersion).toBe(MODERN);
      expect(client.serverDescription).toMatchObject({
        era: 'modern',
        protocolVersion: MODERN,
        serverInfo: { name: 'toolfence-v2-test-server', version: '2.4.0-test' },
        instructions: 'A test server.',
      });
      expect(client.serverDescription?.supportedVersions).toContain(MODERN);
      expect(client.serverCapabilities).toHaveProperty('tools');
      // Connecting is one round trip; subscriptions/listen (the server declares tools.listChanged)
      // opens in the background and does not delay it.
      expect(
        (await server.log())
          .map((entry) => entry.body?.method)
          .filter((method) => method !== 'subscriptions/listen'),
      ).toEqual(['server/discover']);

      const tools = await client.tools();
      expect(tools.map((tool) => tool.name)).toContain('echo');
      const result = await client.callTool('echo', { message: 'hi' });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
      await client.close();

      const log = await server.log();
      expect(log.every((entry) => entry.method === 'POST')).toBe(true);
      for (const entry of posts(log)) {
        expect(entry.headers['mcp-protocol-version']).toBe(MODERN);
        expect(entry.headers['mcp-method']).toBe(entry.body?.method);
        expect(entry.headers['mcp-session-id']).toBeUndefined();
        expect(entry.headers['last-event-id']).toBeUndefined();
        const meta = entry.body?.params?._meta ?? {};
        for (const key of META_KEYS) expect(meta).toHaveProperty([key]);
        expect(meta['io.modelcontextprotocol/protocolVersion']).toBe(MODERN);
        expect(meta['io.modelcontextprotocol/clientInfo']).toMatchObject({
          name: 'toolfence-mcp-bridge',
        });
        // No callbacks given: no capability declared.
        expect(meta['io.modelcontextprotocol/clientCapabilities']).toEqual({});
      }
      const call = posts(log).find((entry) => entry.body?.method === 'tools/call');
      expect(call?.headers['mcp-name']).toBe('echo');
      expect(log.map((entry) => entry.body?.method)).not.toContain('initialize');
    } finally {
      await client.close();
    }
  });

  it('refuses a legacy-only protocolVersions list against a modern-only server', async () => {
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      protocolVersions: ['2025-11-25'],
    });
    const error = await client.connect().catch((caught: unknown) => caught);
    expect(UnsupportedProtocolVersionError.isInstance(error)).toBe(true);
    expect((error as UnsupportedProtocolVersionError).supported).toContain(MODERN);
    await client.close();
  });
});

describe('legacy fallback', () => {
  let everything: EverythingHttp;
  let legacyV2: V2Http;
  let dual: V2Http;
  beforeAll(async () => {
    [everything, legacyV2, dual] = await Promise.all([
      startEverythingHttp(),
      startV2Http('http-legacy'),
      startV2Http('http-dual'),
    ]);
  });
  afterAll(async () => {
    await Promise.all([everything.close(), legacyV2.close(), dual.close()]);
  });

  it('falls back to initialize against server-everything (SDK 1.x) over HTTP', async () => {
    const client = new McpClient({ url: everything.url, allowNonPublic: allowLoopback });
    try {
      const result = await client.callTool('echo', { message: 'hello' });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
      expect(client.protocolVersion).toBe('2025-11-25');
      expect(client.serverDescription?.era).toBe('legacy');
    } finally {
      await client.close();
    }
  });

  it('falls back to initialize against server-everything over stdio, in the same process', async () => {
    const client = new McpClient({ command: [process.execPath, EVERYTHING_ENTRY], env: CHILD_ENV });
    try {
      expect((await client.tools()).map((tool) => tool.name)).toContain('echo');
      expect(client.protocolVersion).toBe('2025-11-25');
      expect(client.serverDescription?.era).toBe('legacy');
    } finally {
      await client.close();
    }
  });

  it('against an SDK v2 server in session mode: initialize without 2026 headers, then MCP-Protocol-Version on every POST', async () => {
    const client = new McpClient({ url: legacyV2.url, allowNonPublic: allowLoopback });
    try {
      await client.callTool('echo', { message: 'x' });
      expect(client.protocolVersion).toBe('2025-11-25');
      const log = posts(await legacyV2.log());
      const methods = log.map((entry) => entry.body?.method);
      expect(methods.slice(0, 3)).toEqual([
        'server/discover',
        'initialize',
        'notifications/initialized',
      ]);
      const initialize = log[1];
      expect(initialize?.headers['mcp-protocol-version']).toBeUndefined();
      expect(initialize?.headers['mcp-method']).toBeUndefined();
      expect(initialize?.body?.params?.protocolVersion).toBe('2025-11-25');
      expect(initialize?.body?.params?._meta).toBeUndefined();
      for (const entry of log.slice(2)) {
        expect(entry.headers['mcp-protocol-version']).toBe('2025-11-25');
        expect(entry.headers['mcp-session-id']).toBeDefined();
        expect(entry.headers['mcp-method']).toBeUndefined();
      }
    } finally {
      await client.close();
    }
  });

  it('a host that pins a legacy version sends no probe and offers exactly that version', async () => {
    const client = new McpClient({
      url: dual.url,
      allowNonPublic: allowLoopback,
      protocolVersions: ['2025-06-18'],
    });
    try {
      await client.connect();
      expect(client.protocolVersion).toBe('2025-06-18');
      const log = posts(await dual.log());
      expect(log[0]?.body?.method).toBe('initialize');
      expect(log[0]?.body?.params?.protocolVersion).toBe('2025-06-18');
      expect(log.map((entry) => entry.body?.method)).not.toContain('server/discover');
    } finally {
      await client.close();
    }
  });

  it('a host that pins 2026-07-28 gets a typed error from a legacy server', async () => {
    const client = new McpClient({
      url: everything.url,
      allowNonPublic: allowLoopback,
      protocolVersions: [MODERN],
    });
    try {
      const error = await client.connect().catch((caught: unknown) => caught);
      expect(VersionNegotiationError.isInstance(error)).toBe(true);
      expect((error as VersionNegotiationError).reason).toBe('pinned-version-refused');
    } finally {
      await client.close();
    }
  });
});

describe('modern mode against an SDK v2 server over stdio', () => {
  it('negotiates 2026-07-28 with server/discover first, one process, _meta on every request', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-v2-'));
    const logFile = join(folder, 'stdin.log');
    const client = new McpClient({
      command: [process.execPath, V2_SERVER, 'stdio'],
      env: { ...CHILD_ENV, V2_LOG: logFile },
    });
    try {
      const result = await client.callTool('echo', { message: 'stdio' });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: stdio' }]);
      expect(client.protocolVersion).toBe(MODERN);
      const lines = (await readFile(logFile, 'utf8'))
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { method?: string; params?: RecordedBody['params'] });
      expect(
        lines.map((line) => line.method).filter((method) => method !== 'subscriptions/listen'),
      ).toEqual(['server/discover', 'tools/call']);
      for (const line of lines) {
        for (const key of META_KEYS) expect(line.params?._meta).toHaveProperty([key]);
      }
    } finally {
      await client.close();
      await rm(folder, { recursive: true, force: true });
    }
  });
});

const unsupported = (id: unknown, supported: unknown) => ({
  status: 400,
  body: {
    jsonrpc: '2.0',
    id,
    error: { code: -32022, message: 'Unsupported protocol version', data: { supported } },
  },
});
const discovered = (id: unknown) => ({
  status: 200,
  body: {
    jsonrpc: '2.0',
    id,
    result: { resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: {} } },
  },
});

/** A legacy endpoint: `server/discover` gets `refusal`, `initialize` a 2025-11-25 answer. */
const legacyAfter = (refusal: { status: number; body?: unknown }) =>
  scripted((body) =>
    body.method === 'server/discover'
      ? refusal
      : body.method === 'initialize'
        ? {
            status: 200,
            body: {
              jsonrpc: '2.0',
              id: body.id,
              result: {
                protocolVersion: '2025-11-25',
                capabilities: {},
                serverInfo: { name: 'legacy', version: '1' },
              },
            },
          }
        : { status: 202 },
  );

/** Connects to `endpoint` and expects the legacy handshake after one refused probe. */
async function expectFallback(endpoint: Awaited<ReturnType<typeof scripted>>): Promise<void> {
  const client = new McpClient({
    url: endpoint.url,
    allowNonPublic: allowLoopback,
    standaloneStream: false,
  });
  try {
    await client.connect();
    expect(client.protocolVersion).toBe('2025-11-25');
    expect(endpoint.requests.map((request) => request.body?.method)).toEqual([
      'server/discover',
      'initialize',
      'notifications/initialized',
    ]);
  } finally {
    await client.close();
    await endpoint.close();
  }
}

describe('UnsupportedProtocolVersionError (-32022) and the legacy signals', () => {
  it('retries once with the mutual version the error lists', async () => {
    const endpoint = await scripted((body, _headers, index) =>
      index === 0 ? unsupported(body.id, [MODERN]) : discovered(body.id),
    );
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      await client.connect();
      expect(client.protocolVersion).toBe(MODERN);
      expect(endpoint.requests).toHaveLength(2);
      expect(endpoint.requests[1]?.body.id).not.toBe(endpoint.requests[0]?.body.id);
      expect(endpoint.requests[1]?.headers['mcp-protocol-version']).toBe(MODERN);
    } finally {
      await client.close();
      await endpoint.close();
    }
  });

  it('never loops: a second -32022 ends negotiation after exactly two probes', async () => {
    const endpoint = await scripted((body) => unsupported(body.id, [MODERN]));
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      const error = await client.connect().catch((caught: unknown) => caught);
      expect(VersionNegotiationError.isInstance(error)).toBe(true);
      expect((error as VersionNegotiationError).reason).toBe('retry-loop');
      expect(endpoint.requests).toHaveLength(2);
    } finally {
      await client.close();
      await endpoint.close();
    }
  });

  it('does not fall back to initialize when the error names only unknown modern versions', async () => {
    const endpoint = await scripted((body) => unsupported(body.id, ['2099-01-01']));
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      const error = await client.connect().catch((caught: unknown) => caught);
      expect(UnsupportedProtocolVersionError.isInstance(error)).toBe(true);
      expect((error as UnsupportedProtocolVersionError).supported).toEqual(['2099-01-01']);
      expect(endpoint.requests.map((request) => request.body.method)).toEqual(['server/discover']);
    } finally {
      await client.close();
      await endpoint.close();
    }
  });

  it.each([
    ['400 without a body', 400],
    ['404', 404],
    ['405', 405],
  ])('falls back to initialize on %s', async (_name, status) => {
    await expectFallback(await legacyAfter({ status }));
  });

  it('reads a 4xx body that is not UTF-8 as no error body (a legacy signal), not as a -32022', async () => {
    const refusal = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"bad '),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`","data":{"supported":["${MODERN}"]}}}`),
    ]);
    await expectFallback(await legacyAfter({ status: 400, body: refusal }));
  });

  it('does not fall back on a 500 (the server is broken, not legacy)', async () => {
    const endpoint = await scripted(() => ({ status: 500 }));
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      await expect(client.connect()).rejects.toThrow();
      expect(endpoint.requests.map((request) => request.body?.method)).toEqual(['server/discover']);
    } finally {
      await client.close();
      await endpoint.close();
    }
  });
});

describe('protocolVersions option', () => {
  it.each([
    ['an empty list', []],
    ['an unknown version', ['2024-01-01']],
    ['a duplicate', [MODERN, MODERN]],
    ['a non-array', '2026-07-28'],
  ])('refuses %s', (_name, protocolVersions) => {
    expect(
      () =>
        new McpClient({
          url: 'http://127.0.0.1:1/mcp',
          allowNonPublic: allowLoopback,
          protocolVersions: protocolVersions as string[],
        }),
    ).toThrow(ClientConfigurationError);
  });
});
