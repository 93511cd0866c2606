import { describe, expect, it } from 'vitest';
import { approvalStoreUrlOf, parseGatewayConfig, sealKeysOf } from './gateway-config.js';

const A = 'ab'.repeat(32);
const B = 'cd'.repeat(32);

describe('the approval sealing keys and store in the config', () => {
  it('reads gateway.sealKey, else TOOLFENCE_SEAL_KEY, and the previous keys', () => {
    expect(sealKeysOf({}, {})).toBeUndefined();
    const fromEnv = sealKeysOf({}, { TOOLFENCE_SEAL_KEY: A, TOOLFENCE_SEAL_KEY_PREVIOUS: B });
    expect(Buffer.from(fromEnv?.current ?? []).toString('hex')).toBe(A);
    expect(fromEnv?.previous?.map((key) => Buffer.from(key).toString('hex'))).toEqual([B]);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a config variable the gateway expands
    const fromConfig = sealKeysOf({ sealKey: '${MY_SEAL}' }, { MY_SEAL: B });
    expect(Buffer.from(fromConfig?.current ?? []).toString('hex')).toBe(B);
    // The variable is checked where the key is used (a config read for its shape needs none).
    expect(() => sealKeysOf({}, { TOOLFENCE_SEAL_KEY: 'short' })).toThrow(
      /from TOOLFENCE_SEAL_KEY/,
    );
  });

  it.each<[string, Record<string, unknown>, Record<string, string>, RegExp]>([
    [
      'a sealKey of 16 bytes',
      { sealKey: 'ab'.repeat(16) },
      {},
      /gateway\.sealKey: must be 32 bytes/,
    ],
    ['previous keys without a current one', { sealKeyPrevious: A }, {}, /needs a current key/],
    [
      'five previous keys',
      { sealKey: A, sealKeyPrevious: Array(5).fill(B).join(',') },
      {},
      /at most 4/,
    ],
    [
      'a previous key that is not a key',
      { sealKey: A, sealKeyPrevious: `${B},nope` },
      {},
      /each key must be 32 bytes/,
    ],
    ['a sealKey that is a number', { sealKey: 7 }, {}, /gateway\.sealKey: must be a string/],
    [
      'an approvals URL of another scheme',
      { approvals: 'mysql://db/x' },
      {},
      /gateway\.approvals: must be/,
    ],
  ])('refuses %s at parse time', (_label, gateway, env, message) => {
    expect(() => parseGatewayConfig({ mcpServers: {}, gateway }, env)).toThrow(message);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['nothing shared', {}, 'memory'],
    [
      'an explicit store',
      { approvals: 'postgres://u@db.example/x', budget: { url: 'redis://r:6379' } },
      'postgres://u@db.example/x',
    ],
    [
      'a Redis budget',
      { budget: { url: 'redis://r:6379' }, pins: 'postgres://u@db.example/x' },
      'redis://r:6379',
    ],
    ['PostgreSQL pins', { pins: 'postgres://u@db.example/x' }, 'postgres://u@db.example/x'],
    ['a memory budget and file pins', { budget: { maxCalls: 3 }, pins: 'pins.json' }, 'memory'],
  ])('records spent approvals where the replicas share state: %s', (_label, gateway, url) => {
    const config = parseGatewayConfig({ mcpServers: {}, gateway }, {});
    expect(approvalStoreUrlOf(config.gateway)).toBe(url);
  });
});
