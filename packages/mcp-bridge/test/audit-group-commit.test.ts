import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AuditEntry,
  AuditLog,
  DEFAULT_AUDIT_MAX_BATCH_LINES,
  verifyAuditChain,
  verifyAuditLog,
} from '../src/gateway/audit-log.js';
import { CHILD_ENV } from './helpers.js';

const FULL_DISK = fileURLToPath(new URL('./fixtures/audit-full-disk.ts', import.meta.url));

let folder: string;
let path: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-audit-group-'));
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
  outcome: 'started',
});

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
    { env: { ...CHILD_ENV }, stdio: ['ignore', 'pipe', 'pipe'] },
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
