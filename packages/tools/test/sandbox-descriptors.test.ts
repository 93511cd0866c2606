import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Red team: a descriptor the agent's process inherited without close-on-exec (fd 251 under a
// test harness) reached the sandboxed program, under BubblewrapSandbox too, where it is a way
// out of the sandbox's view of the filesystem. Node marks its own descriptors close-on-exec
// and does not close inherited ones when it spawns. An agent (a child node here, importing the
// built package) holds a host file open as fd 100 without close-on-exec (Node marks a few low
// inherited descriptors close-on-exec at start, not such a one); the program must not reach it.
const INHERITED_FD = 100;
let base: string;
let secret: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fds-'));
  chmodSync(base, 0o755);
  secret = join(base, 'host-secret.txt');
  writeFileSync(secret, 'HOST-SECRET\n');
  chmodSync(secret, 0o644);
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe.each(['LocalProcessSandbox', 'BubblewrapSandbox'])('%s', (sandbox) => {
  it('passes the program no descriptor the agent inherited beyond stdin, stdout and stderr', () => {
    const workspace = mkdtempSync(join(base, 'ws-'));
    chmodSync(workspace, 0o777);
    const script = `
      import { ${sandbox} } from '@toolfence/tools';
      const sandbox = new ${sandbox}();
      const run = (program, args) => sandbox.run({ program, args, cwd: ${JSON.stringify(workspace)},
        env: {}, workspace: ${JSON.stringify(workspace)}, timeoutMs: 20000, maxOutputBytes: 100000 });
      const listed = await run('/usr/bin/ls', ['-l', '/proc/self/fd/']);
      const read = await run('/usr/bin/cat', ['/proc/self/fd/${INHERITED_FD}']);
      console.log(JSON.stringify({ listed, read }));`;
    const held = openSync(secret, 'r');
    let output: ReturnType<typeof spawnSync>;
    try {
      output = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: join(import.meta.dirname, '..'),
        encoding: 'utf8',
        timeout: 60_000,
        // The agent's fd 100 is the host file, inherited without close-on-exec.
        stdio: [
          'ignore',
          'pipe',
          'pipe',
          ...Array.from({ length: INHERITED_FD - 3 }, () => 'ignore' as const),
          held,
        ],
      });
    } finally {
      closeSync(held);
    }
    expect(output.status, String(output.stderr)).toBe(0);
    const { listed, read } = JSON.parse(String(output.stdout)) as Record<
      string,
      { exitCode: number; stdout: string; stderr: string }
    >;
    expect(listed?.exitCode, listed?.stderr).toBe(0);
    expect(listed?.stdout).not.toContain('host-secret');
    expect(read?.stdout).not.toContain('HOST-SECRET');
  });
});
