// Running a real agent CLI (Claude Code, Codex) end to end, for the tests that do: each run in
// its own session and a network namespace with only loopback up, the upload server's log, and
// the attachment cases the hook denies.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileUrl } from './run-hook.js';

/** Why a run cannot have a network namespace with only loopback up here; undefined when it can. */
export function loopbackNamespaceUnavailable(): string | undefined {
  return spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up']).status === 0
    ? undefined
    : 'unshare -n with "ip link set lo up" is not permitted here (needs root)';
}

/**
 * Runs the Node.js script `runner` once, with `env` added to this environment, in its own
 * session (setsid: no signal the CLI and everything it starts send on exit can reach the test
 * runner) and a network namespace with only loopback up; resolves with the JSON of the last line
 * it printed.
 */
export function runIsolated<T>(runner: string, env: Readonly<Record<string, string>>): T {
  const result = spawnSync(
    'setsid',
    ['unshare', '-n', 'sh', '-c', 'ip link set lo up && exec "$0" "$1"', process.execPath, runner],
    {
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 120_000,
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  return JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}') as T;
}

/** The schemes of the sources that reached the upload server, per call (its `UPLOAD_LOG`). */
export function uploadsOf(log: string): string[][] {
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
}

/**
 * The attachments the hook denies, one row each: the name, the source (made in the test's
 * folder `home()` when called), what the install needs (`allowed`: an allowlist without it;
 * `budget`: the toolkit budget) and the code the model is told.
 */
export function deniedAttachments(home: () => string) {
  return [
    ['a missing file', () => fileUrl(join(home(), 'nope.pdf')), {}, 'HOOK_FILE_NOT_FOUND'],
    [
      '/dev/zero through a symlink',
      () => {
        spawnSync('ln', ['-s', '/dev/zero', join(home(), 'zero')]);
        return fileUrl(join(home(), 'zero'));
      },
      {},
      'HOOK_NOT_REGULAR_FILE',
    ],
    [
      'a file outside the allowlist',
      () => {
        writeFileSync(join(home(), 'secret.txt'), 'secret');
        return fileUrl(join(home(), 'secret.txt'));
      },
      { allowed: true },
      'HOOK_PATH_NOT_ALLOWED',
    ],
    [
      'a file just over the toolkit budget',
      () => {
        writeFileSync(join(home(), 'big.bin'), Buffer.alloc(1025));
        return fileUrl(join(home(), 'big.bin'));
      },
      { budget: 1024 },
      'HOOK_TOOLKIT_BUDGET_EXCEEDED',
    ],
  ] as const;
}
