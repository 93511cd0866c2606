// Runs an installed MCP conformance suite's CLI with this process's arguments and exits with its
// status. On Node 20 the CLI starts with the preload beside this file (./node20-fs-glob.mjs): the
// suites import `globSync` from 'fs', which Node has only from 22.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const PRELOAD = fileURLToPath(new URL('./node20-fs-glob.mjs', import.meta.url));

/** Runs the suite installed (as a dev dependency of this package) under `packageName`. */
export function runSuite(packageName) {
  const cli = require
    .resolve(`${packageName}/package.json`)
    .replace(/package\.json$/, 'dist/index.js');
  const major = Number(process.versions.node.split('.')[0]);
  const result = spawnSync(
    process.execPath,
    [...(major < 22 ? ['--import', PRELOAD] : []), cli, ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  process.exit(result.status ?? 1);
}
