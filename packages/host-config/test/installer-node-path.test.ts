import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup, HOOK_CLIENTS } from '../src/attachments/client-setup.js';
import { getHookStatus, installHook } from '../src/cli/installer.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-node-path-'));
});
afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

/** Runs a command the way the clients do (`sh -c`), with an empty PATH: no `node` to find. */
function runRegistered(command: string, stdin: string) {
  return spawnSync('/bin/sh', ['-c', command], {
    input: stdin,
    env: { PATH: '/nonexistent', HOME: home },
    encoding: 'utf8',
  });
}

describe('the installer registers the absolute path of a Node executable', () => {
  it.each(HOOK_CLIENTS)('registers the Node running the installer for %s', (client) => {
    const result = installHook({ client, home });
    expect(result.setup.command.startsWith(`${process.execPath} `)).toBe(true);
    expect(readFileSync(result.setup.configPath, 'utf8')).toContain(
      JSON.stringify(result.setup.command).slice(1, -1),
    );
    expect(getHookStatus({ client, home }).registered).toBe(true);
  });

  it('runs without node on the PATH, as a GUI client with a short PATH does', () => {
    const { setup } = installHook({ client: 'claude-code', home });
    const event = JSON.stringify({
      hook_event_name: 'PreToolUse',
      tool_name: 'mcp__x__y',
      tool_input: { title: 'no attachment' },
    });
    const registered = runRegistered(setup.command, event);
    expect(registered.status).toBe(0);
    // The placeholder form (`node <script>`) needs node on the PATH, and fails here.
    const placeholder = getHookSetup('claude-code', 'user', { home }).command;
    expect(placeholder.startsWith('node ')).toBe(true);
    expect(runRegistered(placeholder, event).status).not.toBe(0);
  });

  it('registers another Node given with node / --node, quoted for the shell', () => {
    const other = join(home, 'my tools', 'node');
    mkdirSync(join(home, 'my tools'));
    copyFileSync(process.execPath, other);
    const { setup } = installHook({ client: 'cursor', home, node: other });
    expect(setup.command).toBe(`'${other}' ${setup.scriptPath}`);
    const cli = spawnSync(
      process.execPath,
      [CLI, 'install', '--client', 'codex', '--home', home, '--node', other, '--json'],
      { env: { ...process.env, HOME: home, CODEX_HOME: '' }, encoding: 'utf8' },
    );
    expect(cli.status).toBe(0);
    const codex = getHookSetup('codex', 'user', { home, node: other });
    expect(readFileSync(codex.configPath, 'utf8')).toContain(
      JSON.stringify(codex.command).slice(1, -1),
    );
  });

  it.each([
    ['a relative path', 'node'],
    ['an empty string', ''],
    ['a missing file', '/nonexistent/bin/node'],
    ['a folder', '/'],
    ['a number', 18],
  ])('refuses %s as node', (_name, node) => {
    expect(() => installHook({ client: 'claude-code', home, node: node as string })).toThrow(
      expect.objectContaining({ code: 'INSTALL_USAGE_INVALID', details: { option: 'node' } }),
    );
  });

  it('writes nothing when node is refused', () => {
    writeFileSync(join(home, 'marker'), '');
    expect(() => installHook({ client: 'vscode', home, node: 'node' })).toThrow();
    expect(getHookStatus({ client: 'vscode', home }).scriptInstalled).toBe(false);
  });
});
