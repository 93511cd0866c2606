#!/usr/bin/env node
// Proves the release flow without publishing: in a temporary copy of the repository, add a
// minor changeset for @toolfence/tool-contract, run `changeset version`, and check that
// tool-contract's version rose, that the ranges tools and mcp-bridge hold on it still admit the
// new version (raised where changesets raises them), that those dependants were bumped, and that
// the VERSION constants follow package.json.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const skip = new Set(['node_modules', 'dist', '.turbo', '.git', 'coverage', 'docs']);
const temp = mkdtempSync(join(tmpdir(), 'toolfence-release-'));
const failures = [];

const read = (name) =>
  JSON.parse(readFileSync(join(temp, 'packages', name, 'package.json'), 'utf8'));
const parse = (version) => version.split('.').map(Number);

/** Does a caret range (`^X.Y.Z`, with or without `workspace:`) admit `version`? 0.x aware. */
function caretAdmits(range, version) {
  const match = /^(?:workspace:)?\^(\d+)\.(\d+)\.(\d+)$/.exec(range);
  if (!match) return false;
  const [major, minor, patch] = match.slice(1).map(Number);
  const [vMajor, vMinor, vPatch] = parse(version);
  if (vMajor !== major) return false;
  if (major > 0) return vMinor > minor || (vMinor === minor && vPatch >= patch);
  if (vMinor !== minor) return false;
  return vPatch >= patch;
}

try {
  cpSync(repo, temp, { recursive: true, filter: (source) => !skip.has(basename(source)) });
  // Only our changeset counts: pending ones in the working tree would blur the assertions.
  for (const file of readdirSync(join(temp, '.changeset'))) {
    if (file.endsWith('.md') && file !== 'README.md') rmSync(join(temp, '.changeset', file));
  }
  writeFileSync(
    join(temp, '.changeset', 'release-flow-check.md'),
    '---\n"@toolfence/tool-contract": minor\n---\n\nRelease-flow check: a new minor feature.\n',
  );
  const before = Object.fromEntries(
    ['tool-contract', 'tools', 'mcp-bridge', 'host-config'].map((name) => [name, read(name)]),
  );
  const changeset = join(repo, 'node_modules', '@changesets', 'cli', 'bin.js');
  const run = spawnSync(process.execPath, [changeset, 'version'], { cwd: temp, encoding: 'utf8' });
  if (run.status !== 0) {
    failures.push(`changeset version failed: ${run.stderr || run.stdout}`);
  } else {
    spawnSync(process.execPath, [join(repo, 'scripts', 'sync-versions.mjs'), temp], {
      encoding: 'utf8',
    });
    const after = Object.fromEntries(
      ['tool-contract', 'tools', 'mcp-bridge', 'host-config'].map((name) => [name, read(name)]),
    );
    const contract = after['tool-contract'].version;
    const [oldMajor, oldMinor] = parse(before['tool-contract'].version);
    const [newMajor, newMinor] = parse(contract);
    if (!(newMajor === oldMajor && newMinor === oldMinor + 1)) {
      failures.push(
        `tool-contract should rise one minor from ${before['tool-contract'].version}, is ${contract}`,
      );
    }
    for (const dependant of ['tools', 'mcp-bridge']) {
      const range = after[dependant].dependencies?.['@toolfence/tool-contract'];
      const oldRange = before[dependant].dependencies?.['@toolfence/tool-contract'];
      if (!range || !caretAdmits(range, contract)) {
        failures.push(`${dependant}'s range ${range} does not admit tool-contract ${contract}`);
      }
      if (!caretAdmits(oldRange, contract)) {
        if (range === oldRange)
          failures.push(`${dependant}'s range should have been raised from ${oldRange}`);
        if (after[dependant].version === before[dependant].version) {
          failures.push(`${dependant} should be bumped when its dependency range is raised`);
        }
      }
    }
    // mcp-bridge also depends on tools: its range must admit tools' new version.
    const toolsRange = after['mcp-bridge'].dependencies?.['@toolfence/tools'];
    if (!caretAdmits(toolsRange, after.tools.version)) {
      failures.push(`mcp-bridge's range ${toolsRange} does not admit tools ${after.tools.version}`);
    }
    if (after['host-config'].version !== before['host-config'].version) {
      failures.push('host-config must not be bumped by a tool-contract changeset');
    }
    const changelog = readFileSync(join(temp, 'packages', 'tool-contract', 'CHANGELOG.md'), 'utf8');
    if (!changelog.includes('Release-flow check'))
      failures.push('CHANGELOG.md lacks the changeset text');
    for (const name of ['tool-contract', 'tools', 'mcp-bridge']) {
      const source = readFileSync(join(temp, 'packages', name, 'src', 'version.ts'), 'utf8');
      if (!source.includes(`'${after[name].version}'`))
        failures.push(`${name}'s VERSION constant was not synced`);
    }
    console.log(
      `release flow: tool-contract ${before['tool-contract'].version} -> ${contract}; ` +
        `tools ${before.tools.version} -> ${after.tools.version} (range ${after.tools.dependencies['@toolfence/tool-contract']}); ` +
        `mcp-bridge ${before['mcp-bridge'].version} -> ${after['mcp-bridge'].version}`,
    );
  }
} finally {
  rmSync(temp, { recursive: true, force: true });
}

if (failures.length > 0) {
  for (const failure of failures) console.error(`release flow: ${failure}`);
  process.exit(1);
}
console.log('release flow: ok');
