// The audit write a gateway call waits for: AuditLog appends (each resolving only once its line
// is written, and synced with `fsync: true`) with 1 and 64 concurrent appenders, a write per
// line (`maxBatchLines: 1`) against group commit (the default: lines that arrive while a write is
// in flight share the next write, its fdatasync and one head seal), fsync off and on. Figures:
// appends per second, latency per append (p50, p99) and this process's CPU per append. The log
// is in the OS temp folder (on this machine's disk: fsync figures depend on it).
//
// Then the check of a whole log (`verifyAuditChain`, what the gateway runs at start): lines as
// this version writes them (the canonical JSON the hash is over, checked by hashing the line's
// bytes) against the same lines in the member order an earlier version wrote (checked the long
// way: parse, canonical JSON, hash).
//
//   npx tsx bench/audit-log.bench.ts
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AuditEntry, AuditLog, verifyAuditChain } from '@toolfence/mcp-bridge';
import {
  bench,
  benchAuditEntry,
  formatMs,
  median,
  printTable,
  scaled,
} from './fixtures/harness.js';

const ROUNDS = scaled(5, 1);

interface Mode {
  readonly name: string;
  readonly maxBatchLines?: number;
}
const PER_LINE: Mode = { name: 'write per line', maxBatchLines: 1 };
const GROUP: Mode = { name: 'group commit' };

interface Run {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpu: number;
}

const entry = (n: number): AuditEntry => benchAuditEntry(n, `everything__echo${n % 7}`);

function percentile(values: readonly number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;
}

/** `total` appends from `concurrency` appenders (each waits for its append, then makes the next). */
async function run(mode: Mode, fsync: boolean, concurrency: number, total: number): Promise<Run> {
  const folder = await mkdtemp(join(tmpdir(), 'toolfence-audit-bench-'));
  const path = join(folder, 'audit.jsonl');
  try {
    const log = new AuditLog(path, 64 * 1024 * 1024, {
      ...(fsync ? { fsync: true } : {}),
      ...(mode.maxBatchLines === undefined ? {} : { maxBatchLines: mode.maxBatchLines }),
    } as never);
    await log.open();
    // Warm-up lines, outside the timing.
    for (let n = 0; n < 20; n += 1) await log.append(entry(n));
    const latencies: number[] = [];
    let next = 0;
    const appender = async () => {
      while (next < total) {
        const n = next++;
        const start = performance.now();
        await log.append(entry(n));
        latencies.push(performance.now() - start);
      }
    };
    const cpu = process.cpuUsage();
    const start = performance.now();
    await Promise.all(Array.from({ length: concurrency }, appender));
    const elapsed = performance.now() - start;
    const used = process.cpuUsage(cpu);
    await log.close();
    const report = await verifyAuditChain(path);
    if (!report.ok || report.lines !== total + 20) {
      throw new Error(`the benchmark's log does not verify: ${report.message}`);
    }
    return {
      perSecond: (total / elapsed) * 1000,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      cpu: (used.user + used.system) / 1000 / total,
    };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

function middle(runs: readonly Run[]): Run {
  return {
    perSecond: median(runs.map((item) => item.perSecond)),
    p50: median(runs.map((item) => item.p50)),
    p99: median(runs.map((item) => item.p99)),
    cpu: median(runs.map((item) => item.cpu)),
  };
}

const rows: string[][] = [];
for (const fsync of [false, true]) {
  for (const concurrency of [1, 64]) {
    const total = fsync
      ? scaled(concurrency === 1 ? 300 : 2_000, 20)
      : scaled(concurrency === 1 ? 5_000 : 20_000, 100);
    const perLine: Run[] = [];
    const group: Run[] = [];
    // Rounds alternate which mode goes first, so drifting load falls on both.
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? [PER_LINE, GROUP] : [GROUP, PER_LINE];
      for (const mode of order) {
        (mode === GROUP ? group : perLine).push(await run(mode, fsync, concurrency, total));
      }
    }
    const a = middle(perLine);
    const b = middle(group);
    const label = `fsync ${fsync ? 'on' : 'off'}, ${concurrency} appender${concurrency === 1 ? '' : 's'}`;
    for (const [mode, figures] of [
      [PER_LINE, a],
      [GROUP, b],
    ] as const) {
      rows.push([
        label,
        mode.name,
        figures.perSecond.toFixed(0),
        formatMs(figures.p50),
        formatMs(figures.p99),
        `${(figures.cpu * 1000).toFixed(1)} µs`,
      ]);
    }
    const id = `audit-group-commit-fsync-${fsync ? 'on' : 'off'}-${concurrency}`;
    if (concurrency === 1) {
      // One appender: nothing to group; group commit must not cost latency.
      bench({
        id,
        label: `audit append, group commit vs a write per line (${label}): latency p50`,
        ratio: b.p50 / a.p50,
        target: 1.1,
        detail: `p50 ${formatMs(b.p50)} vs ${formatMs(a.p50)} ms, p99 ${formatMs(b.p99)} vs ${formatMs(a.p99)} ms, CPU ${(b.cpu * 1000).toFixed(1)} vs ${(a.cpu * 1000).toFixed(1)} µs per append`,
      });
    } else {
      // 64 appenders: time per append (the inverse of appends per second).
      bench({
        id,
        label: `audit append, group commit vs a write per line (${label}): time per append`,
        ratio: a.perSecond / b.perSecond,
        target: 1,
        detail: `${b.perSecond.toFixed(0)} vs ${a.perSecond.toFixed(0)} appends/s, p50 ${formatMs(b.p50)} vs ${formatMs(a.p50)} ms, p99 ${formatMs(b.p99)} vs ${formatMs(a.p99)} ms, CPU ${(b.cpu * 1000).toFixed(1)} vs ${(a.cpu * 1000).toFixed(1)} µs per append`,
      });
    }
  }
}
printTable(
  `AuditLog.append: a write per line vs group commit (median of ${ROUNDS} round(s); log in ${tmpdir()})`,
  ['case', 'mode', 'appends/s', 'p50 ms', 'p99 ms', 'CPU per append'],
  rows,
);

/** The same log's lines with their members in the order `entry()` builds them, then the link. */
function asEarlierVersion(text: string): string {
  const order = [
    'time',
    'tool',
    'pin',
    'decision',
    'outcome',
    'argumentsDigest',
    'resultDigest',
    'session',
  ];
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      return JSON.stringify(
        Object.fromEntries([...order, 'previous', 'hash'].map((key) => [key, parsed[key]])),
      );
    })
    .join('\n')
    .concat('\n');
}

{
  const LINES = scaled(40_000, 500);
  const VERIFY_ROUNDS = scaled(9, 1);
  const folder = await mkdtemp(join(tmpdir(), 'toolfence-audit-verify-bench-'));
  try {
    const written = join(folder, 'written.jsonl');
    const earlier = join(folder, 'earlier.jsonl');
    const log = new AuditLog(written, 1024 * 1024 * 1024);
    const appends: Promise<unknown>[] = [];
    for (let n = 0; n < LINES; n += 1) appends.push(log.append(entry(n)));
    await Promise.all(appends);
    await log.close();
    const text = await readFile(written, 'utf8');
    await writeFile(earlier, asEarlierVersion(text));
    await copyFile(`${written}.head`, `${earlier}.head`);
    const timings = { written: [] as number[], earlier: [] as number[] };
    for (let round = 0; round < VERIFY_ROUNDS + 1; round += 1) {
      const order =
        round % 2 === 0 ? (['written', 'earlier'] as const) : (['earlier', 'written'] as const);
      for (const which of order) {
        const start = performance.now();
        const report = await verifyAuditChain(which === 'written' ? written : earlier);
        const elapsed = performance.now() - start;
        if (!report.ok || report.lines !== LINES) {
          throw new Error(`the benchmark's ${which} log does not verify: ${report.message}`);
        }
        // The first round warms both paths up.
        if (round > 0) timings[which].push(elapsed);
      }
    }
    const a = median(timings.written);
    const b = median(timings.earlier);
    bench({
      id: 'audit-verify-as-written',
      label: `audit verify (the check at gateway start) of ${LINES.toLocaleString('en-US')} lines as this version writes them vs the same lines in an earlier version's member order`,
      ratio: a / b,
      target: 0.8,
      detail: `${formatMs(a)} vs ${formatMs(b)} ms for ${(Buffer.byteLength(text) / 1024 / 1024).toFixed(1)} MiB (median of ${VERIFY_ROUNDS} interleaved rounds after one warm-up each)`,
    });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
