// A hostile upstream cannot brick the gateway through its pin lock file: definitions over
// maxDefinitionBytes are hidden and never stored, and a server whose pins would make the lock
// larger than maxLockBytes fails alone, so the file stays readable and the next start works.
// Real stdio servers (read-defs-server.mjs, whose definitions a test rewrites between loads).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore, type PinStoreLimits } from '../src/gateway/pin-store.js';
import { defsTool, readDefsServer } from './fixtures/read-gateway.js';

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-pin-limits-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

const lockPath = () => join(folder, 'toolfence.lock.json');

/** A tool whose description is `chars` characters long. */
const bloated = (name: string, chars: number) => ({
  ...defsTool(name),
  description: 'A'.repeat(chars),
});

function servers(bloat: readonly Record<string, unknown>[]) {
  return {
    good: readDefsServer(folder, 'good', { tools: [defsTool('search')] }),
    bloat: readDefsServer(folder, 'bloat', { tools: [defsTool('echo'), ...bloat] }),
  };
}

async function startGateway(config: Record<string, unknown>, limits: PinStoreLimits) {
  const gateway = new McpGateway({
    config: parseGatewayConfig({ mcpServers: config }),
    authorizer: new RuleBasedPolicy([{ tool: '*', decision: 'allow' }], { default: 'deny' }),
    pins: await PinStore.open(lockPath(), limits),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

describe('the pin lock file stays readable whatever an upstream lists', () => {
  it('hides definitions over maxDefinitionBytes at first sight and after a reload, storing none; the next start reads the lock', async () => {
    const limits = { maxDefinitionBytes: 4_096, maxLockBytes: 64 * 1024 };
    const first = await startGateway(servers([bloated('huge', 100_000)]), limits);
    expect(first.toolNames()).toEqual(['bloat__echo', 'good__search']);
    expect(first.upstreams.find((entry) => entry.name === 'bloat')?.hidden).toEqual({
      huge: ['definition-too-large'],
    });
    // An already pinned server lists more bloated definitions: hidden, not stored as pending.
    const config = servers([bloated('huge', 100_000), bloated('more', 200_000)]);
    await first.reload({ config: parseGatewayConfig({ mcpServers: config }) });
    expect(first.toolNames()).toEqual(['bloat__echo', 'good__search']);
    const lock = await readFile(lockPath(), 'utf8');
    expect(lock.length).toBeLessThan(8_192);
    expect(lock).not.toContain('AAAAAAAA');
    await first.close();
    const second = await startGateway(config, limits);
    expect(second.toolNames()).toEqual(['bloat__echo', 'good__search']);
  }, 60_000);

  it('fails only the server whose pins would make the lock larger than maxLockBytes; the lock is never written over it', async () => {
    const limits = { maxDefinitionBytes: 4_096, maxLockBytes: 16 * 1024 };
    const many = Array.from({ length: 20 }, (_, index) => bloated(`t${index}`, 3_000));
    const first = await startGateway(servers(many), limits);
    expect(first.toolNames()).toEqual(['good__search']);
    expect(first.upstreams.find((entry) => entry.name === 'bloat')).toMatchObject({
      state: 'failed',
      error: 'GATEWAY_STATE',
    });
    expect((await readFile(lockPath())).byteLength).toBeLessThanOrEqual(16 * 1024);
    await first.close();
    // The next start reads the lock, and the good server is offered again.
    const second = await startGateway(servers(many), limits);
    expect(second.toolNames()).toEqual(['good__search']);
  }, 60_000);
});

describe('a definition too large to pin', () => {
  it('is refused by name, saying it cannot be accepted and naming maxDefinitionBytes (a tool and a prompt)', async () => {
    const { readClient } = await import('./fixtures/read-gateway.js');
    const gateway = await startGateway(
      {
        bloat: readDefsServer(folder, 'bloat', {
          tools: [defsTool('echo'), bloated('huge', 10_000)],
          prompts: [{ name: 'brief', description: 'B'.repeat(10_000) }],
        }),
      },
      { maxDefinitionBytes: 4_096 },
    );
    const client = await readClient(gateway);
    open.push(client);
    const called = await client.callTool({ name: 'bloat__huge', arguments: {} });
    expect(JSON.stringify(called)).toMatch(
      /its definition is larger than the pin store's maxDefinitionBytes, so it was neither pinned nor kept for review and cannot be accepted/,
    );
    await expect(client.getPrompt({ name: 'bloat__brief' })).rejects.toThrow(
      /larger than the pin store's maxDefinitionBytes/,
    );
  }, 60_000);
});
