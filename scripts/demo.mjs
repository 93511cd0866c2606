#!/usr/bin/env node
// `pnpm demo`: builds the packages, then runs examples/end-to-end (the whole story on loopback
// and temp folders). Until that example exists it runs every example package that has a `demo`
// script, and says so.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const pnpm = ['-y', 'pnpm@12.4.2'];
const build = spawnSync(
  'npx',
  [...pnpm, 'exec', 'turbo', 'run', 'build', '--output-logs=errors-only'],
  {
    cwd: repo,
    stdio: 'inherit',
  },
);
if (build.status !== 0) process.exit(build.status ?? 1);

const examples = existsSync(join(repo, 'examples'))
  ? readdirSync(join(repo, 'examples')).sort()
  : [];
const runnable = examples.filter((name) => {
  const manifest = join(repo, 'examples', name, 'package.json');
  return existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).scripts?.demo;
});
const chosen = runnable.includes('end-to-end') ? ['end-to-end'] : runnable;
if (!runnable.includes('end-to-end')) {
  console.log('The end-to-end demo has not landed yet; running the examples that exist instead.');
}
if (chosen.length === 0) {
  console.log('No example has a demo script yet.');
  process.exit(0);
}
for (const name of chosen) {
  const run = spawnSync('npx', [...pnpm, '--silent', 'run', 'demo'], {
    cwd: join(repo, 'examples', name),
    stdio: 'inherit',
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
