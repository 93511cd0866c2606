// Answer at once, start in parallel (issue 36): the gateway answers `initialize` and
// `server/discover` whatever its upstreams do; upstreams start in parallel, each within its own
// start timeout; the tools of the ready ones are listed (a first `tools/list` waits at most
// `gateway.listWaitMs`) and callable, and the rest are announced with `list_changed` as they
// arrive. Upstreams: SDK v2 servers (one that takes 10 s to start) and one that never answers.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, InMemoryTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport as InMemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { AllowAllAuthorizer } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';

const SERVER = fileURLToPath(new URL('./fixtures/v2-pin-race-server.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
/** A process that reads its stdin and never answers. */
const SILENT = ['-e', 'process.stdin.resume(); setInterval(() => {}, 60_000);'];

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-start-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

const text = (result: Record<string, unknown>) =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

async function jsonLines(path: string): Promise<unknown[]> {
  return (await readFile(path, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as unknown);
}

/** quick (ready at once), slow (10 s to start), silent (never answers; 2 s start timeout). */
function configJson(gateway: Record<string, unknown> = {}) {
  return {
    mcpServers: {
      quick: {
        command: process.execPath,
        args: [SERVER],
        env: { CALLS_FILE: join(folder, 'quick-calls.jsonl') },
      },
      slow: {
        command: process.execPath,
        args: [SERVER],
        env: { START_DELAY_MS: '10000', LISTINGS_FILE: join(folder, 'slow-listings.jsonl') },
        startTimeoutMs: 30_000,
      },
      silent: { command: process.execPath, args: SILENT, startTimeoutMs: 2_000 },
    },
    gateway,
  };
}

function newGateway(gateway: Record<string, unknown> = {}) {
  return (async () => {
    const instance = new McpGateway({
      config: parseGatewayConfig(configJson(gateway)),
      authorizer: new AllowAllAuthorizer(),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    });
    open.push(instance);
    return instance;
  })();
}

type Downstream = {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
};

/** Connects a client of `era` in memory; resolves once its opening was answered. */
async function connect(gateway: McpGateway, era: 'legacy' | 'modern'): Promise<Downstream> {
  if (era === 'modern') {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new ClientV2(
      { name: 'v2-client', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' as const } },
    );
    await client.connect(clientSide);
    open.push(client);
    return client as unknown as Downstream;
  }
  const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new ClientV1({ name: 'v1-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return client as unknown as Downstream;
}

describe('the gateway answers at once and starts its upstreams in parallel', () => {
  it.each([
    ['legacy (initialize)', 'legacy'],
    ['modern (server/discover)', 'modern'],
  ] as const)(
    '%s: answered within 500 ms while one upstream takes 10 s and one never answers; the quick one is callable before the slow one is up',
    async (_label, era) => {
      const gateway = await newGateway();
      const started = gateway.start();
      const before = performance.now();
      const client = await connect(gateway, era);
      expect(performance.now() - before).toBeLessThan(500);
      // The quick upstream is ready within a bounded wait (it does not wait for the others).
      const deadline = Date.now() + 9_000;
      while (gateway.upstreams.find((entry) => entry.name === 'quick')?.state !== 'ready') {
        if (Date.now() > deadline) throw new Error('the quick upstream did not become ready');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const names = (await client.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(['quick__note', 'quick__wipe']);
      expect(
        text((await client.callTool({ name: 'quick__note', arguments: { id: 'a' } })) as never),
      ).toBe('note ran');
      // The slow upstream had not listed yet: the quick one did not wait for it.
      expect(await jsonLines(join(folder, 'slow-listings.jsonl'))).toEqual([]);
      expect(gateway.upstreams.find((entry) => entry.name === 'slow')?.state).toBe('starting');
      // Every upstream settles: the slow one ready, the silent one failed at its start timeout.
      await started;
      expect(gateway.upstreams.map((entry) => [entry.name, entry.state, entry.error])).toEqual([
        ['quick', 'ready', undefined],
        ['slow', 'ready', undefined],
        ['silent', 'failed', 'GATEWAY_START_TIMEOUT'],
      ]);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
        'quick__note',
        'quick__wipe',
        'slow__note',
        'slow__wipe',
      ]);
    },
    60_000,
  );

  it('a first tools/list waits (at most gateway.listWaitMs) for an upstream still starting', async () => {
    const config = parseGatewayConfig({
      mcpServers: { quick: configJson().mcpServers.quick },
    });
    const gateway = new McpGateway({
      config,
      authorizer: new AllowAllAuthorizer(),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    });
    open.push(gateway);
    const started = gateway.start();
    const client = await connect(gateway, 'legacy');
    // Asked at once: the answer waited for the upstream instead of listing nothing.
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'quick__note',
      'quick__wipe',
    ]);
    await started;
  }, 30_000);

  it('announces the tools of an upstream that arrives later with list_changed', async () => {
    const gateway = await newGateway({ listWaitMs: 0 });
    const started = gateway.start();
    const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new ClientV1({ name: 'v1-client', version: '1.0.0' });
    const announced: string[][] = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      announced.push((await client.listTools()).tools.map((tool) => tool.name));
    });
    await client.connect(clientSide);
    open.push(client);
    // listWaitMs 0: the first listing answers at once, with what is ready (maybe nothing yet).
    expect((await client.listTools()).tools.every((tool) => tool.name.startsWith('quick__'))).toBe(
      true,
    );
    await started;
    const deadline = Date.now() + 5_000;
    while (!announced.some((names) => names.includes('slow__note')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(announced.some((names) => names.includes('quick__note'))).toBe(true);
    expect(announced.some((names) => names.includes('slow__note'))).toBe(true);
  }, 60_000);

  it('toolfence-mcp serve answers initialize before its upstreams are up (a real process)', async () => {
    const config = join(folder, 'toolfence.json');
    await writeFile(config, JSON.stringify(configJson()));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--config', config],
      env: { PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    const client = new ClientV1({ name: 'v1-client', version: '1.0.0' });
    const before = performance.now();
    await client.connect(transport);
    open.push(client);
    // Node's own start is in this bound; the upstreams (10 s, never) are not.
    expect(performance.now() - before).toBeLessThan(5_000);
    expect(await jsonLines(join(folder, 'slow-listings.jsonl'))).toEqual([]);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('quick__note');
    expect(text(await client.callTool({ name: 'quick__note', arguments: { id: 'cli' } }))).toBe(
      'note ran',
    );
    expect(await jsonLines(join(folder, 'slow-listings.jsonl'))).toEqual([]);
  }, 60_000);
});

describe('start options', () => {
  it.each([
    ['gateway.startTimeoutMs 0', { gateway: { startTimeoutMs: 0 } }, 'gateway.startTimeoutMs'],
    [
      'gateway.startTimeoutMs not a number',
      { gateway: { startTimeoutMs: '5s' } },
      'gateway.startTimeoutMs',
    ],
    [
      'gateway.startTimeoutMs over the timer limit',
      { gateway: { startTimeoutMs: 2 ** 31 } },
      'gateway.startTimeoutMs',
    ],
    ['gateway.listWaitMs negative', { gateway: { listWaitMs: -1 } }, 'gateway.listWaitMs'],
    [
      'a server startTimeoutMs of 0',
      { server: { startTimeoutMs: 0 } },
      'mcpServers.a.startTimeoutMs',
    ],
  ])('refuses %s', (_label, input, at) => {
    const server = { command: 'x', ...(('server' in input ? input.server : {}) as object) };
    expect(() =>
      parseGatewayConfig({
        mcpServers: { a: server },
        ...('gateway' in input ? { gateway: input.gateway } : {}),
      }),
    ).toThrow(at);
  });

  it('refuses a bad --http value before any upstream starts', async () => {
    const marker = join(folder, 'started');
    const config = join(folder, 'toolfence.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: {
          a: {
            command: process.execPath,
            args: ['-e', `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x')`],
          },
        },
      }),
    );
    const err: string[] = [];
    const code = await runCli(['serve', '--config', config, '--http', '8765'], {
      out: () => undefined,
      err: (chunk) => err.push(chunk),
      env: {},
      cwd: folder,
    });
    expect(code).toBe(2);
    expect(err.join('')).toContain('--http takes HOST:PORT');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(marker)).toBe(false);
  }, 30_000);
});
