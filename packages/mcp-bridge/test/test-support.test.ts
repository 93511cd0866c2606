// The repository's own test support (nothing outside the repository): the loopback preload the
// HTTP server-everything tests start their server with, the Node 20 shim the conformance
// suites run through, and the teardown that waits for a stopped process before its folder goes.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { stopProcess } from './fixtures/teardown.js';
import { LOOPBACK_LISTEN } from './helpers.js';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));

/** Where a server listens when started with `listen(...args)` under the preload. */
function boundAddress(args: string): string {
  const script = `const s = require('node:net').createServer(); s.listen(${args}); s.on('listening', () => { console.log(s.address().address); s.close(); });`;
  const result = spawnSync(process.execPath, ['--import', LOOPBACK_LISTEN, '-e', script], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

describe('test/support/loopback-listen.mjs', () => {
  it.each([
    ['a port alone', '127.0.0.1', '0'],
    ['a port as a string of digits', '127.0.0.1', "'0'"],
    ['a port and a callback', '127.0.0.1', '0, () => {}'],
    ['a port and a host (left alone)', '127.0.0.2', "0, '127.0.0.2'"],
    ['an options object (left alone)', '127.0.0.3', "{ port: 0, host: '127.0.0.3' }"],
  ])('listen with %s binds %s', (_name, expected, args) => {
    expect(boundAddress(args)).toBe(expected);
  });
});

describe('the conformance runners start on this Node', () => {
  it.each([
    ['0.1.16', 'conformance/run.mjs'],
    ['0.2.0-alpha', 'conformance/run-alpha.mjs'],
  ])('%s lists its scenarios (%s)', (_suite, runner) => {
    const result = spawnSync(process.execPath, [runner, 'list'], {
      cwd: PACKAGE_DIR,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status, result.stderr.slice(-2000)).toBe(0);
    expect(result.stdout).toMatch(/server-initialize/);
  });
});

describe('test/fixtures/teardown.ts stopProcess', () => {
  /**
   * A process that, when signalled, writes into `folder` for a while before it exits (a gateway
   * still shutting down); it says "ready" once its handlers are set.
   */
  async function slowToExit(folder: string, ignoreTerm: boolean) {
    const script = `
      const { mkdirSync, writeFileSync } = require('node:fs');
      const write = () => {
        for (let index = 0; index < 20; index += 1) {
          mkdirSync(${JSON.stringify(folder)} + '/late', { recursive: true });
          writeFileSync(${JSON.stringify(folder)} + '/late/' + index, 'x');
        }
      };
      process.on('SIGTERM', () => {
        if (${ignoreTerm}) return;
        setTimeout(() => { write(); process.exit(0); }, 300);
      });
      setInterval(() => undefined, 1000);
      console.log('ready');`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
    expect(chunk.toString()).toContain('ready');
    return child;
  }

  it('resolves only once the process exited: its folder, removed then, stays removed', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-teardown-'));
    const child = await slowToExit(folder, false);
    await stopProcess(child);
    expect(child.exitCode).toBe(0);
    await rm(folder, { recursive: true, force: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(existsSync(folder)).toBe(false);
  }, 30_000);

  it('sends SIGKILL to a process that ignores the signal, after killAfterMs', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-teardown-'));
    try {
      const child = await slowToExit(folder, true);
      await stopProcess(child, 'SIGTERM', 200);
      expect(child.signalCode).toBe('SIGKILL');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 30_000);

  it('returns at once for a process that already exited', async () => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await once(child, 'exit');
    await stopProcess(child);
    expect(child.exitCode).toBe(0);
  }, 30_000);
});
