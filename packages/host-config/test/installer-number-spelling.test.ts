// JSON.parse and JSON.stringify change numbers: `12345678901234567891` loses digits, `1e400`
// becomes null, `1.50` becomes 1.5. Install rewrites the user's config, so it must keep every
// number as the file spelt it, and refuse when it cannot. Real files and the built CLI.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let home: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-numbers-'));
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

function cli(...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, USERPROFILE: home };
  delete env.CODEX_HOME;
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: home, env, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return text;
}

const cursorConfig = () =>
  getHookSetup('cursor', 'user', { home, node: process.execPath }).configPath;

describe('install keeps the numbers of a config as they were written', () => {
  it('keeps big integers, trailing zeros, exponents and out-of-range values byte for byte', () => {
    const path = cursorConfig();
    write(
      path,
      [
        '{',
        '  "version": 1,',
        '  "telemetryId": 12345678901234567891,',
        '  "ratio": 1.50,',
        '  "big": 1e400,',
        '  "small": -0,',
        '  "exp": 2E+3,',
        '  "list": [7.0, 0.1, 2.50e1],',
        '  "timeoutLike": 120.0,',
        '  "hooks": { "stop": [ { "command": "echo done" } ] }',
        '}',
        '',
      ].join('\n'),
    );
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    const after = readFileSync(path, 'utf8');
    for (const literal of [
      '"telemetryId": 12345678901234567891,',
      '"ratio": 1.50,',
      '"big": 1e400,',
      '"small": -0,',
      '"exp": 2E+3,',
      '7.0,',
      '0.1,',
      '2.50e1',
    ]) {
      expect(after).toContain(literal);
    }
    expect(after).toContain('toolfence_attachment_substitution.cjs');
    // The timeout install adds is 120 as JSON spells it; the user's 120.0 is the same value,
    // written the same way (both spellings cannot be told apart once parsed).
    expect(after).toContain('"timeout": 120\n');
    expect(after).toContain('"timeoutLike": 120,');
    // A second install sees the registration and changes nothing.
    expect(cli('install', '--client', 'cursor').stdout).toContain('nothing to install');
    expect(readFileSync(path, 'utf8')).toBe(after);
    // And uninstall keeps them too.
    expect(cli('uninstall', '--client', 'cursor').code).toBe(0);
    const uninstalled = readFileSync(path, 'utf8');
    expect(uninstalled).toContain('"telemetryId": 12345678901234567891,');
    expect(uninstalled).toContain('"big": 1e400,');
  });

  it('keeps the numbers of the hook config when --budget rewrites it', () => {
    const setup = getHookSetup('claude-code', 'user', { home, node: process.execPath });
    const hookConfig = join(
      dirname(setup.scriptPath),
      'toolfence_attachment_substitution.config.json',
    );
    write(hookConfig, '{ "maxBytes": 1.0e6 }\n');
    expect(cli('install', '--client', 'claude-code', '--budget', 'files=7MiB').code).toBe(0);
    expect(readFileSync(hookConfig, 'utf8')).toContain('"maxBytes": 1.0e6');
  });

  it('writes one value in two spellings as JSON does, since both are the same number', () => {
    const path = cursorConfig();
    write(path, '{ "a": 1.50, "b": 1.5 }\n');
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    const after = JSON.parse(readFileSync(path, 'utf8'));
    expect([after.a, after.b]).toEqual([1.5, 1.5]);
  });

  it('refuses when two different numbers read as the same double, naming both; nothing is written', () => {
    const path = cursorConfig();
    const text = write(path, '{\n  "a": 12345678901234567891,\n  "b": 12345678901234567890\n}\n');
    const result = cli('install', '--client', 'cursor');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain('12345678901234567891 (line 2)');
    expect(result.stderr).toContain('12345678901234567890 (line 3)');
    expect(readFileSync(path, 'utf8')).toBe(text);
  });

  it('does not take numbers inside strings for numbers', () => {
    const path = cursorConfig();
    write(path, '{ "note": "1.50 and 1e400", "n": 7 }\n');
    expect(cli('install', '--client', 'cursor').code).toBe(0);
    const after = JSON.parse(readFileSync(path, 'utf8'));
    expect(after.note).toBe('1.50 and 1e400');
    expect(after.n).toBe(7);
  });
});
