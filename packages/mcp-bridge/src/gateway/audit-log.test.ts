import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  truncateSync,
} from 'node:fs';
import {
  link,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AuditHead,
  AuditHeadFile,
  auditKeyId,
  encodeAuditHead,
  lineHash,
  readAuditHead,
} from './audit-head.js';
import {
  AUDIT_TEXT_MAX_CHARS,
  type AuditEntry,
  AuditLog,
  type AuditLogOptions,
  auditText,
  DEFAULT_AUDIT_MAX_BATCH_LINES,
  verifyAuditChain,
  verifyAuditLog,
} from './audit-log.js';
import { canonicalJson } from './canonical-json.js';

let folder: string;
let path: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-audit-'));
  path = join(folder, 'audit.jsonl');
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const entry = (n: number): AuditEntry => ({
  time: new Date(n).toISOString(),
  tool: `s__t${n}`,
  pin: 'sha256:0',
  argumentsDigest: `sha256:${n}`,
  decision: 'allow',
  outcome: 'ok',
});

const KEY = randomBytes(32);
const OTHER_KEY = randomBytes(32);

const lines = async (file: string) =>
  (await readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const tools = async (file: string) => (await lines(file)).map((line) => line.tool);

/** Writes `count` lines through a log (rotating at `maxBytes`) and closes it. */
async function written(count: number, options: AuditLogOptions = {}, maxBytes = 1024 * 1024) {
  const log = new AuditLog(path, maxBytes, options);
  for (let n = 0; n < count; n += 1) await log.append(entry(n));
  await log.close();
}

/** Rewrites `file`'s lines from `from` on with a recomputed chain (what an editor of the file can do). */
async function recompute(
  file: string,
  edit: (line: Record<string, unknown>, index: number) => void,
  key?: Uint8Array,
) {
  const out: string[] = [];
  let previous: string | undefined;
  for (const [index, line] of (await lines(file)).entries()) {
    const { previous: own, hash: _hash, ...rest } = line;
    edit(rest, index);
    const link = previous ?? (own as string);
    const hash = lineHash(key, link, canonicalJson(rest));
    out.push(JSON.stringify({ ...rest, previous: link, hash }));
    previous = hash;
  }
  await writeFile(file, `${out.join('\n')}\n`);
  return previous as string;
}

/** The edit of the rows below: the second line's decision becomes `deny`. */
const denySecond = (line: Record<string, unknown>, index: number) => {
  if (index === 1) line.decision = 'deny';
};

async function keepLines(file: string, pick: (all: string[]) => string[]) {
  const all = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  await writeFile(file, `${pick(all).join('\n')}\n`);
}

describe('the audit head record', () => {
  const KEY = new Uint8Array(32).fill(7);
  const seal = (lines: number, start: string, last: string) => ({ lines, start, last });
  // The record built field by field holds what the plain definition wrote: the body and its check
  // over the body's canonical JSON. Key order in the record is free (the check is canonical).
  const heads: [string, AuditHead, Uint8Array | undefined][] = [
    ['a fresh chain', { total: 0, current: seal(0, 'genesis', 'genesis') }, undefined],
    ['an unkeyed chain', { total: 3, current: seal(3, 'genesis', 'sha256:ab') }, undefined],
    [
      'a rotated unkeyed chain',
      {
        total: 9,
        current: seal(2, 'sha256:cd', 'sha256:ef'),
        rotated: seal(7, 'genesis', 'sha256:cd'),
      },
      undefined,
    ],
    [
      'a keyed chain',
      { total: 1, current: seal(1, 'genesis', 'hmac-sha256:01'), keyId: auditKeyId(KEY) },
      KEY,
    ],
    [
      'a rotated keyed chain, rotated written after the key id',
      {
        total: 12,
        current: seal(1, 'hmac-sha256:02', 'hmac-sha256:03'),
        keyId: auditKeyId(KEY),
        rotated: seal(11, 'genesis', 'hmac-sha256:02'),
      },
      KEY,
    ],
  ];
  it.each(heads)(
    "%s: the plain definition's record, read back as written",
    async (_name, head, key) => {
      const body = { format: 'toolfence-audit-head/1', ...head };
      const reference = {
        ...body,
        check: lineHash(key, 'toolfence-audit-head', canonicalJson(body)),
      };
      const record = encodeAuditHead(head, key);
      expect(record.length).toBe(1024);
      expect(record[1023]).toBe(0x0a);
      expect(JSON.parse(record.toString('utf8'))).toEqual(reference);
      await writeFile(`${path}.head`, record);
      expect(readAuditHead(`${path}.head`, key)).toEqual(head);
    },
  );
});

describe('the head file reuses what its records share', () => {
  const seal = (lines: number, start: string, last: string) => ({ lines, start, last });
  // One head file seals these in turn: what it reuses from one record to the next (the rotated
  // seal's JSON, the key id's) must never outlive a change of them.
  const rotatedA = seal(7, 'genesis', 'sha256:cd');
  const sequence: AuditHead[] = [
    { total: 7, current: seal(0, 'sha256:cd', 'sha256:cd'), rotated: rotatedA },
    { total: 8, current: seal(1, 'sha256:cd', 'sha256:e1'), rotated: rotatedA },
    // Rotated again: another rotated seal.
    {
      total: 9,
      current: seal(0, 'sha256:e1', 'sha256:e1'),
      rotated: seal(1, 'sha256:cd', 'sha256:e1'),
    },
    // The same values in a new object, then other values with the same line count.
    {
      total: 9,
      current: seal(0, 'sha256:e1', 'sha256:e1'),
      rotated: seal(1, 'sha256:cd', 'sha256:e1'),
    },
    {
      total: 10,
      current: seal(1, 'sha256:e2', 'sha256:e3'),
      rotated: seal(1, 'sha256:cd', 'sha256:e2'),
    },
    // Only the rotated line count differs.
    {
      total: 11,
      current: seal(1, 'sha256:e2', 'sha256:e3'),
      rotated: seal(2, 'sha256:cd', 'sha256:e2'),
    },
    { total: 12, current: seal(2, 'sha256:e2', 'sha256:e4') },
  ];
  it.each([
    { name: 'unkeyed', key: undefined },
    { name: 'keyed', key: new Uint8Array(32).fill(9) },
  ])('$name: each record is the one encodeAuditHead writes, and reads back', async ({ key }) => {
    const file = new AuditHeadFile(`${path}.head`, key, false);
    try {
      for (const head of sequence) {
        const sealed = key === undefined ? head : { ...head, keyId: auditKeyId(key) };
        file.seal(sealed);
        expect(await readFile(`${path}.head`)).toEqual(encodeAuditHead(sealed, key));
        expect(readAuditHead(`${path}.head`, key)).toEqual(sealed);
      }
    } finally {
      file.close();
    }
  });
});

describe('AuditLog', () => {
  // Appends issued together, in rounds: the first ones wait for the log to open, the later ones
  // are written at once; the file keeps the order they were issued in.
  it.each([1, 2, 5, 50])(
    'keeps the issue order of %d appends started together, across a reopen',
    async (count) => {
      await written(1);
      const log = new AuditLog(path, 1024 * 1024);
      for (let round = 0; round < 3; round += 1) {
        const issued = Array.from({ length: count }, (_, n) => 1 + round * count + n);
        const appended = await Promise.all(issued.map((n) => log.append(entry(n))));
        expect(appended.map((line) => line.tool)).toEqual(issued.map((n) => `s__t${n}`));
      }
      await log.close();
      const expected = Array.from({ length: 1 + 3 * count }, (_, n) => `s__t${n}`);
      expect(await tools(path)).toEqual(expected);
      expect(await verifyAuditLog(path, 'genesis')).toEqual({ ok: true, lines: expected.length });
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: expected.length });
    },
  );

  it('keeps one chain across rotations, sealed in the head, and a keyed chain is HMAC', async () => {
    await written(12, { key: KEY }, 600);
    const rotated = await lines(`${path}.1`);
    const current = await lines(path);
    expect(current[0]?.previous).toBe(rotated.at(-1)?.hash);
    expect(String(current[0]?.hash)).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    const report = await verifyAuditChain(path, { key: KEY });
    expect(report).toMatchObject({ ok: true, keyed: true, unsealed: 0 });
    expect(report.lines + report.rotatedLines).toBeLessThanOrEqual(12);
    const head = JSON.parse(await readFile(`${path}.head`, 'utf8'));
    expect(head).toMatchObject({ total: 12, current: { lines: current.length } });
    // Reopened with the same key, the chain goes on.
    await written(3, { key: KEY }, 600);
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true });
  });

  it('says how many lines the head counts as rotated away, no longer on disk', async () => {
    await written(12, {}, 600);
    const report = await verifyAuditChain(path);
    const away = 12 - report.lines - report.rotatedLines;
    expect(away).toBeGreaterThan(0);
    expect(report).toMatchObject({ ok: true, rotatedAway: away });
    expect(report.message).toContain(
      `; the head counts ${away} earlier line(s), rotated away (one .1 generation is kept)`,
    );
    await rm(path, { force: true });
    await rm(`${path}.1`, { force: true });
    await rm(`${path}.head`, { force: true });
    await written(2);
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, rotatedAway: 0 });
    expect((await verifyAuditChain(path)).message).not.toContain('rotated away');
  });

  // Each line is `JSON.stringify({ ...entry, previous, hash })`, byte for byte, and verifies;
  // the line is built without the spread (a copy V8 makes faster), whatever the entry holds.
  it.each<{ name: string; entry: AuditEntry }>([
    { name: 'a plain call', entry: entry(7) },
    {
      name: 'every optional field, nested principal and flow',
      entry: {
        time: '2026-01-01T00:00:00.000Z',
        kind: 'resource',
        tool: 'files__resource:file:///tmp/a b',
        pin: 'sha256:1',
        argumentsDigest: 'sha256:2',
        principal: { issuer: 'https://id.example', subject: 'alice' },
        decision: 'ask',
        approvedBy: 'console',
        outcome: 'ok',
        resultDigest: 'sha256:3',
        observed: true,
        session: 'connection:1',
        flow: { verdict: 'deny', enforced: true, sink: 's__t', exposedBy: ['a'], privateFrom: [] },
      },
    },
    {
      name: 'quotes, controls, a lone surrogate and non-ASCII text',
      entry: { ...entry(8), tool: 'a"b\\c\n\u0001\ud800é😀' },
    },
    {
      name: 'members set to undefined',
      entry: { ...entry(9), approvedBy: undefined, resultDigest: undefined },
    },
    // Not one the gateway makes: the link is then the line's only members.
    { name: 'an empty entry', entry: {} as AuditEntry },
    {
      name: 'an own __proto__ member (an entry parsed from JSON)',
      entry: JSON.parse(
        '{"time":"t","tool":"s__t","__proto__":{"x":1},"pin":"p","argumentsDigest":"d","decision":"allow","outcome":"ok"}',
      ),
    },
  ])(
    '$name: the line is the canonical entry and its link, byte for byte, holds the spread entry, and verifies',
    async ({ entry: one }) => {
      const log = new AuditLog(path, 1024 * 1024, { key: KEY });
      const first = await log.append(entry(1));
      const line = await log.append(one);
      await log.close();
      const canonical = canonicalJson(one);
      const hash = lineHash(KEY, first.hash, canonical);
      const expected = { ...one, previous: first.hash, hash };
      expect(line).toStrictEqual(expected);
      // The bytes the hash is over, then the link; an own `__proto__` keeps the spread's text.
      expect(onDisk()[1]).toBe(
        Object.hasOwn(one, '__proto__')
          ? JSON.stringify(expected)
          : `${canonical === '{}' ? '{' : `${canonical.slice(0, -1)},`}"previous":"${first.hash}","hash":"${hash}"}`,
      );
      expect(JSON.parse(onDisk()[1] as string)).toStrictEqual(JSON.parse(JSON.stringify(expected)));
      expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true, lines: 2 });
    },
  );

  it('chains the flow labels and session of a line: changing them breaks the chain', async () => {
    const log = new AuditLog(path, 1024 * 1024, { key: KEY });
    await log.append(entry(0));
    await log.append({
      ...entry(1),
      tool: 'publisher__publish',
      decision: 'deny',
      outcome: 'denied',
      session: 'connection:1',
      flow: {
        verdict: 'deny',
        enforced: true,
        sink: 'publisher__publish',
        exposedBy: ['tracker__get_issue'],
        privateFrom: ['repo__read_file'],
      },
    });
    await log.append(entry(2));
    await log.close();
    expect((await lines(path))[1]).toMatchObject({
      session: 'connection:1',
      flow: { exposedBy: ['tracker__get_issue'], privateFrom: ['repo__read_file'] },
    });
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true, lines: 3 });
    // Someone who can write the file drops the private source from the line (keeping the JSON).
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace('"privateFrom":["repo__read_file"]', '"privateFrom":[]'));
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: false });
    expect(await verifyAuditLog(path, undefined, { key: KEY })).toMatchObject({
      ok: false,
      brokenAt: 2,
      reason: 'hash-mismatch',
    });
  });

  it('refuses unknown options and a key that is not 32 bytes', () => {
    expect(() => new AuditLog(path, 1, { keys: KEY } as never)).toThrow(/keys/);
    expect(() => new AuditLog(path, 1, { key: randomBytes(16) })).toThrow(/32 bytes/);
  });
});

// Each row: what someone who can write the files does to them once the gateway stopped, and what
// `audit verify` (verifyAuditChain) then says. The gateway refuses to open the same log.
type Attack = {
  name: string;
  key?: Uint8Array;
  maxBytes?: number;
  count?: number;
  attack: () => Promise<void>;
  problem: string;
};
const attacks: Attack[] = [
  {
    name: 'cut the last lines',
    attack: () => keepLines(path, (all) => all.slice(0, -2)),
    problem: 'cut',
  },
  {
    name: 'cut the last line, keyed',
    key: KEY,
    attack: () => keepLines(path, (all) => all.slice(0, -1)),
    problem: 'cut',
  },
  { name: 'delete the log', attack: () => unlink(path), problem: 'log-missing' },
  {
    name: 'empty the log',
    attack: () => writeFile(path, ''),
    problem: 'cut',
  },
  {
    name: 'cut the head of .1',
    maxBytes: 600,
    attack: () => keepLines(`${path}.1`, (all) => all.slice(1)),
    problem: 'rotated-cut',
  },
  {
    name: 'delete .1',
    maxBytes: 600,
    attack: () => unlink(`${path}.1`),
    problem: 'rotated-cut',
  },
  {
    name: 'delete the current file while .1 exists',
    maxBytes: 600,
    attack: () => unlink(path),
    problem: 'log-missing',
  },
  {
    name: 'delete the head',
    attack: () => unlink(`${path}.head`),
    problem: 'head-missing',
  },
  {
    name: 'edit a line',
    attack: async () => {
      const text = await readFile(path, 'utf8');
      await writeFile(path, text.replace('"decision":"allow"', '"decision":"deny"'));
    },
    problem: 'hash-mismatch',
  },
  {
    name: 'edit a line and recompute the chain (unkeyed), head left as it is',
    attack: async () => {
      await recompute(path, denySecond);
    },
    problem: 'head-mismatch',
  },
  {
    name: 'edit a line and recompute the chain without the key, head left as it is',
    key: KEY,
    attack: async () => {
      await recompute(path, denySecond);
    },
    problem: 'hash-mismatch',
  },
  {
    name: 'edit a line, recompute the chain and write an unkeyed head, on a keyed log',
    key: KEY,
    attack: async () => {
      const last = await recompute(path, denySecond);
      const head = { total: 6, current: { lines: 6, start: 'genesis', last } };
      await writeFile(`${path}.head`, encodeAuditHead(head, undefined));
    },
    problem: 'key-unexpected',
  },
  {
    name: 'edit a line, recompute chain and head with a guessed key',
    key: KEY,
    attack: async () => {
      const last = await recompute(path, denySecond, OTHER_KEY);
      const head = { total: 6, current: { lines: 6, start: 'genesis', last } };
      await writeFile(
        `${path}.head`,
        encodeAuditHead({ ...head, keyId: (await keyIdOf()) as string }, OTHER_KEY),
      );
    },
    problem: 'head-damaged',
  },
  {
    name: 'cut the last line and reseal the head without the key (keyId kept)',
    key: KEY,
    attack: async () => {
      await keepLines(path, (all) => all.slice(0, -1));
      const kept = await lines(path);
      const head = {
        total: 5,
        current: { lines: 5, start: 'genesis', last: kept.at(-1)?.hash as string },
        keyId: (await keyIdOf()) as string,
      };
      const record = encodeAuditHead(head, undefined);
      await writeFile(`${path}.head`, record);
    },
    problem: 'head-damaged',
  },
  {
    name: 'tear the head (half a record)',
    attack: async () => {
      const record = await readFile(`${path}.head`);
      await writeFile(
        `${path}.head`,
        Buffer.concat([record.subarray(0, 40), record.subarray(40).fill(0x7b)]),
      );
    },
    problem: 'head-damaged',
  },
  {
    name: 'corrupt the last line',
    attack: async () => {
      await writeFile(path, `${(await readFile(path, 'utf8')).slice(0, -20)}\n`);
    },
    problem: 'not-json',
  },
];

async function keyIdOf(): Promise<unknown> {
  return JSON.parse(await readFile(`${path}.head`, 'utf8')).keyId;
}

describe('audit verify and the gateway, against someone who can write the files', () => {
  it.each(attacks)(
    '$name: verify fails ($problem) and the log is not continued',
    async ({ key, maxBytes, count, attack, problem }) => {
      const options = key === undefined ? {} : { key };
      await written(count ?? 6, options, maxBytes);
      expect(await verifyAuditChain(path, options)).toMatchObject({ ok: true });
      await attack();
      const report = await verifyAuditChain(path, options);
      expect(report).toMatchObject({ ok: false, problem });
      const reopened = new AuditLog(path, maxBytes ?? 1024 * 1024, options);
      await expect(reopened.open()).rejects.toMatchObject({
        code: 'AUDIT_LOG_BROKEN',
        message: expect.stringMatching(/toolfence-mcp audit verify --log .*move .* aside/),
      });
      await expect(reopened.append(entry(99))).rejects.toMatchObject({
        code: 'AUDIT_LOG_BROKEN',
      });
      await reopened.close();
    },
  );

  it('a keyed log does not verify without its key, nor with another one', async () => {
    await written(3, { key: KEY });
    expect(await verifyAuditChain(path)).toMatchObject({ ok: false, problem: 'key-required' });
    expect(await verifyAuditChain(path, { key: OTHER_KEY })).toMatchObject({
      ok: false,
      problem: 'key-mismatch',
    });
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true });
  });

  // What the head cannot stop, stated in the README: each row passes verify.
  it.each<{ name: string; key?: Uint8Array; attack: () => Promise<void>; fresh?: boolean }>([
    {
      name: 'without a key, an edit with the chain and the head recomputed',
      attack: async () => {
        const last = await recompute(path, (line, index) => {
          if (index === 1) line.decision = 'deny';
        });
        const head = { total: 6, current: { lines: 6, start: 'genesis', last } };
        await writeFile(`${path}.head`, encodeAuditHead(head, undefined));
      },
    },
    {
      name: 'with a key, a roll-back to an older copy of the log and its head',
      key: KEY,
      attack: async () => {
        await rm(folder, { recursive: true });
        await mkdir(folder);
        await written(2, { key: KEY });
        const log = await readFile(path);
        const head = await readFile(`${path}.head`);
        await written(3, { key: KEY });
        await writeFile(path, log);
        await writeFile(`${path}.head`, head);
      },
    },
    {
      name: 'deleting the log, its .1 and its head together',
      key: KEY,
      attack: async () => {
        await unlink(path);
        await unlink(`${path}.head`);
      },
      fresh: true,
    },
  ])('known limit: $name passes verify', async ({ key, attack, fresh }) => {
    const options = key === undefined ? {} : { key };
    await written(6, options);
    await attack();
    expect(await verifyAuditChain(path, options)).toMatchObject({
      ok: true,
      fresh: fresh === true,
    });
  });

  it('accepts lines written after the last seal (a stop between the line and the head)', async () => {
    await written(2, { key: KEY });
    const head = await readFile(`${path}.head`);
    await written(2, { key: KEY });
    await writeFile(`${path}.head`, head);
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true, unsealed: 2 });
    await written(1, { key: KEY });
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({
      ok: true,
      lines: 5,
      unsealed: 0,
    });
  });
});

/**
 * The edit that makes a line as a gateway before this one wrote it: the entry's members in the
 * order the gateway made them (`entry()`'s). With {@link recompute} the hashes come out the same
 * (a hash is over the canonical JSON, whatever the order).
 */
const inEntryOrder = (line: Record<string, unknown>) => {
  for (const member of ['time', 'tool', 'pin', 'argumentsDigest', 'decision', 'outcome']) {
    const value = line[member];
    delete line[member];
    line[member] = value;
  }
};

// A line this log writes is the canonical JSON its hash is over, then its link: verify checks it
// by hashing its bytes (no parse). Any other line (an older gateway's, members reordered, an
// edited one) is checked the long way, with the same verdict as before.
describe('audit verify, on lines as this log writes them and as others did', () => {
  it.each<{ name: string; options: AuditLogOptions }>([
    { name: 'unkeyed', options: {} },
    { name: 'keyed', options: { key: KEY } },
  ])(
    '$name: a log of an older gateway verifies, opens, goes on, and verifies with its new lines',
    async ({ options }) => {
      await written(70, options);
      const before = (await readFile(path, 'utf8')).split('\n')[0] as string;
      expect(before.startsWith('{"argumentsDigest":')).toBe(true);
      await recompute(path, inEntryOrder, options.key);
      const older = (await readFile(path, 'utf8')).split('\n')[0] as string;
      expect(older.startsWith('{"time":')).toBe(true);
      expect(await verifyAuditChain(path, options)).toMatchObject({ ok: true, lines: 70 });
      // 70 more: the first 64 after an older line are checked the long way, the rest the short way.
      const log = new AuditLog(path, 1024 * 1024, options);
      for (let n = 70; n < 140; n += 1) await log.append(entry(n));
      await log.close();
      expect(await verifyAuditChain(path, options)).toMatchObject({ ok: true, lines: 140 });
      expect(await tools(path)).toEqual(Array.from({ length: 140 }, (_, n) => `s__t${n}`));
      // An edit among the new lines is still found, on the short way and the long one.
      for (const at of [75, 138]) {
        const all = (await readFile(path, 'utf8')).split('\n');
        const saved = all[at] as string;
        all[at] = saved.replace('"decision":"allow"', '"decision":"deny"');
        await writeFile(path, all.join('\n'));
        expect(await verifyAuditChain(path, options)).toMatchObject({
          ok: false,
          problem: 'hash-mismatch',
        });
        all[at] = saved;
        await writeFile(path, all.join('\n'));
      }
      expect(await verifyAuditChain(path, options)).toMatchObject({ ok: true, lines: 140 });
    },
  );

  it('a line with its members reordered (same members, same values) still verifies', async () => {
    await written(3, { key: KEY });
    await keepLines(path, (all) =>
      all.map((line, index) => {
        if (index !== 1) return line;
        const parsed = JSON.parse(line) as Record<string, unknown>;
        return JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse()));
      }),
    );
    expect(await verifyAuditChain(path, { key: KEY })).toMatchObject({ ok: true, lines: 3 });
  });

  const second = (edit: (line: string) => string) => () =>
    keepLines(path, (all) => all.map((line, index) => (index === 1 ? edit(line) : line)));
  /** The second line's link with its hash replaced by `hash` of the bytes before the link. */
  const rehashed = (hash: (previous: string, canonical: string) => string) =>
    second((line) => {
      const at = line.lastIndexOf(',"previous":"');
      const previous = (JSON.parse(line) as { previous: string }).previous;
      return `${line.slice(0, at)},"previous":"${previous}","hash":"${hash(previous, `${line.slice(0, at)}}`)}"}`;
    });
  it.each<{
    name: string;
    key?: Uint8Array;
    attack: () => Promise<void>;
    problem: string;
    line: number;
  }>([
    {
      name: 'a member added before the link, keyed',
      key: KEY,
      attack: second((line) => line.replace('{', '{"approvedBy":"user",')),
      problem: 'hash-mismatch',
      line: 2,
    },
    {
      name: 'a value changed, the hash made again without the key, keyed',
      key: KEY,
      attack: rehashed((previous, canonical) =>
        lineHash(undefined, previous, canonical.replace('"allow"', '"deny"')),
      ),
      problem: 'hash-mismatch',
      line: 2,
    },
    {
      name: 'the hash made with another key, keyed',
      key: KEY,
      attack: rehashed((previous, canonical) => lineHash(OTHER_KEY, previous, canonical)),
      problem: 'hash-mismatch',
      line: 2,
    },
    {
      name: 'the link made to point elsewhere, unkeyed',
      attack: second((line) =>
        line.replace(/"previous":"sha256:[0-9a-f]{4}/, '"previous":"sha256:0000'),
      ),
      problem: 'chain-broken',
      line: 2,
    },
    {
      name: 'the hash rewritten for the edited bytes, the next line left, unkeyed',
      attack: async () => {
        await second((line) => line.replace('"allow"', '"deny"'))();
        await rehashed((previous, canonical) => lineHash(undefined, previous, canonical))();
      },
      problem: 'chain-broken',
      line: 3,
    },
  ])('$name: verify fails at line $line ($problem)', async ({ key, attack, problem, line }) => {
    const options = key === undefined ? {} : { key };
    await written(4, options);
    await attack();
    expect(await verifyAuditLog(path, 'genesis', options)).toMatchObject({
      ok: false,
      brokenAt: line,
      reason: problem,
    });
    expect(await verifyAuditChain(path, options)).toMatchObject({ ok: false });
  });
});

// Each row: what happens to the files while the log is open; the next append rejects (so the
// gateway runs no call) and so does every append after it.
describe('AuditLog fails closed', () => {
  it.each<{ name: string; maxBytes?: number; during: () => Promise<void> }>([
    { name: 'the log deleted while open', during: () => unlink(path) },
    { name: 'the log cut while open', during: () => keepLines(path, (all) => all.slice(0, 1)) },
    {
      name: 'the log replaced while open',
      during: async () => {
        const text = await readFile(path);
        await unlink(path);
        await writeFile(path, text);
      },
    },
    {
      name: 'the log renamed aside and an identical copy put back between two appends',
      during: async () => {
        const text = await readFile(path);
        await rename(path, `${path}.aside`);
        await writeFile(path, text);
      },
    },
    {
      name: 'the log swapped for a hard link to another file of the same size',
      during: async () => {
        const other = `${path}.other`;
        await writeFile(other, await readFile(path));
        await unlink(path);
        await link(other, path);
      },
    },
    {
      name: 'a line appended by another process',
      during: async () => writeFile(path, '{"forged":true}\n', { flag: 'a' }),
    },
    {
      name: 'a folder in the way of the rotation',
      maxBytes: 10,
      during: async () => {
        await rm(`${path}.1`, { force: true });
        await mkdir(`${path}.1`);
        await writeFile(join(`${path}.1`, 'keep'), 'x');
      },
    },
  ])(
    '$name: the append rejects with AUDIT_WRITE_FAILED, and so do the later ones',
    async ({ maxBytes, during }) => {
      const log = new AuditLog(path, maxBytes ?? 1024 * 1024);
      await log.append(entry(1));
      await log.append(entry(2));
      await during();
      let pending: Promise<unknown> | undefined;
      expect(() => {
        pending = log.append(entry(3));
      }).not.toThrow();
      await expect(pending).rejects.toMatchObject({
        code: 'AUDIT_WRITE_FAILED',
        details: { reason: 'write-failed' },
      });
      await expect(log.append(entry(4))).rejects.toMatchObject({
        code: 'AUDIT_WRITE_FAILED',
        details: { reason: 'failed-before' },
      });
      await log.close();
    },
  );

  it.each<{ name: string; arrange: () => Promise<void>; code: string }>([
    { name: 'a folder at the path', arrange: () => mkdir(path), code: 'AUDIT_LOG_BROKEN' },
    {
      name: 'a corrupt last line',
      arrange: async () => {
        await written(2);
        await writeFile(path, '{"half', { flag: 'a' });
      },
      code: 'AUDIT_LOG_BROKEN',
    },
    {
      name: 'a folder at the head',
      arrange: () => mkdir(`${path}.head`),
      code: 'AUDIT_LOG_BROKEN',
    },
  ])('$name: the log does not open and no line is written', async ({ arrange, code }) => {
    await arrange();
    const log = new AuditLog(path, 1024 * 1024);
    await expect(log.append(entry(1))).rejects.toMatchObject({ code });
    await log.close();
  });
});

describe('AuditLog.close() with appends in flight', () => {
  // close() resolves only once every append made before it resolves (before the call, or while
  // it waits) has settled: written, in the order made, or rejected with AUDIT_WRITE_FAILED.
  it.each([
    { name: 'fsync off', fsync: false },
    { name: 'fsync on', fsync: true },
  ])(
    '$name: every append made before close() resolves is written first, in order, and the chain goes on after',
    async ({ fsync }) => {
      const log = new AuditLog(path, 1024 * 1024, { fsync, maxBatchLines: 4 });
      const settled: string[] = [];
      const made: Promise<unknown>[] = [];
      const append = (n: number) => {
        made.push(log.append(entry(n)).then(() => settled.push(`s__t${n}`)));
      };
      for (let n = 0; n < 12; n += 1) append(n);
      // Made while close() waits: when the first batch is written, close() is waiting already.
      made[0]?.then(() => {
        for (let n = 12; n < 16; n += 1) append(n);
      });
      await log.close();
      settled.push('closed');
      expect(settled).toEqual([...Array.from({ length: 16 }, (_, n) => `s__t${n}`), 'closed']);
      const tools = onDisk().map((raw) => (JSON.parse(raw) as { tool: string }).tool);
      expect(tools).toEqual(Array.from({ length: 16 }, (_, n) => `s__t${n}`));
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 16, unsealed: 0 });
      // An append after close() opens the log again and goes on with the chain.
      await log.append(entry(16));
      await log.close();
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 17, unsealed: 0 });
    },
    30_000,
  );

  it('rejects the appends in flight with AUDIT_WRITE_FAILED when the log cannot be written, and still closes', async () => {
    const log = new AuditLog(path, 1024 * 1024, { maxBatchLines: 4 });
    await log.append(entry(0));
    await unlink(path);
    const outcomes = Array.from({ length: 8 }, (_, n) =>
      log.append(entry(1 + n)).then(
        () => 'written',
        (error: { code?: string }) => error.code,
      ),
    );
    let closed = false;
    const closing = log.close().then(() => {
      closed = true;
    });
    const settled = await Promise.all(
      outcomes.map((outcome) => outcome.then((value) => ({ value, closed }))),
    );
    await closing;
    // Each append settled before close() resolved, as a typed rejection.
    expect(settled).toEqual(
      Array.from({ length: 8 }, () => ({ value: 'AUDIT_WRITE_FAILED', closed: false })),
    );
  });
});

const FULL_DISK = fileURLToPath(new URL('../../test/fixtures/audit-full-disk.ts', import.meta.url));

/** The lines in the log now, read synchronously (from inside a resolve callback). */
const onDisk = () => readFileSync(path, 'utf8').split('\n').filter(Boolean);

describe('AuditLog group commit', () => {
  it.each([
    { name: 'fsync off', fsync: false },
    { name: 'fsync on', fsync: true },
  ])(
    '$name: 200 appends from 64 concurrent callers form one chain in the order made, each resolving with its line on disk',
    async ({ fsync }) => {
      const log = new AuditLog(path, 1024 * 1024, fsync ? { fsync: true } : {});
      const made: string[] = [];
      const missing: string[] = [];
      let next = 0;
      const caller = async () => {
        while (next < 200) {
          const n = next++;
          made.push(`s__t${n}`);
          await log.append(entry(n)).then((line) => {
            // In the resolve callback: the line is in the file already.
            if (!onDisk().some((raw) => raw.includes(`"hash":"${line.hash}"`))) {
              missing.push(line.tool);
            }
          });
        }
      };
      await Promise.all(Array.from({ length: 64 }, caller));
      await log.close();
      expect(missing).toEqual([]);
      const tools = onDisk().map((raw) => (JSON.parse(raw) as { tool: string }).tool);
      expect(tools).toEqual(made);
      expect(await verifyAuditLog(path, 'genesis')).toEqual({ ok: true, lines: 200 });
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 200, unsealed: 0 });
    },
    30_000,
  );

  // 20 appends made together: the first write takes maxBatchLines of them, the next the
  // following ones. Each callback counts the lines in the file when its append resolved.
  it.each([
    { name: 'maxBatchLines 1 (a write per line)', maxBatchLines: 1 },
    { name: 'maxBatchLines 4', maxBatchLines: 4 },
    { name: 'maxBatchLines 7', maxBatchLines: 7 },
    { name: 'the default (128)', maxBatchLines: undefined },
  ])('$name: a batch holds at most that many lines', async ({ maxBatchLines }) => {
    const log = new AuditLog(
      path,
      1024 * 1024,
      maxBatchLines === undefined ? {} : { maxBatchLines },
    );
    const seen = await Promise.all(
      Array.from({ length: 20 }, (_, n) => log.append(entry(n)).then(() => onDisk().length)),
    );
    await log.close();
    const bound = maxBatchLines ?? DEFAULT_AUDIT_MAX_BATCH_LINES;
    expect(seen).toEqual(
      Array.from({ length: 20 }, (_, n) => Math.min(20, (Math.floor(n / bound) + 1) * bound)),
    );
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 20 });
  });

  it('keeps a file within one line of maxBytes: a batch stops there and the next rotates', async () => {
    const log = new AuditLog(path, 600);
    await Promise.all(Array.from({ length: 12 }, (_, n) => log.append(entry(n))));
    await log.close();
    const lineBytes = Buffer.byteLength(`${onDisk()[0]}\n`);
    expect((await stat(`${path}.1`)).size).toBeLessThan(600 + lineBytes);
    const report = await verifyAuditChain(path);
    expect(report).toMatchObject({ ok: true });
    expect(report.lines + report.rotatedLines).toBeLessThanOrEqual(12);
  });

  it.each([
    { name: 'zero', value: 0 },
    { name: 'negative', value: -1 },
    { name: 'a fraction', value: 1.5 },
    { name: 'over 10,000', value: 10_001 },
    { name: 'not a number', value: '4' },
    { name: 'NaN', value: Number.NaN },
  ])('refuses maxBatchLines $name', ({ value }) => {
    expect(() => new AuditLog(path, 1024, { maxBatchLines: value as number })).toThrow(
      expect.objectContaining({
        code: 'AUDIT_WRITE_FAILED',
        details: { option: 'maxBatchLines' },
        message: expect.stringMatching(/maxBatchLines must be an integer from 1 to 10,000/),
      }),
    );
  });

  it('accepts maxBatchLines 1 and 10,000, and still refuses unknown keys', () => {
    expect(() => new AuditLog(path, 1024, { maxBatchLines: 1 })).not.toThrow();
    expect(() => new AuditLog(path, 1024, { maxBatchLines: 10_000 })).not.toThrow();
    expect(() => new AuditLog(path, 1024, { maxBatch: 4 } as never)).toThrow(/maxBatch/);
  });
});

/** Runs the full-disk fixture under a file size limit of `limit` bytes. */
async function underSizeLimit(limit: number, count: number, fsync: boolean) {
  const child = spawn(
    'prlimit',
    [
      `--fsize=${limit}:${limit}`,
      '--',
      process.execPath,
      '--import',
      'tsx',
      FULL_DISK,
      path,
      String(count),
      fsync ? 'fsync' : 'no-fsync',
    ],
    { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect({ code, errors }).toMatchObject({ code: 0 });
  return JSON.parse(output) as { batch: string[]; after: string };
}

// A real short write: the child runs with a file size limit (RLIMIT_FSIZE) just past the log,
// so the batch's one write stops in its second line and the next one fails (EFBIG), as on a
// full disk.
describe('AuditLog on a full disk', () => {
  it.each([
    { name: 'fsync off', fsync: false },
    { name: 'fsync on', fsync: true },
  ])(
    '$name: every append of the failed batch rejects, the torn batch is cut and the log verifies',
    async ({ fsync }) => {
      const log = new AuditLog(path, 1024 * 1024);
      for (let n = 0; n < 10; n += 1) await log.append(entry(100 + n));
      await log.close();
      const before = (await stat(path)).size;
      const lineBytes = Buffer.byteLength(`${onDisk()[0]}\n`);
      const { batch, after } = await underSizeLimit(before + lineBytes + 40, 10, fsync);
      expect(batch).toEqual(Array.from({ length: 10 }, () => 'AUDIT_WRITE_FAILED:write-failed'));
      expect(after).toBe('AUDIT_WRITE_FAILED:failed-before');
      expect((await stat(path)).size).toBe(before);
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 10, unsealed: 0 });
      // Opened again (with room), the chain goes on.
      const again = new AuditLog(path, 1024 * 1024);
      await again.append(entry(1));
      await again.close();
      expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 11 });
      expect((await readFile(path, 'utf8')).includes('s__full')).toBe(false);
    },
    60_000,
  );
});

/** Lines the head seals in the current file now, read synchronously (from a resolve callback). */
const sealedLines = () =>
  (JSON.parse(readFileSync(`${path}.head`, 'utf8')) as { current: { lines: number } }).current
    .lines;

/** What an append came to: its rejection, or `written` (never a rejection left unhandled). */
const outcome = (append: Promise<unknown>) =>
  append.then(
    () => 'written',
    (error: unknown) => error,
  );

/** Until the callbacks of this turn and the deferred seal (a `setImmediate`) have run. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Points the open descriptor of the head file at /dev/full, where every write fails (ENOSPC), as
 * a full disk under the head would: the log's next seal fails for real.
 */
function headOnFullDevice(): void {
  const target = realpathSync(`${path}.head`);
  const name = readdirSync('/proc/self/fd').find((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === target;
    } catch {
      return false;
    }
  });
  const fd = Number(name);
  expect(Number.isInteger(fd)).toBe(true);
  closeSync(fd);
  // open() takes the lowest free descriptor: fill the ones below until it is this one again.
  const held: number[] = [];
  try {
    for (let attempt = 0; attempt < 1000; attempt += 1) {
      const next = openSync('/dev/full', 'r+');
      if (next === fd) return;
      held.push(next);
    }
    throw new Error('the head descriptor was not taken back');
  } finally {
    for (const extra of held) closeSync(extra);
  }
}

// Without fsync the head seal is off the caller's path: an append resolves once its line is in
// the file, and the head is sealed right after (one setImmediate for the batches of a turn), and
// always before the next batch is written, before a rotation and before close() resolves.
describe('AuditLog seals the head after the append resolves (fsync off)', () => {
  it('an append resolves before its seal is written; the seal follows once the turn is over', async () => {
    const log = new AuditLog(path, 1024 * 1024);
    await log.append(entry(0));
    await nextTurn();
    expect(sealedLines()).toBe(1);
    const seen = await log
      .append(entry(1))
      .then(() => ({ lines: onDisk().length, sealed: sealedLines() }));
    expect(seen).toEqual({ lines: 2, sealed: 1 });
    await nextTurn();
    expect(sealedLines()).toBe(2);
    await log.close();
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 2, unsealed: 0 });
  });

  it('with fsync, an append still resolves only once its line is sealed', async () => {
    const log = new AuditLog(path, 1024 * 1024, { fsync: true });
    await log.append(entry(0));
    const seen = await log.append(entry(1)).then(() => sealedLines());
    expect(seen).toBe(2);
    await log.close();
  });

  // Each next append is made in the callback of the one before (no turn in between, so no
  // deferred seal runs): the next write seals the batch before it. A copy of the files taken in
  // each callback is what a crash there would leave; each verifies, the last line unsealed.
  it.each<{ name: string; maxBytes: number; key?: Uint8Array }>([
    { name: 'one file', maxBytes: 1024 * 1024 },
    { name: 'rotating every few lines', maxBytes: 600 },
    { name: 'rotating, keyed', maxBytes: 600, key: KEY },
  ])(
    '$name: the head lags the file by the last batch at most, and a crash there verifies',
    async ({ maxBytes, key }) => {
      const options = key === undefined ? {} : { key };
      const log = new AuditLog(path, maxBytes, options);
      const snapshots: string[] = [];
      const snapshot = (n: number) => {
        const into = join(folder, `crash-${n}`);
        mkdirSync(into);
        for (const suffix of ['', '.1', '.head']) {
          if (existsSync(`${path}${suffix}`)) {
            copyFileSync(`${path}${suffix}`, join(into, `audit.jsonl${suffix}`));
          }
        }
        snapshots.push(join(into, 'audit.jsonl'));
      };
      let chain: Promise<unknown> = log.append(entry(0)).then(() => snapshot(0));
      for (let n = 1; n < 12; n += 1) {
        chain = chain.then(() => log.append(entry(n)).then(() => snapshot(n)));
      }
      await chain;
      await log.close();
      expect(await verifyAuditChain(path, options)).toMatchObject({ ok: true, unsealed: 0 });
      if (maxBytes < 1024) expect(existsSync(`${path}.1`)).toBe(true);
      for (const [n, copy] of snapshots.entries()) {
        const report = await verifyAuditChain(copy, options);
        expect({ n, report }).toMatchObject({ n, report: { ok: true, unsealed: 1 } });
      }
    },
  );

  it('close() resolves once the last batch is sealed', async () => {
    const log = new AuditLog(path, 1024 * 1024);
    await log.append(entry(0));
    const sealed = await log.append(entry(1)).then(async () => {
      await log.close();
      return sealedLines();
    });
    expect(sealed).toBe(2);
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 2, unsealed: 0 });
  });

  // Someone cuts the line just written, before its deferred seal: the seal still seals what the
  // log wrote (it never seals less, which would hide the cut), so verify finds the cut, and the
  // next append finds the file shorter than written and fails the log.
  it.each([
    { name: 'the deferred seal runs first', appendAtOnce: false },
    { name: 'the next append comes first', appendAtOnce: true },
  ])('a cut between a write and its seal is found: $name', async ({ appendAtOnce }) => {
    const log = new AuditLog(path, 1024 * 1024);
    await log.append(entry(0));
    await log.append(entry(1));
    const before = readFileSync(path).length;
    const next = await log.append(entry(2)).then(() => {
      truncateSync(path, before);
      // Wrapped: the append is made here, and awaited below.
      return appendAtOnce ? { pending: outcome(log.append(entry(3))) } : undefined;
    });
    await nextTurn();
    expect(await (next?.pending ?? outcome(log.append(entry(3))))).toMatchObject({
      code: 'AUDIT_WRITE_FAILED',
      details: { reason: 'write-failed' },
    });
    expect(sealedLines()).toBe(3);
    await log.close();
    expect(await verifyAuditChain(path)).toMatchObject({ ok: false, problem: 'cut' });
    await expect(new AuditLog(path, 1024 * 1024).open()).rejects.toMatchObject({
      code: 'AUDIT_LOG_BROKEN',
    });
  });

  // The head cannot be written (its disk is full) when a batch's seal comes: the lines stay (their
  // appends resolved), nothing half-written is left, and every later append rejects.
  it.each([
    {
      name: 'the deferred seal fails',
      appendAtOnce: false,
      first: 'failed-before',
      message: /could not be written .*, or not sealed in its head/,
    },
    {
      name: 'the seal before the next write fails',
      appendAtOnce: true,
      first: 'write-failed',
      message: /its head .*audit\.jsonl\.head could not be sealed \(ENOSPC\)/,
    },
  ])('$name: the log fails, as after a failed write', async ({ appendAtOnce, first, message }) => {
    const log = new AuditLog(path, 1024 * 1024);
    await log.append(entry(0));
    await nextTurn();
    const next = await log.append(entry(1)).then(() => {
      headOnFullDevice();
      return appendAtOnce ? { pending: outcome(log.append(entry(2))) } : undefined;
    });
    await nextTurn();
    expect(await (next?.pending ?? outcome(log.append(entry(2))))).toMatchObject({
      code: 'AUDIT_WRITE_FAILED',
      details: { reason: first },
      message: expect.stringMatching(message),
    });
    await expect(log.append(entry(3))).rejects.toMatchObject({
      code: 'AUDIT_WRITE_FAILED',
      details: { reason: 'failed-before' },
    });
    await log.close();
    expect(await tools(path)).toEqual(['s__t0', 's__t1']);
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 2, unsealed: 1 });
    // Opened again, the line after the last seal is sealed and the chain goes on.
    await written(1);
    expect(await verifyAuditChain(path)).toMatchObject({ ok: true, lines: 3, unsealed: 0 });
  });
});

describe('auditText: what a client or server names, bounded in a line', () => {
  it('keeps a name up to the bound as it is', () => {
    const name = `s__${'n'.repeat(AUDIT_TEXT_MAX_CHARS - 3)}`;
    expect(auditText(name)).toBe(name);
    expect(auditText('a\u202eb')).toBe('a\u202eb');
  });

  it('writes a longer one as its first characters, escaped, its length and the digest of the whole', () => {
    const long = `s__\u202e${'x'.repeat(4 * 1024 * 1024)}`;
    const shown = auditText(long);
    const digest = createHash('sha256').update(long, 'utf8').digest('hex');
    expect(shown).toBe(
      `s__\\u{202e}${'x'.repeat(AUDIT_TEXT_MAX_CHARS - 4)}… [${long.length} characters, sha256:${digest}]`,
    );
    // One character over the bound is bounded too.
    expect(auditText('y'.repeat(AUDIT_TEXT_MAX_CHARS + 1))).toContain(
      `… [${AUDIT_TEXT_MAX_CHARS + 1} characters, sha256:`,
    );
  });
});
