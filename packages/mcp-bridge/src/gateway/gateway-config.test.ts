import { describe, expect, it } from 'vitest';
import { GatewayConfigError } from './errors.js';
import {
  auditKeyOf,
  decodeStoreKey,
  GATEWAY_LIMIT_DEFAULTS,
  parseGatewayConfig,
} from './gateway-config.js';
import { DEFAULT_PASSTHROUGH_LIMITS } from './gateway-passthrough.js';
import { DEFAULT_MAX_TOOL_NAME_CHARS } from './mcp-gateway.js';
import { DEFAULT_PIN_LIMITS } from './pin-store.js';

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

describe('gateway config: keys clients write in a server entry (issue 36)', () => {
  const parseWith = (server: Record<string, unknown>, name = 'srv') => {
    const warnings: string[] = [];
    const config = parseGatewayConfig(
      { mcpServers: { [name]: server, other: { command: 'other' } } },
      {},
      { onWarning: (message) => warnings.push(message) },
    );
    return { config, warnings };
  };

  it.each([
    ['disabled: true (Cline, Roo, Windsurf, Claude Desktop extensions)', { disabled: true }],
    ['enabled: false (Codex-style)', { enabled: false }],
  ])('does not start a server with %s, and says so', (_label, flag) => {
    const { config, warnings } = parseWith({ command: 'x', ...flag });
    expect(Object.keys(config.mcpServers)).toEqual(['other']);
    expect(warnings).toEqual([
      expect.stringMatching(/^mcpServers\.srv is (disabled|not enabled): not started$/),
    ]);
  });

  it('does not expand the variables of a disabled server (it may need a secret that is not set)', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config syntax under test
    const { config } = parseWith({ command: '${UNSET_TOKEN}', disabled: true });
    expect(config.mcpServers.srv).toBeUndefined();
  });

  it.each([
    ['disabled: false', { disabled: false }],
    ['enabled: true', { enabled: true }],
  ])('starts a server with %s', (_label, flag) => {
    const { config, warnings } = parseWith({ command: 'x', ...flag });
    expect(config.mcpServers.srv).toMatchObject({ command: 'x' });
    expect(warnings).toEqual([]);
  });

  it.each([
    ['timeout', 60, "the gateway's own start and call limits apply"],
    ['autoApprove', ['delete_file'], "approvals come from the gateway's policy (--policy)"],
    ['alwaysAllow', ['delete_file'], "approvals come from the gateway's policy (--policy)"],
    ['trust', true, "approvals come from the gateway's policy (--policy)"],
    ['description', 'my server', 'descriptions are not used'],
    ['dev', { watch: 'src/**/*.ts' }, "VS Code's watch and debug settings apply"],
    ['gallery', true, 'editor metadata, not used'],
    ['version', '1.0.0', 'editor metadata, not used'],
  ])('reads %s and ignores it with a warning naming it', (key, value, why) => {
    const { config, warnings } = parseWith({ command: 'x', [key]: value });
    expect(config.mcpServers.srv).toEqual({ command: 'x', args: [], namespace: 'srv' });
    expect(warnings).toEqual([expect.stringContaining(`mcpServers.srv.${key} is ignored: ${why}`)]);
  });

  it('never lets autoApprove skip an approval: the entry keeps no trace of it', () => {
    const { config } = parseWith({ command: 'x', autoApprove: ['*'], alwaysAllow: ['*'] });
    expect(JSON.stringify(config)).not.toContain('*');
  });

  it('adds disabledTools (Windsurf, Cline) to deny', () => {
    const { config } = parseWith({ command: 'x', deny: ['a'], disabledTools: ['b', 'a'] });
    expect(config.mcpServers.srv?.deny).toEqual(['a', 'b']);
  });

  it.each([
    ['a key no client writes', { command: 'x', comand: 'y' }, 'unknown key "comand"'],
    ['cwd (it would change what runs)', { command: 'x', cwd: '/' }, 'unknown key "cwd"'],
    [
      'a disabled that is not a boolean',
      { command: 'x', disabled: 'yes' },
      'disabled: must be true or false',
    ],
  ])('still refuses %s, naming it and what is accepted', (_label, server, message) => {
    let thrown: unknown;
    try {
      parseWith(server);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'GATEWAY_CONFIG' });
    expect((thrown as Error).message).toContain(message);
    if (message.startsWith('unknown key')) {
      expect((thrown as Error).message).toMatch(
        /accepted: command, .*disabled, enabled.*; read and ignored: timeout, autoApprove/,
      );
    }
  });

  it.each([
    ['two underscores', 'my__server'],
    ['a leading underscore', '_srv'],
    ['a space', 'my server'],
    ['too long', 'a'.repeat(30)],
    ['a trailing underscore (its tools would be "a___x")', 'a_'],
  ])('names the server whose name cannot be used: %s', (_label, name) => {
    expect(() => parseWith({ command: 'x' }, name)).toThrow(
      `the server name ${JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name)} cannot be used`,
    );
  });

  const RULE =
    '1-24 of letters, digits, "-" and "_", starting with a letter or digit, with no "__" and no "_" at the end';

  it('says what a server name may be', () => {
    expect(() => parseWith({ command: 'x' }, 'a_')).toThrow(`a server name is ${RULE}`);
  });

  it.each([
    ['a trailing underscore', 'x_'],
    ['two underscores', 'x__y'],
  ])('refuses a namespace with %s, saying what is accepted', (_label, namespace) => {
    expect(() => parseWith({ command: 'x', namespace })).toThrow(`namespace is ${RULE}`);
  });

  it('accepts names with single underscores inside and dashes anywhere but first', () => {
    const config = parseGatewayConfig({
      mcpServers: { my_server: { command: 'x' }, 'b-2-': { command: 'x', namespace: 'b_2-x' } },
    });
    expect(config.mcpServers.my_server?.namespace).toBe('my_server');
    expect(config.mcpServers['b-2-']?.namespace).toBe('b_2-x');
  });

  it('escapes control characters in a server name it shows', () => {
    expect(() => parseWith({ command: 'x' }, 'bad\u001b[31mname\u202e')).toThrow(
      /the server name "bad\\u001b\[31mname\\u202e" cannot be used/,
    );
  });

  it('keeps an env or header key named "__proto__" like any other key', () => {
    const config = parseGatewayConfig(
      JSON.parse(
        '{"mcpServers":{"a":{"command":"x","env":{"__proto__":"1","B":"2"}},"b":{"url":"https://h.example/mcp","headers":{"__proto__":"v"}}}}',
      ),
    );
    expect(Object.keys(config.mcpServers.a?.env ?? {})).toEqual(['__proto__', 'B']);
    expect(Object.keys(config.mcpServers.b?.headers ?? {})).toEqual(['__proto__']);
  });
});

describe('gateway audit and approval settings', () => {
  const parse = (gateway: Record<string, unknown>, env: Record<string, string> = {}) =>
    parseGatewayConfig({ mcpServers: {}, gateway }, env);

  it('takes the audit key from gateway.auditKey (variables expanded), else TOOLFENCE_AUDIT_KEY where used', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config syntax under test
    const settings = parse({ auditKey: '${MY_KEY}' }, { MY_KEY: KEY }).gateway;
    expect(settings.auditKey).toBe(KEY);
    expect(Buffer.from(auditKeyOf(settings, {}) ?? [])).toEqual(Buffer.from(KEY, 'hex'));
    // The variable is read where the key is used: a config read for its shape needs none.
    const bare = parse({}, { TOOLFENCE_AUDIT_KEY: 'not a key' }).gateway;
    expect(Buffer.from(auditKeyOf(bare, { TOOLFENCE_AUDIT_KEY: KEY }) ?? [])).toEqual(
      Buffer.from(KEY, 'hex'),
    );
    expect(auditKeyOf(bare, {})).toBeUndefined();
    expect(() => auditKeyOf(bare, { TOOLFENCE_AUDIT_KEY: 'abcd' })).toThrow(
      'gateway.auditKey: must be 32 bytes: 64 hex digits or 44 characters of base64 (from TOOLFENCE_AUDIT_KEY)',
    );
  });

  it('keeps gateway.auditMaxBatchLines from 1 to 10,000', () => {
    expect(parse({ auditMaxBatchLines: 1 }).gateway.auditMaxBatchLines).toBe(1);
    expect(parse({ auditMaxBatchLines: 10_000 }).gateway.auditMaxBatchLines).toBe(10_000);
  });

  it.each([
    ['a short auditKey', { auditKey: 'abcd' }, {}, 'gateway.auditKey: must be 32 bytes'],
    ['an auditFsync that is not a boolean', { auditFsync: 'yes' }, {}, 'gateway.auditFsync'],
    [
      'an auditMaxBatchLines of 0',
      { auditMaxBatchLines: 0 },
      {},
      'gateway.auditMaxBatchLines: must be an integer from 1 to 10,000',
    ],
    [
      'an auditMaxBatchLines over 10,000',
      { auditMaxBatchLines: 10_001 },
      {},
      'gateway.auditMaxBatchLines: must be an integer from 1 to 10,000',
    ],
    [
      'an auditMaxBatchLines that is not an integer',
      { auditMaxBatchLines: 2.5 },
      {},
      'gateway.auditMaxBatchLines: must be an integer from 1 to 10,000',
    ],
    [
      'an approvalMaxArgumentChars of 0',
      { approvalMaxArgumentChars: 0 },
      {},
      'gateway.approvalMaxArgumentChars: must be a positive integer',
    ],
  ])('refuses %s', (_name, gateway, env, message) => {
    expect(() => parse(gateway, env)).toThrow(message);
  });
});

describe("gateway config: the library's limits (pin store, tool names, passthrough)", () => {
  const limits = {
    maxToolNameChars: 64,
    pinsMaxDefinitionBytes: 4_096,
    pinsMaxPendingPerServer: 10,
    pinsMaxLockBytes: 1_048_576,
    passthroughMaxReadUriChars: 1_024,
    passthroughMaxTemplateExpressions: 4,
    passthroughMaxTemplateMatchWork: 100_000,
  };

  it('keeps each key as given', () => {
    expect(parse(limits).gateway).toMatchObject(limits);
  });

  it("states the library's defaults", () => {
    expect(GATEWAY_LIMIT_DEFAULTS).toEqual({
      maxToolNameChars: DEFAULT_MAX_TOOL_NAME_CHARS,
      pinsMaxDefinitionBytes: DEFAULT_PIN_LIMITS.maxDefinitionBytes,
      pinsMaxPendingPerServer: DEFAULT_PIN_LIMITS.maxPendingPerServer,
      pinsMaxLockBytes: DEFAULT_PIN_LIMITS.maxLockBytes,
      passthroughMaxReadUriChars: DEFAULT_PASSTHROUGH_LIMITS.maxReadUriChars,
      passthroughMaxTemplateExpressions: DEFAULT_PASSTHROUGH_LIMITS.maxTemplateExpressions,
      passthroughMaxTemplateMatchWork: DEFAULT_PASSTHROUGH_LIMITS.maxTemplateMatchWork,
    });
  });

  const cases = Object.entries({
    maxToolNameChars: '512',
    pinsMaxDefinitionBytes: '131072',
    pinsMaxPendingPerServer: '1000',
    pinsMaxLockBytes: '16777216',
    passthroughMaxReadUriChars: '8192',
    passthroughMaxTemplateExpressions: '32',
    passthroughMaxTemplateMatchWork: '20000000',
  }).flatMap(([key, fallback]) =>
    [0, -1, 2.5, '64', null, Number.MAX_SAFE_INTEGER + 1].map(
      (value) => [key, value, fallback] as const,
    ),
  );
  it.each(cases)('refuses gateway.%s: %j, naming what is accepted', (key, value, fallback) => {
    expect(() => parse({ [key]: value })).toThrow(
      `gateway.${key}: must be a whole number of at least 1 (default ${fallback})`,
    );
    try {
      parse({ [key]: value });
    } catch (error) {
      expect(error).toBeInstanceOf(GatewayConfigError);
      expect((error as GatewayConfigError).details).toEqual({ at: `gateway.${key}` });
    }
  });

  it('refuses gateway.pinsMaxLockBytes with a postgres:// pin table (it bounds a lock file)', () => {
    expect(() =>
      parse({ pins: 'postgres://app@db.internal/toolfence', pinsMaxLockBytes: 1_048_576 }),
    ).toThrow('gateway.pinsMaxLockBytes: applies only to a pin lock file');
    expect(
      parse({ pins: 'postgres://app@db.internal/toolfence', pinsMaxDefinitionBytes: 4_096 }).gateway
        .pinsMaxDefinitionBytes,
    ).toBe(4_096);
  });

  it('refuses a misspelled limit key', () => {
    expect(() => parse({ pinMaxDefinitionBytes: 4_096 })).toThrow('pinMaxDefinitionBytes');
  });
});
