// `toolfence-mcp serve` with the replica settings: a missing optional peer (pg, ioredis) or a bad
// URL stops the start with one clear line, before any connection is made.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stopProcess } from './fixtures/teardown.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const BLOCK = fileURLToPath(new URL('./fixtures/block-peers.mjs', import.meta.url));
const KEY = 'cd'.repeat(32);
const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-replica-config-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function serve(
  gateway: Record<string, unknown>,
  blocked: string,
): Promise<{ code: number | null; stderr: string }> {
  const config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: { up: { url: 'http://127.0.0.1:1/mcp', oauth: { connectionId: 'up' } } },
      gateway: { storeKey: KEY, ...gateway },
    }),
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', BLOCK, CLI, 'serve', '--config', config],
      {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TOOLFENCE_BLOCK_PEERS: blocked },
        timeout: 30_000,
      },
      (error, _stdout, stderr) => {
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? null), stderr });
      },
    );
  });
}

describe('toolfence-mcp serve with replica settings', () => {
  it.each([
    [
      'pg missing for postgres:// pins',
      { store: 'sqlite:store.db', pins: 'postgres://gateway:secret@127.0.0.1:1/toolfence' },
      'pg',
      'toolfence-mcp: gateway.pins: a postgres:// pin store needs the optional peer pg@8 (npm install pg@8)',
    ],
    [
      'pg missing for a postgres:// store',
      { store: 'postgres://gateway:secret@127.0.0.1:1/toolfence' },
      'pg',
      'toolfence-mcp: PostgresConnectionStore needs the optional peer dependency pg@8; install it with `npm install pg@8`',
    ],
    [
      'ioredis missing for a redis:// budget',
      { store: 'sqlite:store.db', budget: { url: 'redis://127.0.0.1:1', maxCalls: 5 } },
      'ioredis',
      'toolfence-mcp: gateway.budget: a redis:// budget needs the optional peer ioredis@6 (npm install ioredis@6)',
    ],
    [
      'a budget URL of another scheme',
      { store: 'sqlite:store.db', budget: { url: 'memcached://127.0.0.1:1' } },
      '',
      'toolfence-mcp: gateway.budget.url: must be "memory" or a redis://host:port (or rediss://) URL',
    ],
    [
      'a store URL of another scheme',
      { store: 'mysql://gateway:secret@127.0.0.1:1/toolfence' },
      '',
      'toolfence-mcp: gateway.store: must be "sqlite:<path>" or "postgres://user:password@host:port/database"',
    ],
  ])(
    'stops the start on %s with one clear line',
    async (_name, gateway, blocked, line) => {
      const { code, stderr } = await serve(gateway, blocked);
      expect(code).toBe(1);
      // One line: the message, then the error code (and a missing module's code).
      expect(stderr.indexOf('\n')).toBe(stderr.length - 1);
      expect(stderr.startsWith(`${line} (`)).toBe(true);
      expect(stderr).not.toContain('secret');
    },
    40_000,
  );

  it('refuses a reload that changes the store, the budget or shared pins, and keeps running', async () => {
    const config = join(folder, 'toolfence.json');
    const write = (gateway: Record<string, unknown>) =>
      writeFile(
        config,
        JSON.stringify({
          mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
          gateway: { storeKey: KEY, store: 'sqlite:store.db', ...gateway },
        }),
      );
    await write({ budget: { maxCalls: 10 } });
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const waitFor = async (pattern: RegExp, count: number): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while ((stderr.match(pattern) ?? []).length < count) {
        if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`${stderr}(exit ${child.exitCode}, signal ${child.signalCode})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    try {
      await waitFor(/listening on/g, 1);
      const refused =
        /reload refused, the running config stays: gateway\.store, gateway\.storeKey, gateway\.budget, gateway\.sealKey, gateway\.sealKeyPrevious, gateway\.approvals, gateway\.maxToolNameChars, gateway\.passthroughMax\*, and a postgres:\/\/ gateway\.pins with its gateway\.pinsMax\* apply at start; restart the gateway to change them/g;
      await write({ budget: { maxCalls: 11 } });
      child.kill('SIGHUP');
      await waitFor(refused, 1);
      await write({ budget: { maxCalls: 10 }, store: 'sqlite:other.db' });
      child.kill('SIGHUP');
      await waitFor(refused, 2);
      // McpGateway's own limits are options of the running gateway: they apply at start too.
      await write({ budget: { maxCalls: 10 }, maxToolNameChars: 64 });
      child.kill('SIGHUP');
      await waitFor(refused, 3);
      await write({ budget: { maxCalls: 10 }, passthroughMaxReadUriChars: 1_024 });
      child.kill('SIGHUP');
      await waitFor(refused, 4);
      expect(stderr).not.toContain('reloaded (');
      // The same start-only settings with another change reload as before; a lock file's limits
      // are not start-only (the lock file is opened again with them).
      await write({
        budget: { maxCalls: 10 },
        maxConcurrentCalls: 4,
        pinsMaxDefinitionBytes: 65_536,
      });
      child.kill('SIGHUP');
      await waitFor(/reloaded \(SIGHUP\)/g, 1);
      expect(child.exitCode).toBe(null);
    } finally {
      await stopProcess(child);
    }
  }, 60_000);

  it('a SIGHUP while it starts (before it listens) does not end it: the reload runs once it can', async () => {
    const config = join(folder, 'toolfence.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
        gateway: { storeKey: KEY, store: 'sqlite:store.db' },
      }),
    );
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
    );
    let stderr = '';
    let hungUp = false;
    child.stderr?.on('data', (chunk) => {
      stderr += String(chunk);
      // The first line it prints comes before it listens (and before its reload listener).
      if (!hungUp && stderr.includes('approvals are sealed under a random key')) {
        hungUp = true;
        child.kill('SIGHUP');
      }
    });
    try {
      const deadline = Date.now() + 20_000;
      while (!/reloaded \(SIGHUP\)/.test(stderr)) {
        if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`${stderr}(exit ${child.exitCode}, signal ${child.signalCode})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(hungUp).toBe(true);
      expect(stderr.indexOf('listening on')).toBeLessThan(stderr.indexOf('reloaded (SIGHUP)'));
      expect({ exit: child.exitCode, signal: child.signalCode }).toEqual({
        exit: null,
        signal: null,
      });
    } finally {
      await stopProcess(child);
    }
  }, 60_000);
});
