import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAndWait } from './support/kill-and-wait.js';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

// A file that changes while the hook reads it must never be sent as a mix of two versions or
// cut short: the hook compares a bigint fstat (ino, dev, size, mtimeNs, ctimeNs) before and after,
// reads the bytes a second time, and waits out a short quiet time for a file changed just now.

const WRITER = fileURLToPath(new URL('./fixtures/rewrite-file.mjs', import.meta.url));
const SIZE = 8 * 1024 * 1024;
/** Hook runs per race; each either sends one whole version or is denied. Bounded: ~1 s each. */
const RUNS = 8;
/**
 * Quiet time for the races. A writer starved of CPU in the middle of a rewrite leaves a stable
 * half-written file that no reader can tell from a finished one (the documented limit); on a
 * loaded two-core machine that happened with the default 100 ms, so the races use 750 ms.
 */
const RACE_SETTLE_MS = '750';

let dir: string;
let writer: ChildProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-changes-'));
});

afterEach(async () => {
  // The writer is gone before the next race or the afterAll that removes its folder.
  if (writer !== undefined) await killAndWait(writer);
  writer = undefined;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function startWriter(file: string, mode: 'rewrite' | 'shrink', chunk: number) {
  const child = spawn(process.execPath, [WRITER, file, mode, String(chunk)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  writer = child;
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', () => resolve());
  });
}

type Outcome = 'whole version' | 'HOOK_FILE_CHANGED' | 'torn';

function classify(stdout: string, versions: readonly Buffer[]): Outcome {
  const output = JSON.parse(stdout).hookSpecificOutput;
  if (output.permissionDecision === 'deny') {
    expect(output.permissionDecisionReason).toContain(': HOOK_FILE_CHANGED: ');
    return 'HOOK_FILE_CHANGED';
  }
  const source = output.updatedInput.attachment.source as string;
  const bytes = Buffer.from(source.slice(source.indexOf(',') + 1), 'base64');
  return versions.some((version) => version.equals(bytes)) ? 'whole version' : 'torn';
}

describe('a file that changes while the hook reads it (bounded races)', () => {
  it.each([
    { name: 'same-size rewrite in 64 KiB writes', mode: 'rewrite', chunk: 64 * 1024 },
    { name: 'same-size rewrite in one 8 MiB write', mode: 'rewrite', chunk: SIZE },
    { name: 'shrink to an eighth, then grow back', mode: 'shrink', chunk: 64 * 1024 },
  ] as const)(
    '$name: never sent torn or truncated',
    async ({ mode, chunk }) => {
      const file = join(dir, `${mode}-${chunk}.bin`);
      await writeFile(file, Buffer.alloc(SIZE, 'a'));
      const versions = [
        Buffer.alloc(SIZE, 'a'),
        Buffer.alloc(mode === 'shrink' ? SIZE / 8 : SIZE, 'b'),
      ];
      await startWriter(file, mode, chunk);
      const stdin = stdinFor('claude-code', { attachment: { source: fileUrl(file) } });
      const outcomes: Outcome[] = [];
      for (let run = 0; run < RUNS; run += 1) {
        const result = await runHook(stdin, {
          env: { TOOLFENCE_HOOK_SETTLE_MS: RACE_SETTLE_MS },
          timeoutMs: 20_000,
        });
        expect(result.code).toBe(0);
        outcomes.push(classify(result.stdout, versions));
      }
      expect(outcomes.filter((outcome) => outcome === 'torn')).toEqual([]);
      // The race really ran: a file rewritten without pause is caught changing.
      expect(outcomes).toContain('HOOK_FILE_CHANGED');
    },
    60_000,
  );
});

describe('quiet time before reading (settleMs)', () => {
  /** Changes the file once, `delayMs` after the hook was started, then stops. */
  async function runWithOneLateChange(settleMs: string, delayMs: number) {
    const file = join(dir, `late-${settleMs}.txt`);
    await writeFile(file, 'first version\n');
    const stdin = stdinFor('claude-code', { attachment: { source: fileUrl(file) } });
    const run = runHook(stdin, { env: { TOOLFENCE_HOOK_SETTLE_MS: settleMs } });
    const change = new Promise((resolve) => setTimeout(resolve, delayMs)).then(() =>
      writeFile(file, 'other version\n'),
    );
    const [result] = await Promise.all([run, change]);
    return JSON.parse(result.stdout).hookSpecificOutput;
  }

  it('refuses a just-written file that changes again within TOOLFENCE_HOOK_SETTLE_MS', async () => {
    const output = await runWithOneLateChange('1500', 600);
    expect(output.permissionDecision).toBe('deny');
    expect(output.permissionDecisionReason).toContain(': HOOK_FILE_CHANGED: ');
    expect(output.permissionDecisionReason).toContain('still being written');
  });

  it('reads at once with TOOLFENCE_HOOK_SETTLE_MS=0 (the later change comes after the read)', async () => {
    const output = await runWithOneLateChange('0', 600);
    expect(output.updatedInput.attachment.source).toBe(
      `data:text/plain;base64,${Buffer.from('first version\n').toString('base64')}`,
    );
  });

  it('reads a file that stays quiet during the wait', async () => {
    const file = join(dir, 'quiet.txt');
    await writeFile(file, 'settled\n');
    const stdin = stdinFor('claude-code', { attachment: { source: fileUrl(file) } });
    const result = await runHook(stdin, { env: { TOOLFENCE_HOOK_SETTLE_MS: '300' } });
    expect(JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachment.filename).toBe(
      'quiet.txt',
    );
  });

  it.each(['-1', '10001', '1.5', 'soon'])(
    'refuses TOOLFENCE_HOOK_SETTLE_MS=%s (config invalid, fail closed)',
    async (value) => {
      const file = join(dir, 'any.txt');
      await writeFile(file, 'x');
      const stdin = stdinFor('claude-code', { attachment: { source: fileUrl(file) } });
      const result = await runHook(stdin, { env: { TOOLFENCE_HOOK_SETTLE_MS: value } });
      expect(JSON.parse(result.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
        ': HOOK_CONFIG_INVALID: ',
      );
    },
  );
});
