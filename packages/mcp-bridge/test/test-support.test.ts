// The repository's own test support (nothing outside the repository): the loopback preload the
// HTTP server-everything tests start their server with, and the Node 20 shim the conformance
// suites run through.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
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
