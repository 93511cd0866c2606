import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApprovalGrants, type ApprovalRefusal } from './approval-grants.js';
import { type ApprovalSpentStore, MemorySpentApprovals } from './approval-spent-store.js';
import { GatewayStateError } from './errors.js';
import {
  type ApprovalBinding,
  ApprovalSeal,
  DEFAULT_MAX_REQUEST_STATE_CHARS,
  SEALED_APPROVAL_VERSION,
} from './sealed-approval.js';
import { SEALED_SESSION_VERSION, SessionSeal } from './session-seal.js';

const KEY = randomBytes(32);
const CALL: ApprovalBinding = {
  principal: 'https://issuer.example|alice',
  tool: 'tk__publish',
  pin: `sha256:${'1'.repeat(64)}`,
  argumentsDigest: `sha256:${'2'.repeat(64)}`,
};
const TTL = 60_000;
const SESSION_STATE = {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'c' },
};

/** A legacy session id sealed with the same key for the same principal (`tfs1.<id>.<bytes>`). */
const sessionId = (): string =>
  new SessionSeal({ current: KEY }, TTL).seal(CALL.principal, SESSION_STATE) as string;

function grants(options: { now?: () => number; spent?: ApprovalSpentStore; key?: Buffer } = {}) {
  const now = options.now ?? (() => 1_000_000);
  const seal = new ApprovalSeal({ keys: { current: options.key ?? KEY }, ttlMs: TTL, now });
  return new ApprovalGrants(seal, options.spent ?? new MemorySpentApprovals(100, now), now);
}

/** Flips one character of the sealed bytes at `index` (from the end when negative). */
function flip(state: string, index: number): string {
  const [version, id, body] = state.split('.') as [string, string, string];
  const bytes = Buffer.from(body, 'base64url');
  const at = index < 0 ? bytes.length + index : index;
  bytes[at] = (bytes[at] as number) ^ 0x01;
  return `${version}.${id}.${bytes.toString('base64url')}`;
}

describe('sealed approvals', () => {
  it('honours the exact call once, on any gateway holding the key', async () => {
    const asking = grants();
    const state = asking.issue(CALL);
    expect(state.startsWith(`${SEALED_APPROVAL_VERSION}.`)).toBe(true);
    // Another replica: its own seal instance with the same key, the same spent store.
    const spent = new MemorySpentApprovals(100, () => 1_000_000);
    const other = grants({ spent });
    expect(await other.redeem(state, CALL)).toBeUndefined();
    expect(await other.redeem(state, CALL)).toBe('replayed');
  });

  type Attack = readonly [
    string,
    (state: string) => { state: unknown; call?: Partial<ApprovalBinding>; at?: number },
    ApprovalRefusal,
  ];
  it.each<Attack>([
    ['no requestState at all', () => ({ state: undefined }), 'unknown'],
    ['a requestState that is not a string', () => ({ state: { id: 1 } }), 'unknown'],
    [
      'a random token of the right shape',
      () => ({ state: `tfa2.AAAAAAAAAAA.${'A'.repeat(120)}` }),
      'unknown',
    ],
    [
      'a token forged under another key',
      () => ({ state: grants({ key: randomBytes(32) }).issue(CALL) }),
      'unknown',
    ],
    ['the previous format (tfa1)', () => ({ state: `tfa1.${'A'.repeat(43)}` }), 'forged'],
    ['a first sealed byte flipped (IV)', (state) => ({ state: flip(state, 0) }), 'forged'],
    ['a ciphertext byte flipped', (state) => ({ state: flip(state, 14) }), 'forged'],
    // A session id of the same caller sealed with the same shared key is not an approval: its
    // version tag, its key id (HMAC of its own purpose label) and its AEAD key (HKDF with that
    // label) all differ.
    ['a sealed session id of the same caller and key', () => ({ state: sessionId() }), 'forged'],
    [
      'a sealed session id relabelled with the approval version tag',
      () => ({ state: sessionId().replace(/^tfs1\./, 'tfa2.') }),
      'unknown',
    ],
    [
      'a sealed session id relabelled with the approval version tag and key id',
      (state) => {
        const [, body] = /^tfs1\.[^.]+\.(.+)$/.exec(sessionId()) as unknown as [string, string];
        return { state: `tfa2.${state.split('.')[1]}.${body}` };
      },
      'forged',
    ],
    ['a tag byte flipped', (state) => ({ state: flip(state, -1) }), 'forged'],
    [
      'the version of the header changed (associated data)',
      (state) => ({ state: state.replace(/^tfa2/, 'tfa3') }),
      'forged',
    ],
    ['the sealed bytes cut short', (state) => ({ state: state.slice(0, 30) }), 'forged'],
    [
      'a token over maxRequestStateChars',
      (state) => ({ state: `${state}${'A'.repeat(DEFAULT_MAX_REQUEST_STATE_CHARS)}` }),
      'forged',
    ],
    ['an expired approval', (state) => ({ state, at: 1_000_000 + TTL }), 'expired'],
    [
      'an approval of another principal',
      (state) => ({ state, call: { principal: 'https://issuer.example|mallory' } }),
      'other-principal',
    ],
    [
      'an approval of the same subject at another issuer',
      (state) => ({ state, call: { principal: 'https://evil.example|alice' } }),
      'other-principal',
    ],
    ['another tool', (state) => ({ state, call: { tool: 'tk__wipe' } }), 'mismatch'],
    [
      'another definition pin',
      (state) => ({ state, call: { pin: `sha256:${'3'.repeat(64)}` } }),
      'mismatch',
    ],
    [
      'other arguments',
      (state) => ({ state, call: { argumentsDigest: `sha256:${'4'.repeat(64)}` } }),
      'mismatch',
    ],
  ])('refuses %s', async (_label, attack, refusal) => {
    let now = 1_000_000;
    const gateway = grants({ now: () => now });
    const presented = attack(gateway.issue(CALL));
    if (presented.at !== undefined) now = presented.at;
    expect(await gateway.redeem(presented.state, { ...CALL, ...presented.call })).toBe(refusal);
  });

  it.each<[string, (approval: string, session: string) => string]>([
    ['an approval as issued', (approval) => approval],
    [
      'an approval relabelled with the session version tag and key id',
      (approval, session) =>
        `${SEALED_SESSION_VERSION}.${session.split('.')[1]}.${approval.split('.')[2]}`,
    ],
  ])('a session seal with the same key does not open %s', (_label, make) => {
    const approval = grants().issue(CALL);
    const sessions = new SessionSeal({ current: KEY }, TTL);
    const session = sessions.seal(CALL.principal, SESSION_STATE) as string;
    expect(sessions.open(session, CALL.principal)).toEqual(SESSION_STATE);
    expect(session.split('.')[1]).not.toBe(approval.split('.')[1]);
    expect(sessions.open(make(approval, session), CALL.principal)).toBeUndefined();
  });

  it('spends an approval presented for other arguments; one of another caller or expired is not spent', async () => {
    const gateway = grants();
    const state = gateway.issue(CALL);
    expect(await gateway.redeem(state, { ...CALL, principal: 'someone|else' })).toBe(
      'other-principal',
    );
    expect(await gateway.redeem(state, { ...CALL, argumentsDigest: 'sha256:x' })).toBe('mismatch');
    expect(await gateway.redeem(state, CALL)).toBe('replayed');
  });

  it('opens what a previous key sealed after rotation, and refuses it once that key is dropped', async () => {
    const old = randomBytes(32);
    const next = randomBytes(32);
    const now = () => 1_000_000;
    const state = new ApprovalSeal({ keys: { current: old }, ttlMs: TTL, now }).seal(CALL);
    const rotated = new ApprovalGrants(
      new ApprovalSeal({ keys: { current: next, previous: [old] }, ttlMs: TTL, now }),
      new MemorySpentApprovals(),
      now,
    );
    expect(await rotated.redeem(state, CALL)).toBeUndefined();
    // What the rotated gateway seals is under the new key.
    const fresh = rotated.issue(CALL);
    const dropped = new ApprovalGrants(
      new ApprovalSeal({ keys: { current: next }, ttlMs: TTL, now }),
      new MemorySpentApprovals(),
      now,
    );
    expect(await dropped.redeem(state, CALL)).toBe('unknown');
    expect(await dropped.redeem(fresh, CALL)).toBeUndefined();
  });

  it('seals under a random key of its own without keys: another gateway cannot open it', async () => {
    const seal = new ApprovalSeal({ ttlMs: TTL });
    expect(seal.ephemeral).toBe(true);
    const state = seal.seal(CALL);
    expect(new ApprovalSeal({ ttlMs: TTL }).open(state)).toBe('unknown');
    expect(seal.open(state)).toMatchObject({ tool: CALL.tool, pin: CALL.pin });
  });

  it('fails closed when the spent store cannot record the approval', async () => {
    const broken: ApprovalSpentStore = {
      kind: 'redis',
      spend: async () => {
        throw new GatewayStateError('Redis could not record a spent approval');
      },
      close: async () => undefined,
    };
    const gateway = grants({ spent: broken });
    expect(await gateway.redeem(gateway.issue(CALL), CALL)).toBe('unavailable');
  });

  it('refuses an unknown option and a key that is not 32 bytes', () => {
    expect(() => new ApprovalSeal({ ttlMs: 1, keyring: [] } as never)).toThrow(/unknown option/);
    expect(
      () => new ApprovalSeal({ ttlMs: 1, keys: { current: KEY, previous: [randomBytes(31)] } }),
    ).toThrow(/sealKeyPrevious must be 32 bytes/);
  });
});

describe('MemorySpentApprovals', () => {
  it('refuses one more than maxEntries unexpired spends, and takes new ones once old ones expire', async () => {
    let now = 0;
    const store = new MemorySpentApprovals(2, () => now);
    expect(await store.spend('a', 1_000)).toBe(true);
    expect(await store.spend('b', 1_000)).toBe(true);
    await expect(store.spend('c', 1_000)).rejects.toMatchObject({ code: 'GATEWAY_STATE' });
    expect(await store.spend('a', 1_000)).toBe(false);
    // Past expiry plus the clock-skew margin, the entries are pruned.
    now = 1_000 + 60_000;
    expect(await store.spend('c', 100_000)).toBe(true);
    expect(store.size).toBe(1);
  });
});
