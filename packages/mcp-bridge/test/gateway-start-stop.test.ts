// `toolfence-mcp serve` (the built CLI, a real process) when its start fails after an upstream was
// spawned: it must end that upstream and exit non-zero, and signals must work. Also `${VAR}` in
// gateway.store / pins / audit / budget.url, expanded as the servers' fields are.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { CHILD_ENV } from './helpers.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
/** Bound on every wait for an exit (the bug kept the gateway alive forever). */
const EXIT_BOUND_MS = 15_000;
/** `${NAME}`, the config's variable syntax. */
const ref = (name: string): string => `\${${name}}`;

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-start-stop-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits (bounded) until `pid` is gone; true when it is. */
async function gone(pid: number): Promise<boolean> {
  const until = Date.now() + EXIT_BOUND_MS;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !alive(pid);
}

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  /** The pid of the stdio upstream the gateway spawned (it writes its pid first). */
  readonly upstream: number | undefined;
}

/**
 * Runs `serve` on a config whose first server is the toolkit (through `sh -c 'echo $$ > pid;
 * exec node …'`, so its pid is known); `signal` is sent once the upstream runs. A run that does
 * not end in time is killed (SIGKILL) and reported with code null.
 */
async function serve(
  more: { servers?: Record<string, unknown>; gateway?: Record<string, unknown> },
  env: Record<string, string> = {},
  signal?: { readonly name: NodeJS.Signals; readonly when: 'spawned' | 'serving' },
): Promise<Run> {
  const pidFile = join(folder, 'upstream.pid');
  await writeFile(
    join(folder, 'toolfence.json'),
    JSON.stringify({
      mcpServers: {
        kit: {
          command: '/bin/sh',
          args: ['-c', `echo $$ > '${pidFile}'; exec '${process.execPath}' '${TOOLKIT}'`],
        },
        ...more.servers,
      },
      gateway: more.gateway ?? {},
    }),
  );
  const child = spawn(process.execPath, [CLI, 'serve', '--config', 'toolfence.json'], {
    cwd: folder,
    env: { ...CHILD_ENV, ...env },
    // stdin stays an open pipe, as under an MCP client.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.stdout.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signalName) => resolve({ code, signal: signalName })),
  );
  const readPid = async (): Promise<number | undefined> => {
    const text = await readFile(pidFile, 'utf8').catch(() => '');
    return /^\d+/.test(text) ? Number.parseInt(text, 10) : undefined;
  };
  if (signal !== undefined) {
    const until = Date.now() + EXIT_BOUND_MS;
    const due = async (): Promise<boolean> =>
      signal.when === 'spawned' ? (await readPid()) !== undefined : stderr.includes('kit: ready');
    while (!(await due()) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill(signal.name);
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_BOUND_MS);
  const outcome = await exited;
  clearTimeout(timer);
  const upstream = await readPid();
  const run = { ...outcome, stderr, upstream };
  if (outcome.signal === 'SIGKILL') return { ...run, code: null };
  return run;
}

describe('serve: a start that fails after an upstream was spawned', () => {
  it.each([
    [
      'a header value from a variable holding a newline',
      { servers: { web: { url: 'http://127.0.0.1:1/mcp', headers: { 'X-A': ref('BAD') } } } },
      { BAD: 'a\nb' },
      'header x-a',
    ],
    [
      'a pin lock file that cannot be written (its folder does not exist)',
      { gateway: { pins: 'missing-folder/toolfence.lock.json' } },
      {},
      'Cannot write the pin lock file',
    ],
  ])(
    '%s: prints the error, ends the upstream and exits 1',
    async (_name, more, env, message) => {
      const run = await serve(more, env);
      expect(run.stderr).toContain(message);
      expect(run.code).toBe(1);
      expect(run.upstream).toBeDefined();
      expect(await gone(run.upstream as number)).toBe(true);
    },
    40_000,
  );

  it.each([
    ['SIGTERM while serving', 'SIGTERM', 'serving', 0, ''],
    ['SIGINT while serving', 'SIGINT', 'serving', 0, ''],
    // The client is served before the upstreams start: a signal then is an ordinary stop.
    ['SIGTERM during the start', 'SIGTERM', 'spawned', 0, ''],
    ['SIGINT during the start', 'SIGINT', 'spawned', 0, ''],
  ] as const)(
    '%s: the gateway stops, its upstream is ended',
    async (_label, name, when, code, message) => {
      const run = await serve({}, {}, { name, when });
      expect(run.code).toBe(code);
      expect(run.stderr).toContain(message);
      expect(run.upstream).toBeDefined();
      expect(await gone(run.upstream as number)).toBe(true);
    },
    40_000,
  );
});

describe('gateway locations expand variables as the servers fields do', () => {
  const env = { PGPASSWORD: 's3cret', STATE: '/var/lib/toolfence', REDIS_HOST: '127.0.0.1' };
  const key = 'ab'.repeat(32);

  it('expands gateway.store, gateway.pins, gateway.audit and gateway.budget.url', () => {
    const config = parseGatewayConfig(
      {
        mcpServers: {},
        gateway: {
          store: `postgres://gateway:${ref('PGPASSWORD')}@127.0.0.1:5432/toolfence`,
          storeKey: key,
          pins: `${ref('STATE')}/toolfence.lock.json`,
          audit: `${ref('env:STATE')}/audit.jsonl`,
          budget: { url: `redis://${ref('REDIS_HOST')}:6379`, maxCalls: 5 },
        },
      },
      env,
    );
    expect(config.gateway.store).toBe('postgres://gateway:s3cret@127.0.0.1:5432/toolfence');
    expect(config.gateway.pins).toBe('/var/lib/toolfence/toolfence.lock.json');
    expect(config.gateway.audit).toBe('/var/lib/toolfence/audit.jsonl');
    expect(config.gateway.budget?.url).toBe('redis://127.0.0.1:6379');
    expect(config.gateway.budget?.maxCalls).toBe(5);
  });

  it.each([
    [
      'gateway.store',
      { store: `postgres://gateway:${ref('MISSING_PW')}@127.0.0.1/x`, storeKey: key },
    ],
    ['gateway.pins', { pins: `${ref('MISSING_PW')}/lock.json` }],
    ['gateway.audit', { audit: `${ref('MISSING_PW')}/audit.jsonl` }],
    ['gateway.budget.url', { budget: { url: `redis://${ref('MISSING_PW')}:6379` } }],
  ])('an unset variable in %s is a GATEWAY_CONFIG error naming it', (at, gateway) => {
    expect(() => parseGatewayConfig({ mcpServers: {}, gateway }, env)).toThrow(
      expect.objectContaining({
        code: 'GATEWAY_CONFIG',
        message: expect.stringContaining('variable MISSING_PW is not set'),
        details: expect.objectContaining({ at }),
      }),
    );
  });

  it('a default applies (VAR:-default)', () => {
    const config = parseGatewayConfig(
      { mcpServers: {}, gateway: { audit: `${ref('NOPE:-/tmp')}/audit.jsonl` } },
      env,
    );
    expect(config.gateway.audit).toBe('/tmp/audit.jsonl');
  });
});
