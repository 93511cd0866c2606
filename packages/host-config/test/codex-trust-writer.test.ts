// The Codex trust writer edits config.toml by character offsets: it replaces an existing
// trusted_hash in whatever form it is written (a table, or dotted keys), never adds a second
// definition of the same table, and keeps every other byte, line endings included. Each result
// is checked with a real TOML parser (smol-toml, the workspace's, as mcp-bridge uses it) and, in
// codex-trust-real.test.ts, by the real Codex CLI.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  codexHookTrustHash,
  editCodexTrustEntry,
  readCodexConfig,
} from '../src/cli/codex-config.js';
import { getHookSetup, getHookStatus } from '../src/index.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const toml = createRequire(new URL('../../mcp-bridge/package.json', import.meta.url))(
  'smol-toml',
) as { parse(text: string): Record<string, unknown> };

let home: string;
let codexHome: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-codex-writer-'));
  codexHome = join(home, '.codex');
  mkdirSync(codexHome);
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

const OLD = `sha256:${'0'.repeat(64)}`;
const keyOf = () => `${join(codexHome, 'hooks.json')}:pre_tool_use:0:0`;
const tomlPath = () => join(codexHome, 'config.toml');

function trustIn(text: string, key: string): unknown {
  const parsed = toml.parse(text) as {
    hooks?: { state?: Record<string, { trusted_hash?: unknown }> };
  };
  return parsed.hooks?.state?.[key]?.trusted_hash;
}

describe('install --trust-codex-hook with an existing trust entry', () => {
  it.each([
    [
      'dotted under [hooks.state]',
      (key: string) => `[hooks.state]\n${JSON.stringify(key)}.trusted_hash = "${OLD}"\n`,
    ],
    [
      'dotted under [hooks]',
      (key: string) => `[hooks]\nstate.${JSON.stringify(key)}.trusted_hash = "${OLD}"\n`,
    ],
    [
      'dotted at the top',
      (key: string) => `hooks.state.${JSON.stringify(key)}.trusted_hash = "${OLD}"\n`,
    ],
    [
      'a table of its own',
      (key: string) => `[hooks.state.${JSON.stringify(key)}]\ntrusted_hash = "${OLD}" # mine\n`,
    ],
  ])(
    'replaces the hash in place when it is written %s; the file stays valid TOML',
    (_form, make) => {
      const before = `model = "gpt-5"\n\n${make(keyOf())}\n[other]\nx = 1\n`;
      writeFileSync(tomlPath(), before);
      const result = cli('install', '--client', 'codex', '--trust-codex-hook');
      expect(result.code).toBe(0);
      const after = readFileSync(tomlPath(), 'utf8');
      const status = getHookStatus({ client: 'codex', home, codexHome });
      expect(status.codex?.trusted).toBe(true);
      // Only the hash changed, in place.
      expect(after).toBe(before.replace(OLD, status.codex?.expectedHash as string));
      expect(trustIn(after, keyOf())).toBe(status.codex?.expectedHash);
    },
  );

  it('migrating a trusted .mjs registration whose trust is dotted keeps valid TOML', () => {
    const setup = getHookSetup('codex', 'user', { home, codexHome, node: process.execPath });
    const legacyCommand = setup.command.replace('.cjs', '.mjs');
    mkdirSync(join(codexHome, 'hooks'));
    writeFileSync(
      join(codexHome, 'hooks', 'toolfence_attachment_substitution.mjs'),
      '// old protocol=1\n',
    );
    const entry = {
      matcher: 'mcp__.*',
      hooks: [{ type: 'command', command: legacyCommand, timeout: 120 }],
    };
    writeFileSync(
      setup.configPath,
      `${JSON.stringify({ hooks: { PreToolUse: [entry] } }, null, 2)}\n`,
    );
    const legacyHash = codexHookTrustHash('pre_tool_use', 'mcp__.*', {
      command: legacyCommand,
      timeout: 120,
    });
    writeFileSync(
      tomlPath(),
      `model = "gpt-5"\n\n[hooks.state]\n${JSON.stringify(keyOf())}.trusted_hash = "${legacyHash}"\n`,
    );
    expect(cli('install', '--client', 'codex').code).toBe(0);
    const after = readFileSync(tomlPath(), 'utf8');
    const status = getHookStatus({ client: 'codex', home, codexHome });
    expect(status).toMatchObject({ working: true, outdated: false });
    expect(trustIn(after, keyOf())).toBe(status.codex?.expectedHash);
    expect(after.match(/trusted_hash/g)).toHaveLength(1);
  });

  it('keeps every other line ending as it was in a file mixing LF and CRLF', () => {
    const key = keyOf();
    const before = `model = "x"\n# comment\r\n[hooks.state.${JSON.stringify(key)}]\r\ntrusted_hash = "${OLD}"\nlast = 1\r\n`;
    writeFileSync(tomlPath(), before);
    expect(cli('install', '--client', 'codex', '--trust-codex-hook').code).toBe(0);
    const hash = getHookStatus({ client: 'codex', home, codexHome }).codex?.expectedHash as string;
    expect(readFileSync(tomlPath(), 'utf8')).toBe(before.replace(OLD, hash));
  });

  it("adds the line under an existing header with that line's own ending", () => {
    const key = keyOf();
    const before = `a = 1\n[hooks.state.${JSON.stringify(key)}]\r\nenabled = true\n`;
    const edited = editCodexTrustEntry(before, key, 'sha256:ab');
    expect(edited).toEqual({
      text: `a = 1\n[hooks.state.${JSON.stringify(key)}]\r\ntrusted_hash = "sha256:ab"\r\nenabled = true\n`,
    });
  });

  it('appends a new table with the line ending the file uses', () => {
    const edited = editCodexTrustEntry('a = 1\r\n', '/k', 'sha256:ab');
    expect(edited).toEqual({
      text: 'a = 1\r\n\r\n[hooks.state."/k"]\r\ntrusted_hash = "sha256:ab"\r\n',
    });
    expect(trustIn((edited as { text: string }).text, '/k')).toBe('sha256:ab');
  });

  it.each([
    ['inline', '[hooks.state]\n"/k" = { trusted_hash = "x" }\n'],
    [
      'defined-twice',
      '[hooks.state]\n"/k".trusted_hash = "x"\n[hooks.state."/k"]\nenabled = true\n',
    ],
    ['dotted-without-hash', '[hooks.state]\n"/k".enabled = true\n'],
    ['inline-hooks-table', 'hooks = { state = {} }\n'],
  ])('refuses (%s) instead of writing invalid TOML', (reason, text) => {
    expect(editCodexTrustEntry(text, '/k', 'sha256:ab')).toEqual({ refused: reason });
  });

  it('says why and writes nothing when it refuses', () => {
    const before = `[hooks.state]\n${JSON.stringify(keyOf())}.enabled = true\n`;
    writeFileSync(tomlPath(), before);
    const result = cli('install', '--client', 'codex', '--trust-codex-hook');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain('dotted keys but no trusted_hash');
    expect(readFileSync(tomlPath(), 'utf8')).toBe(before);
  });

  it('records where each trusted_hash value is, in every form', () => {
    const text = '[hooks.state]\n"/a".trusted_hash = "sha256:aa" # c\n';
    const [span] = readCodexConfig(text).trustedHashSpans.get('/a') ?? [];
    expect(text.slice(span?.start, span?.end)).toBe('"sha256:aa"');
  });
});
