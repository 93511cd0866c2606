// The definition the pins reviewed is the definition offered and run (issue 35, item 1): an SDK v2
// upstream whose listing TTL is 0 is asked for its tools again on every listing, and may answer
// each listing differently. One listing per load; every offered tool carries the digest of the
// definition it was built from, and a call runs only while that digest is the accepted pin.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { type GatewayServerConfig, parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway, serverIdentity } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';

const RACE_SERVER = fileURLToPath(new URL('./fixtures/v2-pin-race-server.mjs', import.meta.url));
// Read-only runs, destructive is denied: the pinned `wipe` (destructive) never runs.
const policy = () =>
  new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } });

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-pins-race-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function jsonLines(path: string): Promise<Record<string, unknown>[]> {
  return (await readFile(path, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const text = (result: Record<string, unknown>) =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

function configFor(env: Record<string, string>) {
  return parseGatewayConfig({
    mcpServers: {
      up: {
        command: process.execPath,
        args: [RACE_SERVER],
        env: {
          CALLS_FILE: join(folder, 'calls.jsonl'),
          LISTINGS_FILE: join(folder, 'listings.jsonl'),
          ...env,
        },
        namespace: 'up',
      },
    },
  });
}

async function startGateway(env: Record<string, string>) {
  const pins = await PinStore.open(join(folder, 'toolfence.lock.json'));
  const config = configFor(env);
  const gateway = new McpGateway({
    config,
    authorizer: policy(),
    pins,
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client({ name: 'race-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return { gateway, client, pins, config };
}

describe('pins: the definition reviewed is the definition offered and run', () => {
  it('lists an upstream once per load and offers the definition it pinned (TTL 0, alternating listings)', async () => {
    const { gateway, client, pins } = await startGateway({ FLIP: 'alternate' });
    // One listing at start: the one the pins reviewed.
    expect(await jsonLines(join(folder, 'listings.jsonl'))).toEqual([{ index: 1, wipe: 'A' }]);
    const wipe = (await client.listTools()).tools.find((tool) => tool.name === 'up__wipe');
    expect(wipe?.description).toBe('Deletes every note.');
    expect(wipe?.annotations?.destructiveHint).toBe(true);
    const result = await client.callTool({ name: 'up__wipe', arguments: { confirm: true } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/denied by the gateway's policy/);
    expect(await jsonLines(join(folder, 'calls.jsonl'))).toEqual([]);
    // The audit line carries the pin of the definition offered; nothing is pending.
    const [line] = await jsonLines(join(folder, 'audit.jsonl'));
    expect(line).toMatchObject({ tool: 'up__wipe', pin: pins.pinOf('up', 'wipe')?.sha256 });
    expect(pins.pending()).toEqual([]);
    expect(gateway.upstreams[0]?.hidden).toEqual({});
  }, 30_000);

  it.each([
    ['an upstream that alternates its definitions on every listing', 'alternate'],
    [
      'an upstream that changes the definition after it was listed, before the calls',
      'after-first',
    ],
  ])(
    '%s: nothing unpinned is ever offered or run (bounded race)',
    async (_name, flip) => {
      const { gateway, client, pins, config } = await startGateway({ FLIP: flip });
      const pinned = pins.pinOf('up', 'wipe')?.sha256;
      expect(pinned).toMatch(/^sha256:/);
      const seen: unknown[] = [];
      const deadline = Date.now() + 15_000;
      // 12 rounds at most, each a reload (one listing) racing a listing and two calls downstream.
      for (let round = 0; round < 12 && Date.now() < deadline; round += 1) {
        const [, listed, wipe, note] = await Promise.all([
          gateway.reload({ config }),
          client.listTools(),
          client.callTool({ name: 'up__wipe', arguments: { confirm: true } }),
          client.callTool({ name: 'up__note', arguments: { id: String(round) } }),
        ]);
        seen.push(...listed.tools.filter((tool) => tool.name === 'up__wipe'));
        expect(wipe.isError).toBe(true);
        expect(text(note)).toBe('note ran');
      }
      // Every offered wipe was the pinned, destructive one; none ran.
      for (const tool of seen) {
        expect(tool).toMatchObject({
          description: 'Deletes every note.',
          annotations: { destructiveHint: true },
        });
      }
      const calls = await jsonLines(join(folder, 'calls.jsonl'));
      expect(calls.filter((call) => call.name === 'wipe')).toEqual([]);
      for (const line of await jsonLines(join(folder, 'audit.jsonl'))) {
        if (line.tool === 'up__wipe' && line.pin !== 'unknown') expect(line.pin).toBe(pinned);
        if (line.tool === 'up__wipe') expect(line.outcome).not.toBe('ok');
      }
      // The upstream did offer the other version during the race; a review saw each listing.
      const listings = await jsonLines(join(folder, 'listings.jsonl'));
      expect(listings.filter((listing) => listing.wipe === 'B').length).toBeGreaterThan(0);
      // When the last listing was the other version, it waits for `pin --accept`.
      const last = listings.at(-1)?.wipe;
      expect(pins.pending().map((entry) => entry.pin.definition.description)).toEqual(
        last === 'B' ? [expect.stringContaining('IMPORTANT')] : [],
      );
    },
    60_000,
  );

  it('refuses a call to an offered tool whose definition is no longer the accepted pin (checked at call time)', async () => {
    const { gateway, client, config } = await startGateway({
      SLOW_FROM: '2',
      LIST_DELAY_MS: '4000',
    });
    // Another lock file, in which the accepted `note` is another definition (as after
    // `pin --accept` of a newer version).
    const other = await PinStore.open(join(folder, 'other.lock.json'));
    const listing = [
      {
        name: 'note',
        description: 'Reads a note by id (version 2).',
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      },
    ];
    other.review('up', serverIdentity(config.mcpServers.up as GatewayServerConfig), listing);
    const reloading = gateway.reload({ config, pins: other });
    // The reload's listing is slow: the offered `note` still exists, built from the old pin.
    const deadline = Date.now() + 10_000;
    while ((await jsonLines(join(folder, 'listings.jsonl'))).length < 2) {
      if (Date.now() > deadline) throw new Error('the reload did not list');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const result = await client.callTool({ name: 'up__note', arguments: { id: 'x' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/no longer the accepted pin/);
    expect(await jsonLines(join(folder, 'calls.jsonl'))).toEqual([]);
    await reloading;
    const audit = await jsonLines(join(folder, 'audit.jsonl'));
    expect(audit.at(-1)).toMatchObject({ tool: 'up__note', outcome: 'pin-changed' });
    // After the reload the listed `note` differs from the accepted one: hidden.
    expect(gateway.toolNames()).not.toContain('up__note');
  }, 30_000);
});
