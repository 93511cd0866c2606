#!/usr/bin/env node
// Dependency rules from DESIGN.md: tool-contract and host-config have no `dependencies` field;
// siblings are depended on with an explicit caret range (`workspace:^X.Y.Z`), never `workspace:*`.
import { readdirSync, readFileSync } from 'node:fs';

const allowedSiblings = {
  'tool-contract': [],
  'host-config': [],
  tools: ['@toolfence/tool-contract'],
  'mcp-bridge': ['@toolfence/tool-contract', '@toolfence/tools'],
};
const problems = [];
for (const name of readdirSync('packages')) {
  const manifest = JSON.parse(readFileSync(`packages/${name}/package.json`, 'utf8'));
  if ((name === 'tool-contract' || name === 'host-config') && 'dependencies' in manifest) {
    problems.push(`${manifest.name} must not have a "dependencies" field (zero runtime deps)`);
  }
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const [dependency, range] of Object.entries(manifest[field] ?? {})) {
      if (!dependency.startsWith('@toolfence/')) continue;
      if (field !== 'dependencies')
        problems.push(`${manifest.name}: ${dependency} belongs in dependencies`);
      if (!/^workspace:\^\d+\.\d+\.\d+$/.test(range)) {
        problems.push(
          `${manifest.name}: ${dependency} must use an explicit range like workspace:^0.1.0 (has ${range})`,
        );
      }
      if (!(allowedSiblings[name] ?? []).includes(dependency)) {
        problems.push(`${manifest.name} may not depend on ${dependency} (see DESIGN.md's graph)`);
      }
    }
  }
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`dependency rule: ${problem}`);
  process.exit(1);
}
console.log('dependency rules: ok');
