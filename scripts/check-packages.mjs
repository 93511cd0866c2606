#!/usr/bin/env node
// Package checks, on built packages: `pnpm pack:packages` packs exactly the four published
// packages, each with the root LICENSE; publint --strict, attw (ESM-only profile), and a smoke
// consumer per package: install ONE package's tarball alone with npm into a fresh temp project
// (plus the tarballs of the siblings it depends on, its optional peers, and whatever it needs
// from the registry), import every entry of its `exports` at run time, and type-check a consumer
// file against the shipped .d.ts with `skipLibCheck: false`.
//
// The packages are checked at the same time (each in its own folder; their output is printed
// package by package), since most of the time is npm and tsc waiting or single-threaded. A smoke
// consumer installs with `--ignore-scripts`; a native dependency the workspace has already built
// (better-sqlite3, an optional peer of mcp-bridge) gets the workspace's binary when it is the
// same version and loads in this Node (same ABI), instead of a node-gyp build of SQLite that
// takes a minute; otherwise, and for any other package with an install script, `npm rebuild`
// runs its scripts as `npm install` would have.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const only = process.argv.slice(2);
const names = readdirSync(join(repo, 'packages')).filter(
  (name) => only.length === 0 || only.includes(name),
);
const work = mkdtempSync(join(tmpdir(), 'toolfence-packages-'));
const failures = [];

function run(label, command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    failures.push(
      `${label}\n${(result.stdout ?? '').slice(-4000)}\n${(result.stderr ?? '').slice(-4000)}`,
    );
    return undefined;
  }
  return result.stdout;
}

/** {@link run} without blocking: resolves `{ status, stdout, stderr }`. */
function runAsync(command, args, options = {}) {
  return new Promise((done) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = { stdout: '', stderr: '' };
    for (const stream of ['stdout', 'stderr']) {
      child[stream].setEncoding('utf8');
      child[stream].on('data', (chunk) => {
        output[stream] += chunk;
      });
    }
    child.once('error', (error) => done({ status: null, ...output, stderr: error.message }));
    child.once('close', (status) => done({ status, ...output }));
  });
}

/** {@link runAsync}; a failure is recorded (label and output tails) and gives `undefined`. */
async function runChecked(label, command, args, options = {}) {
  const result = await runAsync(command, args, options);
  if (result.status !== 0) {
    failures.push(`${label}\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`);
    return undefined;
  }
  return result.stdout;
}

/**
 * The native packages whose binary the workspace's install already built: name, the folder of
 * the workspace's copy, and the binary inside it.
 */
const WORKSPACE_NATIVE = [{ name: 'better-sqlite3', binary: 'build/Release/better_sqlite3.node' }];

/** The workspace's installed copy of `name` (its folder), as a package that uses it resolves it. */
function workspaceCopy(name) {
  for (const dir of readdirSync(join(repo, 'packages'))) {
    try {
      const from = createRequire(join(repo, 'packages', dir, 'package.json'));
      return dirname(from.resolve(`${name}/package.json`));
    } catch {}
  }
  return undefined;
}

/**
 * Runs the install scripts `npm install --ignore-scripts` left out in `consumer`: a native
 * package the workspace already built gets the workspace's binary when it is the same version
 * and it loads here (same ABI); everything else with an install script is rebuilt by npm.
 * Returns notes for the log.
 */
async function finishInstall(consumer, label) {
  const lock = JSON.parse(
    readFileSync(join(consumer, 'node_modules', '.package-lock.json'), 'utf8'),
  );
  const scripted = Object.entries(lock.packages ?? {})
    .filter(([, entry]) => entry.hasInstallScript === true)
    .map(([path, entry]) => ({
      path,
      name: path.replace(/^.*node_modules\//, ''),
      version: entry.version,
    }));
  const rebuild = [];
  const notes = [];
  for (const item of scripted) {
    const native = WORKSPACE_NATIVE.find((candidate) => candidate.name === item.name);
    const source = native && workspaceCopy(native.name);
    const target = join(consumer, item.path);
    let reused = false;
    if (native && source && existsSync(join(source, native.binary))) {
      const version = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')).version;
      if (version === item.version) {
        mkdirSync(dirname(join(target, native.binary)), { recursive: true });
        copyFileSync(join(source, native.binary), join(target, native.binary));
        // It must load in this Node (the same ABI); if not, npm builds it as usual.
        const loads = await runAsync(
          process.execPath,
          ['-e', `new (require(${JSON.stringify(target)}))(':memory:').close()`],
          { cwd: consumer },
        );
        reused = loads.status === 0;
        if (!reused) rmSync(join(target, native.binary), { force: true });
      }
      notes.push(
        reused
          ? `${item.name} ${item.version}: the workspace's built binary reused`
          : `${item.name} ${item.version}: built by npm (the workspace's ${version} ${version === item.version ? 'does not load here' : 'differs'})`,
      );
    }
    if (!reused && !rebuild.includes(item.name)) rebuild.push(item.name);
  }
  if (rebuild.length > 0) {
    await runChecked(
      `npm rebuild (${label})`,
      'npm',
      ['rebuild', '--ignore-scripts=false', ...rebuild],
      {
        cwd: consumer,
      },
    );
  }
  return notes;
}

const manifests = Object.fromEntries(
  readdirSync(join(repo, 'packages')).map((name) => [
    name,
    JSON.parse(readFileSync(join(repo, 'packages', name, 'package.json'), 'utf8')),
  ]),
);
const byPackageName = Object.fromEntries(
  Object.entries(manifests).map(([dir, m]) => [m.name, dir]),
);

try {
  // 1. Pack with the documented command (`pnpm pack:packages`; pnpm rewrites workspace: ranges
  // to real ones). It must pack exactly the workspace projects that are not private: `pnpm -r
  // pack` alone would pack the private examples too (pack, unlike publish, ignores `private`).
  const tarballs = {};
  const packDir = join(work, 'tarballs');
  mkdirSync(packDir);
  run(
    'pnpm pack:packages',
    'npx',
    ['-y', 'pnpm@12.4.2', 'run', 'pack:packages', '--pack-destination', packDir],
    {
      cwd: repo,
    },
  );
  const license = readFileSync(join(repo, 'LICENSE'), 'utf8');
  const published = new Set(
    ['packages', 'examples'].flatMap((folder) =>
      readdirSync(join(repo, folder))
        .map((dir) => JSON.parse(readFileSync(join(repo, folder, dir, 'package.json'), 'utf8')))
        .filter((manifest) => manifest.private !== true)
        .map((manifest) => manifest.name),
    ),
  );
  const packed = new Set();
  for (const file of readdirSync(packDir)) {
    const path = join(packDir, file);
    const manifest = JSON.parse(
      run(`read ${file}`, 'tar', ['-xOzf', path, 'package/package.json']) ?? '{}',
    );
    packed.add(manifest.name);
    if (byPackageName[manifest.name]) tarballs[byPackageName[manifest.name]] = path;
    // The MIT license travels with every package, word for word the root LICENSE.
    const shipped = run(`LICENSE of ${file}`, 'tar', ['-xOzf', path, 'package/LICENSE']);
    if (shipped !== undefined && shipped !== license) {
      failures.push(`${file}: its LICENSE differs from the root LICENSE`);
    }
  }
  for (const name of packed) {
    if (!published.has(name)) failures.push(`pnpm pack:packages packed ${name}, which is private`);
  }
  for (const name of published) {
    if (!packed.has(name)) failures.push(`pnpm pack:packages did not pack ${name}`);
  }
  for (const name of Object.keys(manifests)) {
    const own = join(repo, 'packages', name, 'LICENSE');
    if (!existsSync(own) || readFileSync(own, 'utf8') !== license) {
      failures.push(`packages/${name}/LICENSE is missing or differs from the root LICENSE`);
    }
  }

  /** One package's checks; its lines of output, printed together when it is done. */
  async function checkPackage(name) {
    const log = [];
    const at = Date.now();
    const manifest = manifests[name];
    const dir = join(repo, 'packages', name);
    log.push(`\n-- ${manifest.name}`);

    // 2. publint --strict and attw with the ESM-only profile.
    const publint = runChecked(
      `publint ${name}`,
      'npx',
      ['publint', '--strict', '--pack', 'npm', dir],
      { cwd: repo },
    );
    const attw =
      tarballs[name] &&
      runChecked(
        `attw ${name}`,
        'npx',
        ['attw', tarballs[name], '--profile', 'esm-only', '--format', 'table-flipped'],
        {
          cwd: repo,
        },
      );

    // 3. Smoke consumer: this package's tarball alone, plus sibling tarballs it depends on.
    const consumer = join(work, `consumer-${name}`);
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, 'package.json'),
      JSON.stringify({ name: `smoke-${name}`, private: true, type: 'module' }, null, 2),
    );
    const siblings = Object.keys(manifest.dependencies ?? {})
      .filter((dependency) => dependency.startsWith('@toolfence/'))
      .map((dependency) => tarballs[byPackageName[dependency]]);
    // Optional peers (the frameworks behind subpaths like `./ai-sdk`), at their declared ranges,
    // so every entry can be imported and type-checked the way a user who uses it installs it.
    const optionalPeers = Object.entries(manifest.peerDependencies ?? {})
      .filter(([peer]) => manifest.peerDependenciesMeta?.[peer]?.optional === true)
      .map(([peer, range]) => `${peer}@${range}`);
    const installed = await runChecked(
      `npm install ${name}`,
      'npm',
      [
        'install',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        tarballs[name],
        ...siblings,
        ...optionalPeers,
        '@types/node@20',
        'typescript@6.0.3',
      ],
      { cwd: consumer },
    );
    if (installed === undefined) {
      await Promise.all([publint, attw]);
      return log;
    }
    log.push(...(await finishInstall(consumer, name)));

    const subpaths = Object.keys(manifest.exports ?? {}).filter((key) => key !== './package.json');
    const specifiers = subpaths.map((subpath) => manifest.name + subpath.slice(1));
    const lines = specifiers.map(
      (specifier, index) => `import * as entry${index} from '${specifier}';`,
    );
    lines.push(
      '',
      'const entries: Record<string, Record<string, unknown>> = {',
      ...specifiers.map((specifier, index) => `  '${specifier}': entry${index},`),
      '};',
      'for (const [specifier, entry] of Object.entries(entries)) {',
      "  if (Object.keys(entry).length === 0) throw new Error(specifier + ' exports nothing');",
      '}',
    );
    if (subpaths.includes('.'))
      lines.push('const version: string = entry0.VERSION;', "console.log('ok ' + version);");
    const extra = join(dir, 'test', 'fixtures', 'smoke-consumer.ts');
    if (existsSync(extra)) lines.push('', readFileSync(extra, 'utf8'));
    writeFileSync(join(consumer, 'consumer.ts'), `${lines.join('\n')}\n`);
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            exactOptionalPropertyTypes: true,
            skipLibCheck: false,
            types: ['node'],
            outDir: 'out',
          },
          files: ['consumer.ts'],
        },
        null,
        2,
      ),
    );
    // Our declarations and the consumer are checked with skipLibCheck: false. Errors inside an
    // optional peer's own declarations (a framework's .d.ts under exactOptionalPropertyTypes)
    // are not ours to fix: they are counted and reported, not failed on.
    const typecheck = await runAsync(join(consumer, 'node_modules', '.bin', 'tsc'), ['-p', '.'], {
      cwd: consumer,
    });
    const errorLines = `${typecheck.stdout ?? ''}${typecheck.stderr ?? ''}`
      .split('\n')
      .filter((line) => /^\S.*\(\d+,\d+\): error TS/.test(line));
    const foreign = errorLines.filter(
      (line) => line.startsWith('node_modules/') && !line.startsWith('node_modules/@toolfence/'),
    );
    let compiled;
    if (typecheck.status === 0 || (errorLines.length > 0 && foreign.length === errorLines.length)) {
      compiled = typecheck.stdout;
      if (foreign.length > 0) {
        const files = [...new Set(foreign.map((line) => line.replace(/\(.*$/, '')))];
        log.push(
          `typecheck: ${foreign.length} error(s) in optional peers' own declarations ignored (${files.join(', ')})`,
        );
      }
    } else {
      failures.push(
        `typecheck consumer of ${name}\n${errorLines
          .filter((line) => !foreign.includes(line))
          .join('\n')
          .slice(-4000)}\n${(typecheck.stdout ?? '').slice(-2000)}`,
      );
    }
    if (compiled !== undefined) {
      const output = await runChecked(`import ${name}`, process.execPath, ['out/consumer.js'], {
        cwd: consumer,
      });
      if (output !== undefined) log.push(`smoke consumer: ${output.trim()}`);
    }
    // Each command the package installs runs from the install (the bundled toolfence-mcp with
    // what it resolves from node_modules at run time).
    for (const [command, file] of Object.entries(
      typeof manifest.bin === 'string'
        ? { [manifest.name.split('/').pop()]: manifest.bin }
        : (manifest.bin ?? {}),
    )) {
      const script = join(consumer, 'node_modules', ...manifest.name.split('/'), file);
      const output = await runChecked(
        `${command} --version`,
        process.execPath,
        [script, '--version'],
        {
          cwd: consumer,
        },
      );
      if (output !== undefined) log.push(`${command} --version: ${output.trim()}`);
    }
    await Promise.all([publint, attw]);
    log.push(`(${((Date.now() - at) / 1000).toFixed(1)} s)`);
    return log;
  }

  // Every package at once; the output package by package, in order.
  const logs = await Promise.all(
    names.map((name) =>
      checkPackage(name).catch((error) => {
        failures.push(`${name}: ${error?.stack ?? error}`);
        return [];
      }),
    ),
  );
  for (const log of logs) console.log(log.join('\n'));
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (failures.length > 0) {
  for (const failure of failures) console.error(`\npackage check failed: ${failure}`);
  process.exit(1);
}
console.log('\npackage checks: ok');
