import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore, reviewServer } from '../src/gateway/pin-store.js';

const SERVER = fileURLToPath(new URL('./fixtures/proto-tool-server.mjs', import.meta.url));

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-proto-pins-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function start(): Promise<McpGateway> {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: { srv: { command: process.execPath, args: [SERVER] } },
    }),
    authorizer: new RiskPolicy(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  await gateway.start();
  return gateway;
}

const tool = (name: string) => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object' as const },
});

describe('pins of a tool named "__proto__"', () => {
  it('is written to the lock file on first start, and the next start offers the upstream again', async () => {
    const first = await start();
    try {
      expect(first.upstreams[0]?.state).toBe('ready');
      expect(first.toolNames().sort()).toEqual(['srv____proto__', 'srv__echo']);
    } finally {
      await first.close();
    }
    const lock = JSON.parse(await readFile(join(folder, 'toolfence.lock.json'), 'utf8'));
    expect(Object.keys(lock.servers.srv.tools).sort()).toEqual(['__proto__', 'echo']);

    const second = await start();
    try {
      expect(second.upstreams[0]?.state).toBe('ready');
      expect(Object.keys(second.upstreams[0]?.hidden ?? {})).toEqual([]);
      expect(second.toolNames().sort()).toEqual(['srv____proto__', 'srv__echo']);
    } finally {
      await second.close();
    }
  }, 30_000);

  it.each([
    ['pinned at first sight', 'first'],
    ['hidden when it changes, then accepted', 'changed'],
  ] as const)('keeps "__proto__" as an own key: %s', async (_label, mode) => {
    const path = join(folder, 'lock.json');
    const store = await PinStore.open(path);
    store.review('srv', 'node srv', [tool('__proto__')]);
    if (mode === 'changed') {
      const changed = { ...tool('__proto__'), description: 'now different' };
      const review = store.review('srv', 'node srv', [changed]);
      expect([...review.hidden.keys()]).toEqual(['__proto__']);
      expect(store.pending().map((item) => item.tool)).toEqual(['__proto__']);
      const [pending] = store.pending();
      expect(store.accept('srv', '__proto__', pending?.pin.sha256 as string)).toBe(true);
    }
    await store.save();
    const reopened = await PinStore.open(path);
    expect(reopened.pinOf('srv', '__proto__')?.definition.name).toBe('__proto__');
    expect(reopened.pinOf('srv', 'constructor')).toBeUndefined();
    const again = reopened.review('srv', 'node srv', [
      mode === 'changed'
        ? { ...tool('__proto__'), description: 'now different' }
        : tool('__proto__'),
    ]);
    expect([...again.visible]).toEqual(['__proto__']);
    expect(again.hidden.size).toBe(0);
  });

  it('never reads an unpinned "__proto__" or "toString" as pinned', () => {
    const { review } = reviewServer({ tools: {}, pending: {} }, 'id', [
      tool('__proto__'),
      tool('toString'),
    ]);
    expect([...review.hidden.keys()].sort()).toEqual(['__proto__', 'toString']);
    expect([...review.hidden.values()]).toEqual([['new-tool'], ['new-tool']]);
  });
});
