// The programs outside npm that the tests and benchmarks of `pnpm check` run for real, and how
// `pnpm check` gets them: found on PATH (PostgreSQL also where Debian keeps it), else installed
// with apt-get where the machine allows it (root, or sudo without a password), else one line
// naming what to install, before any step runs.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Debian keeps PostgreSQL's server programs in <this>/<version>/bin, off PATH. */
const DEBIAN_POSTGRES = '/usr/lib/postgresql';

/**
 * What the tests need, and why. `programs` must all be found in one folder; `debian` and
 * `homebrew` name the package that has them.
 */
export const SYSTEM_PROGRAMS = Object.freeze([
  {
    programs: ['bwrap'],
    debian: 'bubblewrap',
    homebrew: 'bubblewrap',
    why: 'BubblewrapSandbox: the ShellTool sandbox tests and the shell-limits benchmark run commands in a real bubblewrap sandbox',
  },
  {
    programs: ['redis-server'],
    debian: 'redis-server',
    homebrew: 'redis',
    why: 'RedisCallBudget and gateway replicas sharing a budget: tests and the store benchmark start their own redis-server on a free 127.0.0.1 port',
  },
  {
    programs: ['initdb', 'postgres'],
    debian: 'postgresql',
    homebrew: 'postgresql@17',
    why: 'PostgresConnectionStore and shared gateway pins: tests and the store benchmark initdb their own server into a temporary folder on a free 127.0.0.1 port',
  },
  {
    programs: ['chromium'],
    debian: 'chromium',
    homebrew: 'chromium',
    why: "the gateway's web console: its browser tests drive a real headless chromium with playwright-core (no browser download) and save the README's screenshots",
  },
  {
    programs: ['prlimit'],
    debian: 'util-linux',
    homebrew: 'util-linux',
    why: "the audit log on a full disk: its test runs a writer under a file size limit (RLIMIT_FSIZE) so a batch's write really stops short (EFBIG)",
  },
]);

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The folders searched for `programs`: PATH, then Debian's PostgreSQL folders. */
function folders(env) {
  const onPath = (env.PATH ?? '').split(delimiter).filter(Boolean);
  let debian = [];
  try {
    debian = readdirSync(DEBIAN_POSTGRES)
      .sort((a, b) => Number(b) - Number(a))
      .map((version) => join(DEBIAN_POSTGRES, version, 'bin'));
  } catch {}
  return [...onPath, ...debian];
}

/** The entries of SYSTEM_PROGRAMS not found on this machine. */
export function missingPrograms(env = process.env) {
  const searched = folders(env);
  return SYSTEM_PROGRAMS.filter(
    (entry) =>
      !searched.some((folder) => entry.programs.every((name) => executable(join(folder, name)))),
  );
}

/** The one line printed when they cannot be installed here. */
export function installLine(missing, reason) {
  const programs = missing.map((entry) => entry.programs.join('/')).join(', ');
  return `check: ${programs} not found and ${reason}; install them and run again: Debian/Ubuntu \`sudo apt-get install ${missing.map((entry) => entry.debian).join(' ')}\`, Homebrew \`brew install ${missing.map((entry) => entry.homebrew).join(' ')}\` (README: "System programs")`;
}

function onPath(name, env) {
  return (env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .some((folder) => executable(join(folder, name)));
}

/**
 * How apt-get can be run here: `[]` as root, `['sudo', '-n']` where sudo needs no password,
 * undefined otherwise (with the reason).
 */
function aptAccess(env) {
  if (process.platform !== 'linux' || !onPath('apt-get', env)) {
    return { reason: 'this machine has no apt-get' };
  }
  if (process.getuid?.() === 0) return { prefix: [] };
  if (onPath('sudo', env) && spawnSync('sudo', ['-n', 'true'], { env }).status === 0) {
    return { prefix: ['sudo', '-n'] };
  }
  return { reason: 'installing them needs root (or sudo without a password)' };
}

/**
 * Makes sure every system program is there: installs the missing ones with apt-get where it can.
 * Returns `{ ok: true, installed }` or `{ ok: false, line }` (the one line to print).
 */
export function ensureSystemPrograms(env = process.env) {
  const missing = missingPrograms(env);
  if (missing.length === 0) return { ok: true, installed: [] };
  const access = aptAccess(env);
  if (!access.prefix) return { ok: false, line: installLine(missing, access.reason) };
  const packages = missing.map((entry) => entry.debian);
  // PostgreSQL's binaries only: no cluster of the package's own, nothing listening on 5432.
  const script = [
    packages.includes('postgresql')
      ? "mkdir -p /etc/postgresql-common && { grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf || echo 'create_main_cluster = false' >> /etc/postgresql-common/createcluster.conf; }"
      : 'true',
    'apt-get update -qq',
    `DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${packages.join(' ')}`,
  ].join(' && ');
  console.log(`check: installing ${packages.join(' ')} with apt-get (the tests run them)`);
  const [command, ...args] = [...access.prefix, 'sh', '-c', script];
  const result = spawnSync(command, args, { env, encoding: 'utf8' });
  const still = missingPrograms(env);
  if (result.status !== 0 || still.length > 0) {
    const said = `${result.stderr ?? ''}`.trim().split('\n').pop() ?? '';
    return {
      ok: false,
      line: installLine(
        still.length > 0 ? still : missing,
        `apt-get could not install them (${said || `exit ${result.status}`})`,
      ),
    };
  }
  return { ok: true, installed: packages };
}
