import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import { ShellTool } from '../src/builtin/shell-tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { raceFor, startExchange } from './swap-race.js';

// A second process swaps a folder and a link to an outside folder (atomic rename exchange) while
// ShellTool runs `cat marker.txt` there in a loop, bounded in time and count. Each folder's
// marker.txt says where the command really ran.
const RACE_MILLISECONDS = 3_000;
const MAX_CALLS = 5_000;
const MARKER = 'OUTSIDE-SECRET';
const context = createToolContext({ runId: 'shell-cwd-races' });

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Row {
  /** The raced name, relative to the base folder; its link twin is `<raced>.lnk`. */
  readonly raced: string;
  /** The folder the workspace is, relative to the base folder. */
  readonly workspace: string;
  /** The `cwd` argument, if any. */
  readonly cwd?: string;
  /** Where marker.txt is read, relative to the raced folder (and to the outside folder). */
  readonly inner: string;
}

describe('ShellTool cwd under a folder<->symlink swap race (LocalProcessSandbox)', () => {
  it.for<[string, Row]>([
    ['a cwd folder swapped', { raced: 'ws/a', workspace: 'ws', cwd: 'a', inner: '' }],
    [
      'the parent of a nested cwd swapped',
      { raced: 'ws/a', workspace: 'ws', cwd: 'a/b', inner: 'b' },
    ],
    ['the workspace itself swapped (no cwd)', { raced: 'ws', workspace: 'ws', inner: '' }],
  ])('never runs a command outside: %s', { timeout: 30_000 }, async ([, row]) => {
    const base = mkdtempSync(join(tmpdir(), 'toolfence-shell-race-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    const raced = join(base, row.raced);
    const outside = join(base, 'outside');
    mkdirSync(join(raced, row.inner), { recursive: true });
    mkdirSync(join(outside, row.inner), { recursive: true });
    writeFileSync(join(raced, row.inner, 'marker.txt'), 'INSIDE');
    writeFileSync(join(outside, row.inner, 'marker.txt'), MARKER);
    symlinkSync(outside, `${raced}.lnk`);
    const tool = new ShellTool({
      workspace: join(base, row.workspace),
      allowedCommands: ['cat'],
      readOnlyCommands: ['cat'],
      sandbox: new LocalProcessSandbox(),
    });
    const exchanger = await startExchange(raced, `${raced}.lnk`);
    cleanups.push(() => exchanger.kill());
    const outcomes: Record<string, number> = {};
    const calls = await raceFor(RACE_MILLISECONDS, MAX_CALLS, 2, async () => {
      const result = await tool.invoke(
        {
          command: 'cat',
          args: ['marker.txt'],
          ...(row.cwd === undefined ? {} : { cwd: row.cwd }),
        },
        context,
      );
      const stdout = (result.structuredContent as { stdout?: unknown } | undefined)?.stdout;
      const outcome =
        stdout === MARKER
          ? 'outside'
          : stdout === 'INSIDE'
            ? 'inside'
            : String(result.metadata?.code ?? 'other');
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    });
    const swaps = await exchanger.stop();
    console.info(`shell cwd race: ${calls} calls, ${swaps} swaps, ${JSON.stringify(outcomes)}`);
    // The race really ran: many swaps, commands ran inside, and the link was met and refused.
    expect(swaps).toBeGreaterThan(1_000);
    expect(outcomes.inside ?? 0).toBeGreaterThan(0);
    expect(outcomes.SHELL_CWD_INVALID ?? 0).toBeGreaterThan(0);
    expect(outcomes.outside ?? 0).toBe(0);
  });
});
