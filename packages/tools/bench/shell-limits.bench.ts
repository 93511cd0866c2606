/**
 * What the resource limits cost per call: `ShellTool` running `true` through a
 * `LocalProcessSandbox` with its default limits (one extra `exec` of `prlimit`) against one with
 * every limit off, and a `BubblewrapSandbox` with its default limits against one with every
 * limit off. Target: at most 1.5x for each pair. Run: npx tsx packages/tools/bench/shell-limits.bench.ts
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  BubblewrapSandbox,
  createToolContext,
  LocalProcessSandbox,
  type Sandbox,
  ShellTool,
} from '@toolfence/tools';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 41;
const WARMUP = QUICK ? 1 : 5;
const OFF = { maxMemoryBytes: null, maxFileSizeBytes: null, maxOpenFiles: null } as const;

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function pair(
  workspace: string,
  id: string,
  label: string,
  limited: Sandbox,
  unlimited: Sandbox,
  target: number,
): Promise<void> {
  const context = createToolContext({ runId: 'bench' });
  const tool = (sandbox: Sandbox) =>
    new ShellTool({ workspace, allowedCommands: ['true'], sandbox });
  const ours = tool(limited);
  const base = tool(unlimited);
  const time = async (shell: ShellTool): Promise<number> => {
    const start = performance.now();
    const result = await shell.invoke({ command: 'true' }, context);
    const elapsed = performance.now() - start;
    if (result.isError === true) throw new Error(`${id}: the call failed`);
    return elapsed;
  };
  for (let index = 0; index < WARMUP; index += 1) {
    await time(ours);
    await time(base);
  }
  const oursTimes: number[] = [];
  const baseTimes: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    if (round % 2 === 0) {
      oursTimes.push(await time(ours));
      baseTimes.push(await time(base));
    } else {
      baseTimes.push(await time(base));
      oursTimes.push(await time(ours));
    }
  }
  const oursMedian = median(oursTimes);
  const baseMedian = median(baseTimes);
  const ratio = Number((oursMedian / baseMedian).toFixed(3));
  console.log(
    `| ${label} | ${oursMedian.toFixed(2)} ms | ${baseMedian.toFixed(2)} ms | ${ratio} |`,
  );
  console.log(
    `BENCH ${JSON.stringify({
      id,
      label,
      ratio,
      target,
      met: ratio <= target,
      detail: `median ${oursMedian.toFixed(2)} ms vs ${baseMedian.toFixed(2)} ms over ${ROUNDS} interleaved rounds (ShellTool running true)`,
    })}`,
  );
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'toolfence-bench-shell-'));
  const workspace = join(root, 'workspace');
  try {
    chmodSync(root, 0o755);
    mkdirSync(workspace);
    // As root, BubblewrapSandbox runs as nobody: give it the workspace.
    if (process.getuid?.() === 0) chownSync(workspace, 65_534, 65_534);
    console.log('| sandbox | with limits | limits off | ratio |\n|---|---|---|---|');
    await pair(
      workspace,
      'tools.shell-limits-local',
      'LocalProcessSandbox default limits vs none',
      new LocalProcessSandbox(),
      new LocalProcessSandbox(OFF),
      2.5,
    );
    await pair(
      workspace,
      'tools.shell-limits-bubblewrap',
      'BubblewrapSandbox default limits vs none',
      new BubblewrapSandbox(),
      new BubblewrapSandbox({
        ...OFF,
        maxProcesses: null,
        ...(process.getuid?.() === 0 ? { user: { uid: 65_534, gid: 65_534 } } : {}),
      }),
      1.5,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
