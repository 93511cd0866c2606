// The hook config file beside the script, as install and status see it: a file install did not
// write that makes the hook read more than by default is not adopted silently, and status reads
// it with the hook's own code, so it never says "working" while the hook denies every rewrite,
// and prints every setting that differs from the default. The built CLI and the real hook on
// files in a temporary folder.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
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
import { getHookSetup, getHookStatus, installHook } from '../src/index.js';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let root: string;
let home: string;
let project: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'toolfence-hook-config-'));
  home = join(root, 'home');
  project = join(root, 'project');
  mkdirSync(home);
  mkdirSync(project);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
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

function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

const hookConfigOf = (scope: 'user' | 'project') =>
  join(
    dirname(getHookSetup('claude-code', scope, { home, projectDir: project }).scriptPath),
    'toolfence_attachment_substitution.config.json',
  );

const WEAKENING = '{"denyCredentialFiles":false,"maxBytes":268435456}\n';

describe('install and a hook config it did not write', () => {
  it('at project scope, a shipped config that weakens the defaults stops the install', () => {
    const path = hookConfigOf('project');
    write(path, WEAKENING);
    const result = cli('install', '--client', 'claude-code', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_HOOK_CONFIG_UNTRUSTED');
    expect(result.stderr).toContain(path);
    expect(result.stderr).toContain('denyCredentialFiles=false');
    expect(result.stderr).toContain('maxBytes=268435456');
    expect(result.stderr).toContain('--accept-hook-config');
    expect(existsSync(join(project, '.claude', 'settings.local.json'))).toBe(false);
    expect(existsSync(join(dirname(path), 'toolfence_attachment_substitution.cjs'))).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe(WEAKENING);
  });

  it('--allow does not merge into such a config either', () => {
    write(hookConfigOf('project'), WEAKENING);
    mkdirSync(join(project, 'docs'));
    const result = cli(
      ...['install', '--client', 'claude-code', '--scope', 'project', '--allow', 'docs'],
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_HOOK_CONFIG_UNTRUSTED');
    expect(readFileSync(hookConfigOf('project'), 'utf8')).toBe(WEAKENING);
  });

  it('--accept-hook-config keeps it on purpose, and status names each setting', () => {
    write(hookConfigOf('project'), WEAKENING);
    const result = cli(
      ...['install', '--client', 'claude-code', '--scope', 'project', '--accept-hook-config'],
    );
    expect(result.code).toBe(0);
    const status = cli('status', '--client', 'claude-code', '--scope', 'project');
    expect(status.stdout).toContain('denyCredentialFiles=false (default true; READS MORE');
    expect(status.stdout).toContain('maxBytes=268435456 (default 26214400; READS MORE');
  });

  it('a config that only narrows the defaults is kept without a word', () => {
    write(hookConfigOf('project'), '{"maxBytes":1000,"settleMs":500}\n');
    const result = installHook({
      client: 'claude-code',
      scope: 'project',
      home,
      projectDir: project,
    });
    expect(result.warnings).toEqual([]);
    expect(readFileSync(hookConfigOf('project'), 'utf8')).toBe(
      '{"maxBytes":1000,"settleMs":500}\n',
    );
  });

  it('a config the hook finds invalid is kept, and status says the hook cannot work', () => {
    write(hookConfigOf('project'), '{"maxBytes":"10"}\n');
    const result = installHook({
      client: 'claude-code',
      scope: 'project',
      home,
      projectDir: project,
    });
    expect(result.warnings).toEqual([]);
    const status = getHookStatus({
      client: 'claude-code',
      scope: 'project',
      home,
      projectDir: project,
    });
    expect(status.working).toBe(false);
    expect(status.hookConfigProblem).toContain('maxBytes must be a whole number of bytes');
  });

  it('at user scope the config is kept, with a warning naming the settings', () => {
    write(hookConfigOf('user'), WEAKENING);
    const result = cli('install', '--client', 'claude-code');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('warning: the hook config');
    expect(result.stdout).toContain('denyCredentialFiles=false (default true)');
  });

  it('acceptHookConfig must be a boolean, and is refused by uninstall', () => {
    expect(() =>
      installHook({ client: 'claude-code', home, acceptHookConfig: 'yes' as unknown as boolean }),
    ).toThrow(expect.objectContaining({ code: 'INSTALL_USAGE_INVALID' }));
    expect(cli('uninstall', '--client', 'claude-code', '--accept-hook-config').code).toBe(2);
  });
});

describe('status reads the hook config with the hook own code', () => {
  it.each([
    ['a byte limit given as a string', '{"maxBytes":"10"}'],
    ['an unknown key', '{"allowedRoot":["/tmp"]}'],
    ['a relative root', '{"allowedRoots":["docs"]}'],
    ['denyCredentialFiles that is not a boolean', '{"denyCredentialFiles":"no"}'],
    ['a budget of 0 bytes', '{"toolkitBudgets":{"files":0}}'],
    ['a quiet time above its ceiling', '{"settleMs":99999}'],
  ])('%s: NOT WORKING, as the hook denies every rewrite', async (_name, text) => {
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    const path = hookConfigOf('user');
    write(path, text);
    const status = cli('status', '--client', 'claude-code');
    expect(status.code).toBe(1);
    expect(status.stdout).not.toContain('working: yes');
    expect(status.stdout).toContain('NOT WORKING: hook config:');
    // The hook agrees: it denies a rewrite with this config.
    const file = join(root, 'a.txt');
    writeFileSync(file, 'a');
    const script = getHookSetup('claude-code', 'user', { home }).scriptPath;
    const run = await runHook(stdinFor('claude-code', { attachment: { source: fileUrl(file) } }), {
      script,
    });
    expect(JSON.parse(run.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      'HOOK_CONFIG_INVALID',
    );
  });

  it.runIf(process.platform !== 'win32')('a dangling symlink as the config: NOT WORKING', () => {
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    symlinkSync(join(root, 'no-such-config.json'), hookConfigOf('user'));
    const status = cli('status', '--client', 'claude-code');
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(
      'NOT WORKING: hook config: the hook config file cannot be read',
    );
  });

  it('reports every setting that differs from the default, and nothing for the defaults', () => {
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(getHookStatus({ client: 'claude-code', home }).hookSettings).toEqual([]);
    write(
      hookConfigOf('user'),
      JSON.stringify({
        maxBytes: 26214400,
        maxTotalBytes: 1000,
        maxDepth: 500,
        maxAttachments: 7,
        settleMs: 0,
        toolkitBudgets: { files: 2048 },
      }),
    );
    const status = getHookStatus({ client: 'claude-code', home });
    expect(status.working).toBe(true);
    expect(status.hookSettings).toEqual([
      { name: 'maxTotalBytes', value: '1000', default: '26214400', weakens: false },
      { name: 'maxDepth', value: '500', default: '100', weakens: true },
      { name: 'maxAttachments', value: '7', default: '100', weakens: false },
      { name: 'settleMs', value: '0', default: '100', weakens: true },
      { name: 'toolkitBudgets.files', value: '2048', default: 'unset', weakens: false },
    ]);
  });
});
