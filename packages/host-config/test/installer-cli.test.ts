import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup, HOOK_CLIENTS, HOOK_SCRIPT, type HookClient } from '../src/index.js';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let home: string;
let project: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-home-'));
  project = mkdtempSync(join(tmpdir(), 'toolfence-project-'));
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(project, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, USERPROFILE: home };
  delete env.CODEX_HOME;
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd: project,
    env,
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const setupFor = (client: HookClient, scope: 'user' | 'project' = 'user') =>
  getHookSetup(client, scope, { home, projectDir: project, node: process.execPath });

/** A config per client that already holds someone else's hook. */
const existing: Record<HookClient, () => Record<string, unknown>> = {
  'claude-code': () => ({
    model: 'opus',
    hooks: {
      PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'lint-bash' }] }],
      PostToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'log' }] }],
    },
  }),
  codex: () => ({
    hooks: { PreToolUse: [{ matcher: 'shell', hooks: [{ type: 'command', command: 'guard' }] }] },
  }),
  cursor: () => ({ version: 1, hooks: { preToolUse: [{ command: 'audit', matcher: 'Shell' }] } }),
  vscode: () => ({ hooks: { PreToolUse: [{ type: 'command', command: 'other-hook' }] } }),
};

function writeJson(path: string, value: unknown): string {
  mkdirSync(dirname(path), { recursive: true });
  const text = `${JSON.stringify(value, null, 2)}\n`;
  writeFileSync(path, text);
  return text;
}

describe('toolfence-host-config install', () => {
  it.each(HOOK_CLIENTS)('installs for %s, keeping the hooks already there', async (client) => {
    const setup = setupFor(client);
    writeJson(setup.configPath, existing[client]());
    const first = cli('install', '--client', client);
    expect(first.code).toBe(0);
    expect(readFileSync(setup.scriptPath, 'utf8')).toBe(HOOK_SCRIPT);
    const config = JSON.parse(readFileSync(setup.configPath, 'utf8'));
    const list = config.hooks[setup.format.eventKey] as unknown[];
    expect(list).toEqual([
      ...(existing[client]().hooks as Record<string, unknown[]>)[setup.format.eventKey]!,
      setup.entry,
    ]);
    if (client === 'claude-code')
      expect(config.hooks.PostToolUse).toEqual(
        existing[client]().hooks &&
          (existing[client]().hooks as Record<string, unknown>).PostToolUse,
      );
    expect(JSON.parse(readFileSync(`${setup.configPath}.toolfence.bak`, 'utf8'))).toEqual(
      existing[client](),
    );

    // The installed script is the real hook and works from where it was put.
    writeFileSync(join(home, 'note.txt'), 'hi');
    const run = await runHook(
      stdinFor(client, { attachment: { source: fileUrl(join(home, 'note.txt')) } }),
      {
        script: setup.scriptPath,
      },
    );
    expect(run.stdout).toContain('data:text/plain;base64,aGk=');
  });

  it.each(HOOK_CLIENTS)('changes nothing on a second install for %s', (client) => {
    const setup = setupFor(client);
    expect(cli('install', '--client', client).code).toBe(0);
    const before = readFileSync(setup.configPath, 'utf8');
    const second = cli('install', '--client', client);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('already done');
    expect(readFileSync(setup.configPath, 'utf8')).toBe(before);
    expect(existsSync(`${setup.configPath}.toolfence.bak`)).toBe(false);
  });

  it('creates Cursor hooks.json with version 1', () => {
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    expect(JSON.parse(readFileSync(setupFor('cursor').configPath, 'utf8')).version).toBe(1);
  });

  it('installs at project scope under --project', () => {
    const other = mkdtempSync(join(tmpdir(), 'toolfence-other-'));
    try {
      const result = cli(
        'install',
        '--client',
        'claude-code',
        '--scope',
        'project',
        '--project',
        other,
      );
      expect(result.code).toBe(0);
      expect(
        readFileSync(
          join(other, '.claude', 'hooks', 'toolfence_attachment_substitution.cjs'),
          'utf8',
        ),
      ).toBe(HOOK_SCRIPT);
      expect(readFileSync(join(other, '.claude', 'settings.local.json'), 'utf8')).toContain(other);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('replaces an older registration of the hook instead of adding a second one', () => {
    const setup = setupFor('claude-code');
    writeJson(setup.configPath, {
      hooks: {
        PreToolUse: [
          {
            matcher: 'mcp__old__.*',
            hooks: [
              { type: 'command', command: 'node /old/toolfence_attachment_substitution.mjs' },
              { type: 'command', command: 'keep-me' },
            ],
          },
        ],
      },
    });
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    const list = JSON.parse(readFileSync(setup.configPath, 'utf8')).hooks.PreToolUse;
    expect(list).toEqual([
      { matcher: 'mcp__old__.*', hooks: [{ type: 'command', command: 'keep-me' }] },
      setup.entry,
    ]);
  });

  it.each([
    ['invalid JSON', '{"hooks": {'],
    ['a JSON list', '[]'],
    ['hooks that is not an object', '{"hooks": []}'],
    ['an event that is not a list', '{"hooks": {"PreToolUse": {"matcher": "x"}}}'],
    ['comments (JSONC)', '{\n  // mine\n  "hooks": {}\n}'],
  ])('refuses a config holding %s and writes nothing', (_name, text) => {
    const setup = setupFor('claude-code');
    mkdirSync(dirname(setup.configPath), { recursive: true });
    writeFileSync(setup.configPath, text);
    const result = cli('install', '--client', 'claude-code');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain(setup.configPath);
    expect(readFileSync(setup.configPath, 'utf8')).toBe(text);
    expect(existsSync(setup.scriptPath)).toBe(false);
    expect(existsSync(`${setup.configPath}.toolfence.bak`)).toBe(false);
  });

  it('prints the change and writes nothing with --dry-run', () => {
    const setup = setupFor('codex');
    const text = writeJson(setup.configPath, existing.codex());
    const result = cli('install', '--client', 'codex', '--dry-run');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`would create: ${setup.scriptPath}`);
    expect(result.stdout).toContain(`would update: ${setup.configPath}`);
    expect(result.stdout).toContain('mcp__.*');
    expect(readFileSync(setup.configPath, 'utf8')).toBe(text);
    expect(existsSync(setup.scriptPath)).toBe(false);
  });

  // Creating a symlink needs a privilege on Windows.
  it.skipIf(process.platform === 'win32')('keeps a symlinked config a symlink', () => {
    const setup = setupFor('cursor');
    const real = join(home, 'dotfiles', 'hooks.json');
    writeJson(real, existing.cursor());
    mkdirSync(dirname(setup.configPath), { recursive: true });
    symlinkSync(real, setup.configPath);
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    expect(lstatSync(setup.configPath).isSymbolicLink()).toBe(true);
    expect(readFileSync(real, 'utf8')).toContain('toolfence_attachment_substitution.cjs');
  });

  it('uses CODEX_HOME for Codex', () => {
    const codexHome = join(home, 'codex-home');
    const env = { ...process.env, HOME: home, CODEX_HOME: codexHome };
    const result = spawnSync(process.execPath, [CLI, 'install', '--client', 'codex'], {
      env,
      encoding: 'utf8',
    });
    expect(result.status).toBe(0);
    expect(existsSync(join(codexHome, 'hooks.json'))).toBe(true);
  });
});

describe('toolfence-host-config install --allow', () => {
  it('writes the allowlist next to the script, and the installed hook enforces it', async () => {
    const setup = setupFor('claude-code');
    const allowed = join(home, 'Documents');
    mkdirSync(allowed);
    writeFileSync(join(allowed, 'ok.txt'), 'ok');
    writeFileSync(join(home, 'secret.txt'), 'secret');
    expect(cli('install', '--client', 'claude-code', '--allow', allowed).code).toBe(0);
    const hookConfig = join(
      dirname(setup.scriptPath),
      'toolfence_attachment_substitution.config.json',
    );
    expect(JSON.parse(readFileSync(hookConfig, 'utf8'))).toEqual({ allowedRoots: [allowed] });
    const inside = await runHook(
      stdinFor('claude-code', { attachment: { source: fileUrl(join(allowed, 'ok.txt')) } }),
      {
        script: setup.scriptPath,
      },
    );
    expect(inside.stdout).toContain('data:text/plain;base64,b2s=');
    const outside = await runHook(
      stdinFor('claude-code', { attachment: { source: fileUrl(join(home, 'secret.txt')) } }),
      {
        script: setup.scriptPath,
      },
    );
    expect(outside.stdout).toContain('HOOK_PATH_NOT_ALLOWED');
    expect(cli('status', '--client', 'claude-code').stdout).toContain(`allowlist: ${allowed}`);
    const again = cli('install', '--client', 'claude-code', '--allow', allowed);
    expect(again.stdout).toContain('already done');
  });

  it('resolves a relative --allow against the project folder', () => {
    mkdirSync(join(project, 'docs'));
    expect(cli('install', '--client', 'cursor', '--allow', 'docs').code).toBe(0);
    const hookConfig = join(
      dirname(setupFor('cursor').scriptPath),
      'toolfence_attachment_substitution.config.json',
    );
    expect(JSON.parse(readFileSync(hookConfig, 'utf8')).allowedRoots).toEqual([
      join(project, 'docs'),
    ]);
  });

  it('says plainly when no allowlist is set', () => {
    expect(cli('install', '--client', 'codex').code).toBe(0);
    expect(cli('status', '--client', 'codex').stdout).toContain('reads any file you can read');
  });

  it.each([
    [
      'a directory that does not exist',
      ['install', '--client', 'codex', '--allow', '/no/such/dir'],
    ],
    ['--allow on uninstall', ['uninstall', '--client', 'codex', '--allow', '/tmp']],
  ])('refuses %s and writes nothing', (_name, args) => {
    const result = cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSTALL_USAGE_INVALID');
    expect(existsSync(setupFor('codex').scriptPath)).toBe(false);
  });
});

describe('toolfence-host-config uninstall and status', () => {
  it.each(HOOK_CLIENTS)('uninstalls for %s, keeping the other hooks', (client) => {
    const setup = setupFor(client);
    writeJson(setup.configPath, existing[client]());
    expect(cli('install', '--client', client).code).toBe(0);
    const result = cli('uninstall', '--client', client);
    expect(result.code).toBe(0);
    expect(existsSync(setup.scriptPath)).toBe(false);
    expect(JSON.parse(readFileSync(setup.configPath, 'utf8'))).toEqual(existing[client]());
  });

  it('deletes the VS Code hooks file it owns when nothing else is left', () => {
    const setup = setupFor('vscode', 'project');
    expect(cli('install', '--client', 'vscode', '--scope', 'project').code).toBe(0);
    expect(existsSync(setup.configPath)).toBe(true);
    expect(cli('uninstall', '--client', 'vscode', '--scope', 'project').code).toBe(0);
    expect(existsSync(setup.configPath)).toBe(false);
  });

  it('reports installed, stale and missing hooks', () => {
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    writeFileSync(
      setupFor('cursor').scriptPath,
      '// toolfence attachment substitution hook. protocol=0\n',
    );
    const text = cli('status');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'claude-code (user): installed, protocol 1, current; registered in',
    );
    expect(text.stdout).toContain('cursor (user): STALE (installed protocol 0');
    expect(text.stdout).toContain('codex (user): not installed; not registered');
    const json = JSON.parse(cli('status', '--client', 'cursor', '--json').stdout);
    expect(json).toEqual([
      expect.objectContaining({
        client: 'cursor',
        stale: true,
        installedProtocol: 0,
        registered: true,
      }),
    ]);
  });
});

describe('toolfence-host-config print and usage', () => {
  it('prints the script exactly', () => {
    const result = cli('print-script');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(HOOK_SCRIPT);
  });

  it('prints the setup for a client', () => {
    const result = cli('print-setup', '--client', 'codex');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Codex CLI (user scope), version 0.131.0 or newer');
    expect(result.stdout).toContain(join(home, '.codex', 'hooks.json'));
    expect(result.stdout).toContain('/hooks');
    expect(
      JSON.parse(cli('print-setup', '--client', 'vscode', '--json').stdout).matcher,
    ).toBeNull();
  });

  it.each([
    ['an unknown client', ['install', '--client', 'emacs']],
    ['a missing client', ['install']],
    ['an unknown scope', ['status', '--scope', 'global']],
    ['an unknown command', ['frobnicate']],
    ['an unknown option', ['status', '--force']],
    ['no command', []],
  ])('exits 2 on %s', (_name, args) => {
    const result = cli(...args);
    expect(result.code).toBe(2);
    expect(result.stderr + result.stdout).toContain('Usage: toolfence-host-config');
  });
});
