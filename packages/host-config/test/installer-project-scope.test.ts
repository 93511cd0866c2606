// A project-scope install writes inside the project only: a cloned repository cannot point a
// config, a hooks folder or an `--allow` root elsewhere through a symlink. The built CLI and
// installHook on real files, links and a fake home in a temporary folder.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup, HOOK_SCRIPT, installHook, uninstallHook } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const POSIX = process.platform !== 'win32';

let root: string;
let home: string;
let project: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'toolfence-project-scope-')));
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

function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return text;
}

/** Every entry under a folder with its kind and content, to prove nothing changed. */
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

describe.runIf(POSIX)('a project-scope install never writes outside the project', () => {
  it("a settings.local.json linked to the user's ~/.claude/settings.json is refused", () => {
    const userSettings = join(home, '.claude', 'settings.json');
    write(userSettings, '{"model":"opus"}\n');
    mkdirSync(join(project, '.claude'));
    symlinkSync(userSettings, join(project, '.claude', 'settings.local.json'));
    const before = { home: snapshot(home), project: snapshot(project) };
    const result = cli('install', '--client', 'claude-code', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(result.stderr).toContain('settings.local.json');
    expect(result.stderr).toContain('outside the project');
    expect({ home: snapshot(home), project: snapshot(project) }).toEqual(before);
  });

  it('a .cursor folder linked to ~/.cursor is refused (no user-level hook pointing into the repo)', () => {
    mkdirSync(join(home, '.cursor'));
    symlinkSync(join(home, '.cursor'), join(project, '.cursor'));
    const before = snapshot(home);
    const result = cli('install', '--client', 'cursor', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(snapshot(home)).toEqual(before);
    // A dry run is refused the same way: nothing is planned outside the project either.
    expect(cli('install', '--client', 'cursor', '--scope', 'project', '--dry-run').code).toBe(1);
  });

  it("VS Code's hooks file linked to a path outside the project creates nothing there", () => {
    const outside = join(root, 'elsewhere', 'planted.json');
    mkdirSync(dirname(outside));
    const hooks = join(project, '.github', 'hooks');
    mkdirSync(hooks, { recursive: true });
    symlinkSync(outside, join(hooks, 'toolfence_attachment_substitution.json'));
    const result = cli('install', '--client', 'vscode', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(hooks, 'toolfence_attachment_substitution.cjs'))).toBe(false);
  });

  it('a .cursor link that leads nowhere is refused (install would create folders through it)', () => {
    symlinkSync(join(root, 'no-such-folder'), join(project, '.cursor'));
    const result = cli('install', '--client', 'cursor', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(existsSync(join(root, 'no-such-folder'))).toBe(false);
  });

  it('a hook config linked to a file outside is not read into the project by --allow', () => {
    const secret = join(home, '.claude.json');
    write(secret, '{"oauthAccount":"do-not-copy-me"}\n');
    const hooks = join(project, '.claude', 'hooks');
    mkdirSync(hooks, { recursive: true });
    symlinkSync(secret, join(hooks, 'toolfence_attachment_substitution.config.json'));
    mkdirSync(join(project, 'docs'));
    const result = cli(
      ...['install', '--client', 'claude-code', '--scope', 'project', '--allow', 'docs'],
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(JSON.stringify(snapshot(project))).not.toContain('do-not-copy-me');
  });

  it('uninstall through a linked .cursor folder leaves the user-level hook alone', () => {
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    symlinkSync(join(home, '.cursor'), join(project, '.cursor'));
    const before = snapshot(home);
    const result = cli('uninstall', '--client', 'cursor', '--scope', 'project');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(snapshot(home)).toEqual(before);
  });

  it('the library refuses the same (InstallPathUnsafeError, details.path)', () => {
    mkdirSync(join(home, '.cursor'));
    symlinkSync(join(home, '.cursor'), join(project, '.cursor'));
    expect(() =>
      installHook({ client: 'cursor', scope: 'project', home, projectDir: project }),
    ).toThrow(expect.objectContaining({ code: 'INSTALL_PATH_UNSAFE' }));
    expect(() =>
      uninstallHook({ client: 'cursor', scope: 'project', home, projectDir: project }),
    ).toThrow(expect.objectContaining({ code: 'INSTALL_PATH_UNSAFE' }));
  });

  it('a link that stays inside the project is followed, and the real target is printed', () => {
    const real = join(project, 'config', 'claude');
    mkdirSync(real, { recursive: true });
    symlinkSync(real, join(project, '.claude'));
    const result = cli('install', '--client', 'claude-code', '--scope', 'project');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readFileSync(join(real, 'hooks', 'toolfence_attachment_substitution.cjs'), 'utf8')).toBe(
      HOOK_SCRIPT,
    );
    expect(result.stdout).toContain(join(real, 'settings.local.json'));
    expect(existsSync(join(real, 'settings.local.json'))).toBe(true);
  });

  it('a project folder given through a symlink registers its real path', () => {
    const alias = join(root, 'alias');
    symlinkSync(project, alias);
    const result = cli(
      'install',
      '--client',
      'claude-code',
      '--scope',
      'project',
      '--project',
      alias,
    );
    expect(result.code).toBe(0);
    const settings = JSON.parse(
      readFileSync(join(project, '.claude', 'settings.local.json'), 'utf8'),
    );
    const command: string = settings.hooks.PreToolUse[0].hooks[0].command;
    expect(command).toContain(join(project, '.claude', 'hooks'));
    expect(command).not.toContain(alias);
  });

  it('user scope still follows a symlinked config (dotfile managers)', () => {
    const dotfiles = join(root, 'dotfiles', 'settings.json');
    write(dotfiles, '{"model":"opus"}\n');
    mkdirSync(join(home, '.claude'));
    symlinkSync(dotfiles, join(home, '.claude', 'settings.json'));
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(JSON.parse(readFileSync(dotfiles, 'utf8')).hooks.PreToolUse).toHaveLength(1);
  });
});

describe.runIf(POSIX)('--allow roots are stored as real paths', () => {
  it('at project scope, a root inside the project that is a symlink leading elsewhere is refused', () => {
    const outside = join(root, 'outside-docs');
    mkdirSync(outside);
    symlinkSync(outside, join(project, 'docs'));
    const result = cli(
      'install',
      '--client',
      'claude-code',
      '--scope',
      'project',
      '--allow',
      'docs',
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_PATH_UNSAFE');
    expect(result.stderr).toContain('--allow');
    expect(result.stderr).toContain(outside);
    expect(existsSync(join(project, '.claude'))).toBe(false);
  });

  it('a root given through a symlink is stored and printed as its real path', () => {
    const real = join(root, 'real-docs');
    mkdirSync(real);
    const alias = join(root, 'docs-alias');
    symlinkSync(real, alias);
    const result = cli('install', '--client', 'claude-code', '--allow', alias);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`allowlist: ${real}`);
    const setup = getHookSetup('claude-code', 'user', { home });
    const config = JSON.parse(
      readFileSync(
        join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.config.json'),
        'utf8',
      ),
    );
    expect(config.allowedRoots).toEqual([real]);
  });

  it('a hook config kept as it was (comments and all) does not trip the allowlist line', () => {
    const docs = join(root, 'docs');
    mkdirSync(docs);
    const hookConfig = join(
      dirname(getHookSetup('claude-code', 'user', { home }).scriptPath),
      'toolfence_attachment_substitution.config.json',
    );
    write(hookConfig, `{ // mine\n "allowedRoots": [${JSON.stringify(docs)}] }\n`);
    const result = cli('install', '--client', 'claude-code', '--allow', docs);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('at project scope, a plain folder of the project is stored as given', () => {
    mkdirSync(join(project, 'docs'));
    const result = cli(
      'install',
      '--client',
      'claude-code',
      '--scope',
      'project',
      '--allow',
      'docs',
    );
    expect(result.code).toBe(0);
    const config = JSON.parse(
      readFileSync(
        join(project, '.claude', 'hooks', 'toolfence_attachment_substitution.config.json'),
        'utf8',
      ),
    );
    expect(config.allowedRoots).toEqual([join(project, 'docs')]);
  });
});
