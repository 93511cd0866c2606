// A rewrite keeps every value: a client config that a rewrite would change without saying so
// (a key given twice, where JSON readers keep only the last; bytes that are not UTF-8, which
// would become U+FFFD) stops the install with INSTALL_CONFIG_MALFORMED and nothing is written.
// The built CLI on files in a temporary folder.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookSetup } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let home: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-lossless-'));
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

const settings = () => getHookSetup('claude-code', 'user', { home }).configPath;

function put(bytes: Buffer): Buffer {
  mkdirSync(dirname(settings()), { recursive: true });
  writeFileSync(settings(), bytes);
  return bytes;
}

describe('install refuses a rewrite that would lose data', () => {
  it.each([
    [
      'at the top level',
      '{\n  "env": {"A": "1"},\n  "model": "opus",\n  "env": {"B": "2"}\n}\n',
      'env',
      4,
    ],
    ['in a nested object', '{\n  "env": {\n    "A": "1",\n    "A": "2"\n  }\n}\n', 'A', 4],
    ['spelt with an escape', '{\n  "env": 1,\n  "\\u0065nv": 2\n}\n', 'env', 3],
  ])('a key given twice %s', (_name, text, key, line) => {
    const before = put(Buffer.from(text));
    const result = cli('install', '--client', 'claude-code');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain(`the key "${key}" twice`);
    expect(result.stderr).toContain(`line ${line}`);
    expect(readFileSync(settings()).equals(before)).toBe(true);
    expect(existsSync(getHookSetup('claude-code', 'user', { home }).scriptPath)).toBe(false);
  });

  it('bytes that are not UTF-8 (Latin-1)', () => {
    const before = put(
      Buffer.concat([Buffer.from('{\n  "name": "caf'), Buffer.from([0xe9]), Buffer.from('"\n}\n')]),
    );
    const result = cli('install', '--client', 'claude-code');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain('not valid UTF-8');
    expect(result.stderr).toContain('line 2, byte offset 16');
    expect(readFileSync(settings()).equals(before)).toBe(true);
  });

  it("Codex's config.toml with bytes that are not UTF-8 is not edited by --trust-codex-hook", () => {
    const toml = join(home, '.codex', 'config.toml');
    mkdirSync(dirname(toml), { recursive: true });
    const before = Buffer.concat([
      Buffer.from('# caf'),
      Buffer.from([0xe9]),
      Buffer.from('\nmodel = "o3"\n'),
    ]);
    writeFileSync(toml, before);
    const result = cli('install', '--client', 'codex', '--trust-codex-hook');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain('not valid UTF-8');
    expect(readFileSync(toml).equals(before)).toBe(true);
  });

  it('the same keys in different objects, and valid UTF-8, are rewritten as before', () => {
    put(Buffer.from('{\n  "a": {"name": "café"},\n  "b": {"name": "日本"}\n}\n'));
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    const config = JSON.parse(readFileSync(settings(), 'utf8'));
    expect(config.a.name).toBe('café');
    expect(config.b.name).toBe('日本');
  });

  it('a file that needs no change is left alone, duplicates and all', () => {
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    const text = readFileSync(settings(), 'utf8').replace('{\n', '{\n  "x": 1,\n  "x": 1,\n');
    put(Buffer.from(text));
    expect(cli('install', '--client', 'claude-code').code).toBe(0);
    expect(readFileSync(settings(), 'utf8')).toBe(text);
  });
});
