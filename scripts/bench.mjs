#!/usr/bin/env node
// `pnpm bench`: builds, runs every benchmark (packages/*/bench/*.bench.ts and
// examples/*/bench/*.bench.ts) one after another with tsx, collects the `BENCH {json}` lines each
// prints, and writes BENCHMARKS.md. Every figure is a ratio against a baseline measured in the
// same run. Never run by CI: shared machines are noisy, ratios are for humans to read.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform, release, totalmem } from 'node:os';
import { join, relative, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const filter = process.argv.slice(2);

const build = spawnSync('npx', ['-y', 'pnpm@12.4.2', 'exec', 'turbo', 'run', 'build'], {
  cwd: repo,
  stdio: 'inherit',
});
if (build.status !== 0) process.exit(build.status ?? 1);

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
  const run = spawnSync(tsx, [file], {
    cwd: join(file, '..', '..'),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
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
  for (const line of run.stdout.split('\n')) {
    if (!line.startsWith('BENCH ')) continue;
    try {
      results.push({ file: name, ...JSON.parse(line.slice(6)) });
    } catch {
      failures.push(`${name}: unreadable BENCH line`);
    }
  }
}

const format = (value) => (typeof value === 'number' ? value.toFixed(2) : '—');
const rows = results.map(
  (result) =>
    `| ${result.label ?? result.id} | ${format(result.ratio)}x | ${result.target == null ? '—' : `≤ ${format(result.target)}x`} | ${
      result.target == null ? 'info' : result.met ? 'met' : '**not met**'
    } | ${result.detail ?? ''} | \`${result.file}\` |`,
);
const cpu = cpus()[0]?.model ?? 'unknown CPU';
const markdown = `# Benchmarks

Written by \`npx -y pnpm@12.4.2 bench\` on ${new Date().toISOString().slice(0, 10)}. Every figure is a
ratio of our code's time (or memory) to a baseline measured in the same run, interleaved round by
round after a warm-up, so a noisy machine moves both sides together. Lower is better; targets come
from the package issues.

Machine: ${cpus().length} × ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${platform()} ${release()} ${arch()}, Node ${process.version}.

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
if (filter.length === 0) writeFileSync(join(repo, 'BENCHMARKS.md'), markdown);
else console.log(markdown);
console.log(
  `\n${results.length} figures from ${files.length} benchmark files${failures.length ? `, ${failures.length} failed` : ''}.`,
);
process.exit(failures.length > 0 ? 1 : 0);
