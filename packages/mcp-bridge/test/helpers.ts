import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The entry script of an installed package (resolved from this package). */
export function packageEntry(name: string, relative: string): string {
  return join(dirname(require.resolve(`${name}/package.json`)), relative);
}

export const EVERYTHING_ENTRY: string = packageEntry(
  '@modelcontextprotocol/server-everything',
  'dist/index.js',
);
export const FILESYSTEM_ENTRY: string = packageEntry(
  '@modelcontextprotocol/server-filesystem',
  'dist/index.js',
);

/** A minimal environment for child servers (nothing secret inherited). */
export const CHILD_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
});

/** Approves loopback addresses only (tests never reach anything else). */
export function allowLoopback(_target: unknown, address: { readonly range: string }): boolean {
  return address.range === 'loopback';
}

import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The repository root (two levels above this package). */
export const REPO_ROOT: string = fileURLToPath(new URL('../../../', import.meta.url));
/** `shared/` sits beside the repository (in CI and here). */
export const SHARED_DIR: string = join(REPO_ROOT, '..', 'shared');

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A running server-everything in Streamable HTTP mode on 127.0.0.1. */
export interface EverythingHttp {
  readonly url: string;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

export async function startEverythingHttp(): Promise<EverythingHttp> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      '--import',
      join(SHARED_DIR, 'testing', 'loopback-listen.mjs'),
      EVERYTHING_ENTRY,
      'streamableHttp',
    ],
    { env: { ...CHILD_ENV, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 8000);
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (/listening|running/i.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', () => reject(new Error('server-everything exited')));
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
