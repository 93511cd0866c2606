#!/usr/bin/env node
// A real npm registry (verdaccio) on 127.0.0.1 for the release rehearsal
// (scripts/check-release.mjs). It has no uplinks: it serves only what was published to it, so an
// install that needs a package from anywhere else fails with a 404 instead of reaching the
// public registry.
//
// Imported, it exports `startRegistry` (runs this file as a child process and waits for its port)
// and `mirrorInstalledPackages` (publishes third-party packages from the local pnpm install).
// Run directly (`node scripts/local-registry.mjs <dir>`), it is that child: it serves `<dir>`
// and exits when its parent goes away.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, realpathSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(import.meta.dirname, '..');

/** The verdaccio configuration: local storage, one registered user, no uplinks, no web UI. */
function registryConfig(dir) {
  const rule = { access: '$all', publish: '$authenticated', unpublish: '$authenticated' };
  return {
    self_path: join(dir, 'config.yaml'),
    storage: join(dir, 'storage'),
    auth: { htpasswd: { file: join(dir, 'htpasswd'), max_users: 1 } },
    // JWT tokens: checking one is a signature check, not a password hash per request.
    security: { api: { legacy: false, jwt: { sign: { expiresIn: '1h' } } } },
    // No uplinks and no `proxy` on any rule: nothing is fetched from another registry.
    uplinks: {},
    packages: { '@*/*': rule, '**': rule },
    // No `middlewares`: the audit middleware would forward `npm audit` to the public registry.
    middlewares: {},
    web: { enable: false },
    max_body_size: '200mb',
    log: { type: 'stdout', format: 'json', level: 'http' },
  };
}

async function serve(dir) {
  const require = createRequire(join(repo, 'package.json'));
  const { runServer } = require('verdaccio');
  const config = registryConfig(dir);
  const server = await runServer(config);
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ port: server.address().port });
  });
  // The parent holds the IPC channel: when it exits (even killed), the registry exits too.
  process.on('disconnect', () => process.exit(0));
}

/**
 * Starts verdaccio in a child process on 127.0.0.1 with its storage in `dir`, registers a user
 * and returns `{ url, token, stop }`. Its log goes to `dir/verdaccio.log`. `timeoutMs` (default
 * 20 s) bounds the start; `proxy` is where proxy-aware code in it would send other hosts.
 */
export async function startRegistry(
  dir,
  { timeoutMs = 20_000, proxy = 'http://127.0.0.1:9' } = {},
) {
  mkdirSync(dir, { recursive: true });
  const log = openSync(join(dir, 'verdaccio.log'), 'a');
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), dir], {
    stdio: ['ignore', log, log, 'ipc'],
    // The registry itself never needs the network: proxy-aware code goes to `proxy` (by default
    // a closed port) for any host but 127.0.0.1.
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: '127.0.0.1',
      no_proxy: '127.0.0.1',
    },
  });
  child.once('exit', (code, signal) => {
    writeSync(log, `verdaccio exited (${code ?? signal})\n`);
  });
  const stop = () =>
    new Promise((resolveStop) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolveStop();
      child.once('exit', () => resolveStop());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 3000).unref();
    });
  try {
    const port = await new Promise((resolvePort, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`verdaccio did not start in ${timeoutMs} ms`)),
        timeoutMs,
      );
      child.once('message', (message) => {
        clearTimeout(timer);
        resolvePort(message.port);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(`verdaccio exited (${code ?? signal}); see ${join(dir, 'verdaccio.log')}`),
        );
      });
    });
    const url = `http://127.0.0.1:${port}/`;
    const response = await fetch(`${url}-/user/org.couchdb.user:rehearsal`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'rehearsal', password: 'rehearsal-only-password' }),
    });
    const body = await response.json();
    if (!response.ok || typeof body.token !== 'string') {
      throw new Error(`could not register a user: ${response.status} ${JSON.stringify(body)}`);
    }
    return { url, token: body.token, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Node's lookup: the nearest `node_modules/<name>` from `dir` upwards, as a real path. */
function resolvePackageDir(dir, name) {
  for (let current = dir; ; current = dirname(current)) {
    if (!current.endsWith('/node_modules')) {
      const candidate = join(current, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    }
    if (current === dirname(current)) return undefined;
  }
}

/**
 * The installed third-party packages that `roots` need at run time: `roots` is a list of
 * `[fromDir, packageName]`; each is resolved the way Node resolves it from `fromDir`, then its
 * dependencies, optional dependencies and required peers, transitively. `@toolfence/*` packages
 * are left out (the release publishes them). Returns `{ packages, missing }`: one entry per
 * name@version with its directory, and the required dependencies that were not installed.
 */
export function installedClosure(roots) {
  const packages = new Map();
  const missing = [];
  const visit = (dir) => {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const key = `${manifest.name}@${manifest.version}`;
    if (packages.has(key)) return;
    packages.set(key, { name: manifest.name, version: manifest.version, dir, manifest });
    const peers = Object.keys(manifest.peerDependencies ?? {}).filter(
      (name) => manifest.peerDependenciesMeta?.[name]?.optional !== true,
    );
    const edges = [
      ...Object.keys(manifest.dependencies ?? {}).map((name) => [name, false]),
      ...peers.map((name) => [name, false]),
      ...Object.keys(manifest.optionalDependencies ?? {}).map((name) => [name, true]),
    ];
    for (const [name, optional] of edges) {
      if (name.startsWith('@toolfence/')) continue;
      const found = resolvePackageDir(dir, name);
      if (found) visit(found);
      else if (!optional) missing.push(`${key} needs ${name}`);
    }
  };
  for (const [from, name] of roots) {
    const found = resolvePackageDir(from, name);
    if (found) visit(found);
    else missing.push(`${from} needs ${name}`);
  }
  return { packages: [...packages.values()], missing };
}

function run(command, args, options) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], ...options });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolveRun() : reject(new Error(`${command} ${args.join(' ')}: ${stderr}`)),
    );
  });
}

/** Runs `task` over `items`, `limit` at a time. */
async function eachLimited(items, limit, task) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Publishes installed third-party packages (from `installedClosure`) to the registry, so that
 * installs of our packages resolve them from 127.0.0.1 only. Each package directory (files
 * hard-linked from the pnpm store) is packed into `workDir` as an npm tarball and published
 * through the registry's own publish API, versions of one name in ascending order so that
 * `latest` is the highest. Returns the number of versions published.
 */
export async function mirrorInstalledPackages(packages, { url, token, workDir }) {
  mkdirSync(workDir, { recursive: true });
  const byName = new Map();
  for (const entry of packages) byName.set(entry.name, [...(byName.get(entry.name) ?? []), entry]);
  const compare = (a, b) => {
    const [x, y] = [a.version, b.version].map((v) => v.split(/[.+-]/).map(Number));
    for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
    return 0;
  };
  await eachLimited([...byName.values()], 4, async (versions) => {
    for (const entry of versions.sort(compare)) {
      const file = join(workDir, `${entry.name.replace('/', '__')}-${entry.version}.tgz`);
      // npm tarballs hold one top folder named `package`.
      await run('tar', [
        '-cf',
        file,
        // Fast rather than small: the tarballs only cross the loopback.
        '--use-compress-program=gzip -1',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        // pnpm hard-links identical files from its store; npm does not extract tar hard links.
        '--hard-dereference',
        '--transform',
        's,^\\.,package,',
        '-C',
        entry.dir,
        '.',
      ]);
      const data = readFileSync(file);
      const tarballName = `${entry.name}-${entry.version}.tgz`;
      const { name, version } = entry;
      const body = {
        _id: name,
        name,
        'dist-tags': { latest: version },
        versions: {
          [version]: {
            ...entry.manifest,
            _id: `${name}@${version}`,
            dist: {
              shasum: createHash('sha1').update(data).digest('hex'),
              integrity: `sha512-${createHash('sha512').update(data).digest('base64')}`,
              tarball: `${url}${name}/-/${tarballName.split('/').pop()}`,
            },
          },
        },
        _attachments: {
          [tarballName]: {
            content_type: 'application/octet-stream',
            data: data.toString('base64'),
            length: data.length,
          },
        },
      };
      const response = await fetch(`${url}${name.replace('/', '%2f')}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      if (!response.ok) {
        throw new Error(`mirror ${name}@${version}: ${response.status} ${await response.text()}`);
      }
    }
  });
  return packages.length;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!process.argv[2]) {
    console.error('usage: node scripts/local-registry.mjs <storage folder> (run by check-release)');
    process.exit(2);
  }
  serve(resolve(process.argv[2])).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
