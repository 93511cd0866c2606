#!/usr/bin/env node
// Error codes are stable and unique across the whole monorepo: imports every built entry point of
// every package, collects the static `code` of each exported error class, and fails on a code
// that two different classes share. (Each package's own tests check code format and brands.)
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = resolve(import.meta.dirname, '..');
const owners = new Map();
const problems = [];
for (const name of readdirSync(join(repo, 'packages')).sort()) {
  const dir = join(repo, 'packages', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (subpath === './package.json') continue;
    const file = typeof target === 'string' ? target : target.default;
    let entry;
    try {
      entry = await import(pathToFileURL(join(dir, file)).href);
    } catch (error) {
      // Optional peers (the SDK, better-sqlite3) are dev dependencies here, so this should load.
      problems.push(`${manifest.name}${subpath.slice(1)} failed to load: ${error.message}`);
      continue;
    }
    for (const [exportName, value] of Object.entries(entry)) {
      if (typeof value !== 'function' || !(value.prototype instanceof Error)) continue;
      const code = value.code;
      const owner = `${manifest.name}:${exportName}`;
      const previous = owners.get(code);
      if (previous && previous !== owner)
        problems.push(`code ${code} is used by ${previous} and ${owner}`);
      else owners.set(code, owner);
    }
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`error codes: ${problem}`);
  process.exit(1);
}
console.log(`error codes: ${owners.size} unique codes`);
