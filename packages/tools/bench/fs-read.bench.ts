/**
 * FileSystemTool `read` of a 10 MiB file against `fs.promises.readFile` (both decode UTF-8).
 * Target: at most 1.3x. Run: npx tsx packages/tools/bench/fs-read.bench.ts
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createToolContext, FileSystemTool } from '@toolfence/tools';

const SIZE = 10 * 1024 * 1024;
// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 21;
const WARMUP = QUICK ? 1 : 5;
const TARGET = 1.3;

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'toolfence-bench-fs-'));
  try {
    const file = join(root, 'data', 'big.txt');
    mkdirSync(join(root, 'data'));
    writeFileSync(file, 'abcdefghijklmnopqrstuvwxyz012345'.repeat(SIZE / 32));
    const tool = new FileSystemTool({ root, maxReadBytes: SIZE + 1 });
    const context = createToolContext({ runId: 'bench' });
    const ours = async (): Promise<number> => {
      const start = performance.now();
      const result = await tool.invoke({ operation: 'read', path: 'data/big.txt' }, context);
      const elapsed = performance.now() - start;
      const content = (result.structuredContent as { content: string; truncated: boolean }).content;
      if (content.length !== SIZE) throw new Error('unexpected read size');
      return elapsed;
    };
    const baseline = async (): Promise<number> => {
      const start = performance.now();
      const content = await readFile(file, 'utf8');
      const elapsed = performance.now() - start;
      if (content.length !== SIZE) throw new Error('unexpected read size');
      return elapsed;
    };
    for (let index = 0; index < WARMUP; index += 1) {
      await ours();
      await baseline();
    }
    const oursTimes: number[] = [];
    const baseTimes: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      if (round % 2 === 0) {
        oursTimes.push(await ours());
        baseTimes.push(await baseline());
      } else {
        baseTimes.push(await baseline());
        oursTimes.push(await ours());
      }
    }
    const oursMedian = median(oursTimes);
    const baseMedian = median(baseTimes);
    const ratio = Number((oursMedian / baseMedian).toFixed(3));
    console.log('FileSystemTool read of 10 MiB vs fs.promises.readFile (utf8), median of', ROUNDS);
    console.log(`| measure | median ms |\n|---|---|`);
    console.log(`| FileSystemTool.invoke read | ${oursMedian.toFixed(2)} |`);
    console.log(`| fs.promises.readFile | ${baseMedian.toFixed(2)} |`);
    console.log(`| ratio | ${ratio} (target <= ${TARGET}) |`);
    console.log(
      `BENCH ${JSON.stringify({
        id: 'tools.fs-read',
        label: 'FileSystemTool read 10 MiB vs fs.promises.readFile',
        ratio,
        target: TARGET,
        met: ratio <= TARGET,
        detail: `median ${oursMedian.toFixed(2)} ms vs ${baseMedian.toFixed(2)} ms over ${ROUNDS} interleaved rounds (utf8 decode in both)`,
      })}`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
