#!/usr/bin/env node
// Release rehearsal: the real release path against a real registry, on a temporary copy of the
// repository, with nothing sent anywhere but 127.0.0.1.
//
// 1. A verdaccio registry (scripts/local-registry.mjs) starts on 127.0.0.1 with its storage in a
//    temporary folder and no uplinks. The third-party packages our packages (and the README
//    examples) need are published to it from the local pnpm install, so installs resolve them
//    from 127.0.0.1; anything else is a 404. Every npm and pnpm call of this step uses a
//    userconfig, cache and HOME inside that folder (never ~/.npmrc), and for any host but
//    127.0.0.1 a proxy "trap" on 127.0.0.1 that refuses and records the request (the step fails
//    if it saw any).
// 2. Three releases, each `changeset version` with a test changeset, `scripts/sync-versions.mjs`,
//    `pnpm run build` (turbo), then `pnpm exec changeset publish` (release.yml's publish command;
//    provenance off): a patch of every package, a patch of tool-contract alone, a minor of
//    tool-contract. After each, the registry must hold exactly the expected versions, tagged, and
//    no published manifest may hold a `workspace:` range.
// 3. Consumers, each a fresh npm project: mcp-bridge alone resolves tools and tool-contract by
//    their ranges; host-config alone installs nothing else; every package README's first ```ts
//    block (the rule examples/readme-examples uses) type-checks strictly against the installed
//    copies and runs (host-config's is an MCP server: a client calls it). After the tool-contract
//    patch, `npm update` takes it and changes nothing else; after the minor, the published ranges
//    of tools and mcp-bridge are the ones `changeset version` wrote, a consumer pinned to the old
//    mcp-bridge updates and its examples still compile and run, and a fresh install of the latest
//    mcp-bridge has one tool-contract.
// The registry is stopped and the folder removed at the end, also on failure or interruption.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { installedClosure, mirrorInstalledPackages, startRegistry } from './local-registry.mjs';
import {
  cpuSeconds,
  createRunner,
  EXAMPLE_COMPILER_OPTIONS,
  findPnpm as findPnpmOf,
  readmeExample as firstTsBlock,
  stepEnvironment as isolatedEnvironment,
  StepError,
  startTrap,
  tail,
} from './step-kit.mjs';

const repo = resolve(import.meta.dirname, '..');
const PACKAGES = ['tool-contract', 'host-config', 'tools', 'mcp-bridge'];
/** README examples that run to completion; host-config's is a server, driven by a client. */
const RUNNABLE = ['tool-contract', 'tools', 'mcp-bridge'];
/**
 * Hard bound for the whole step: every command's timeout is what is left of it. The step uses
 * about 60 s of CPU in all; the bound leaves room for a machine shared with other work.
 */
const BUDGET_MS = 420_000;
const verbose = process.argv.includes('--verbose');
const started = Date.now();
const temp = mkdtempSync(join(tmpdir(), 'toolfence-release-'));
const work = join(temp, 'repo');
const failures = [];
const timings = [];
let registry;
let trap;
let env;

const check = (condition, message) => {
  if (!condition) failures.push(message);
  return condition;
};
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const manifestOf = (name) => readJson(join(work, 'packages', name, 'package.json'));

const runner = createRunner({ budgetMs: BUDGET_MS, cwd: work, environment: () => env, verbose });
const sh = runner.sh;

async function phase(name, body) {
  const at = Date.now();
  await body();
  timings.push(`${name} ${((Date.now() - at) / 1000).toFixed(1)} s`);
}

// ---- versions -------------------------------------------------------------------------------

const parse = (version) => version.split('.').map(Number);
const bump = (version, kind) => {
  const [major, minor, patch] = parse(version);
  return kind === 'minor' ? `${major}.${minor + 1}.0` : `${major}.${minor}.${patch + 1}`;
};

/** Does a caret range (`^X.Y.Z`, with or without `workspace:`) admit `version`? 0.x aware. */
function caretAdmits(range, version) {
  const match = /^(?:workspace:)?\^(\d+)\.(\d+)\.(\d+)$/.exec(range ?? '');
  if (!match) return false;
  const [major, minor, patch] = match.slice(1).map(Number);
  const [vMajor, vMinor, vPatch] = parse(version);
  if (vMajor !== major) return false;
  if (major > 0) return vMinor > minor || (vMinor === minor && vPatch >= patch);
  if (vMinor !== minor) return false;
  return vPatch >= patch;
}

// ---- the temporary repository ---------------------------------------------------------------

/**
 * `to` becomes a node_modules folder whose entries link to those of `from`, except our own
 * packages, which link to the temporary copy's (so a package builds against its versioned
 * siblings, not the working tree's).
 */
function linkNodeModules(from, to) {
  if (!existsSync(from)) throw new StepError(`${from} is missing: run pnpm install first`);
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from)) {
    if (entry !== '@toolfence') {
      symlinkSync(join(from, entry), join(to, entry));
      continue;
    }
    mkdirSync(join(to, entry));
    for (const name of readdirSync(join(from, entry))) {
      symlinkSync(join(work, 'packages', name), join(to, entry, name));
    }
  }
}

function copyRepository() {
  const skip = new Set(['node_modules', 'dist', '.turbo', '.git', 'coverage', 'docs', 'generated']);
  cpSync(repo, work, { recursive: true, filter: (source) => !skip.has(basename(source)) });
  linkNodeModules(join(repo, 'node_modules'), join(work, 'node_modules'));
  for (const name of PACKAGES) {
    linkNodeModules(
      join(repo, 'packages', name, 'node_modules'),
      join(work, 'packages', name, 'node_modules'),
    );
  }
  // Only our changesets count: pending ones in the working tree would blur the assertions.
  for (const file of readdirSync(join(work, '.changeset'))) {
    if (file.endsWith('.md') && file !== 'README.md') rmSync(join(work, '.changeset', file));
  }
}

const git = (...args) => sh(`git ${args[0]}`, 'git', args);

const findPnpm = () => findPnpmOf(repo);

/** The environment of every command of this step: nothing of the caller's npm or pnpm setup. */
const stepEnvironment = (pnpm) => isolatedEnvironment({ temp, registry, trap, pnpm });

// ---- the registry ---------------------------------------------------------------------------

/** GET a packument (`undefined` for a 404), on a new connection: a kept-alive one may be stale. */
function packument(name) {
  return new Promise((resolveGet, reject) => {
    const request = get(
      `${registry.url}${name.replace('/', '%2f')}`,
      {
        agent: false,
        headers: { authorization: `Bearer ${registry.token}`, accept: 'application/json' },
      },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          body += chunk;
        });
        response.on('end', () => {
          if (response.statusCode === 404) resolveGet(undefined);
          else if (response.statusCode !== 200)
            reject(new StepError(`GET ${name}: ${response.statusCode}`));
          else resolveGet(JSON.parse(body));
        });
      },
    );
    request.setTimeout(10_000, () => request.destroy(new Error(`GET ${name} timed out`)));
    request.on('error', reject);
  });
}

async function publishedVersions() {
  const result = {};
  for (const name of PACKAGES) {
    const document = await packument(`@toolfence/${name}`);
    result[name] = document ? Object.keys(document.versions) : [];
  }
  return result;
}

/** Third-party packages of our packages and of the README examples, at their installed versions. */
function mirrorRoots() {
  const roots = [];
  for (const name of PACKAGES) {
    const dir = join(repo, 'packages', name);
    for (const dependency of Object.keys(readJson(join(dir, 'package.json')).dependencies ?? {})) {
      if (!dependency.startsWith('@toolfence/')) roots.push([dir, dependency]);
    }
  }
  const examples = join(repo, 'examples', 'readme-examples');
  for (const name of EXAMPLE_DEPENDENCIES) roots.push([examples, name]);
  for (const name of ['typescript', '@types/node']) roots.push([repo, name]);
  return roots;
}

/** What a README example needs besides our packages (versions: those installed here). */
const EXAMPLE_DEPENDENCIES = [
  '@modelcontextprotocol/sdk',
  '@modelcontextprotocol/server-everything',
  'zod',
];

// ---- releases -------------------------------------------------------------------------------

/** One release: a test changeset, `changeset version`, sync, build, `changeset publish`. */
async function release(label, bumps) {
  const before = Object.fromEntries(PACKAGES.map((name) => [name, manifestOf(name)]));
  const frontMatter = Object.entries(bumps)
    .map(([name, kind]) => `"@toolfence/${name}": ${kind}`)
    .join('\n');
  writeFileSync(
    join(work, '.changeset', `rehearsal-${label}.md`),
    `---\n${frontMatter}\n---\n\nRelease rehearsal (${label}).\n`,
  );
  await sh('changeset version', 'pnpm', ['exec', 'changeset', 'version']);
  await sh('sync-versions', process.execPath, [join(work, 'scripts', 'sync-versions.mjs'), work]);
  await git('add', '-A');
  await git('commit', '-qm', `Version packages (${label})`);
  // release.yml's `pnpm build` (turbo), limited to the packages this release publishes (and what
  // they depend on, from turbo's cache in the copy): the others' dist is already built.
  const changed = PACKAGES.filter((name) => manifestOf(name).version !== before[name].version);
  await sh('build', 'pnpm', [
    'run',
    'build',
    '--output-logs=errors-only',
    ...changed.map((name) => `--filter=@toolfence/${name}`),
  ]);
  const publishedBefore = await publishedVersions();
  const publishRun = await sh('changeset publish', 'pnpm', ['exec', 'changeset', 'publish']);
  if (verbose) console.log(publishRun.stdout);
  const after = Object.fromEntries(PACKAGES.map((name) => [name, manifestOf(name)]));
  const publishedAfter = await publishedVersions();

  // The registry holds exactly the versions changeset version produced, published once each.
  for (const name of PACKAGES) {
    const grew = publishedAfter[name].filter((v) => !publishedBefore[name].includes(v));
    const released =
      after[name].version !== before[name].version || publishedBefore[name].length === 0;
    check(
      JSON.stringify(grew) === JSON.stringify(released ? [after[name].version] : []),
      `${label}: @toolfence/${name} should have published ${released ? after[name].version : 'nothing'}, published [${grew}]`,
    );
    if (released) {
      check(
        (await git('tag', '--list', `@toolfence/${name}@${after[name].version}`)).stdout.trim() !==
          '',
        `${label}: changeset publish did not tag @toolfence/${name}@${after[name].version}`,
      );
    }
    // What was published carries real ranges: those changeset version wrote, minus `workspace:`.
    for (const version of grew) {
      const published = (await packument(`@toolfence/${name}`)).versions[version];
      check(
        !JSON.stringify(published).includes('workspace:'),
        `${label}: @toolfence/${name}@${version} was published with a workspace: range`,
      );
      const declared = Object.keys(after[name].dependencies ?? {});
      check(
        JSON.stringify(Object.keys(published.dependencies ?? {})) === JSON.stringify(declared),
        `${label}: @toolfence/${name}@${version} was published with dependencies [${Object.keys(published.dependencies ?? {})}], package.json has [${declared}]`,
      );
      for (const [dependency, range] of Object.entries(after[name].dependencies ?? {})) {
        const expected = range.replace(/^workspace:/, '');
        check(
          published.dependencies?.[dependency] === expected,
          `${label}: @toolfence/${name}@${version} depends on ${dependency}@${published.dependencies?.[dependency]}, package.json says ${range}`,
        );
      }
    }
  }
  return { before, after };
}

// ---- consumers ------------------------------------------------------------------------------

function consumerProject(name) {
  const dir = join(temp, 'consumers', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: `rehearsal-${name}`, private: true, type: 'module' }, null, 2)}\n`,
  );
  return dir;
}

const npm = (label, dir, args) =>
  sh(label, 'npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });

/** The lockfile's packages, and a check that every one of them came from the registry. */
function lockedTree(dir, label) {
  const lock = readJson(join(dir, 'package-lock.json'));
  const tree = {};
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '') continue;
    tree[path] = entry;
    check(
      entry.resolved?.startsWith(registry.url) === true,
      `${label}: ${path} was resolved from ${entry.resolved}, not the rehearsal registry`,
    );
  }
  return tree;
}

const ourCopies = (tree) =>
  Object.fromEntries(
    Object.entries(tree)
      .filter(([path]) => /(^|\/)node_modules\/@toolfence\/[^/]+$/.test(path))
      .map(([path, entry]) => [path, entry.version]),
  );

/** The README example of a package: its first ```ts block (as examples/readme-examples reads it). */
function readmeExample(name) {
  return firstTsBlock(readFileSync(join(work, 'packages', name, 'README.md'), 'utf8'));
}

/** A client for host-config's example, which is an MCP server over stdio. */
const HOST_CONFIG_DRIVER = `import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { MISSING_HOOK_META_KEY } from '@toolfence/host-config';

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [new URL('./host-config.mjs', import.meta.url).pathname],
  stderr: 'inherit',
});
const client = new Client({ name: 'rehearsal', version: '1.0.0' });
await client.connect(transport);
const bytes = Buffer.from('rehearsal');
const inline = await client.callTool({
  name: 'upload',
  arguments: { attachments: [{ source: 'data:text/plain;base64,' + bytes.toString('base64') }] },
});
const expected = [{ mimeType: 'text/plain', size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }];
const content = inline.content as Array<{ type: string; text?: string }>;
if (inline.isError || content[0]?.text !== JSON.stringify(expected)) {
  throw new Error('data: attachment: ' + JSON.stringify(inline));
}
const local = await client.callTool({
  name: 'upload',
  arguments: { attachments: [{ source: 'file:///tmp/spec.pdf' }] },
});
if (local.isError !== true || !(local._meta && MISSING_HOOK_META_KEY in local._meta)) {
  throw new Error('file: attachment should get the missing-hook answer: ' + JSON.stringify(local));
}
await client.close();
console.log('host-config example served a data: and a file: attachment');
`;

/** Writes the README examples into `dir`, type-checks them strictly and runs them. */
async function runExamples(dir, label) {
  for (const name of PACKAGES) {
    const code = readmeExample(name);
    if (!check(code !== undefined, `${name}'s README has no \`\`\`ts example`)) continue;
    writeFileSync(join(dir, `${name}.mts`), `${code}\nexport {};\n`);
  }
  writeFileSync(join(dir, 'host-config-driver.mts'), HOST_CONFIG_DRIVER);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: EXAMPLE_COMPILER_OPTIONS,
        include: ['*.mts'],
      },
      null,
      2,
    )}\n`,
  );
  const compiled = await sh(
    `${label}: tsc`,
    join(dir, 'node_modules', '.bin', 'tsc'),
    ['-p', '.'],
    {
      cwd: dir,
      allowFailure: true,
    },
  );
  if (
    !check(
      compiled.status === 0,
      `${label}: README examples do not compile:\n${tail(compiled.stdout)}`,
    )
  )
    return;
  for (const name of [...RUNNABLE, 'host-config-driver']) {
    const ran = await sh(`${label}: run ${name}`, process.execPath, [join('out', `${name}.mjs`)], {
      cwd: dir,
      allowFailure: true,
    });
    check(
      ran.status === 0 && ran.stderr === '',
      `${label}: the ${name} example failed (${ran.status ?? ran.signal}):\n${tail(ran.stdout)}\n${tail(ran.stderr)}`,
    );
    // Output the README states (`// → ...` lines) must be what the example prints.
    if (!PACKAGES.includes(name)) continue;
    const stated = [...(readmeExample(name) ?? '').matchAll(/^\/\/ → (.*)$/gm)].map((m) => m[1]);
    const printed = ran.stdout.split('\n');
    for (const line of stated) {
      check(printed.includes(line), `${label}: the ${name} example did not print "${line}"`);
    }
  }
}

// ---- the rehearsal --------------------------------------------------------------------------

async function rehearse() {
  let pnpm;
  await phase('copy', async () => {
    pnpm = findPnpm();
    copyRepository();
    await git('init', '-q', '-b', 'main');
    await git('add', '-A');
    await git('commit', '-qm', 'Rehearsal base');
  });

  await phase('registry', async () => {
    trap = await startTrap();
    registry = await startRegistry(join(temp, 'registry'), { proxy: trap.url });
    env = stepEnvironment(pnpm);
    const at = Date.now();
    const { packages, missing } = installedClosure(mirrorRoots());
    if (missing.length > 0) throw new StepError(`not installed here: ${missing.join(', ')}`);
    const count = await mirrorInstalledPackages(packages, {
      ...registry,
      workDir: join(temp, 'mirror'),
    });
    console.log(
      `release rehearsal: registry ${registry.url}, ${count} third-party versions mirrored in ${Date.now() - at} ms`,
    );
    // The registry must not proxy: a package it was not given is a 404, not a download.
    const probe = await sh('npm view left-pad', 'npm', ['view', 'left-pad', 'version'], {
      cwd: temp,
      allowFailure: true,
    });
    check(
      probe.status !== 0 && /E404/.test(probe.stderr),
      `the registry served a package it was not given (npm view left-pad: ${probe.status} ${tail(probe.stderr)})`,
    );
    // The trap works: a registry that is not 127.0.0.1 (here 127.0.0.2, so nothing could leave
    // even if it did not) is reached only through it.
    await sh(
      'npm view (trap probe)',
      'npm',
      ['view', 'left-pad', '--registry=http://127.0.0.2:9/'],
      {
        cwd: temp,
        allowFailure: true,
      },
    );
    check(
      trap.attempts.some((line) => line.includes('127.0.0.2')),
      `npm did not go through the proxy trap (it saw: ${trap.attempts.join('; ') || 'nothing'})`,
    );
    trap.attempts.length = 0;
  });

  // Release 1: a patch of every package; all four are published.
  let first;
  await phase('release 1', async () => {
    first = await release('patch-all', Object.fromEntries(PACKAGES.map((name) => [name, 'patch'])));
  });
  const v1 = Object.fromEntries(PACKAGES.map((name) => [name, first.after[name].version]));
  for (const name of PACKAGES) {
    check(
      v1[name] === bump(first.before[name].version, 'patch'),
      `release 1: @toolfence/${name} should be ${bump(first.before[name].version, 'patch')}, is ${v1[name]}`,
    );
  }

  const bridge = consumerProject('bridge-alone');
  const hostConfig = consumerProject('host-config-alone');
  const examples = consumerProject('examples');
  await phase('consumers', async () => {
    // mcp-bridge alone: tools and tool-contract come from the registry through its ranges.
    await npm('npm install mcp-bridge', bridge, [
      'install',
      `@toolfence/mcp-bridge@${v1['mcp-bridge']}`,
    ]);
    const tree = lockedTree(bridge, 'mcp-bridge alone');
    check(
      JSON.stringify(ourCopies(tree)) ===
        JSON.stringify({
          'node_modules/@toolfence/mcp-bridge': v1['mcp-bridge'],
          'node_modules/@toolfence/tool-contract': v1['tool-contract'],
          'node_modules/@toolfence/tools': v1.tools,
        }),
      `mcp-bridge alone installed ${JSON.stringify(ourCopies(tree))}`,
    );
    for (const name of ['mcp-bridge', 'tools', 'tool-contract']) {
      const installed = readFileSync(
        join(bridge, 'node_modules', '@toolfence', name, 'package.json'),
        'utf8',
      );
      check(
        !installed.includes('workspace:'),
        `installed @toolfence/${name} holds a workspace: range`,
      );
    }
    await sh(
      'import mcp-bridge',
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('@toolfence/mcp-bridge'); if (typeof m.McpClient !== 'function') process.exit(1);",
      ],
      { cwd: bridge },
    );

    // host-config alone: nothing else.
    await npm('npm install host-config', hostConfig, ['install', '@toolfence/host-config']);
    const alone = Object.keys(lockedTree(hostConfig, 'host-config alone'));
    check(
      JSON.stringify(alone) === JSON.stringify(['node_modules/@toolfence/host-config']),
      `host-config alone installed ${alone.join(', ')}`,
    );

    // The README examples, in a project that pins mcp-bridge exactly (the others by caret), with
    // the third-party packages at the ranges the repository's own example package uses.
    const exampleRanges = readJson(join(repo, 'examples', 'readme-examples', 'package.json'));
    const rootRanges = readJson(join(repo, 'package.json')).devDependencies;
    const manifest = readJson(join(examples, 'package.json'));
    manifest.dependencies = {
      '@toolfence/mcp-bridge': v1['mcp-bridge'],
      ...Object.fromEntries(
        ['tool-contract', 'tools', 'host-config'].map((name) => [
          `@toolfence/${name}`,
          `^${v1[name]}`,
        ]),
      ),
      ...Object.fromEntries(
        EXAMPLE_DEPENDENCIES.map((name) => [name, exampleRanges.dependencies[name]]),
      ),
      typescript: rootRanges.typescript,
      '@types/node': rootRanges['@types/node'],
    };
    writeFileSync(join(examples, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await npm('npm install (examples)', examples, ['install']);
    lockedTree(examples, 'examples');
    await runExamples(examples, 'release 1');
  });

  // Release 2: a patch of tool-contract alone; `npm update` takes it and nothing else.
  await phase('release 2', async () => {
    await release('patch-tool-contract', { 'tool-contract': 'patch' });
  });
  const v2 = Object.fromEntries(PACKAGES.map((name) => [name, manifestOf(name).version]));
  check(
    v2['tool-contract'] === bump(v1['tool-contract'], 'patch') &&
      ['tools', 'mcp-bridge', 'host-config'].every((name) => v2[name] === v1[name]),
    `release 2 should bump tool-contract alone, versions are ${JSON.stringify(v2)}`,
  );
  await phase('update', async () => {
    const before = lockedTree(bridge, 'mcp-bridge alone');
    await npm('npm update', bridge, ['update']);
    const after = lockedTree(bridge, 'mcp-bridge alone, updated');
    const changed = Object.keys({ ...before, ...after }).filter(
      (path) => JSON.stringify(before[path]) !== JSON.stringify(after[path]),
    );
    check(
      JSON.stringify(changed) === JSON.stringify(['node_modules/@toolfence/tool-contract']) &&
        after['node_modules/@toolfence/tool-contract'].version === v2['tool-contract'],
      `npm update after the tool-contract patch changed ${changed.join(', ') || 'nothing'}`,
    );
  });

  // Release 3: a minor of tool-contract raises the ranges in tools and mcp-bridge.
  let third;
  await phase('release 3', async () => {
    third = await release('minor-tool-contract', { 'tool-contract': 'minor' });
  });
  const v3 = Object.fromEntries(PACKAGES.map((name) => [name, third.after[name].version]));
  check(
    v3['tool-contract'] === bump(v2['tool-contract'], 'minor'),
    `release 3: tool-contract should be ${bump(v2['tool-contract'], 'minor')}, is ${v3['tool-contract']}`,
  );
  for (const dependant of ['tools', 'mcp-bridge']) {
    const range = third.after[dependant].dependencies?.['@toolfence/tool-contract'];
    const oldRange = third.before[dependant].dependencies?.['@toolfence/tool-contract'];
    check(
      caretAdmits(range, v3['tool-contract']),
      `${dependant}'s range ${range} does not admit tool-contract ${v3['tool-contract']}`,
    );
    check(
      !caretAdmits(range, v2['tool-contract']),
      `${dependant}'s range ${range} should have been raised from ${oldRange}`,
    );
    check(
      v3[dependant] === bump(v2[dependant], 'patch'),
      `${dependant} should get a patch (${bump(v2[dependant], 'patch')}) when its range is raised, is ${v3[dependant]}`,
    );
  }
  check(
    caretAdmits(third.after['mcp-bridge'].dependencies?.['@toolfence/tools'], v3.tools),
    `mcp-bridge's range on tools does not admit tools ${v3.tools}`,
  );
  check(
    v3['host-config'] === v2['host-config'],
    'host-config must not be bumped by a tool-contract changeset',
  );
  const changelog = readFileSync(join(work, 'packages', 'tool-contract', 'CHANGELOG.md'), 'utf8');
  check(
    changelog.includes('Release rehearsal (minor-tool-contract)'),
    'CHANGELOG.md lacks the changeset text',
  );
  for (const name of PACKAGES) {
    const source = readFileSync(join(work, 'packages', name, 'src', 'version.ts'), 'utf8');
    check(source.includes(`'${v3[name]}'`), `${name}'s VERSION constant was not synced`);
  }

  await phase('pinned consumer', async () => {
    // The consumer pinned to the old mcp-bridge updates within its ranges and keeps working.
    await npm('npm update (pinned)', examples, ['update']);
    const tree = lockedTree(examples, 'pinned consumer');
    const copies = ourCopies(tree);
    check(
      copies['node_modules/@toolfence/mcp-bridge'] === v1['mcp-bridge'] &&
        copies['node_modules/@toolfence/tools'] === v3.tools &&
        copies['node_modules/@toolfence/tool-contract'] === v2['tool-contract'] &&
        copies['node_modules/@toolfence/tools/node_modules/@toolfence/tool-contract'] ===
          v3['tool-contract'],
      `the pinned consumer's tree after the minor is ${JSON.stringify(copies)}`,
    );
    await runExamples(examples, 'pinned consumer after the minor');

    // A new consumer of the latest mcp-bridge gets one tool-contract, the new minor.
    const latest = consumerProject('bridge-latest');
    await npm('npm install mcp-bridge (latest)', latest, ['install', '@toolfence/mcp-bridge']);
    const latestCopies = ourCopies(lockedTree(latest, 'latest mcp-bridge'));
    check(
      JSON.stringify(latestCopies) ===
        JSON.stringify({
          'node_modules/@toolfence/mcp-bridge': v3['mcp-bridge'],
          'node_modules/@toolfence/tool-contract': v3['tool-contract'],
          'node_modules/@toolfence/tools': v3.tools,
        }),
      `the latest mcp-bridge installed ${JSON.stringify(latestCopies)}`,
    );
  });
  if (verbose) {
    // What the registry did not have. Expected: the probe, changesets' first `npm info`s, and the
    // optional peers npm looks up but does not install (better-sqlite3, @cfworker/json-schema).
    const missing = new Set();
    for (const line of readFileSync(join(temp, 'registry', 'verdaccio.log'), 'utf8').split('\n')) {
      if (line.includes('"status":404')) missing.add(JSON.parse(line).request?.url);
    }
    console.log(`  registry 404s: ${[...missing].join(' ')}`);
  }
  check(
    trap.attempts.length === 0,
    `requests tried to leave 127.0.0.1: ${trap.attempts.join('; ')}`,
  );
  console.log(
    `release rehearsal: published tool-contract ${v1['tool-contract']}, ${v2['tool-contract']}, ${v3['tool-contract']}; ` +
      `tools ${v1.tools}, ${v3.tools} (range ${third.after.tools.dependencies['@toolfence/tool-contract'].replace('workspace:', '')}); ` +
      `mcp-bridge ${v1['mcp-bridge']}, ${v3['mcp-bridge']}; host-config ${v1['host-config']}`,
  );
}

async function main() {
  const stop = async () => {
    await registry?.stop();
    await trap?.close();
    try {
      rmSync(temp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (error) {
      failures.push(`could not remove ${temp}: ${error.message}`);
    }
  };
  // On a signal, end the running command; the rehearsal then unwinds through the cleanup below.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (runner.interrupt(signal)) console.error(`release rehearsal: ${signal}, stopping`);
    });
  }
  try {
    await rehearse();
  } catch (error) {
    failures.push(error instanceof StepError ? error.message : (error?.stack ?? String(error)));
    if (error?.cause) failures.push(String(error.cause));
  } finally {
    await stop();
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `release rehearsal: ${timings.join(', ')}; total ${seconds} s (CPU ${cpuSeconds()} s, all processes)`,
  );
  if (existsSync(temp)) failures.push(`${temp} was not removed`);
  if (failures.length > 0) {
    for (const failure of failures) console.error(`release rehearsal: ${failure}`);
    process.exit(1);
  }
  console.log('release rehearsal: ok');
}

await main();
