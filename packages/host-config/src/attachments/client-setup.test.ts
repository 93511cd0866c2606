import { describe, expect, it } from 'vitest';
import { CLIENT_MIN_VERSIONS, getHookSetup, HOOK_CLIENTS } from './client-setup.js';

describe('client minimum versions', () => {
  it.each(HOOK_CLIENTS)('records a minimum version and its source for %s', (client) => {
    const minimum = CLIENT_MIN_VERSIONS[client];
    expect(minimum.version).toMatch(/^\d+\.\d+(\.\d+)?$/);
    expect(minimum.source.length).toBeGreaterThan(20);
    expect(typeof minimum.confirmed).toBe('boolean');
  });

  it('covers exactly the supported clients', () => {
    expect(Object.keys(CLIENT_MIN_VERSIONS).sort()).toEqual([...HOOK_CLIENTS].sort());
  });
});

describe('getHookSetup', () => {
  const paths = { home: '/home/u', projectDir: '/work/p', platform: 'linux' } as const;

  it('registers Claude Code with an MCP matcher and no decision', () => {
    const setup = getHookSetup('claude-code', 'user', paths);
    expect(setup.scriptPath).toBe('/home/u/.claude/hooks/toolfence_attachment_substitution.cjs');
    expect(setup.configPath).toBe('/home/u/.claude/settings.json');
    expect(setup.registration).toEqual({
      hooks: {
        PreToolUse: [
          {
            matcher: 'mcp__.*',
            hooks: [
              {
                type: 'command',
                command: 'node /home/u/.claude/hooks/toolfence_attachment_substitution.cjs',
                timeout: 120,
              },
            ],
          },
        ],
      },
    });
    expect(getHookSetup('claude-code', 'project', paths).configPath).toBe(
      '/work/p/.claude/settings.local.json',
    );
  });

  it('registers Codex under CODEX_HOME with a trust note', () => {
    const setup = getHookSetup('codex', 'user', { ...paths, codexHome: '/opt/codex' });
    expect(setup.configPath).toBe('/opt/codex/hooks.json');
    expect(setup.notes.join(' ')).toContain('/hooks');
  });

  it('registers Cursor through preToolUse with version 1', () => {
    const setup = getHookSetup('cursor', 'project', paths);
    expect(setup.configPath).toBe('/work/p/.cursor/hooks.json');
    expect(setup.registration).toEqual({
      version: 1,
      hooks: {
        preToolUse: [
          {
            command: 'node /work/p/.cursor/hooks/toolfence_attachment_substitution.cjs',
            matcher: 'MCP:.*',
            timeout: 120,
          },
        ],
      },
    });
  });

  it('registers VS Code without a matcher (VS Code ignores matchers)', () => {
    const setup = getHookSetup('vscode', 'project', paths);
    expect(setup.matcher).toBeNull();
    expect(setup.configPath).toBe('/work/p/.github/hooks/toolfence_attachment_substitution.json');
    expect(setup.entry).toEqual({
      type: 'command',
      command: 'node /work/p/.github/hooks/toolfence_attachment_substitution.cjs',
      timeout: 120,
    });
  });

  it('quotes paths with spaces and quotes for the shell', () => {
    const setup = getHookSetup('cursor', 'user', { home: "/home/o'neil smith", platform: 'linux' });
    expect(setup.command).toBe(
      `node '/home/o'\\''neil smith/.cursor/hooks/toolfence_attachment_substitution.cjs'`,
    );
    const windows = getHookSetup('cursor', 'user', { home: 'C:\\Users\\A B', platform: 'win32' });
    expect(windows.command).toBe(
      'node "C:\\Users\\A B\\.cursor\\hooks\\toolfence_attachment_substitution.cjs"',
    );
  });

  it('uses placeholders when no paths are given', () => {
    expect(getHookSetup('claude-code', 'user', { platform: 'linux' }).command).toBe(
      'node ~/.claude/hooks/toolfence_attachment_substitution.cjs',
    );
  });
});
