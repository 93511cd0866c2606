// Start time (issue 41): `toolfence-mcp serve` answers its client before it loads what it does not
// need yet. Each command loads only its own modules (run-cli.ts), serve imports
// @toolfence/tools/core (not the main entry, its built-in tools and Skills), the CommonJS
// libraries of @toolfence/tools (ajv, yaml, undici) load where they are first used, and the
// gateway loads the upstream client and the bridge with its first upstream, then builds the
// precompiled 2020-12 meta-schema check while that upstream starts (before it answers). ajv's
// compiler loads on the first call of a tool: a listing checks each input schema against the
// precompiled meta-schema and compiles none. `@opentelemetry/api` loads with the first tools/call,
// the HTTP client transport and the network guard of @toolfence/tools (with ipaddr.js) with the
// first client of a `url`, oauth4webapi, the OAuth flows and their HTTP client when a token is
// refreshed or a DPoP proof signed, the console's start with --console. A real `serve` process
// runs under a module probe (test/fixtures/module-probe.mjs) that lists every module it has
// loaded; no timing is asserted. The control rows prove the probe sees each library once it is
// used.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadedModules } from './fixtures/module-log.js';
import { stopProcess } from './fixtures/teardown.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const GATEWAY = new URL('../dist/gateway/mcp-gateway.js', import.meta.url).href;
const SERVE_COMMAND = new URL('../dist/cli/run-gateway.js', import.meta.url).href;
const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url));
const AJV_PROBE = fileURLToPath(new URL('./fixtures/ajv-instance-probe.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
/** A process that reads its stdin and never answers. */
const SILENT = ['-e', 'process.stdin.resume(); setInterval(() => {}, 60_000);'];

/** What `serve` must not have loaded when it answers `initialize` and a first `tools/list`. */
const NOT_LOADED_BY_SERVE: readonly (readonly [string, RegExp])[] = [
  // ajv's compiler loads with the first tools/call (see 'compiling its upstream schemas' below).
  [
    "ajv's compiler (the meta-schema check is precompiled)",
    /\/node_modules\/ajv\/dist\/(core|2020|compile\/)/,
  ],
  ['ajv-formats (format assertion is off)', /\/node_modules\/ajv-formats\//],
  [
    "the SDK 1.x JSON-RPC engine, zod 3 and zod-to-json-schema (the upstream client's peer is its own)",
    /\/@modelcontextprotocol\/sdk\/dist\/(esm|cjs)\/shared\/protocol\.js$|\/node_modules\/zod-to-json-schema\/|\/node_modules\/zod\/v3\//,
  ],
  ['ajv-draft-04 (no schema declared draft-04)', /\/node_modules\/ajv-draft-04\//],
  ['yaml (Skills front matter)', /\/node_modules\/yaml\//],
  ['undici (HTTP upstreams and the network guard)', /\/node_modules\/undici\//],
  ['smol-toml (wrap reads Codex config)', /\/node_modules\/smol-toml\//],
  [
    'the inspect command',
    /\/mcp-bridge\/dist\/cli\/(run-inspect|inspect-report|format-report)\.js$/,
  ],
  ['the pin command', /\/mcp-bridge\/dist\/gateway\/pin-changes\.js$/],
  ['the wrap command', /\/mcp-bridge\/dist\/(cli\/run-wrap|gateway\/client-formats)\.js$/],
  ['the HTTP downstream (--http was not given)', /\/mcp-bridge\/dist\/cli\/gateway-http\.js$/],
  ['the framework adapters of @toolfence/tools', /\/tools\/dist\/adapters\//],
  [
    'the main entry of @toolfence/tools (serve imports @toolfence/tools/core)',
    /\/tools\/dist\/index\.js$/,
  ],
  ['the built-in tools of @toolfence/tools', /\/tools\/dist\/builtin\//],
  ['the Skills of @toolfence/tools', /\/tools\/dist\/skills\//],
  [
    'the MCP connection and adapter of @toolfence/tools',
    /\/tools\/dist\/mcp\/(mcp-server-|mcp-tool-adapter)/,
  ],
  [
    '@opentelemetry/api (the tracer loads with the first tools/call)',
    /\/node_modules\/@opentelemetry\/api\//,
  ],
  [
    'oauth4webapi, the OAuth flows and their HTTP client (no upstream uses OAuth)',
    /\/node_modules\/oauth4webapi\/|\/mcp-bridge\/dist\/oauth\/(dpop|connection-oauth|refresh-token|token-endpoint|authorization-code|discovery|http|guard)\.js$/,
  ],
  [
    'the HTTP client transport (no upstream has a url)',
    /\/mcp-bridge\/dist\/transport\/(streamable-http-transport|sse-parser|retry-after)\.js$/,
  ],
  [
    'the network guard of @toolfence/tools and ipaddr.js (no upstream has a url)',
    /\/tools\/dist\/net\/|\/node_modules\/ipaddr\.js\//,
  ],
  [
    'the elicitation answer (no upstream asked for input)',
    /\/mcp-bridge\/dist\/protocol\/elicitation\.js$/,
  ],
  [
    'the web console start (--console was not given)',
    /\/mcp-bridge\/dist\/cli\/console-start\.js$/,
  ],
  // jsonc-parser explains a config that is not valid JSON (see 'the controls' below).
  ['jsonc-parser (the config is plain JSON)', /\/node_modules\/jsonc-parser\//],
  [
    'the PostgreSQL and Redis stores (gateway.approvals, gateway.pins and gateway.budget name none)',
    /\/mcp-bridge\/dist\/(gateway\/(postgres-spent-approvals|redis-spent-approvals|postgres-pin-store|gateway-budget)|store\/postgres-target)\.js$/,
  ],
  [
    'the token exchange (no upstream has credentials)',
    /\/mcp-bridge\/dist\/(gateway\/identity\/exchanged-tokens|oauth\/token-exchange)\.js$/,
  ],
  ['the AI SDK', /\/node_modules\/ai\//],
  ['the OpenAI Agents SDK', /\/node_modules\/@openai\/agents/],
  ['LangChain', /\/node_modules\/@langchain\//],
];

let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-serve-modules-'));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function waitFor(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Runs `serve` under the probe in front of `servers`, sends `initialize` and a `tools/list`, and
 * returns the modules loaded once the listing has `minTools` tools.
 */
async function serveAndList(
  name: string,
  servers: Record<string, unknown>,
  minTools: number,
  ajvLog?: string,
  moduleLog?: string,
  until?: () => boolean,
  call?: string,
): Promise<string[]> {
  const config = join(folder, `${name}.json`);
  const log = moduleLog ?? join(folder, `${name}-modules.log`);
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: servers,
      gateway: {
        audit: join(folder, `${name}-audit.jsonl`),
        pins: join(folder, `${name}-lock.json`),
        listWaitMs: 200,
      },
    }),
  );
  const probes =
    ajvLog === undefined ? ['--import', PROBE] : ['--import', PROBE, '--import', AJV_PROBE];
  const child = spawn(process.execPath, [...probes, CLI, 'serve', '--config', config], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      TOOLFENCE_MODULE_LOG: log,
      ...(ajvLog === undefined ? {} : { TOOLFENCE_AJV_LOG: ajvLog }),
    },
  });
  const answers = new Map<number, Record<string, unknown>>();
  let buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const message = JSON.parse(line) as { id?: number; result?: Record<string, unknown> };
      if (typeof message.id === 'number' && message.result !== undefined) {
        answers.set(message.id, message.result);
      }
    }
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr += chunk;
  });
  const send = (message: Record<string, unknown>) =>
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  try {
    send({
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'module-probe', version: '1.0.0' },
      },
    });
    await waitFor(() => answers.has(1), `initialize (stderr: ${stderr})`);
    send({ method: 'notifications/initialized' });
    let id = 2;
    for (;;) {
      send({ id, method: 'tools/list', params: {} });
      const asked = id;
      await waitFor(() => answers.has(asked), `tools/list (stderr: ${stderr})`);
      const tools = (answers.get(asked) as { tools: unknown[] }).tools;
      if (tools.length >= minTools) break;
      id += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (call !== undefined) {
      const tools = (answers.get(id) as { tools: { name: string }[] }).tools;
      const name = tools.find((tool) => tool.name.endsWith(call))?.name;
      id += 1;
      const asked = id;
      send({ id, method: 'tools/call', params: { name, arguments: { message: 'hi' } } });
      await waitFor(() => answers.has(asked), `tools/call (stderr: ${stderr})`);
    }
    if (until !== undefined) await waitFor(until, `the probe's line (stderr: ${stderr})`);
    child.kill('SIGUSR2');
    await waitFor(() => existsSync(`${log}.cjs`), 'the module probe');
    return await loadedModules(log);
  } finally {
    await stopProcess(child, 'SIGKILL');
  }
}

describe('toolfence-mcp serve before its upstreams are ready', () => {
  let loaded: string[];
  beforeAll(async () => {
    // The upstream never answers: whatever serve has loaded, it loaded for itself.
    loaded = await serveAndList(
      'silent',
      { silent: { command: process.execPath, args: SILENT, startTimeoutMs: 60_000 } },
      0,
    );
  }, 120_000);

  it('has loaded its own command and the SDK server (the probe works)', () => {
    expect(loaded.some((url) => url.endsWith('/mcp-bridge/dist/cli/run-gateway.js'))).toBe(true);
    expect(loaded.some((url) => url.includes('/node_modules/@modelcontextprotocol/server/'))).toBe(
      true,
    );
  });

  it.each(NOT_LOADED_BY_SERVE)(
    'answers initialize and tools/list without loading %s',
    (_, pattern) => {
      expect(loaded.filter((url) => pattern.test(url))).toEqual([]);
    },
  );
});

describe('toolfence-mcp serve once an upstream is listed (the control)', () => {
  let loaded: string[];
  beforeAll(async () => {
    loaded = await serveAndList(
      'ready',
      { ready: { command: process.execPath, args: [SERVER, 'stdio'] } },
      1,
    );
  }, 120_000);

  it('loads the precompiled meta-schema check when it registers the upstream tools (the probe sees CommonJS reached lazily)', () => {
    expect(loaded.some((url) => /\/node_modules\/ajv\/dist\/runtime\/equal\.js$/.test(url))).toBe(
      true,
    );
    expect(loaded.some((url) => url.endsWith('/mcp-bridge/dist/client/mcp-client.js'))).toBe(true);
  });

  it.each(
    NOT_LOADED_BY_SERVE.filter(([label]) =>
      /@toolfence\/tools|ajv's compiler|@opentelemetry|oauth4webapi|HTTP client|elicitation|web console|jsonc|PostgreSQL|token exchange|JSON-RPC engine/.test(
        label,
      ),
    ),
  )('lists the upstream tools without loading %s', (_, pattern) => {
    expect(loaded.filter((url) => pattern.test(url))).toEqual([]);
  });
});

describe('toolfence-mcp serve answering its first tools/call', () => {
  it('loads @opentelemetry/api for that call (the tracer), and no OAuth module for a stdio upstream', async () => {
    const loaded = await serveAndList(
      'called-tracer',
      { ready: { command: process.execPath, args: [SERVER, 'stdio'] } },
      1,
      undefined,
      undefined,
      undefined,
      'echo',
    );
    expect(loaded.some((url) => /\/node_modules\/@opentelemetry\/api\//.test(url))).toBe(true);
    expect(loaded.filter((url) => /\/node_modules\/oauth4webapi\//.test(url))).toEqual([]);
  }, 120_000);
});

describe('toolfence-mcp serve in front of an HTTP upstream (the control)', () => {
  it('loads the HTTP client transport and the network guard with that upstream, connects and lists its tools', async () => {
    const server = spawn(process.execPath, [SERVER, 'http'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        server.stdout.setEncoding('utf8');
        server.stdout.on('data', (chunk: string) => {
          out += chunk;
          const line = out.split('\n')[0];
          if (out.includes('\n') && line !== undefined)
            resolve((JSON.parse(line) as { url: string }).url);
        });
        server.once('exit', () => reject(new Error('the HTTP server exited')));
      });
      const loaded = await serveAndList('http-upstream', { remote: { url } }, 1);
      expect(
        loaded.some((url) =>
          url.endsWith('/mcp-bridge/dist/transport/streamable-http-transport.js'),
        ),
      ).toBe(true);
      expect(loaded.some((url) => url.endsWith('/tools/dist/net/index.js'))).toBe(true);
    } finally {
      await stopProcess(server, 'SIGKILL');
    }
  }, 120_000);
});

describe('toolfence-mcp serve compiling its upstream schemas', () => {
  it('lists with the precompiled meta-schema check and no Ajv instance; the first call makes one for the bridge and the registry', async () => {
    const listed = join(folder, 'ajv-listed.log');
    await serveAndList(
      'listed-ajv',
      { ready: { command: process.execPath, args: [SERVER, 'stdio'] } },
      1,
      listed,
    );
    expect((await readFile(listed, 'utf8')).split('\n').filter(Boolean)).toEqual(['meta-check']);
    const called = join(folder, 'ajv-called.log');
    await serveAndList(
      'called-ajv',
      { ready: { command: process.execPath, args: [SERVER, 'stdio'] } },
      1,
      called,
      undefined,
      undefined,
      'echo',
    );
    expect((await readFile(called, 'utf8')).split('\n').filter(Boolean)).toEqual([
      'meta-check',
      'Ajv2020',
    ]);
  }, 120_000);
});

describe('toolfence-mcp serve while its upstream starts', () => {
  // The meta-schema check is built while the upstream starts, not after it answered: the module
  // log and the ajv probe's log are one file, so its line falls between the module lines.
  it('builds the precompiled meta-schema check after spawning the upstream and loading the upstream client, before the upstream answers, without an Ajv instance', async () => {
    const log = join(folder, 'warm-modules.log');
    await serveAndList(
      'warm',
      { silent: { command: process.execPath, args: SILENT, startTimeoutMs: 60_000 } },
      0,
      log,
      log,
      () => existsSync(log) && readFileSync(log, 'utf8').includes('\nmeta-check\n'),
    );
    const lines = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    const check = lines.indexOf('meta-check');
    const spawned = lines.findIndex((line) => line.startsWith('spawn:'));
    const client = lines.findIndex((line) =>
      line.endsWith('/mcp-bridge/dist/client/mcp-client.js'),
    );
    expect({ spawned: spawned >= 0, client: client >= 0, check: check >= 0 }).toEqual({
      spawned: true,
      client: true,
      check: true,
    });
    expect(check).toBeGreaterThan(spawned);
    expect(check).toBeGreaterThan(client);
    expect(lines.filter((line) => line === 'Ajv2020')).toEqual([]);
  }, 120_000);
});

describe('toolfence-mcp serve with a config that is not JSON, or a PostgreSQL approval store (the controls)', () => {
  /** Runs serve under the probe until it exits; its modules, exit code and stderr. */
  async function serveUntilExit(
    name: string,
    text: string,
  ): Promise<{ loaded: string[]; code: unknown; stderr: string }> {
    const config = join(folder, `${name}.json`);
    const log = join(folder, `${name}-modules.log`);
    await writeFile(config, text);
    const child = spawn(process.execPath, ['--import', PROBE, CLI, 'serve', '--config', config], {
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { ...process.env, TOOLFENCE_MODULE_LOG: log },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    return { loaded: await loadedModules(log), code, stderr };
  }

  it('loads jsonc-parser to say where a config is not valid JSON', async () => {
    const { loaded, code, stderr } = await serveUntilExit('not-json', '{ "mcpServers": {}, }');
    expect(code).toBe(1);
    expect(stderr).toMatch(/is not valid JSON \(line 1, column 21: property name expected\)/);
    expect(loaded.some((url) => /\/node_modules\/jsonc-parser\//.test(url))).toBe(true);
  }, 60_000);

  it('loads the PostgreSQL approval store when gateway.approvals names one', async () => {
    // Port 1 on loopback: nothing listens, so the store fails to open (after it loaded).
    const { loaded, code } = await serveUntilExit(
      'postgres-approvals',
      JSON.stringify({
        mcpServers: {},
        gateway: {
          audit: join(folder, 'postgres-approvals-audit.jsonl'),
          pins: join(folder, 'postgres-approvals-lock.json'),
          approvals: 'postgres://toolfence@127.0.0.1:1/toolfence',
        },
      }),
    );
    expect(code).not.toBe(0);
    expect(
      loaded.some((url) => /\/mcp-bridge\/dist\/gateway\/postgres-spent-approvals\.js$/.test(url)),
    ).toBe(true);
  }, 60_000);
});

describe('the gateway and serve modules', () => {
  it('load without the upstream client, the bridge or the SDK 1.x protocol (they load with the first upstream)', async () => {
    const log = join(folder, 'gateway-module.log');
    const child = spawn(
      process.execPath,
      [
        '--import',
        PROBE,
        '--input-type=module',
        '-e',
        `await import(${JSON.stringify(GATEWAY)}); await import(${JSON.stringify(SERVE_COMMAND)});`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TOOLFENCE_MODULE_LOG: log } },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const loaded = await loadedModules(log);
    expect(loaded.some((url) => url === GATEWAY)).toBe(true);
    expect(loaded.some((url) => url === SERVE_COMMAND)).toBe(true);
    expect(
      loaded.filter((url) =>
        /\/mcp-bridge\/dist\/(client\/mcp-client|bridge\/bridge-tools|gateway\/traced-client)\.js$|\/node_modules\/@modelcontextprotocol\/sdk\/|\/node_modules\/oauth4webapi\//.test(
          url,
        ),
      ),
    ).toEqual([]);
  }, 60_000);
});
