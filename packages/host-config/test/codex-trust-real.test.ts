import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codexHookTrustHash } from '../src/cli/codex-config.js';
import { getHookSetup, getHookStatus, installHook } from '../src/index.js';
import { killGroupAndWait } from './support/kill-and-wait.js';

// The installer's Codex trust check against the real Codex CLI (the pinned dev dependency
// @openai/codex): `codex app-server` answers `hooks/list` with each hook's key, currentHash and
// trustStatus. It runs in its own network namespace with only loopback (unshare -n), so it can
// reach nothing; where that is not possible the tests are skipped with the reason printed.

function findCodex(): { path: string } | { reason: string } {
  if (process.platform !== 'linux')
    return { reason: `network namespaces need Linux (${process.platform})` };
  if (spawnSync('unshare', ['-n', 'true']).status !== 0) {
    return { reason: 'unshare -n is not permitted here (needs root or user namespaces)' };
  }
  try {
    const manifest = createRequire(import.meta.url).resolve('@openai/codex/package.json');
    const path = join(dirname(manifest), 'bin', 'codex.js');
    const version = spawnSync(process.execPath, [path, '--version'], { encoding: 'utf8' });
    if (version.status !== 0)
      return { reason: `codex --version failed: ${version.stderr.slice(0, 200)}` };
    return { path };
  } catch {
    return { reason: 'the @openai/codex dev dependency is not installed' };
  }
}

const codex = findCodex();
if ('reason' in codex) process.stderr.write(`codex-trust-real.test.ts skipped: ${codex.reason}\n`);

interface ListedHook {
  readonly key: string;
  readonly command: string;
  readonly currentHash: string;
  readonly trustStatus: string;
}

/** Starts `codex app-server` without network and asks it for the hooks it sees. */
async function listHooks(codexHome: string, home: string): Promise<ListedHook[]> {
  const codexPath = 'path' in codex ? codex.path : '';
  const child: ChildProcess = spawn('unshare', ['-n', process.execPath, codexPath, 'app-server'], {
    env: { ...process.env, CODEX_HOME: codexHome, HOME: home },
    stdio: ['pipe', 'pipe', 'ignore'],
    // Its own process group: nothing Codex signals on exit can reach the test runner.
    detached: true,
  });
  try {
    return await new Promise<ListedHook[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('codex app-server did not answer')), 30_000);
      let buffer = '';
      child.once('error', reject);
      child.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
          const message = JSON.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 1);
          if (message.id === 1) {
            child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'initialized' })}\n`);
            child.stdin?.write(
              `${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'hooks/list', params: { cwds: [home] } })}\n`,
            );
          } else if (message.id === 2) {
            clearTimeout(timer);
            resolve(message.result.data.flatMap((entry: { hooks: ListedHook[] }) => entry.hooks));
          }
        }
      });
      child.stdin?.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'toolfence-test', version: '1.0.0' } } })}\n`,
      );
    });
  } finally {
    // Codex and the binary it starts are gone before afterEach removes the home they write in.
    await killGroupAndWait(child);
  }
}

let home: string;
let codexHome: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-codex-home-'));
  codexHome = join(home, '.codex');
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

describe.skipIf('reason' in codex)('Codex trust, checked by the real Codex CLI', () => {
  it('sees the installed hook as untrusted, and status agrees', async () => {
    installHook({ client: 'codex', home, codexHome });
    const [hook] = await listHooks(codexHome, home);
    expect(hook?.trustStatus).toBe('untrusted');
    const status = getHookStatus({ client: 'codex', home, codexHome });
    expect(status.codex?.trusted).toBe(false);
    expect(status.working).toBe(false);
    // The key and hash status computes are the ones Codex computes.
    expect(hook?.key).toBe(status.codex?.key);
    expect(hook?.currentHash).toBe(status.codex?.expectedHash);
  }, 60_000);

  it('trusts the hook after install with trustCodexHook, and status agrees', async () => {
    installHook({ client: 'codex', home, codexHome, trustCodexHook: true });
    const [hook] = await listHooks(codexHome, home);
    expect(hook?.trustStatus).toBe('trusted');
    expect(getHookStatus({ client: 'codex', home, codexHome }).working).toBe(true);
  }, 60_000);

  it('replaces a trust entry written with dotted keys in place: Codex starts and trusts the hook', async () => {
    const key = `${join(codexHome, 'hooks.json')}:pre_tool_use:0:0`;
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      `model = "gpt-5"\n\n[hooks.state]\n${JSON.stringify(key)}.trusted_hash = "sha256:${'0'.repeat(64)}"\n`,
    );
    installHook({ client: 'codex', home, codexHome, trustCodexHook: true });
    const [hook] = await listHooks(codexHome, home);
    expect(hook).toMatchObject({ key, trustStatus: 'trusted' });
  }, 60_000);

  it.each(['hooks', 'codex_hooks'])(
    'runs no hook with [features] %s = false, and status says so',
    async (flag) => {
      installHook({ client: 'codex', home, codexHome, trustCodexHook: true });
      const toml = join(codexHome, 'config.toml');
      writeFileSync(toml, `${readFileSync(toml, 'utf8')}\n[features]\n${flag} = false\n`);
      expect(await listHooks(codexHome, home)).toEqual([]);
      const status = getHookStatus({ client: 'codex', home, codexHome });
      expect(status.codex?.hooksEnabled).toBe(false);
      expect(status.working).toBe(false);
    },
    60_000,
  );

  it('lists the hook with no [features] entry at all (hooks are on by default in 0.171.0)', async () => {
    installHook({ client: 'codex', home, codexHome });
    expect(await listHooks(codexHome, home)).toHaveLength(1);
  }, 60_000);

  it('keeps a trusted .mjs installation trusted when install migrates it to .cjs', async () => {
    // The earlier installer's registration (the same entry, naming the .mjs file), trusted with
    // the hash Codex itself accepts for it.
    const setup = getHookSetup('codex', 'user', { home, codexHome });
    const legacy = JSON.parse(
      JSON.stringify(setup.entry)
        .split('toolfence_attachment_substitution.cjs')
        .join('toolfence_attachment_substitution.mjs'),
    );
    mkdirSync(dirname(setup.scriptPath), { recursive: true });
    writeFileSync(
      join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.mjs'),
      '// toolfence attachment substitution hook. protocol=1\n',
    );
    writeFileSync(setup.configPath, `${JSON.stringify({ hooks: { PreToolUse: [legacy] } })}\n`);
    const key = `${setup.configPath}:pre_tool_use:0:0`;
    const legacyHash = codexHookTrustHash('pre_tool_use', 'mcp__.*', {
      command: legacy.hooks[0].command,
      timeout: 120,
    });
    writeFileSync(
      join(codexHome, 'config.toml'),
      `[hooks.state.${JSON.stringify(key)}]\ntrusted_hash = "${legacyHash}"\n`,
    );
    const [before] = await listHooks(codexHome, home);
    expect(before).toMatchObject({ key, currentHash: legacyHash, trustStatus: 'trusted' });
    expect(before?.command).toContain('toolfence_attachment_substitution.mjs');
    installHook({ client: 'codex', home, codexHome });
    const [after] = await listHooks(codexHome, home);
    // The earlier installer registered `node <script>`; this one the Node that runs it.
    expect(after?.command).toBe(
      getHookSetup('codex', 'user', { home, codexHome, node: process.execPath }).command,
    );
    expect(after).toMatchObject({ key, trustStatus: 'trusted' });
    expect(after?.currentHash).not.toBe(legacyHash);
    expect(getHookStatus({ client: 'codex', home, codexHome })).toMatchObject({
      outdated: false,
      working: true,
    });
  }, 60_000);
});
