// Issue 41: `toolfence-mcp serve` spawns its stdio upstreams as soon as the options and the config
// are read and checked, before it loads the gateway, @toolfence/tools, the SDK server or the
// upstream client, so their start-up overlaps its own. A real `serve` runs under the module probe
// (test/fixtures/module-probe.mjs), which records each spawn between the module loads; no timing
// is asserted. An option or config refused before the spawn spawns nothing; one refused after it
// (the policy file, the pins) and an upstream that fails leave no process of its group running.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess } from './fixtures/teardown.js';
import { initializeRequest } from './helpers.js';
import { groupEnds, until } from './support/process-group.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-serve-early-'));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

/** Script text: a grandchild in the upstream's process group that runs until killed. */
const GRANDCHILD = `require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { stdio: 'ignore' });`;

interface Served {
  readonly child: ChildProcess;
  readonly log: string;
  stderr: string;
  readonly exited: Promise<number | null>;
}

/** Starts `serve` under the module probe with `config` (its gateway paths inside the folder). */
async function serve(
  name: string,
  config: Record<string, unknown>,
  extra: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<Served> {
  const file = join(folder, `${name}.json`);
  const log = join(folder, `${name}-modules.log`);
  const gateway = (config.gateway ?? {}) as Record<string, unknown>;
  await writeFile(
    file,
    JSON.stringify({
      ...config,
      gateway: {
        audit: join(folder, `${name}-audit.jsonl`),
        pins: join(folder, `${name}-lock.json`),
        ...gateway,
      },
    }),
  );
  const child = spawn(
    process.execPath,
    ['--import', PROBE, CLI, 'serve', '--config', file, ...extra],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Every stdio upstream spawns before loading unless a test says otherwise (the default is
      // the cores less one).
      env: { ...process.env, TOOLFENCE_MODULE_LOG: log, TOOLFENCE_EARLY_UPSTREAMS: '8', ...env },
    },
  );
  const served: Served = {
    child,
    log,
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    served.stderr += chunk;
  });
  child.stdout?.resume();
  return served;
}

async function stop(served: Served): Promise<void> {
  await stopProcess(served.child, 'SIGKILL');
}

/** The module log's lines in order, and the process ids serve spawned. */
async function probeLog(log: string): Promise<{ lines: string[]; spawned: number[] }> {
  const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const spawned = lines
    .filter((line) => line.startsWith('spawn:'))
    .map((line) => Number(line.slice('spawn:'.length).split(' ')[0]));
  return { lines, spawned };
}

/** A 2025-11-25 `initialize` request as one stdio line. */
const INITIALIZE_LINE = `${JSON.stringify(initializeRequest())}\n`;
describe('toolfence-mcp serve spawns its stdio upstreams first', () => {
  it('spawns the upstreams before it loads its own command, @toolfence/tools, the SDK server, the gateway or the upstream client', async () => {
    const served = await serve('order', {
      mcpServers: {
        a: { command: process.execPath, args: [SERVER, 'stdio'] },
        b: { command: process.execPath, args: [SERVER, 'stdio'] },
      },
    });
    try {
      await until(
        () => /b: ready/.test(served.stderr) && /a: ready/.test(served.stderr),
        'the upstreams',
      );
      const { lines, spawned } = await probeLog(served.log);
      expect(spawned).toHaveLength(2);
      const firstSpawn = lines.findIndex((line) => line.startsWith('spawn:'));
      const lastSpawn = lines.findLastIndex((line) => line.startsWith('spawn:'));
      const at = (pattern: RegExp): number => lines.findIndex((line) => pattern.test(line));
      // TOOLFENCE_EARLY_UPSTREAMS=8: both spawn before serve loads anything heavy. Each module
      // is loaded (the control).
      const beforeFirst: readonly [string, RegExp][] = [
        ['the serve command', /\/mcp-bridge\/dist\/cli\/run-gateway\.js$/],
        ['@toolfence/tools/core', /\/tools\/dist\/core\.js$/],
        ['the SDK server', /\/node_modules\/@modelcontextprotocol\/server\//],
        ['the gateway', /\/mcp-bridge\/dist\/gateway\/mcp-gateway\.js$/],
      ];
      const afterServed: readonly [string, RegExp][] = [
        ['the upstream client', /\/mcp-bridge\/dist\/client\/mcp-client\.js$/],
        ['the SDK 1.x protocol', /\/node_modules\/@modelcontextprotocol\/sdk\//],
      ];
      for (const [label, pattern] of [...beforeFirst, ...afterServed]) {
        expect({ label, loaded: at(pattern) >= 0 }).toEqual({ label, loaded: true });
      }
      for (const [label, pattern] of beforeFirst) {
        expect({ label, afterFirstSpawn: at(pattern) > firstSpawn }).toEqual({
          label,
          afterFirstSpawn: true,
        });
      }
      for (const [label, pattern] of afterServed) {
        expect({ label, afterEverySpawn: at(pattern) > lastSpawn }).toEqual({
          label,
          afterEverySpawn: true,
        });
      }
    } finally {
      await stop(served);
    }
  }, 120_000);
});

describe('without TOOLFENCE_EARLY_UPSTREAMS', () => {
  // The default is fixed for a machine (its cores less one), not read from its load: one upstream
  // more than that is given, and exactly the default spawn before serve loads.
  it('spawns the cores less one before it loads its own command, the rest after', async () => {
    const early = Math.max(0, availableParallelism() - 1);
    const silent = {
      command: process.execPath,
      args: ['-e', 'process.stdin.resume(); setInterval(() => {}, 60000);'],
      startTimeoutMs: 60_000,
    };
    const servers = Object.fromEntries(
      Array.from({ length: early + 1 }, (_, index) => [`s${index}`, silent]),
    );
    const served = await serve('default-early', { mcpServers: servers }, [], {
      TOOLFENCE_EARLY_UPSTREAMS: '',
    });
    try {
      const spawns = (): number =>
        (existsSync(served.log) ? readFileSync(served.log, 'utf8') : '')
          .split('\n')
          .filter((line) => line.startsWith('spawn:')).length;
      await until(
        () => spawns() === early + 1,
        `every upstream spawned (stderr: ${served.stderr})`,
      );
      const { lines } = await probeLog(served.log);
      const command = lines.findIndex((line) =>
        /\/mcp-bridge\/dist\/cli\/run-gateway\.js$/.test(line),
      );
      expect(command).toBeGreaterThan(0);
      const before = lines.slice(0, command).filter((line) => line.startsWith('spawn:'));
      expect(before).toHaveLength(early);
    } finally {
      await stop(served);
    }
  }, 120_000);
});

describe('the stdio upstreams kept back from the early spawn', () => {
  // Issue 41: TOOLFENCE_EARLY_UPSTREAMS=1 keeps b and c back; serve spawns them itself the moment
  // its client's initialize is answered, while the upstream client still loads, so their start
  // overlaps it (before, each client spawned its own once the upstream client had loaded).
  it('spawns once initialize is answered, by serve ahead of their clients, which take them', async () => {
    const server = { command: process.execPath, args: [SERVER, 'stdio'] };
    const served = await serve('rest', { mcpServers: { a: server, b: server, c: server } }, [], {
      TOOLFENCE_EARLY_UPSTREAMS: '1',
    });
    try {
      let out = '';
      served.child.stdout?.setEncoding('utf8');
      served.child.stdout?.on('data', (chunk: string) => {
        out += chunk;
      });
      served.child.stdin?.write(INITIALIZE_LINE);
      await until(
        () => ['a', 'b', 'c'].every((name) => new RegExp(`${name}: ready`).test(served.stderr)),
        `the upstreams (stderr: ${served.stderr})`,
      );
      const answer = JSON.parse(out.split('\n')[0] ?? '') as { id?: unknown; result?: unknown };
      expect({ id: answer.id, answered: answer.result !== undefined }).toEqual({
        id: 1,
        answered: true,
      });
      const { lines } = await probeLog(served.log);
      const spawns = lines.filter((line) => line.startsWith('spawn:'));
      // Three processes, each spawned by serve (none by a client's transport): the first before
      // serve loaded its command, the other two after.
      expect(spawns.map((line) => line.split(' ').at(-1))).toEqual([
        'by:early',
        'by:early',
        'by:early',
      ]);
      const command = lines.findIndex((line) =>
        /\/mcp-bridge\/dist\/cli\/run-gateway\.js$/.test(line),
      );
      expect(lines.slice(0, command).filter((line) => line.startsWith('spawn:'))).toHaveLength(1);
    } finally {
      await stop(served);
    }
  }, 120_000);

  it('are spawned by their clients when nothing is spawned early (TOOLFENCE_EARLY_UPSTREAMS=0), initialize or not (the control)', async () => {
    const server = { command: process.execPath, args: [SERVER, 'stdio'] };
    const served = await serve('rest-off', { mcpServers: { a: server, b: server } }, [], {
      TOOLFENCE_EARLY_UPSTREAMS: '0',
    });
    try {
      served.child.stdin?.write(INITIALIZE_LINE);
      await until(
        () => /a: ready/.test(served.stderr) && /b: ready/.test(served.stderr),
        `the upstreams (stderr: ${served.stderr})`,
      );
      const { lines } = await probeLog(served.log);
      expect(
        lines.filter((line) => line.startsWith('spawn:')).map((line) => line.split(' ').at(-1)),
      ).toEqual(['by:client', 'by:client']);
    } finally {
      await stop(served);
    }
  }, 120_000);
});

describe('TOOLFENCE_EARLY_UPSTREAMS=0', () => {
  let lines: string[];
  let spawned: number[];
  beforeAll(async () => {
    const served = await serve(
      'none-early',
      { mcpServers: { a: { command: process.execPath, args: [SERVER, 'stdio'] } } },
      [],
      { TOOLFENCE_EARLY_UPSTREAMS: '0' },
    );
    try {
      await until(() => /a: ready/.test(served.stderr), 'the upstream');
      ({ lines, spawned } = await probeLog(served.log));
    } finally {
      await stop(served);
    }
  }, 120_000);

  it('spawns no upstream early: its client spawns it, after the upstream client loaded', () => {
    expect(spawned).toHaveLength(1);
    const spawnAt = lines.findIndex((line) => line.startsWith('spawn:'));
    const clientAt = lines.findIndex((line) =>
      /\/mcp-bridge\/dist\/client\/mcp-client\.js$/.test(line),
    );
    expect(clientAt >= 0 && clientAt < spawnAt).toBe(true);
  });

  // Issue 41: the tracer loads with the first tools/call (serve-module-loading.test.ts), so a
  // start that lists and calls nothing never loads it, before or after the spawn.
  it('spawns the upstream and lists it without loading @opentelemetry/api', () => {
    const spawnAt = lines.findIndex((line) => line.startsWith('spawn:'));
    const tracingAt = lines.findIndex((line) => /\/node_modules\/@opentelemetry\/api\//.test(line));
    expect(spawnAt).toBeGreaterThanOrEqual(0);
    expect(tracingAt).toBe(-1);
  });
});

describe('an option or config refused before the spawn spawns nothing; after it, leaves no process', () => {
  const upstream = {
    command: process.execPath,
    args: ['-e', `${GRANDCHILD} setInterval(() => {}, 60000);`],
  };
  it.each([
    ['a config the parser refuses', { startTimeoutMs: 0 }, [], {}, false],
    ['an --http value that is not HOST:PORT', {}, ['--http', '8765'], {}, false],
    ['an audit key that is not 32 bytes', {}, [], { TOOLFENCE_AUDIT_KEY: 'short' }, false],
    ['a sealing key that is not 32 bytes', {}, [], { TOOLFENCE_SEAL_KEY: 'short' }, false],
    [
      'a TOOLFENCE_EARLY_UPSTREAMS that is not a count',
      {},
      [],
      { TOOLFENCE_EARLY_UPSTREAMS: 'all' },
      false,
    ],
    ['a TOOLFENCE_EARLY_UPSTREAMS over 1000', {}, [], { TOOLFENCE_EARLY_UPSTREAMS: '1001' }, false],
    ['a policy file that is not JSON', {}, ['--policy', 'POLICY'], {}, true],
    ['a lock file that is not JSON', { pins: 'PINS' }, [], {}, true],
  ] as const)(
    '%s',
    async (label, gateway, extra, env, spawns) => {
      const name = `refused-${label.replace(/\W+/g, '-')}`;
      const policy = join(folder, `${name}-policy.json`);
      const pins = join(folder, `${name}-pins.json`);
      await writeFile(policy, '{ not json');
      await writeFile(pins, '{ not json');
      const served = await serve(
        name,
        {
          mcpServers: { a: upstream },
          gateway: Object.fromEntries(
            Object.entries(gateway).map(([key, value]) => [key, value === 'PINS' ? pins : value]),
          ),
        },
        extra.map((word) => (word === 'POLICY' ? policy : word)),
        env,
      );
      try {
        const code = await served.exited;
        expect(code).not.toBe(0);
        const { spawned } = await probeLog(served.log);
        expect(spawned.length > 0).toBe(spawns);
        for (const group of spawned) expect(await groupEnds(group)).toBe(0);
      } finally {
        await stop(served);
      }
    },
    120_000,
  );
});

describe('an upstream that fails to start leaves no process of its group running', () => {
  it.each([
    [
      'writes a line that is not JSON-RPC',
      `${GRANDCHILD} process.stdout.write('hello\\n'); setInterval(() => {}, 60000);`,
      {},
    ],
    [
      'never answers within its startTimeoutMs',
      `${GRANDCHILD} setInterval(() => {}, 60000);`,
      { startTimeoutMs: 1500 },
    ],
    [
      'exits during the handshake, its grandchild still running',
      `${GRANDCHILD} process.stdin.once('data', () => process.exit(3));`,
      {},
    ],
  ] as const)(
    'an upstream that %s',
    async (label, script, server) => {
      const served = await serve(`failing-${label.replace(/\W+/g, '-')}`, {
        mcpServers: { a: { command: process.execPath, args: ['-e', script], ...server } },
      });
      try {
        await until(
          () => /a: failed/.test(served.stderr),
          `the failure (stderr: ${served.stderr})`,
        );
        const { spawned } = await probeLog(served.log);
        // The early process, and the client's own when it tried again (a listing whose wire
        // failed before any answer is tried once more).
        expect(spawned.length).toBeGreaterThan(0);
        // serve still runs; every group of the failed upstream is gone.
        expect(served.child.exitCode).toBe(null);
        for (const group of spawned) expect(await groupEnds(group)).toBe(0);
      } finally {
        await stop(served);
      }
    },
    120_000,
  );
});

describe('an upstream that writes before the gateway reads it', () => {
  it('loses nothing: a 200 KB record and 50 stderr lines written first, then the server', async () => {
    const script = `
      process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(200000) } }) + '\\n');
      for (let i = 0; i < 50; i++) process.stderr.write('early line ' + i + '\\n');
      import(${JSON.stringify(new URL('./fixtures/v2-server.mjs', import.meta.url).href)});`;
    const served = await serve(
      'fast-writer',
      { mcpServers: { a: { command: process.execPath, args: ['-e', script] } } },
      ['--verbose'],
    );
    try {
      await until(
        () => /a: ready, [1-9]/.test(served.stderr),
        `the upstream (stderr: ${served.stderr.slice(-2000)})`,
      );
      const early = [...served.stderr.matchAll(/early line (\d+)/g)].map((match) =>
        Number(match[1]),
      );
      expect(early).toEqual(Array.from({ length: 50 }, (_, index) => index));
    } finally {
      await stop(served);
    }
  }, 120_000);
});
