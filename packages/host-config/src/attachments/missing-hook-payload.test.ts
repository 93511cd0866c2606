import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { HookPayloadOptionError } from './errors.js';
import { HOOK_PROTOCOL_VERSION, HOOK_SCRIPT } from './hook-script.js';
import {
  buildMissingHookPayload,
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
    expect(Object.keys(payload).sort()).toEqual(['developerMessage', 'extra', 'message']);
  });

  it('keeps extra lean', () => {
    const payload = buildMissingHookPayload(options);
    expect(payload.extra).toEqual({
      hook_filename: 'toolfence_attachment_substitution.cjs',
      min_version: HOOK_PROTOCOL_VERSION,
      docs_url: options.docsUrl,
    });
  });

  it('puts a self-sufficient JSON document in message', () => {
    const message = JSON.parse(buildMissingHookPayload(options).message);
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
    const message = JSON.parse(payload.message);
    expect(message.install_command).toContain('--budget linear=7340032');
    expect(message.attachment_budget).toMatchObject({
      max_bytes: 7340032,
      readable: '7 MiB',
      server_name: 'linear',
    });
    expect(payload.extra.max_attachment_bytes).toBe(7340032);
  });

  it('uses a placeholder server name the model can fill in from the tool name', () => {
    const message = JSON.parse(
      buildMissingHookPayload({ ...options, maxAttachmentBytes: 1000 }).message,
    );
    expect(message.install_command).toContain('--budget <server>=1000');
    expect(message.attachment_budget.explanation).toContain('between mcp__ and the next __');
  });

  it('leaves the budget out when none is given', () => {
    const payload = buildMissingHookPayload(options);
    expect(JSON.parse(payload.message).attachment_budget).toBeUndefined();
    expect(JSON.parse(payload.message).install_command).not.toContain('--budget');
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
