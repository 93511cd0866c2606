// Options the installer must check rather than accept: a relative CODEX_HOME (it would be
// written into the registered command and Codex's trust key), and install-only options given
// to another command (which exited 0 having ignored them). The built CLI, in temporary folders.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installHook } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let home: string;
let work: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-options-'));
  work = join(home, 'work');
  mkdirSync(work);
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

function cli(args: string[], extra: Record<string, string | undefined> = {}) {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, USERPROFILE: home };
  delete env.CODEX_HOME;
  Object.assign(env, extra);
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: work, env, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('CODEX_HOME must be absolute', () => {
  it.each([
    ['relative', 'relcodex'],
    ['dot-relative', './codex'],
    ['with a newline', '/tmp/x\ny'],
  ])('refuses a %s CODEX_HOME before writing anything', (_name, value) => {
    const result = cli(['install', '--client', 'codex', '--trust-codex-hook'], {
      CODEX_HOME: value,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSTALL_USAGE_INVALID: codexHome (CODEX_HOME)');
    expect(existsSync(join(work, 'relcodex'))).toBe(false);
    expect(existsSync(join(work, 'codex'))).toBe(false);
  });

  it('refuses a relative codexHome in the library too', () => {
    expect(() =>
      installHook({ client: 'codex', home, codexHome: 'relcodex', dryRun: true }),
    ).toThrow(/codexHome \(CODEX_HOME\) "relcodex" is not an absolute path/);
  });

  it('accepts an absolute CODEX_HOME that does not exist yet, and ignores CODEX_HOME for other clients', () => {
    const codexHome = join(home, 'codex-home');
    expect(cli(['install', '--client', 'codex'], { CODEX_HOME: codexHome }).code).toBe(0);
    expect(existsSync(join(codexHome, 'hooks.json'))).toBe(true);
    expect(cli(['install', '--client', 'cursor'], { CODEX_HOME: 'relcodex' }).code).toBe(0);
  });
});

describe('install-only options are refused by the other commands', () => {
  it.each([
    [['status', '--allow', '/does/not/exist'], '--allow'],
    [['status', '--budget', 'not a budget'], '--budget'],
    [['status', '--trust-codex-hook'], '--trust-codex-hook'],
    [['status', '--client', 'codex', '--dry-run'], '--dry-run'],
    [['print-setup', '--client', 'cursor', '--allow', '/does/not/exist'], '--allow'],
    [['print-setup', '--client', 'cursor', '--budget', 'x=1'], '--budget'],
    [['print-setup', '--client', 'cursor', '--dry-run'], '--dry-run'],
    [['print-script', '--trust-codex-hook'], '--trust-codex-hook'],
    [['uninstall', '--client', 'cursor', '--allow', '/tmp'], '--allow'],
  ])('%j exits 2 naming %s', (args, option) => {
    const result = cli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSTALL_USAGE_INVALID');
    expect(result.stderr).toContain(option);
    expect(result.stdout).toBe('');
  });

  it('still accepts them where they apply', () => {
    expect(cli(['install', '--client', 'cursor', '--budget', 'files=1KiB', '--dry-run']).code).toBe(
      0,
    );
    expect(cli(['uninstall', '--client', 'cursor', '--dry-run']).code).toBe(0);
    expect(cli(['status']).code).toBe(0);
    expect(cli(['print-setup', '--client', 'cursor']).code).toBe(0);
  });
});
