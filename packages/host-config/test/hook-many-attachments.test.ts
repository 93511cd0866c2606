// Calls with many attachments: the answer is streamed (each marker found, in one scan of the
// answer, however many there are: `-1` was a prefix of `-10`, so from 11 attachments the whole
// answer was built as one string), the work stays linear (32,000 attachments took 8.9 s, past
// the clients' timeout, after which the call went out unrewritten), and the number of file
// attachments per call has a cap with its own deny code. Also: per-toolkit budgets of servers
// whose names hold "." (clients name their tools `mcp__my_files__*`), and Cursor's no-op answer.
// The shipped hook, run with `node`, on real files in a temporary folder.
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HOOK_CONFIG_FILENAME,
  HOOK_SCRIPT_FILENAME,
  MAX_HOOK_ATTACHMENTS,
  MAX_HOOK_ATTACHMENTS_CEILING,
} from '../src/index.js';
import { fileUrl, HOOK_PATH, runHook, stdinFor } from './support/run-hook.js';

let dir: string;
let small: string;
let preload: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-many-'));
  small = join(dir, 'a.txt');
  await writeFile(small, 'abc');
  // Counts JSON.stringify calls of the hook: the streamed answer renders once, the fallback
  // (whole answer as one string) twice.
  preload = join(dir, 'count-renders.cjs');
  await writeFile(
    preload,
    [
      'const original = JSON.stringify;',
      'let renders = 0;',
      'JSON.stringify = function (...args) { renders += 1; return original.apply(this, args); };',
      "process.on('exit', () => process.stderr.write('renders=' + renders + '\\n'));",
    ].join('\n'),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const many = (count: number, source = fileUrl(small)) => ({
  attachments: Array.from({ length: count }, () => ({ source })),
});

describe('many attachments', () => {
  it.each([1, 9, 10, 11, 12, 100])(
    'streams the answer for %i attachments (every marker found; rendered once)',
    async (count) => {
      const result = await runHook(stdinFor('claude-code', many(count)), {
        nodeArgs: ['--require', preload],
      });
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('renders=1\n');
      const list = JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachments;
      expect(list).toHaveLength(count);
      for (const item of list) expect(item.source).toBe('data:text/plain;base64,YWJj');
    },
  );

  it('stays linear: 40,000 attachments (cap raised) are answered well inside a client timeout', async () => {
    const count = 40_000;
    const started = Date.now();
    const result = await runHook(stdinFor('claude-code', many(count)), {
      env: { TOOLFENCE_HOOK_MAX_ATTACHMENTS: String(count) },
      timeoutMs: 60_000,
    });
    const elapsed = Date.now() - started;
    expect(result.code).toBe(0);
    const list = JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachments;
    expect(list).toHaveLength(count);
    expect(list[count - 1].source).toBe('data:text/plain;base64,YWJj');
    // Quadratic marker search took about 14 s here; linear work takes 1 to 2 s.
    expect(elapsed).toBeLessThan(8_000);
  }, 90_000);

  it(`denies more than ${MAX_HOOK_ATTACHMENTS} file attachments by default, before reading any`, async () => {
    const missing = fileUrl(join(dir, 'does-not-exist.txt'));
    const atCap = await runHook(stdinFor('claude-code', many(MAX_HOOK_ATTACHMENTS)));
    expect(JSON.parse(atCap.stdout).hookSpecificOutput.updatedInput.attachments).toHaveLength(
      MAX_HOOK_ATTACHMENTS,
    );
    // One over: denied with the counts, and no file was read (a missing file would say so).
    const over = await runHook(stdinFor('claude-code', many(MAX_HOOK_ATTACHMENTS + 1, missing)));
    const reason = JSON.parse(over.stdout).hookSpecificOutput.permissionDecisionReason;
    expect(reason).toContain('HOOK_TOO_MANY_ATTACHMENTS');
    expect(reason).toContain(`${MAX_HOOK_ATTACHMENTS + 1} file attachments`);
    expect(reason).toContain(`at most ${MAX_HOOK_ATTACHMENTS}`);
    expect(reason).not.toContain('HOOK_FILE_NOT_FOUND');
  });

  it('counts only file: attachments against the cap', async () => {
    const input = {
      attachments: [
        ...Array.from({ length: 5 }, () => ({ source: 'data:text/plain;base64,YQ==' })),
        { source: fileUrl(small) },
      ],
    };
    const result = await runHook(stdinFor('claude-code', input), {
      env: { TOOLFENCE_HOOK_MAX_ATTACHMENTS: '1' },
    });
    const list = JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachments;
    expect(list[5].source).toBe('data:text/plain;base64,YWJj');
  });

  it('takes the cap from TOOLFENCE_HOOK_MAX_ATTACHMENTS and from maxAttachments in the config', async () => {
    const env = await runHook(stdinFor('cursor', many(3)), {
      env: { TOOLFENCE_HOOK_MAX_ATTACHMENTS: '2' },
    });
    expect(JSON.parse(env.stdout).user_message).toContain('HOOK_TOO_MANY_ATTACHMENTS');
    const home = await mkdtemp(join(dir, 'config-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(join(home, HOOK_CONFIG_FILENAME), '{"maxAttachments": 2}');
    const script = join(home, HOOK_SCRIPT_FILENAME);
    const denied = await runHook(stdinFor('cursor', many(3)), { script });
    expect(JSON.parse(denied.stdout).user_message).toContain('HOOK_TOO_MANY_ATTACHMENTS');
    const allowed = await runHook(stdinFor('cursor', many(2)), { script });
    expect(JSON.parse(allowed.stdout).permission).toBe('allow');
  });

  it.each([
    ['0', { TOOLFENCE_HOOK_MAX_ATTACHMENTS: '0' }],
    [
      'above the ceiling',
      { TOOLFENCE_HOOK_MAX_ATTACHMENTS: String(MAX_HOOK_ATTACHMENTS_CEILING + 1) },
    ],
    ['not a number', { TOOLFENCE_HOOK_MAX_ATTACHMENTS: 'many' }],
  ])('fails closed on a cap that is %s', async (_name, env) => {
    const result = await runHook(stdinFor('cursor', many(1)), { env });
    expect(JSON.parse(result.stdout).user_message).toContain('HOOK_CONFIG_INVALID');
  });
});

describe('per-toolkit budgets of servers whose names hold "."', () => {
  it.each([
    'mcp__my_files__upload',
    'mcp__my.files__upload',
    'mcp_my_files_upload',
    'MCP:my.files:upload',
  ])('applies the budget of "my.files" to %s', async (toolName) => {
    const home = await mkdtemp(join(dir, 'budget-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(join(home, HOOK_CONFIG_FILENAME), '{"toolkitBudgets": {"my.files": 2}}');
    const event = JSON.parse(stdinFor('claude-code', { attachment: { source: fileUrl(small) } }));
    event.tool_name = toolName;
    const result = await runHook(JSON.stringify(event), {
      script: join(home, HOOK_SCRIPT_FILENAME),
    });
    const reason = JSON.parse(result.stdout).hookSpecificOutput.permissionDecisionReason;
    expect(reason).toContain('HOOK_TOOLKIT_BUDGET_EXCEEDED');
    expect(reason).toContain('this toolkit (my.files)');
  });

  it('takes the smaller budget when "my.files" and "my_files" both match', async () => {
    const home = await mkdtemp(join(dir, 'budget-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(
      join(home, HOOK_CONFIG_FILENAME),
      '{"toolkitBudgets": {"my_files": 100, "my.files": 2}}',
    );
    const event = JSON.parse(stdinFor('claude-code', { attachment: { source: fileUrl(small) } }));
    event.tool_name = 'mcp__my_files__upload';
    const result = await runHook(JSON.stringify(event), {
      script: join(home, HOOK_SCRIPT_FILENAME),
    });
    expect(JSON.parse(result.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      'HOOK_TOOLKIT_BUDGET_EXCEEDED',
    );
  });

  it('leaves another server that only shares a prefix alone', async () => {
    const home = await mkdtemp(join(dir, 'budget-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(join(home, HOOK_CONFIG_FILENAME), '{"toolkitBudgets": {"my.files": 2}}');
    const event = JSON.parse(stdinFor('claude-code', { attachment: { source: fileUrl(small) } }));
    event.tool_name = 'mcp__my_files2__upload';
    const result = await runHook(JSON.stringify(event), {
      script: join(home, HOOK_SCRIPT_FILENAME),
    });
    expect(JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachment.source).toBe(
      'data:text/plain;base64,YWJj',
    );
  });
});

describe("Cursor's no-op answer depends on the event, not on its bytes", () => {
  it.each([
    ['no "attachment" bytes', { q: 1 }],
    ['the word attachment in a value', { q: 'attachment' }],
  ])('answers {} to a preToolUse event without cursor_version (%s)', async (_name, input) => {
    const event = JSON.stringify({
      hook_event_name: 'preToolUse',
      tool_name: 'MCP:x',
      tool_input: input,
    });
    const result = await runHook(event);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('{}');
  });

  it('still answers nothing to a Claude Code event that mentions "preToolUse" in a value', async () => {
    const result = await runHook(stdinFor('claude-code', { q: 'preToolUse' }));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');
  });
});
