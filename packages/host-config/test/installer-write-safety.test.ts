// How install writes: every backup and new file is prepared before any is renamed into place,
// a failure puts back what was already renamed, and links are followed only where the README
// promises it (a client config managed as a dotfile), never for the script, the hook config or
// a backup. Real files and the built CLI in temporary folders.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup, HOOK_SCRIPT } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let root: string;
let home: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'toolfence-write-safety-'));
  home = join(root, 'home');
  mkdirSync(home);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, USERPROFILE: home };
  delete env.CODEX_HOME;
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: root, env, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return text;
}

/** Every entry of a folder and its subfolders with its kind and content, to compare states. */
function snapshot(folder: string): Record<string, string> {
  const state: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stats = lstatSync(path);
      if (stats.isSymbolicLink()) state[path] = `link -> ${readlinkSync(path)}`;
      else if (stats.isDirectory()) {
        state[path] = 'dir';
        walk(path);
      } else state[path] = readFileSync(path, 'utf8');
    }
  };
  walk(folder);
  return state;
}

const claude = () => getHookSetup('claude-code', 'user', { home, node: process.execPath });
const hookConfigOf = (scriptPath: string) =>
  join(dirname(scriptPath), 'toolfence_attachment_substitution.config.json');

describe('a failed install changes nothing', () => {
  it('a hook config backup that cannot be written: no script, no registration, exit 1', () => {
    const setup = claude();
    const docs = join(root, 'docs');
    mkdirSync(docs);
    write(setup.configPath, '{"model":"x"}\n');
    const hookConfig = hookConfigOf(setup.scriptPath);
    write(hookConfig, '{"maxBytes": 1000}\n');
    mkdirSync(`${hookConfig}.toolfence.bak`);
    const before = snapshot(home);
    const result = cli('install', '--client', 'claude-code', '--allow', docs);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_WRITE_FAILED');
    expect(result.stderr).toContain('nothing was changed');
    expect(snapshot(home)).toEqual(before);
    // status agrees: nothing is installed, so no hook runs without its allowlist.
    expect(cli('status', '--client', 'claude-code').stdout).not.toContain('working: yes');
  });

  it('a failure on the last write puts back the files already renamed into place', () => {
    // The registration is written after the script and the hook config; its backup path is a
    // folder, so that write fails after the other two were renamed into place.
    const setup = claude();
    const docs = join(root, 'docs');
    mkdirSync(docs);
    write(setup.configPath, '{"model":"x"}\n');
    const hookConfig = hookConfigOf(setup.scriptPath);
    write(hookConfig, '{"maxBytes": 1000}\n');
    write(setup.scriptPath, '// an older script\n');
    mkdirSync(`${setup.configPath}.toolfence.bak`);
    const before = snapshot(home);
    const result = cli('install', '--client', 'claude-code', '--allow', docs);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('nothing was changed');
    const after = snapshot(home);
    // Backups of the files put back may have been refreshed (they hold the same text as
    // before); every file the hook or the client reads is as it was.
    for (const path of Object.keys(after)) {
      if (path.endsWith('.toolfence.bak') && after[path] !== 'dir') delete after[path];
    }
    expect(after).toEqual(before);
  });

  it('writes the hook config before the registration (so no active hook lacks its allowlist)', () => {
    // A fresh install with an allowlist: both land, and a dry run lists the hook config first.
    const setup = claude();
    const docs = join(root, 'docs');
    mkdirSync(docs);
    const result = cli('install', '--client', 'claude-code', '--allow', docs);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    const hookConfigLine = lines.findIndex((line) => line.includes('.config.json'));
    const registrationLine = lines.findIndex((line) => line.includes('settings.json'));
    expect(hookConfigLine).toBeGreaterThanOrEqual(0);
    expect(hookConfigLine).toBeLessThan(registrationLine);
    expect(JSON.parse(readFileSync(hookConfigOf(setup.scriptPath), 'utf8'))).toEqual({
      allowedRoots: [docs],
    });
  });
});

describe.skipIf(process.platform === 'win32')('links are followed only for client configs', () => {
  it('replaces a planted backup symlink instead of writing through it', () => {
    const victim = write(join(root, 'victim', 'important.txt'), 'IMPORTANT USER FILE\n');
    const project = join(root, 'repo');
    const config = write(join(project, '.claude', 'settings.local.json'), '{"permissions":{}}\n');
    symlinkSync(
      join(root, 'victim', 'important.txt'),
      join(project, '.claude', 'settings.local.json.toolfence.bak'),
    );
    const result = cli(
      'install',
      '--client',
      'claude-code',
      '--scope',
      'project',
      '--project',
      project,
    );
    expect(result.code).toBe(0);
    expect(readFileSync(join(root, 'victim', 'important.txt'), 'utf8')).toBe(victim);
    const backup = join(project, '.claude', 'settings.local.json.toolfence.bak');
    expect(lstatSync(backup).isFile()).toBe(true);
    expect(readFileSync(backup, 'utf8')).toBe(config);
  });

  it('replaces a symlinked script path instead of writing the script over its target', () => {
    const victim = write(join(root, 'victim', '.bashrc'), 'export PATH=$HOME/bin:$PATH\n');
    const project = join(root, 'repo');
    const script = join(project, '.claude', 'hooks', 'toolfence_attachment_substitution.cjs');
    mkdirSync(dirname(script), { recursive: true });
    symlinkSync(join(root, 'victim', '.bashrc'), script);
    const result = cli(
      'install',
      '--client',
      'claude-code',
      '--scope',
      'project',
      '--project',
      project,
    );
    expect(result.code).toBe(0);
    expect(readFileSync(join(root, 'victim', '.bashrc'), 'utf8')).toBe(victim);
    expect(lstatSync(script).isFile()).toBe(true);
    expect(readFileSync(script, 'utf8')).toBe(HOOK_SCRIPT);
  });

  it('replaces a symlinked hook config instead of writing the allowlist over its target', () => {
    const victim = write(join(root, 'victim', 'other.json'), '{"maxBytes": 5}\n');
    const setup = claude();
    const hookConfig = hookConfigOf(setup.scriptPath);
    mkdirSync(dirname(hookConfig), { recursive: true });
    symlinkSync(join(root, 'victim', 'other.json'), hookConfig);
    const docs = join(root, 'docs');
    mkdirSync(docs);
    expect(cli('install', '--client', 'claude-code', '--allow', docs).code).toBe(0);
    expect(readFileSync(join(root, 'victim', 'other.json'), 'utf8')).toBe(victim);
    expect(lstatSync(hookConfig).isFile()).toBe(true);
    expect(JSON.parse(readFileSync(hookConfig, 'utf8'))).toEqual({
      maxBytes: 5,
      allowedRoots: [docs],
    });
  });

  it('keeps a dangling config symlink a symlink and writes at its target', () => {
    const setup = claude();
    mkdirSync(join(root, 'dotfiles'));
    const target = join(root, 'dotfiles', 'claude-settings.json');
    mkdirSync(dirname(setup.configPath), { recursive: true });
    symlinkSync(target, setup.configPath);
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(lstatSync(setup.configPath).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toContain('toolfence_attachment_substitution.cjs');
  });

  it('follows a relative config symlink chain to its end', () => {
    const setup = claude();
    const target = write(join(home, 'dotfiles', 'settings.json'), '{"model":"y"}\n');
    mkdirSync(dirname(setup.configPath), { recursive: true });
    symlinkSync('../dotfiles/middle.json', setup.configPath);
    symlinkSync('settings.json', join(home, 'dotfiles', 'middle.json'));
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(lstatSync(setup.configPath).isSymbolicLink()).toBe(true);
    expect(lstatSync(join(home, 'dotfiles', 'middle.json')).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(join(home, 'dotfiles', 'settings.json'), 'utf8')).model).toBe(
      'y',
    );
    expect(readFileSync(`${setup.configPath}.toolfence.bak`, 'utf8')).toBe(target);
    expect(existsSync(join(home, 'dotfiles', 'settings.json.toolfence.bak'))).toBe(false);
  });
});
