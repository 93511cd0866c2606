#!/usr/bin/env node
// `pnpm bench`: builds, runs every benchmark (packages/*/bench/*.bench.ts and
// examples/*/bench/*.bench.ts) one after another with tsx, collects the `BENCH {json}` lines each
// prints, and writes BENCHMARKS.md. Every figure is a ratio against a baseline measured in the
// same run. Never run by CI for its figures: shared machines are noisy, ratios are for humans.
//
// `--quick` (a step of `pnpm check`): every benchmark runs a few rounds only
// (TOOLFENCE_BENCH_QUICK=1, read by each benchmark's settings), and the run fails unless each file
// exits 0 within QUICK_TIMEOUT_MS and prints at least one BENCH line with a numeric ratio. No
// timing is asserted and BENCHMARKS.md is not written: the point is that no benchmark can rot.
// `--no-build` skips the build (`pnpm check` has just built).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const flags = new Set(process.argv.slice(2).filter((argument) => argument.startsWith('--')));
for (const flag of flags) {
  if (flag !== '--quick' && flag !== '--no-build') {
    console.error(`bench: unknown flag ${flag} (accepted: --quick, --no-build)`);
    process.exit(2);
  }
}
const quick = flags.has('--quick');
const filter = process.argv.slice(2).filter((argument) => !argument.startsWith('--'));
/** A quick benchmark that takes longer than this has stopped honouring TOOLFENCE_BENCH_QUICK. */
const QUICK_TIMEOUT_MS = 120_000;

if (!flags.has('--no-build')) {
  const build = spawnSync('npx', ['-y', 'pnpm@12.4.2', 'exec', 'turbo', 'run', 'build'], {
    cwd: repo,
    stdio: 'inherit',
  });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const started = performance.now();
/** The 1-minute load average when the run started (the machine may be shared). */
const loadAtStart = loadavg()[0] ?? 0;

const files = [];
for (const group of ['packages', 'examples']) {
  if (!existsSync(join(repo, group))) continue;
  for (const name of readdirSync(join(repo, group))) {
    const bench = join(repo, group, name, 'bench');
    if (!existsSync(bench)) continue;
    for (const file of readdirSync(bench).sort()) {
      if (!file.endsWith('.bench.ts')) continue;
      const path = join(bench, file);
      if (filter.length === 0 || filter.some((word) => path.includes(word))) files.push(path);
    }
  }
}

const results = [];
const failures = [];
const tsx = join(repo, 'node_modules', '.bin', 'tsx');
for (const file of files) {
  const name = relative(repo, file);
  console.log(`\n== ${name}`);
  const fileStarted = performance.now();
  const run = spawnSync(tsx, [file], {
    cwd: join(file, '..', '..'),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: quick ? { ...process.env, TOOLFENCE_BENCH_QUICK: '1' } : process.env,
    ...(quick ? { timeout: QUICK_TIMEOUT_MS, killSignal: 'SIGKILL' } : {}),
  });
  if (quick) console.log(`(${((performance.now() - fileStarted) / 1000).toFixed(1)} s)`);
  if (run.error !== undefined) {
    failures.push(
      `${name}: ${run.error.code === 'ETIMEDOUT' ? `over ${QUICK_TIMEOUT_MS / 1000} s` : run.error.message}`,
    );
    process.stderr.write((run.stderr ?? '').slice(-4000));
    continue;
  }
  process.stdout.write(
    run.stdout
      .split('\n')
      .filter((line) => !line.startsWith('BENCH '))
      .join('\n'),
  );
  if (run.status !== 0) {
    failures.push(name);
    process.stderr.write(run.stderr.slice(-4000));
    continue;
  }
  let figures = 0;
  for (const line of run.stdout.split('\n')) {
    if (!line.startsWith('BENCH ')) continue;
    let entry;
    try {
      entry = JSON.parse(line.slice(6));
    } catch {
      failures.push(`${name}: unreadable BENCH line`);
      continue;
    }
    figures += 1;
    results.push({ file: name, ...entry });
    if (
      typeof entry?.id !== 'string' ||
      typeof entry.ratio !== 'number' ||
      !Number.isFinite(entry.ratio)
    ) {
      failures.push(`${name}: BENCH ${entry?.id ?? '(no id)'} has no numeric ratio`);
    }
  }
  if (figures === 0) failures.push(`${name}: printed no BENCH line`);
}

const format = (value) => (typeof value === 'number' ? value.toFixed(2) : '—');
const rows = results.map(
  (result) =>
    `| ${result.label ?? result.id} | ${format(result.ratio)}x | ${result.target == null ? '—' : `≤ ${format(result.target)}x`} | ${
      result.target == null ? 'info' : result.met ? 'met' : '**not met**'
    } | ${result.detail ?? ''} | \`${result.file}\` |`,
);
const cpu = cpus()[0]?.model ?? 'unknown CPU';
const loadAtEnd = loadavg()[0] ?? 0;
const loaded = Math.max(loadAtStart, loadAtEnd) > cpus().length;
const loadLine = `Load average (1 min) ${loadAtStart.toFixed(1)} at the start, ${loadAtEnd.toFixed(1)} at the end, on ${cpus().length} cores${
  loaded
    ? ': **the machine was loaded** (other work was running), so absolute times are inflated and the ratios are noisier than on a quiet machine; the paired, interleaved ratios and the ranges over runs are the figures to read.'
    : '.'
}`;
const markdown = `# Benchmarks

Written by \`npx -y pnpm@12.4.2 bench\` on ${new Date().toISOString().slice(0, 10)}. Every figure is a
ratio of our code's time (or memory) to a baseline measured in the same run, interleaved round by
round after a warm-up, so a noisy machine moves both sides together. Lower is better; targets come
from the package issues.

Machine: ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()} ${release()} ${arch()}, Node ${process.version}.
${loadLine}

| figure | ratio | target | status | detail | benchmark |
|---|---|---|---|---|---|
${rows.join('\n')}
${failures.length > 0 ? `\nBenchmarks that failed to run: ${failures.map((f) => `\`${f}\``).join(', ')}.\n` : ''}
## Rerun

\`\`\`sh
npx -y pnpm@12.4.2 install --frozen-lockfile
npx -y pnpm@12.4.2 bench            # all
npx -y pnpm@12.4.2 bench registry   # only benchmark files whose path contains "registry"
\`\`\`
`;
if (quick) {
  // Quick figures are not meaningful: show them, never write them down.
  console.log(`\n${rows.join('\n')}`);
} else if (filter.length === 0) writeFileSync(join(repo, 'BENCHMARKS.md'), markdown);
else console.log(markdown);
if (failures.length > 0) console.error(`\nfailed:\n- ${failures.join('\n- ')}`);
console.log(
  `\n${results.length} figures from ${files.length} benchmark files${failures.length ? `, ${failures.length} failed` : ''}${quick ? ` (quick, ${((performance.now() - started) / 1000).toFixed(1)} s)` : ''}.`,
);
process.exit(failures.length > 0 ? 1 : 0);
