// Roots between the gateway's downstream clients and its upstreams, against a real SDK upstream
// that counts the `notifications/roots/list_changed` it receives and asks `roots/list` on demand:
// the upstreams are told of a change only when whose roots apply changes (not at every
// connection), and a downstream that never answers `roots/list` gets the upstream an error after
// `passthrough.rootsTimeoutMs`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import type { GatewayPassthroughOptions } from '../src/gateway/gateway-passthrough.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { serveLoopbackHttp } from './support/loopback-gateway-http.js';

const COUNTER = fileURLToPath(new URL('./fixtures/roots-counting-server.mjs', import.meta.url));

let folder: string;
const open: { close(): Promise<void> }[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-roots-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function startGateway(passthrough?: GatewayPassthroughOptions): Promise<McpGateway> {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: { counter: { command: process.execPath, args: [COUNTER], namespace: 'rc' } },
    }),
    authorizer: new RuleBasedPolicy([], { default: 'allow' }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(passthrough === undefined ? {} : { passthrough }),
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

/** A legacy (SDK 1.x) downstream; with `roots`, it declares them and answers with them. */
async function downstream(
  gateway: McpGateway,
  roots?: () => Promise<string[]> | string[],
): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client(
    { name: 'roots-client', version: '1.0.0' },
    { capabilities: roots === undefined ? {} : { roots: { listChanged: true } } },
  );
  if (roots !== undefined) {
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: (await roots()).map((path) => ({ uri: `file://${path}` })),
    }));
  }
  await client.connect(clientSide);
  open.push(client);
  return client;
}

async function toolJson(client: Client | ClientV2, name: string): Promise<Record<string, unknown>> {
  const result = await client.callTool({ name, arguments: {} });
  const text = (result.content as { text?: string }[]).map((block) => block.text ?? '').join('');
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * The count of roots changes the upstream received, once it stopped moving: asked until two
 * answers in a row agree (a notification is sent without waiting, ahead of the next call).
 */
async function changes(client: Client | ClientV2): Promise<number> {
  let last = -1;
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const seen = (await toolJson(client, 'rc__roots_report')).changed as number;
    if (seen === last) return seen;
    last = seen;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return last;
}

describe('roots changes told to the upstreams', () => {
  it('tells them only when whose roots apply changes, not at every connection', async () => {
    const gateway = await startGateway();
    // A client without roots: the upstream's roots (none) did not change.
    const plain = await downstream(gateway);
    expect(await changes(plain)).toBe(0);
    await plain.close();
    // The one client with roots connects: they apply now (one change).
    const owner = await downstream(gateway, () => ['/tmp/owner']);
    expect(await changes(owner)).toBe(1);
    // Its own change is passed on (one more).
    await owner.sendRootsListChanged();
    expect(await changes(owner)).toBe(2);
    // A second client: nobody's roots apply while two are connected (one more); its own
    // roots change is not the upstream's business (none more).
    const second = await downstream(gateway, () => ['/tmp/second']);
    expect(await changes(owner)).toBe(3);
    await second.sendRootsListChanged();
    expect(await changes(owner)).toBe(3);
    // It leaves: the first one's roots apply again (one more).
    await second.close();
    expect(await changes(owner)).toBe(4);
  }, 60_000);

  it.each<[string, number]>([
    ['one client without roots', 1],
    ['three clients without roots, one after the other', 3],
  ])(
    'sends nothing for %s',
    async (_label, count) => {
      const gateway = await startGateway();
      const clients: Client[] = [];
      for (let index = 0; index < count; index += 1) clients.push(await downstream(gateway));
      expect(await changes(clients[0] as Client)).toBe(0);
    },
    60_000,
  );
});

describe('passthrough.rootsTimeoutMs', () => {
  it("answers the upstream's roots/list with an error once the client has not answered within it", async () => {
    const gateway = await startGateway({ rootsTimeoutMs: 300 });
    let asked = 0;
    // A client that declares roots and never answers roots/list.
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new Client(
      { name: 'silent-roots', version: '1.0.0' },
      { capabilities: { roots: { listChanged: true } } },
    );
    client.setRequestHandler(ListRootsRequestSchema, () => {
      asked += 1;
      return new Promise(() => undefined);
    });
    await client.connect(clientSide);
    open.push(client);
    // Half the 10 s default: the answer comes from the configured 300 ms, not the default.
    const answer = await Promise.race([
      toolJson(client, 'rc__ask_roots'),
      new Promise<Record<string, unknown>>((resolve) =>
        setTimeout(() => resolve({ error: 'no answer within 5 s' }), 5_000),
      ),
    ]);
    expect(answer.roots).toBeUndefined();
    expect(String(answer.error)).toMatch(/did not give its roots within rootsTimeoutMs \(300 ms\)/);
    expect(asked).toBe(1);
  }, 60_000);

  it('passes the roots of a client that answers in time', async () => {
    const gateway = await startGateway({ rootsTimeoutMs: 5_000 });
    const client = await downstream(gateway, () => ['/tmp/given']);
    expect(await toolJson(client, 'rc__ask_roots')).toEqual({
      roots: [{ uri: 'file:///tmp/given' }],
    });
  }, 60_000);
});

describe("roots over serveGatewayHttp: shared upstreams never get one caller's roots", () => {
  /** A client of the gateway over HTTP; `roots`: a 2025-11-25 session that declares them. */
  async function httpClient(
    url: string,
    kind: 'modern' | 'legacy',
    roots?: { readonly paths: string[]; asked: number },
  ): Promise<ClientV2> {
    const client = new ClientV2(
      { name: `roots-http-${kind}`, version: '1.0.0' },
      {
        capabilities: roots === undefined ? {} : { roots: { listChanged: true } },
        ...(kind === 'modern' ? { versionNegotiation: { mode: 'auto' as const } } : {}),
      },
    );
    if (roots !== undefined) {
      client.setRequestHandler('roots/list', async () => {
        roots.asked += 1;
        return { roots: roots.paths.map((path) => ({ uri: `file://${path}` })) };
      });
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    open.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe(
      kind === 'modern' ? '2026-07-28' : '2025-11-25',
    );
    return client;
  }

  it.each<[string, 'modern' | 'legacy' | 'itself']>([
    ['a 2026-07-28 request of another caller', 'modern'],
    ['another 2025-11-25 session, without roots', 'legacy'],
    [
      'the declaring session itself (the upstream keeps what it is given, for every caller)',
      'itself',
    ],
  ])(
    'gives the upstream no roots when it asks during %s',
    async (_label, asker) => {
      const gateway = await startGateway({ rootsTimeoutMs: 5_000 });
      const http = await serveLoopbackHttp(gateway, open);
      const declared = { paths: ['/tmp/alice-only'], asked: 0 };
      // The only 2025-11-25 session, and it declares roots.
      const alice = await httpClient(http.url, 'legacy', declared);
      const caller = asker === 'itself' ? alice : await httpClient(http.url, asker);
      expect(await toolJson(caller, 'rc__ask_roots')).toEqual({ roots: [] });
      // Alice is never asked: her roots cannot reach the shared upstream, whoever calls.
      expect(declared.asked).toBe(0);
      expect(await changes(alice)).toBe(0);
    },
    60_000,
  );

  it('stops giving the roots of an in-process client once the gateway serves over HTTP', async () => {
    const gateway = await startGateway({ rootsTimeoutMs: 5_000 });
    const owner = await downstream(gateway, () => ['/tmp/owner']);
    expect(await toolJson(owner, 'rc__ask_roots')).toEqual({
      roots: [{ uri: 'file:///tmp/owner' }],
    });
    expect(await changes(owner)).toBe(1);
    const http = await serveLoopbackHttp(gateway, open);
    const other = await httpClient(http.url, 'modern');
    // The upstream is told its roots changed, and they are none now, for everyone.
    expect(await changes(owner)).toBe(2);
    expect(await toolJson(other, 'rc__ask_roots')).toEqual({ roots: [] });
    expect(await toolJson(owner, 'rc__ask_roots')).toEqual({ roots: [] });
  }, 60_000);
});
