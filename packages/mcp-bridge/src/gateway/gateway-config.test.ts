import { describe, expect, it } from 'vitest';
import { decodeStoreKey, parseGatewayConfig } from './gateway-config.js';

const KEY = 'ab'.repeat(32);
const REMOTE = { url: 'https://mcp.example.com/mcp' };

function parse(gateway: Record<string, unknown>, servers: Record<string, unknown> = {}) {
  return parseGatewayConfig(
    { mcpServers: { remote: { ...REMOTE, ...servers } }, gateway },
    { STORE_KEY: KEY },
  );
}

describe('gateway config: store, budget, pins and per-server oauth', () => {
  it('accepts the replica settings and keeps them', () => {
    const config = parse(
      {
        store: 'postgres://app:secret@db.internal:5432/toolfence',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a config variable, expanded by the parser
        storeKey: '${STORE_KEY}',
        pins: 'postgres://app:secret@db.internal:5432/toolfence',
        budget: {
          url: 'redis://cache.internal:6379',
          maxCalls: 100,
          maxConcurrent: 4,
          perServer: { maxCalls: 50 },
          perTool: { maxConcurrent: 1 },
          keyPrefix: 'team-a:gateway',
          ttlMs: 3_600_000,
          timeoutMs: 500,
          onUnavailable: 'deny',
          cancelHoldMs: 10_000,
        },
      },
      { oauth: { connectionId: 'remote', refreshSkewMs: 30_000 } },
    );
    expect(config.gateway.storeKey).toBe(KEY);
    expect(config.gateway.budget).toMatchObject({
      url: 'redis://cache.internal:6379',
      maxCalls: 100,
      perServer: { maxCalls: 50 },
      cancelHoldMs: 10_000,
    });
    expect(config.mcpServers.remote?.oauth).toEqual({
      connectionId: 'remote',
      refreshSkewMs: 30_000,
    });
  });

  it('defaults the budget to memory and takes the store key from TOOLFENCE_STORE_KEY', () => {
    const config = parseGatewayConfig(
      {
        mcpServers: { remote: { ...REMOTE, oauth: { connectionId: 'c' } } },
        gateway: { store: 'sqlite:store.db', budget: { maxCalls: 3 } },
      },
      { TOOLFENCE_STORE_KEY: Buffer.alloc(32, 7).toString('base64') },
    );
    expect(config.gateway.budget?.url).toBe('memory');
    expect(Buffer.from(decodeStoreKey(config.gateway.storeKey as string) ?? [])).toEqual(
      Buffer.alloc(32, 7),
    );
  });

  it.each([
    ['an unknown gateway key', { stores: 'sqlite:x.db' }, {}, 'gateway: unknown key "stores"'],
    [
      'a store with another scheme',
      { store: 'mysql://db/x', storeKey: KEY },
      {},
      'gateway.store: must be "sqlite:<path>" or "postgres://',
    ],
    [
      'a postgres store URL without a host',
      { store: 'postgres://', storeKey: KEY },
      {},
      'gateway.store: is not a valid postgres:// URL',
    ],
    ['a sqlite store without a path', { store: 'sqlite:', storeKey: KEY }, {}, 'needs a path'],
    ['a store without a key', { store: 'sqlite:x.db' }, {}, 'gateway.store needs a key'],
    [
      'a short store key',
      { store: 'sqlite:x.db', storeKey: 'abcd' },
      {},
      'gateway.storeKey: must be 32 bytes',
    ],
    ['a store key without a store', { storeKey: KEY }, {}, 'applies only with gateway.store'],
    [
      'a pins URL that is not postgres',
      { pins: 'postgresql:nowhere' },
      {},
      'gateway.pins: is not a valid postgres:// URL',
    ],
    [
      'a budget with an unknown key',
      { budget: { maxCall: 3 } },
      {},
      'gateway.budget: unknown key "maxCall"',
    ],
    [
      'a budget URL that is not redis',
      { budget: { url: 'http://cache:6379' } },
      {},
      'gateway.budget.url: must be "memory" or a redis://',
    ],
    [
      'a budget limit that is negative',
      { budget: { maxCalls: -1 } },
      {},
      'gateway.budget.maxCalls: must be a non-negative integer',
    ],
    [
      'a per-tool limit with an unknown key',
      { budget: { perTool: { calls: 1 } } },
      {},
      'gateway.budget.perTool: unknown key "calls"',
    ],
    [
      'a Redis-only key on a memory budget',
      { budget: { ttlMs: 1000 } },
      {},
      '"ttlMs" applies to a redis:// budget only',
    ],
    [
      'a negative cancelHoldMs',
      { budget: { maxConcurrent: 1, cancelHoldMs: -1 } },
      {},
      'gateway.budget.cancelHoldMs: must be an integer from 0 to 86400000',
    ],
    [
      'a cancelHoldMs in seconds as text',
      { budget: { url: 'redis://cache:6379', cancelHoldMs: '30' } },
      {},
      'gateway.budget.cancelHoldMs: must be an integer from 0 to 86400000',
    ],
    [
      'a budget time in seconds',
      { budget: { url: 'redis://cache:6379', ttlSeconds: 60 } },
      {},
      '"ttlSeconds" was renamed to "ttlMs"',
    ],
    [
      'an onUnavailable that is neither deny nor allow',
      { budget: { url: 'redis://cache:6379', onUnavailable: 'retry' } },
      {},
      'gateway.budget.onUnavailable: must be "deny"',
    ],
    [
      'oauth without a store',
      {},
      { oauth: { connectionId: 'c' } },
      'mcpServers.remote.oauth: needs gateway.store',
    ],
    [
      'oauth with an unknown key',
      { store: 'sqlite:x.db', storeKey: KEY },
      { oauth: { connectionId: 'c', clientSecret: 'x' } },
      'mcpServers.remote.oauth: unknown key "clientSecret"',
    ],
    [
      'oauth without a connection id',
      { store: 'sqlite:x.db', storeKey: KEY },
      { oauth: {} },
      'oauth.connectionId: must be a non-empty string',
    ],
    [
      'oauth beside an Authorization header',
      { store: 'sqlite:x.db', storeKey: KEY },
      { oauth: { connectionId: 'c' }, headers: { Authorization: 'Bearer x' } },
      'give either "oauth" or an Authorization header',
    ],
  ])('refuses %s with one clear line', (_name, gateway, server, message) => {
    let thrown: unknown;
    try {
      parse(gateway, server);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'GATEWAY_CONFIG' });
    const text = (thrown as Error).message;
    expect(text).toContain(message);
    expect(text).not.toContain('\n');
    // A URL may carry a password: it is never repeated in the message.
    expect(text).not.toContain('secret');
  });

  it('refuses oauth on a command server', () => {
    expect(() =>
      parseGatewayConfig({
        mcpServers: { local: { command: 'node', oauth: { connectionId: 'c' } } },
        gateway: { store: 'sqlite:x.db', storeKey: KEY },
      }),
    ).toThrow('"oauth" applies to url servers only');
  });

  it('never repeats a store URL with a password in its message', () => {
    expect(() => parse({ store: 'postgres://user:secret@', storeKey: KEY })).toThrow(
      /^gateway\.store: is not a valid postgres:\/\/ URL/,
    );
    try {
      parse({ store: 'postgres://user:secret@', storeKey: KEY });
    } catch (error) {
      expect((error as Error).message).not.toContain('secret');
    }
  });
});
