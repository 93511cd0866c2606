// Import cost (issue 41): importing @toolfence/mcp-bridge for its client and bridge loads neither
// the SDK v2 server (the gateway loads it in start(), connect() or reload()), nor jose (a gateway's
// token verifier), nor smol-toml (the first Codex config read), nor the main entry of
// @toolfence/tools with its built-in tools (Skills come from @toolfence/tools/skills). A real
// process imports the built package under the module probe (test/fixtures/module-probe.mjs);
// the control process then uses each of them and the probe must see it, so a probe that saw
// nothing cannot pass the first test. No timing is asserted (the figure is in `pnpm bench`).
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadedModules } from './fixtures/module-log.js';

const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url));
const IMPORTER = fileURLToPath(new URL('./fixtures/package-import-probe.mjs', import.meta.url));

/** The SDK v2 server and its core (`start()`, `connect()` or `reload()` loads them). */
const SDK_SERVER = /\/node_modules\/@modelcontextprotocol\/(server|core)\//;
/** What importing the package must not load, and what loads each when it is used. */
const LAZY: readonly (readonly [string, RegExp])[] = [
  ['the SDK v2 server and its core', SDK_SERVER],
  ['jose (access token verification)', /\/node_modules\/jose\//],
  ['smol-toml (Codex config files)', /\/node_modules\/smol-toml\//],
];

/** What importing the package must not load at all (the controls do not load it either). */
const NEVER: readonly (readonly [string, RegExp])[] = [
  ['the main entry of @toolfence/tools', /\/tools\/dist\/index\.js$/],
  ['the built-in tools of @toolfence/tools', /\/tools\/dist\/builtin\//],
  ['the framework adapters of @toolfence/tools', /\/tools\/dist\/adapters\//],
];

/** What `downstreamServer` says before start(), connect() or reload() loaded the SDK: typed. */
const NOT_STARTED = {
  code: 'GATEWAY_CONFIG',
  reason: 'not-started',
  message:
    'McpGateway.downstreamServer needs the gateway started: await start() (or connect()) first',
};

let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-import-modules-'));
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** Runs the importer under the probe; returns what it printed and every module it loaded. */
async function probe(
  mode: 'import' | 'use' | 'connect' | 'reload',
): Promise<{ seen: unknown; modules: string[] }> {
  const log = join(folder, `${mode}-modules.log`);
  const child = spawn(process.execPath, ['--import', PROBE, IMPORTER, mode, folder], {
    env: { ...process.env, TOOLFENCE_MODULE_LOG: log },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(err).toBe('');
  expect(code).toBe(0);
  return { seen: JSON.parse(out.trim()), modules: await loadedModules(log) };
}

describe('importing @toolfence/mcp-bridge', () => {
  it('loads none of the libraries only a gateway, a token check or a Codex file needs', async () => {
    const { seen, modules } = await probe('import');
    expect(seen).toEqual({ mode: 'import' });
    // The package itself and its client did load (the probe sees the process's modules).
    expect(modules.some((url) => url.endsWith('/mcp-bridge/dist/client/mcp-client.js'))).toBe(true);
    expect(modules.some((url) => url.endsWith('/tools/dist/core.js'))).toBe(true);
    for (const [what, pattern] of [...LAZY, ...NEVER]) {
      expect(
        modules.filter((url) => pattern.test(url)),
        what,
      ).toEqual([]);
    }
  });

  it('loads each of them once used: a gateway start, a Codex file, a token verifier (control)', async () => {
    const { seen, modules } = await probe('use');
    expect(seen).toEqual({
      mode: 'use',
      // The SDK server is loaded by start(): a downstream server before it is refused, typed.
      beforeStart: NOT_STARTED,
      afterStart: 'function',
      codexServers: ['files'],
      token: 'GATEWAY_TOKEN_REFUSED',
    });
    for (const [what, pattern] of LAZY) {
      expect(
        modules.some((url) => pattern.test(url)),
        what,
      ).toBe(true);
    }
    for (const [what, pattern] of NEVER) {
      expect(
        modules.filter((url) => pattern.test(url)),
        what,
      ).toEqual([]);
    }
  });

  it.each(['connect', 'reload'] as const)(
    'loads the SDK v2 server with %s() alone, as with start()',
    async (mode) => {
      const { seen, modules } = await probe(mode);
      expect(seen).toEqual({
        mode,
        beforeStart: NOT_STARTED,
        afterStart: 'function',
      });
      expect(modules.some((url) => SDK_SERVER.test(url))).toBe(true);
    },
  );
});
