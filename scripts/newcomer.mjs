#!/usr/bin/env node
// The newcomer's path, scripted (a step of `pnpm check`): what someone does on their first day,
// with nothing of this working tree but its committed HEAD.
//
// 1. Clone the repository's committed HEAD into an empty temporary folder (uncommitted changes
//    are not in it, as they would not be for a newcomer; nothing lies beside it, so a test that
//    reached for a folder next to the checkout, such as ../shared, fails here).
// 2. Run the root README's two commands there: their install command (the first command of its
//    ```sh blocks) with `--offline`, so it installs from the local pnpm store (what an install
//    here already fetched) and CI needs no network; `pnpm demo` (which builds); and `pnpm check` with
//    TOOLFENCE_CHECK_SCOPE=clone: the system programs, the outside-path check, the build and the
//    test files that run on the repository's own test support (conformance suites, loopback
//    preload; CLONE_TESTS in scripts/check.mjs). The other steps of that check are not run
//    again: with a committed working tree (CI) they read the same files here as in the check
//    that runs this step, and a clone can differ from the working tree only by what lies outside
//    the repository or what git ignores, on which the outside-path check (run in both) fails.
// 3. Pack one package (`--package NAME`, default tool-contract) in the clone (before its check,
//    from the demo's build) and, while the clone's check runs, install its
//    tarball alone with npm into a fresh project, with only the third-party packages its README
//    example imports, served from a registry on 127.0.0.1 (scripts/local-registry.mjs) that holds
//    the clone's installed copies; then type-check that example strictly and run it, and compare
//    what it prints with the README's `// → ...` lines.
// Every npm, pnpm and npx call goes through a proxy trap on 127.0.0.1 for any other host; the step
// fails if anything tried to leave. The whole step is bounded (BUDGET_MS) and the folder, the
// registry and every process are removed or ended at the end, also on failure or a signal.
// `--no-check` leaves out the clone's `pnpm check` (a quicker look at the install and example).
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installedClosure, mirrorInstalledPackages, startRegistry } from './local-registry.mjs';
import {
  cpuSeconds,
  createRunner,
  EXAMPLE_COMPILER_OPTIONS,
  findPnpm,
  readmeExample,
  StepError,
  startTrap,
  stepEnvironment,
  tail,
  trapVariables,
} from './step-kit.mjs';

const repo = resolve(import.meta.dirname, '..');
/**
 * Hard bound for the whole step (about 4 minutes on an idle 2-core machine, most of it the
 * conformance suites of the clone's check; room for a busy machine).
 */
const BUDGET_MS = 900_000;
const argv = process.argv.slice(2);
const verbose = argv.includes('--verbose');
const chosen = argv.includes('--package') ? argv[argv.indexOf('--package') + 1] : 'tool-contract';
const started = Date.now();
const temp = mkdtempSync(join(tmpdir(), 'toolfence-newcomer-'));
const clone = join(temp, 'clone');
/**
 * The tarballs, the registry and the fresh project: in a folder of their own, not beside the
 * clone, since they are made while the clone's check runs (nothing may lie beside the clone).
 */
const outside = mkdtempSync(join(tmpdir(), 'toolfence-newcomer-project-'));
const failures = [];
const timings = [];
let trap;
let registry;
let env;

const runner = createRunner({ budgetMs: BUDGET_MS, cwd: clone, environment: () => env, verbose });
const sh = runner.sh;
const check = (condition, message) => {
  if (!condition) failures.push(message);
  return condition;
};
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

async function phase(name, body) {
  const at = Date.now();
  await body();
  timings.push(`${name} ${((Date.now() - at) / 1000).toFixed(1)} s`);
}

/**
 * The caller's own environment (its npm cache, npx cache and pnpm store: what the install
 * already fetched), offline, with every other host sent to the trap.
 */
function offlineEnvironment() {
  return {
    ...process.env,
    ...trapVariables(trap),
    npm_config_proxy: trap.url,
    npm_config_https_proxy: trap.url,
    npm_config_noproxy: '127.0.0.1',
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    CI: 'true',
    TURBO_TELEMETRY_DISABLED: '1',
    TURBO_NO_UPDATE_NOTIFIER: '1',
    DO_NOT_TRACK: '1',
  };
}

/**
 * The root README's commands: the first line of each ```sh block that installs with an exact
 * pnpm through npx, as word lists split at `&&` (`[[install...], [demo...]]`, `[[install...],
 * [check...]]`).
 */
function readmeCommands(markdown) {
  const commands = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .map((match) => match[1].split('\n')[0].trim())
    .filter((line) => /^npx -y pnpm@\d+\.\d+\.\d+ install\b/.test(line))
    .map((line) => line.split(' && ').map((command) => command.trim().split(/\s+/)));
  const [install] = commands[0] ?? [];
  if (!install) throw new StepError("the README's first sh command is not an npx pnpm install");
  const then = (script) =>
    commands.find((command) => command[1]?.at(-1) === script)?.[1] ??
    (() => {
      throw new StepError(`the README has no command that installs and then runs ${script}`);
    })();
  return { install, demo: then('demo'), check: then('check') };
}

async function newcomer() {
  if (!existsSync(join(repo, 'packages', chosen ?? '', 'package.json'))) {
    throw new StepError(
      `--package must name a package folder (${readdirSync(join(repo, 'packages')).join(', ')})`,
    );
  }
  let head;
  await phase('clone', async () => {
    trap = await startTrap();
    env = offlineEnvironment();
    head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: repo,
      encoding: 'utf8',
    }).trim();
    if (dirty !== '') {
      console.log('newcomer: uncommitted changes are not part of this check (it clones HEAD)');
    }
    await sh('git clone', 'git', ['clone', '--quiet', '--no-checkout', repo, clone], {
      cwd: temp,
    });
    await sh('git checkout', 'git', ['checkout', '--quiet', head]);
  });

  const commands = readmeCommands(readFileSync(join(clone, 'README.md'), 'utf8'));
  await phase('install', async () => {
    const words = commands.install;
    await sh(words.join(' '), words[0], [...words.slice(1), '--offline']);
  });

  await phase('demo', async () => {
    // `pnpm demo` builds first (as `pnpm check` does), then runs the demo.
    const words = commands.demo;
    const demo = await sh(words.join(' '), words[0], words.slice(1));
    if (verbose) console.log(demo.stdout);
    check(
      demo.stdout.trim() !== '',
      'pnpm demo printed nothing (the README promises a transcript)',
    );
    for (const name of readdirSync(join(clone, 'packages'))) {
      check(
        existsSync(join(clone, 'packages', name, 'dist', 'index.js')),
        `the build left no dist/index.js in packages/${name}`,
      );
    }
  });

  const packageDir = join(clone, 'packages', chosen);
  if (!existsSync(join(packageDir, 'package.json'))) {
    throw new StepError(`no package ${chosen} (packages: ${readdirSync(join(clone, 'packages'))})`);
  }
  const manifest = readJson(join(packageDir, 'package.json'));
  const example = readmeExample(readFileSync(join(packageDir, 'README.md'), 'utf8'));
  if (example === undefined) throw new StepError(`${chosen}'s README has no \`\`\`ts example`);
  const siblings = Object.keys(manifest.dependencies ?? {}).filter((name) =>
    name.startsWith('@toolfence/'),
  );

  const tarballs = [];
  await phase('pack', async () => {
    const destination = join(outside, 'tarballs');
    mkdirSync(destination);
    for (const name of [manifest.name, ...siblings]) {
      const dir = join(clone, 'packages', name.replace('@toolfence/', ''));
      await sh(
        `pnpm pack ${name}`,
        'npx',
        ['-y', pnpmSpec(), 'pack', '--pack-destination', destination],
        {
          cwd: dir,
        },
      );
    }
    for (const file of readdirSync(destination)) tarballs.push(join(destination, file));
  });

  // What the example imports besides our packages, at the versions the clone installed.
  const specifiers = [...example.matchAll(/from '([^']+)'/g)].map((match) => match[1]);
  const thirdParty = [
    ...new Set(
      specifiers
        .filter((specifier) => !specifier.startsWith('node:') && !specifier.startsWith('.'))
        .map((specifier) =>
          specifier.startsWith('@')
            ? specifier.split('/').slice(0, 2).join('/')
            : specifier.split('/')[0],
        )
        .filter((name) => !name.startsWith('@toolfence/')),
    ),
  ];
  // The clone's check, and at the same time the package's fresh project (a registry on
  // 127.0.0.1, npm install, the README example), which uses only the tarballs packed above: the
  // check spends most of its time waiting on the servers and processes its tests start.
  const checking = argv.includes('--no-check')
    ? Promise.resolve()
    : phase('check', async () => {
        const words = commands.check;
        // The clone's check: its tests start servers on localhost too, which no proxy may take.
        const checkEnv = {
          ...env,
          TOOLFENCE_CHECK_SCOPE: 'clone',
          NO_PROXY: '127.0.0.1,localhost,::1',
          no_proxy: '127.0.0.1,localhost,::1',
        };
        const result = await sh(`${words.join(' ')} (clone scope)`, words[0], words.slice(1), {
          env: checkEnv,
        });
        // The clone's table, and its totals in other words: the outer check's own
        // `tests: N passed, N failed` line is the one CI reads.
        const output = result.stdout.trim();
        console.log(
          output
            .slice(output.lastIndexOf('== summary'))
            .replace(/^tests: (\d+) passed, (\d+) failed/m, 'in the clone: $1 passed, $2 failed'),
        );
      });
  const consuming = (async () => {
    const project = join(outside, 'project');
    await phase('registry', async () => {
      registry = await startRegistry(join(outside, 'registry'), { proxy: trap.url });
      const examples = join(clone, 'examples', 'readme-examples');
      const roots = [
        ...thirdParty.map((name) => [examples, name]),
        // The package's own third-party dependencies, as the clone installed them.
        ...Object.keys(manifest.dependencies ?? {})
          .filter((name) => !name.startsWith('@toolfence/'))
          .map((name) => [packageDir, name]),
        [clone, 'typescript'],
        [clone, '@types/node'],
      ];
      for (const sibling of siblings) {
        const dir = join(clone, 'packages', sibling.replace('@toolfence/', ''));
        for (const name of Object.keys(readJson(join(dir, 'package.json')).dependencies ?? {})) {
          if (!name.startsWith('@toolfence/')) roots.push([dir, name]);
        }
      }
      const { packages, missing } = installedClosure(roots);
      if (missing.length > 0)
        throw new StepError(`not installed in the clone: ${missing.join(', ')}`);
      await mirrorInstalledPackages(packages, { ...registry, workDir: join(outside, 'mirror') });
      env = stepEnvironment({ temp: outside, registry, trap, pnpm: findPnpm(repo) });
    });

    await phase('fresh project', async () => {
      mkdirSync(project);
      writeFileSync(
        join(project, 'package.json'),
        `${JSON.stringify({ name: 'newcomer', private: true, type: 'module' }, null, 2)}\n`,
      );
      const rootRanges = readJson(join(clone, 'package.json')).devDependencies;
      const exampleRanges = readJson(join(clone, 'examples', 'readme-examples', 'package.json'));
      await sh(
        `npm install ${manifest.name} (its tarball)`,
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
          ...tarballs,
          ...thirdParty.map((name) => `${name}@${exampleRanges.dependencies?.[name] ?? '*'}`),
          `typescript@${rootRanges.typescript}`,
          `@types/node@${rootRanges['@types/node']}`,
        ],
        { cwd: project },
      );
      const installed = readJson(
        join(project, 'node_modules', ...manifest.name.split('/'), 'package.json'),
      );
      check(
        installed.version === manifest.version,
        `the fresh project has ${manifest.name} ${installed.version}, expected ${manifest.version}`,
      );
      check(
        !JSON.stringify(installed).includes('workspace:'),
        `the packed ${manifest.name} holds a workspace: range`,
      );
    });

    await phase('example', async () => {
      writeFileSync(join(project, 'example.mts'), `${example}\nexport {};\n`);
      writeFileSync(
        join(project, 'tsconfig.json'),
        `${JSON.stringify({ compilerOptions: EXAMPLE_COMPILER_OPTIONS, include: ['*.mts'] }, null, 2)}\n`,
      );
      const compiled = await sh(
        'tsc (example)',
        join(project, 'node_modules', '.bin', 'tsc'),
        ['-p', '.'],
        {
          cwd: project,
          allowFailure: true,
        },
      );
      if (
        !check(
          compiled.status === 0,
          `${chosen}'s README example does not compile:\n${tail(compiled.stdout)}`,
        )
      ) {
        return;
      }
      const ran = await sh(
        `run ${chosen}'s example`,
        process.execPath,
        [join('out', 'example.mjs')],
        {
          cwd: project,
          allowFailure: true,
        },
      );
      check(
        ran.status === 0 && ran.stderr === '',
        `${chosen}'s README example failed (${ran.status ?? ran.signal}):\n${tail(ran.stdout)}\n${tail(ran.stderr)}`,
      );
      const printed = ran.stdout.split('\n');
      for (const [, line] of example.matchAll(/^\/\/ → (.*)$/gm)) {
        check(printed.includes(line), `${chosen}'s README example did not print "${line}"`);
      }
    });
  })();
  // Both run to their end (nothing is removed under a running command); the first failure counts.
  const settled = await Promise.allSettled([checking, consuming]);
  const rejected = settled.find((outcome) => outcome.status === 'rejected');
  if (rejected) throw rejected.reason;
  check(
    trap.attempts.length === 0,
    `requests tried to leave 127.0.0.1: ${trap.attempts.join('; ')}`,
  );
  console.log(
    `newcomer: cloned ${head.slice(0, 12)} into an empty folder, installed offline, ran the demo${argv.includes('--no-check') ? '' : ", the clone's check"} and ${manifest.name}'s README example from its tarball alone`,
  );
}

/** `pnpm@<version>` of the root package.json's packageManager. */
function pnpmSpec() {
  return readJson(join(repo, 'package.json')).packageManager;
}

async function main() {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (runner.interrupt(signal)) console.error(`newcomer: ${signal}, stopping`);
    });
  }
  try {
    await newcomer();
  } catch (error) {
    failures.push(error instanceof StepError ? error.message : (error?.stack ?? String(error)));
  } finally {
    await registry?.stop();
    await trap?.close();
    for (const folder of [temp, outside]) {
      try {
        rmSync(folder, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
      } catch (error) {
        failures.push(`could not remove ${folder}: ${error.message}`);
      }
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `newcomer: ${timings.join(', ')}; total ${seconds} s (CPU ${cpuSeconds()} s, all processes)`,
  );
  for (const folder of [temp, outside]) {
    if (existsSync(folder)) failures.push(`${folder} was not removed`);
  }
  if (failures.length > 0) {
    for (const failure of failures) console.error(`newcomer: ${failure}`);
    process.exit(1);
  }
  console.log('newcomer: ok');
}

await main();
