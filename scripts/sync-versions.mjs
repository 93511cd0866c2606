#!/usr/bin/env node
// After `changeset version`: writes each package's version into its src/version.ts, so the
// exported VERSION constant always equals package.json (a test in every package checks this).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = process.argv[2] ?? process.cwd();
for (const name of readdirSync(join(root, 'packages'))) {
  const manifestPath = join(root, 'packages', name, 'package.json');
  const versionPath = join(root, 'packages', name, 'src', 'version.ts');
  if (!existsSync(manifestPath) || !existsSync(versionPath)) continue;
  const { version } = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const before = readFileSync(versionPath, 'utf8');
  const after = before.replace(/VERSION: string = '[^']*'/, `VERSION: string = '${version}'`);
  if (after !== before) {
    writeFileSync(versionPath, after);
    console.log(`${name}: VERSION = ${version}`);
  }
}
