// Pieces shared by the steps of `pnpm check` that work on a copy of the repository and install
// packages the way a user does: the release rehearsal (scripts/check-release.mjs) and the
// newcomer's path (scripts/newcomer.mjs). A bounded command runner (each command in its own
// process group, ended with everything it started on a timeout or a signal), the proxy trap that
// records any request meant for a host other than 127.0.0.1, the isolated npm/pnpm environment,
// and the README example rule (a package's first ```ts block).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';

/** A failure of a step's command: its message is the report. */
export class StepError extends Error {}

/** The last 40 lines of a command's output. */
export const tail = (text) => (text ?? '').trim().split('\n').slice(-40).join('\n');

/** Ends a command and every process it started (its process group). */
export function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGTERM');
    setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, 2000).unref();
  } catch {}
}

/**
 * A command runner bounded by one budget for the whole step: every command's timeout is what is
 * left of it. `environment()` gives the environment of each command (it may be set up after the
 * runner is made); `cwd` is the default working folder. `interrupt(signal)` ends the running
 * command (and what it started); every later `sh` refuses to start.
 */
export function createRunner({ budgetMs, cwd, environment, verbose = false }) {
  const deadline = Date.now() + budgetMs;
  /** The commands running now (a step may run two at once), so a signal can end them first. */
  const running = new Set();
  let interrupted;

  /**
   * Runs a command in the step's environment (or `env`) and its own process group, bounded by
   * what is left of the budget; resolves `{ status, signal, stdout, stderr }`, and rejects with a
   * {@link StepError} on failure unless `allowFailure`.
   */
  function sh(label, command, args, { cwd: where = cwd, allowFailure = false, env } = {}) {
    return new Promise((resolveRun, reject) => {
      const remaining = deadline - Date.now();
      if (interrupted) return reject(new StepError(`interrupted (${interrupted}) before ${label}`));
      if (remaining <= 0) {
        return reject(new StepError(`over the ${budgetMs / 1000} s budget before ${label}`));
      }
      const at = Date.now();
      const child = spawn(command, args, {
        cwd: where,
        env: env ?? environment(),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      running.add(child);
      const output = { stdout: '', stderr: '' };
      for (const stream of ['stdout', 'stderr']) {
        child[stream].setEncoding('utf8');
        child[stream].on('data', (chunk) => {
          if (output[stream].length < 16 * 1024 * 1024) output[stream] += chunk;
        });
      }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child);
      }, remaining);
      child.once('error', (error) => {
        clearTimeout(timer);
        running.delete(child);
        reject(new StepError(`${label}: ${error.message}`));
      });
      child.once('close', (status, signal) => {
        clearTimeout(timer);
        running.delete(child);
        if (verbose) console.log(`  ${label}: ${Date.now() - at} ms`);
        const result = { status, signal, ...output };
        if (interrupted) {
          return reject(new StepError(`interrupted (${interrupted}) during ${label}`));
        }
        if (timedOut) {
          return reject(new StepError(`${label} ran past the ${budgetMs / 1000} s budget`));
        }
        if (status !== 0 && !allowFailure) {
          return reject(
            new StepError(
              `${label} failed (${status ?? signal})\n${tail(output.stdout)}\n${tail(output.stderr)}`,
            ),
          );
        }
        resolveRun(result);
      });
    });
  }

  return {
    sh,
    /** Ends the running commands; later commands refuse to start. */
    interrupt(signal) {
      if (interrupted) return false;
      interrupted = signal;
      for (const child of running) killGroup(child);
      return true;
    },
    get interrupted() {
      return interrupted;
    },
  };
}

/**
 * The pnpm binary of packageManager's version (the one release.yml runs through npx), so that a
 * step's commands find `pnpm` on PATH: the caller's own when `pnpm check` runs the step,
 * otherwise the one `npx -y pnpm@<version>` runs, looked up with the caller's npm setup.
 */
export function findPnpm(repo) {
  const packageManager = JSON.parse(
    readFileSync(join(repo, 'package.json'), 'utf8'),
  ).packageManager;
  // biome-ignore lint/suspicious/noUndeclaredEnvVars: set by pnpm for its scripts; no turbo task reads it
  const caller = process.env.npm_execpath;
  if (caller && basename(caller) === 'pnpm') {
    const version = spawnSync(caller, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (`pnpm@${version}` === packageManager) return caller;
  }
  const result = spawnSync('npx', ['-y', '-p', packageManager, '-c', 'command -v pnpm'], {
    cwd: repo,
    encoding: 'utf8',
  });
  const path = result.stdout?.trim().split('\n').pop();
  if (result.status !== 0 || !path) {
    throw new StepError(`cannot find ${packageManager}: ${result.stderr}`);
  }
  return path;
}

/**
 * A "proxy" on 127.0.0.1 that answers nothing: every npm, pnpm, turbo and registry process of a
 * step is pointed at it for any host but 127.0.0.1, so a request that would have left the machine
 * ends here, fails, and is recorded (its first line, e.g. `CONNECT registry.npmjs.org:443`).
 */
export function startTrap() {
  const attempts = [];
  const server = createServer((socket) => {
    socket.setTimeout(2000, () => socket.destroy());
    socket.once('data', (chunk) => {
      attempts.push(chunk.toString('latin1').split('\r\n')[0]);
      socket.destroy();
    });
    socket.once('end', () => socket.destroy());
  });
  return new Promise((resolveTrap, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolveTrap({
        url: `http://127.0.0.1:${server.address().port}`,
        attempts,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

/** The proxy variables that send every host but 127.0.0.1 to the trap. */
export function trapVariables(trap) {
  const proxy = trap.url;
  return {
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    NO_PROXY: '127.0.0.1',
    no_proxy: '127.0.0.1',
  };
}

/**
 * The environment of every command of a step that installs from `registry`: nothing of the
 * caller's npm or pnpm setup (HOME, caches and npm config inside `temp`), and any host but
 * 127.0.0.1 goes to the trap.
 */
export function stepEnvironment({ temp, registry, trap, pnpm }) {
  const home = join(temp, 'home');
  for (const dir of ['.config', '.cache', '.local/share', '.local/state', 'tmp']) {
    mkdirSync(join(home, dir), { recursive: true });
  }
  const host = registry.url.replace(/^http:/, '');
  writeFileSync(
    join(temp, 'npmrc'),
    [
      `registry=${registry.url}`,
      `${host}:_authToken=${registry.token}`,
      `cache=${join(temp, 'npm-cache')}`,
      // Any request to a host other than 127.0.0.1 goes to the trap, which refuses and records it.
      `proxy=${trap.url}`,
      `https-proxy=${trap.url}`,
      'noproxy=127.0.0.1',
      // A local registry answers at once: fail fast instead of npm's minute of retries.
      'fetch-retries=1',
      'fetch-retry-mintimeout=1000',
      'fetch-retry-maxtimeout=2000',
      'audit=false',
      'fund=false',
      'update-notifier=false',
      'provenance=false',
      '',
    ].join('\n'),
  );
  writeFileSync(join(temp, 'npmrc-global'), '');
  return {
    PATH: `${dirname(pnpm)}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local/share'),
    XDG_STATE_HOME: join(home, '.local/state'),
    TMPDIR: join(home, 'tmp'),
    LANG: 'C.UTF-8',
    CI: 'true',
    NPM_CONFIG_USERCONFIG: join(temp, 'npmrc'),
    NPM_CONFIG_GLOBALCONFIG: join(temp, 'npmrc-global'),
    // changesets passes this registry to `npm info` and `pnpm publish`: without it, npmjs.org.
    npm_config_registry: registry.url,
    // release.yml publishes with provenance; a rehearsal outside CI cannot.
    NPM_CONFIG_PROVENANCE: 'false',
    ...trapVariables(trap),
    // The copy's node_modules link to the repository's install, which pnpm cannot verify; before
    // each script it would re-install (from this registry, which has only what consumers need).
    pnpm_config_verify_deps_before_run: 'false',
    // changeset publish tags annotated (`git tag -m`), which needs an identity; a failed tag is
    // silently skipped, so the rehearsal checks the tags.
    GIT_AUTHOR_NAME: 'Release rehearsal',
    GIT_AUTHOR_EMAIL: 'rehearsal@127.0.0.1',
    GIT_COMMITTER_NAME: 'Release rehearsal',
    GIT_COMMITTER_EMAIL: 'rehearsal@127.0.0.1',
    GIT_CONFIG_NOSYSTEM: '1',
    TURBO_TELEMETRY_DISABLED: '1',
    TURBO_NO_UPDATE_NOTIFIER: '1',
    DO_NOT_TRACK: '1',
  };
}

/** CPU seconds used by this process and the children it has waited for (Linux). */
export function cpuSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    // utime, stime, cutime, cstime: fields 14 to 17 of proc(5), in clock ticks of 1/100 s.
    const ticks = fields.slice(11, 15).reduce((sum, value) => sum + Number(value), 0);
    return (ticks / 100).toFixed(1);
  } catch {
    return '?';
  }
}

/** A package README's example: its first ```ts block (the rule examples/readme-examples uses). */
export function readmeExample(markdown) {
  return /^```ts\n([\s\S]*?)^```$/m.exec(markdown)?.[1];
}

/** The compiler options README examples are type-checked with (strict, as a careful user's). */
export const EXAMPLE_COMPILER_OPTIONS = Object.freeze({
  target: 'ES2022',
  lib: ['ES2023', 'DOM'],
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  verbatimModuleSyntax: true,
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  isolatedModules: true,
  // Our shipped .d.ts are checked with skipLibCheck off by scripts/check-packages.mjs.
  skipLibCheck: true,
  types: ['node'],
  rootDir: '.',
  outDir: 'out',
});
