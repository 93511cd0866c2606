import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { CLIENT_MIN_VERSIONS, getHookSetup, type HookClient } from './client-setup.js';
import { HookPayloadOptionError } from './errors.js';
import { HOOK_PROTOCOL_VERSION, HOOK_SCRIPT, HOOK_SCRIPT_FILENAME } from './hook-script.js';
import {
  buildMissingHookPayload,
  type MissingHookPayloadOptions,
  missingHookToolResult,
  toSnakeCaseMissingHookPayload,
} from './missing-hook-payload.js';

const options = {
  docsUrl: 'https://docs.example.com/attachments',
  exampleToolName: 'linear__upsert_attachment',
  displayName: 'Linear toolkit',
};

describe('buildMissingHookPayload', () => {
  it('returns exactly message, developerMessage and extra', () => {
    const payload = buildMissingHookPayload(options);
    expect(Object.keys(payload).sort()).toEqual([
      'developerMessage',
      'extra',
      'fullMessage',
      'message',
    ]);
  });

  it('keeps extra lean', () => {
    const payload = buildMissingHookPayload(options);
    expect(payload.extra).toEqual({
      hook_filename: 'toolfence_attachment_substitution.cjs',
      min_version: HOOK_PROTOCOL_VERSION,
      docs_url: options.docsUrl,
    });
  });

  it('gives the model a compact message: what to ask, one install line per client, where the script is', () => {
    const payload = buildMissingHookPayload(options);
    const message = JSON.parse(payload.message);
    expect(message.error).toBe('attachment_hook_missing');
    expect(message.required_protocol_version).toBe(HOOK_PROTOCOL_VERSION);
    expect(message.ask_user).toContain('which MCP client');
    expect(Object.keys(message.install_by_client)).toEqual([
      'claude-code',
      'codex',
      'cursor',
      'vscode',
    ]);
    for (const [client, line] of Object.entries(
      message.install_by_client as Record<string, string>,
    )) {
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain(`npx -y @toolfence/host-config install --client ${client}`);
      expect(line).toContain(`${CLIENT_MIN_VERSIONS[client as HookClient].version} or newer`);
      expect(line).toContain(getHookSetup(client as HookClient, 'user').scriptPath);
    }
    expect(message.install_by_client.codex).toContain('--trust-codex-hook');
    expect(message.script_location).toContain(`hook/${HOOK_SCRIPT_FILENAME}`);
    expect(message.script_location).toContain('@toolfence/host-config@');
    expect(message.retry).toContain('linear__upsert_attachment');
    expect(message.docs_url).toBe(options.docsUrl);
    // No script text and no registration blocks: those are for programs (fullMessage).
    expect(payload.message).not.toContain(HOOK_SCRIPT.slice(0, 200));
    expect(message.hook_script).toBeUndefined();
    expect(message.setup_by_host).toBeUndefined();
  });

  it.each([
    ['typical options', options, 0],
    [
      'typical options and a budget',
      { ...options, maxAttachmentBytes: 7340032, serverName: 'linear' },
      0,
    ],
    ['a budget without a server name', { ...options, maxAttachmentBytes: 1000 }, 0],
    [
      'the longest option texts',
      {
        docsUrl: `https://docs.example.com/${'d'.repeat(1970)}`,
        exampleToolName: 't'.repeat(2000),
        displayName: 'n'.repeat(2000),
        maxAttachmentBytes: 268435456,
        serverName: 's'.repeat(128),
      },
      1,
    ],
  ])('keeps the compact message within its size bound: %s', (_name, given, long) => {
    const payload = buildMissingHookPayload(given as MissingHookPayloadOptions);
    const bytes = Buffer.byteLength(payload.message);
    // 3 KiB of fixed text, plus each option text as often as the message repeats it.
    const optionBytes =
      3 * given.displayName.length +
      2 * given.docsUrl.length +
      given.exampleToolName.length +
      6 * ((given as { serverName?: string }).serverName?.length ?? 0);
    expect(bytes).toBeLessThanOrEqual(3072 + optionBytes);
    if (long === 0) expect(bytes).toBeLessThanOrEqual(3072);
    // The full text for programs carries the whole script.
    expect(Buffer.byteLength(payload.fullMessage)).toBeGreaterThan(40_000);
  });

  it('keeps the full document, with the whole script, in fullMessage for programs', () => {
    const message = JSON.parse(buildMissingHookPayload(options).fullMessage);
    expect(message.hook_script).toBe(HOOK_SCRIPT);
    expect(message.hook_filename).toBe('toolfence_attachment_substitution.cjs');
    expect(message.required_protocol_version).toBe(HOOK_PROTOCOL_VERSION);
    expect(Object.keys(message.setup_by_host).sort()).toEqual([
      'claude-code',
      'codex',
      'cursor',
      'vscode',
    ]);
    for (const host of Object.values(message.setup_by_host) as {
      min_version: unknown;
      user: { script_path: string; config_path: unknown };
      project: { registration: unknown };
    }[]) {
      expect(host.min_version).toEqual(expect.any(String));
      expect(host.user.script_path).toContain('toolfence_attachment_substitution.cjs');
      expect(host.user.config_path).toEqual(expect.any(String));
      expect(host.project.registration).toEqual(expect.any(Object));
      expect('matcher' in host).toBe(true);
    }
    expect(message.setup_by_host.codex.notes.join(' ')).toContain('trust');
    expect(message.ask_user).toContain('which MCP client');
    expect(message.retry).toContain('linear__upsert_attachment');
  });

  it('carries a toolkit budget in the message, the install command and extra', () => {
    const payload = buildMissingHookPayload({
      ...options,
      maxAttachmentBytes: 7 * 1024 * 1024,
      serverName: 'linear',
    });
    const message = JSON.parse(payload.fullMessage);
    expect(message.install_command).toContain('--budget linear=7340032');
    for (const line of Object.values(JSON.parse(payload.message).install_by_client)) {
      expect(line).toContain('--budget linear=7340032');
    }
    expect(message.attachment_budget).toMatchObject({
      max_bytes: 7340032,
      readable: '7 MiB',
      server_name: 'linear',
    });
    expect(payload.extra.max_attachment_bytes).toBe(7340032);
  });

  it('uses a placeholder server name the model can fill in from the tool name', () => {
    const message = JSON.parse(
      buildMissingHookPayload({ ...options, maxAttachmentBytes: 1000 }).fullMessage,
    );
    expect(message.install_command).toContain('--budget <server>=1000');
    expect(message.attachment_budget.explanation).toContain('between mcp__ and the next __');
  });

  it('leaves the budget out when none is given', () => {
    const payload = buildMissingHookPayload(options);
    expect(JSON.parse(payload.message).attachment_budget).toBeUndefined();
    expect(JSON.parse(payload.fullMessage).attachment_budget).toBeUndefined();
    expect(JSON.parse(payload.fullMessage).install_command).not.toContain('--budget');
    expect(payload.message).not.toContain('--budget');
  });

  it.each([
    ['maxAttachmentBytes zero', { ...options, maxAttachmentBytes: 0 }],
    ['maxAttachmentBytes over 256 MiB', { ...options, maxAttachmentBytes: 268435457 }],
    ['maxAttachmentBytes a string', { ...options, maxAttachmentBytes: '7MiB' }],
    ['serverName with a space', { ...options, maxAttachmentBytes: 1, serverName: 'my server' }],
    ['an unknown option', { ...options, displayname: 'typo' }],
    ['docsUrl missing', { ...options, docsUrl: undefined }],
    ['docsUrl not http', { ...options, docsUrl: 'javascript:alert(1)' }],
    ['exampleToolName empty', { ...options, exampleToolName: '  ' }],
    ['displayName not a string', { ...options, displayName: 3 }],
  ])('rejects %s', (_name, bad) => {
    expect(() => buildMissingHookPayload(bad as never)).toThrow(HookPayloadOptionError);
  });
});

describe('toSnakeCaseMissingHookPayload', () => {
  it("gives arcade-mcp-host-config's shape: message, developer_message, extra", () => {
    const payload = buildMissingHookPayload(options);
    const snake = toSnakeCaseMissingHookPayload(payload);
    expect(Object.keys(snake).sort()).toEqual(['developer_message', 'extra', 'message']);
    expect(snake).toEqual({
      message: payload.message,
      developer_message: payload.developerMessage,
      extra: payload.extra,
    });
  });
});

describe('missingHookToolResult', () => {
  it('is a valid MCP tool error result', () => {
    const payload = buildMissingHookPayload(options);
    const result = missingHookToolResult(payload);
    const parsed = CallToolResultSchema.parse(result);
    expect(parsed.isError).toBe(true);
    expect(result.content[0].text).toBe(payload.message);
    expect(result._meta['dev.toolfence/missing-hook']).toEqual({
      ...payload.extra,
      developer_message: payload.developerMessage,
    });
  });
});
