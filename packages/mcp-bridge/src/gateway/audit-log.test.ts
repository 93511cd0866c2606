import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type AuditEntry, AuditLog, verifyAuditLog } from './audit-log.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-audit-'));
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

const tools = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { tool: string }).tool);

describe('AuditLog', () => {
  // Appends issued together, in rounds: the first ones wait for the last hash of the existing
  // file, the later ones are written at once; the file keeps the order they were issued in.
  it.each([1, 2, 5, 50])(
    'keeps the issue order of %d appends started together, across a reopen',
    async (count) => {
      const path = join(folder, 'audit.jsonl');
      const first = new AuditLog(path, 1024 * 1024);
      await first.append(entry(0));
      await first.close();
      const log = new AuditLog(path, 1024 * 1024);
      for (let round = 0; round < 3; round += 1) {
        const issued = Array.from({ length: count }, (_, n) => 1 + round * count + n);
        const lines = await Promise.all(issued.map((n) => log.append(entry(n))));
        expect(lines.map((line) => line.tool)).toEqual(issued.map((n) => `s__t${n}`));
      }
      await log.close();
      const expected = Array.from({ length: 1 + 3 * count }, (_, n) => `s__t${n}`);
      expect(await tools(path)).toEqual(expected);
      expect(await verifyAuditLog(path, 'genesis')).toEqual({ ok: true, lines: expected.length });
    },
  );

  it('rejects (never throws) when a line cannot be written, before and after the last hash is known', async () => {
    const unreadable = new AuditLog(folder, 1024 * 1024);
    await expect(unreadable.append(entry(1))).rejects.toMatchObject({ code: 'GATEWAY_STATE' });
    // A rotation that cannot rename (a folder is in the way) fails the append after the first.
    const path = join(folder, 'audit.jsonl');
    await mkdir(`${path}.1`);
    await writeFile(join(`${path}.1`, 'keep'), 'x');
    const log = new AuditLog(path, 10);
    await log.append(entry(2));
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = log.append(entry(3));
    }).not.toThrow();
    await expect(pending).rejects.toMatchObject({
      code: 'GATEWAY_STATE',
      message: 'Cannot rotate the audit log',
    });
    await log.close();
    expect(await verifyAuditLog(path, 'genesis')).toEqual({ ok: true, lines: 1 });
  });
});
