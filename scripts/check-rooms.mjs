#!/usr/bin/env node
// Import rules inside each package (DESIGN.md: "arrows inside a package run one way too").
// Every folder directly under src/ is a room; each room has a rank, and a module may import only
// rooms of a lower rank (or its own room). Files at the top of src/ (the package's base error,
// version) are rank 0; index.ts is the public surface and may import everything, and so may
// another file at the top of src/ that package.json "exports" names (a narrower entry). Tests
// (*.test.ts) are exempt, since they exercise rooms together. Separately, no two source files
// may import each other through a cycle, in any package.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** Room ranks per package: a room imports only rooms ranked lower. */
const ranks = {
  'tool-contract': { '.': 1, internal: 0 },
  'host-config': { '.': 0, attachments: 1, cli: 2 },
  tools: {
    '.': 0,
    // Helpers with no concept of their own (lazyRequire: CommonJS dependencies loaded on first use).
    internal: 0,
    registry: 1,
    net: 1,
    policy: 2,
    builtin: 2,
    mcp: 2,
    skills: 2,
    adapters: 3,
  },
  'mcp-bridge': {
    '.': 0,
    transport: 1,
    store: 1,
    oauth: 2,
    protocol: 2,
    client: 3,
    bridge: 4,
    skills: 4,
    gateway: 5,
    cli: 6,
  },
};
// In tool-contract every concept is a file at the top of src/, so only internal/ is a room
// below them and files at the top may import each other (the cycle check still applies).

const problems = [];
const importPattern = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*'(\.[^']+)'/g;

function sourceFiles(folder) {
  const files = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) {
      files.push(path);
    }
  }
  return files;
}

function roomOf(srcFolder, file) {
  const parts = relative(srcFolder, file).split('/');
  return parts.length === 1 ? '.' : parts[0];
}

/** src/index.ts and every top-of-src file an "exports" entry of package.json points at. */
function publicSurfaces(packageName, srcFolder) {
  const surfaces = new Set([join(srcFolder, 'index.ts')]);
  const manifest = JSON.parse(readFileSync(join('packages', packageName, 'package.json'), 'utf8'));
  const entries = JSON.stringify(manifest.exports ?? {}).matchAll(/"\.\/dist\/([^"/]+)\.js"/g);
  for (const [, name] of entries) surfaces.add(join(srcFolder, `${name}.ts`));
  return surfaces;
}

for (const packageName of readdirSync('packages')) {
  const srcFolder = join('packages', packageName, 'src');
  const packageRanks = ranks[packageName];
  if (packageRanks === undefined) {
    problems.push(`packages/${packageName}: no room ranks in scripts/check-rooms.mjs`);
    continue;
  }
  const surfaces = publicSurfaces(packageName, srcFolder);
  const graph = new Map();
  for (const file of sourceFiles(srcFolder)) {
    const room = roomOf(srcFolder, file);
    if (!(room in packageRanks)) {
      problems.push(
        `${file}: room src/${room}/ has no rank (add it to scripts/check-rooms.mjs and DESIGN.md)`,
      );
      continue;
    }
    const targets = [];
    for (const match of readFileSync(file, 'utf8').matchAll(importPattern)) {
      const target = normalize(join(dirname(file), match[1])).replace(/\.js$/, '.ts');
      targets.push(target);
      if (surfaces.has(file)) continue;
      const targetRoom = roomOf(srcFolder, target);
      if (targetRoom === room) continue;
      const from = packageRanks[room];
      const to = packageRanks[targetRoom];
      if (to === undefined || to >= from) {
        problems.push(
          `${file} imports ${relative(srcFolder, target)}: src/${room}/ (rank ${from}) may import only lower rooms, not src/${targetRoom}/ (rank ${to})`,
        );
      }
    }
    graph.set(file, targets);
  }
  // Tarjan's strongly connected components: any component of two or more files is a cycle.
  let index = 0;
  const stack = [];
  const state = new Map();
  const visit = (file) => {
    const node = { index, low: index, onStack: true };
    index += 1;
    state.set(file, node);
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      const seen = state.get(target);
      if (seen === undefined) {
        visit(target);
        node.low = Math.min(node.low, state.get(target).low);
      } else if (seen.onStack) {
        node.low = Math.min(node.low, seen.index);
      }
    }
    if (node.low === node.index) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        state.get(member).onStack = false;
        component.push(member);
      } while (member !== file);
      if (component.length > 1) {
        problems.push(`import cycle: ${component.sort().join(' <-> ')}`);
      }
    }
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(`room rule: ${problem}`);
  process.exit(1);
}
console.log('room rules: ok (imports run one way inside each package, no file cycles)');
