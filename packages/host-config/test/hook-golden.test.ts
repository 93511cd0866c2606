import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUrl, runHook, stdinFor, stdinShapes } from './support/run-hook.js';

// These outputs are a backward-compatible contract: hooks already installed on users' machines
// must keep working with servers. Change them only together with HOOK_PROTOCOL_VERSION.

let dir: string;
let toolInput: Record<string, unknown>;
let missingInput: Record<string, unknown>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-golden-'));
  await writeFile(join(dir, 'spec.txt'), 'toolfence golden\n');
  toolInput = {
    title: 'Spec',
    attachments: [
      { source: fileUrl(join(dir, 'spec.txt')), caption: 'keep me' },
      { source: 'https://example.com/a.png' },
    ],
    priority: 2,
  };
  missingInput = { attachment: { source: fileUrl(join(dir, 'missing.pdf')) } };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const updatedInput =
  '{"title":"Spec","attachments":[{"source":"data:text/plain;base64,dG9vbGZlbmNlIGdvbGRlbgo=","caption":"keep me","filename":"spec.txt","mime_type":"text/plain"},{"source":"https://example.com/a.png"}],"priority":2}';
const reason =
  'toolfence attachment hook: HOOK_FILE_NOT_FOUND: attachment: the file does not exist. The tool call was not sent.';

const goldens = {
  'claude-code': {
    rewrite: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":${updatedInput}}}`,
    deny: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"${reason}"}}`,
  },
  codex: {
    rewrite: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":${updatedInput}}}`,
    deny: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"${reason}"}}`,
  },
  cursor: {
    rewrite: `{"permission":"allow","updated_input":${updatedInput}}`,
    deny: `{"permission":"deny","user_message":"${reason}","agent_message":"${reason}"}`,
  },
  vscode: {
    rewrite: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":${updatedInput}}}`,
    deny: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"${reason}"}}`,
  },
} as const;

const clients = Object.keys(goldens) as (keyof typeof goldens)[];

describe('hook output dialects (golden)', () => {
  it.each(clients)('substitutes the attachment in the %s form', async (client) => {
    const result = await runHook(stdinFor(client, toolInput));
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(goldens[client].rewrite);
  });

  it.each(clients)('denies a missing file in the %s form', async (client) => {
    const result = await runHook(stdinFor(client, missingInput));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(goldens[client].deny);
  });

  it.each(clients)('prints nothing for a %s call without attachments', async (client) => {
    const result = await runHook(stdinFor(client, { command: 'npm test' }));
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(client === 'cursor' ? '{}' : '');
  });

  it('answers in the Cursor form when Cursor runs the hook with a Claude-style event name', async () => {
    const event = { ...stdinShapes.cursor(toolInput), hook_event_name: 'PreToolUse' };
    const result = await runHook(`${JSON.stringify(event)}\n`);
    expect(result.stdout).toBe(goldens.cursor.rewrite);
  });

  it('keeps Codex output to the keys Codex accepts (any other key makes Codex ignore it)', async () => {
    const result = await runHook(stdinFor('codex', toolInput));
    const output = JSON.parse(result.stdout) as { hookSpecificOutput: Record<string, unknown> };
    expect(Object.keys(output)).toEqual(['hookSpecificOutput']);
    expect(Object.keys(output.hookSpecificOutput).sort()).toEqual(
      ['hookEventName', 'permissionDecision', 'updatedInput'].sort(),
    );
  });

  it('leaves Claude Code permission prompts in place (no permissionDecision on a rewrite)', async () => {
    const result = await runHook(stdinFor('claude-code', toolInput));
    expect(result.stdout).not.toContain('permissionDecision');
  });
});
