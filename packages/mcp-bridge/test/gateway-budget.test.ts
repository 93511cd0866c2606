// The gateway's call budgets in one process (`gateway.budget` with the default `memory` URL), and
// a redis:// budget whose Redis cannot be reached: every limit enforced, a refused call explained.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallBudget, RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { gatewayBudget } from '../src/gateway/gateway-budget.js';
import { type GatewayBudgetSettings, parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));

let folder: string;
let callsFile: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-budget-'));
  callsFile = join(folder, 'calls.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function serverCalls(): Promise<string[]> {
  const text = await readFile(callsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { name: string }).name);
}

async function start(budget: Record<string, unknown>, warnings: string[] = []) {
  const config = parseGatewayConfig({
    mcpServers: {
      toolkit: {
        command: process.execPath,
        args: [TOOLKIT],
        env: { CALLS_FILE: callsFile },
        namespace: 'tk',
      },
    },
    gateway: { budget },
  });
  const built = await gatewayBudget(
    config.gateway.budget as GatewayBudgetSettings,
    (tool) => (tool.startsWith('tk__') ? 'toolkit' : undefined),
    (message) => warnings.push(message),
  );
  open.push(built);
  const gateway = new McpGateway({
    config,
    // Read-only runs, destructive is denied.
    authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    budget: built.reserver,
  });
  open.push(gateway);
  await gateway.start();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client({ name: 'budget-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return Object.assign(client, { budget: built.reserver });
}

const text = (result: Record<string, unknown>) =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

const over = (tool: string, limit: string) =>
  `The call to ${tool} is over the gateway's call budget (${limit}), so it did not run.`;

describe('gateway.budget', () => {
  it('holds the gateway-wide maxCalls; a call the policy denies is not counted', async () => {
    const client = await start({ maxCalls: 2 });
    const denied = await client.callTool({ name: 'tk__wipe', arguments: { confirm: true } });
    expect(text(denied)).toContain("denied by the gateway's policy");
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'b' } }))).toBe(
      'note b',
    );
    const third = await client.callTool({ name: 'tk__note', arguments: { id: 'c' } });
    expect(third.isError).toBe(true);
    expect(text(third)).toBe(over('tk__note', 'maxCalls 2 used up'));
    expect(await serverCalls()).toEqual(['note', 'note']);
    const audit = (await readFile(join(folder, 'audit.jsonl'), 'utf8')).trim().split('\n');
    // Each call that ran has its `started` line, written before it went upstream.
    expect(audit.map((line) => JSON.parse(line).outcome)).toEqual([
      'denied',
      'started',
      'ok',
      'started',
      'ok',
      'over-budget',
    ]);
  }, 30_000);

  it('counts perTool limits per tool: one tool used up leaves the other', async () => {
    const client = await start({ perTool: { maxCalls: 1 } });
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'b' } }))).toBe(
      over('tk__note', 'maxCalls 1 used up'),
    );
    expect(
      (await client.callTool({ name: 'tk__slow', arguments: { ms: 1, n: 1 } })).isError,
    ).not.toBe(true);
    expect(await serverCalls()).toEqual(['note', 'slow']);
  }, 30_000);

  it('counts perServer limits across the tools of one server', async () => {
    const client = await start({ perServer: { maxCalls: 2 } });
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await client.callTool({ name: 'tk__slow', arguments: { ms: 1, n: 1 } });
    const third = await client.callTool({ name: 'tk__note', arguments: { id: 'c' } });
    expect(text(third)).toBe(over('tk__note', 'maxCalls 2 used up'));
    expect(await serverCalls()).toEqual(['note', 'slow']);
  }, 30_000);

  it('holds maxConcurrent: a second call while one runs is refused, and runs after it ends', async () => {
    const client = await start({ maxConcurrent: 1 });
    const running = client.callTool({ name: 'tk__slow', arguments: { ms: 2_000, n: 1 } });
    // Wait until the slow call holds its slot (no sleep guessing how long that takes).
    const usage = client.budget as CallBudget;
    while (usage.scopeUsage('gateway').active === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const refused = await client.callTool({ name: 'tk__note', arguments: { id: 'x' } });
    expect(text(refused)).toBe(over('tk__note', 'maxConcurrent 1 running'));
    expect((await running).isError).not.toBe(true);
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'y' } }))).toBe(
      'note y',
    );
  }, 30_000);

  it('fails closed when a redis:// budget cannot be reached, and says so at start', async () => {
    const warnings: string[] = [];
    const client = await start(
      { url: 'redis://127.0.0.1:1', maxCalls: 5, timeoutMs: 300 },
      warnings,
    );
    expect(warnings).toEqual([
      'gateway.budget: Redis cannot be reached yet; calls are refused (fail closed) until it can',
    ]);
    const refused = await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    expect(text(refused)).toBe(
      over('tk__note', 'the shared budget store cannot be reached, and the gateway fails closed'),
    );
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('runs calls without a budget when Redis cannot be reached and onUnavailable is allow', async () => {
    const client = await start({
      url: 'redis://127.0.0.1:1',
      maxCalls: 5,
      timeoutMs: 300,
      onUnavailable: 'allow',
    });
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
  }, 30_000);
});
