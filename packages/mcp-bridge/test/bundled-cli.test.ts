// Issue 41: the `toolfence-mcp` command ships bundled (scripts/bundle-cli.mjs, dist/bin/): its
// start does not resolve, read and link about 300 modules one by one. The rest of the suite runs
// the command from dist/bin/main.js; the tests of which modules a start loads (serve-module-loading,
// serve-early-upstreams, the console's) run the same code unbundled, where a module has its own
// file. Here: the bundle still spawns its upstreams before it loads the SDKs and zod, bridges its
// upstream's tools (ajv required from @toolfence/tools), loads no bundled package a second time
// from node_modules, leaves the peer dependencies and the lazily required packages out, and
// carries the licence of each package it bundles.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess } from './fixtures/teardown.js';
import { initializeRequest } from './helpers.js';
import { until } from './support/process-group.js';

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(PACKAGE, 'dist', 'bin');
const PROBE = fileURLToPath(new URL('./fixtures/module-probe.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));

/** Each file of the bundle and the packages whose modules it holds (esbuild's path comments). */
function bundledPackages(): Map<string, Set<string>> {
  const files = new Map<string, Set<string>>();
  for (const name of readdirSync(BIN).filter((file) => file.endsWith('.js'))) {
    const text = readFileSync(join(BIN, name), 'utf8');
    const names = new Set<string>();
    for (const match of text.matchAll(
      /^\/\/ \S*node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//gm,
    )) {
      names.add(match[1] as string);
    }
    files.set(name, names);
  }
  return files;
}

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-bundled-cli-'));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('the bundled toolfence-mcp command', () => {
  it('is the package bin, with its hashbang', () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
    expect(manifest.bin).toEqual({ 'toolfence-mcp': './dist/bin/main.js' });
    expect(readFileSync(join(BIN, 'main.js'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(
      true,
    );
  });

  it('bundles zod and the SDKs, and none of the peer dependencies or lazily required packages', () => {
    const all = new Set([...bundledPackages().values()].flatMap((names) => [...names]));
    for (const name of [
      'zod',
      '@modelcontextprotocol/sdk',
      '@modelcontextprotocol/server',
      'jose',
    ]) {
      expect(all, name).toContain(name);
    }
    const manifest = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
    const outside = [
      ...Object.keys(manifest.peerDependencies),
      'jsonc-parser',
      'smol-toml',
      'undici',
      'ajv',
      'yaml',
    ];
    expect(outside).toContain('@opentelemetry/api');
    for (const name of outside) expect(all, name).not.toContain(name);
  });

  it('carries the licence text of every package it bundles', () => {
    const notices = readFileSync(join(BIN, 'THIRD-PARTY-LICENSES.txt'), 'utf8');
    const all = new Set([...bundledPackages().values()].flatMap((names) => [...names]));
    expect(all.size).toBeGreaterThan(3);
    for (const name of all) {
      const at = notices.indexOf(`\n${name}@`);
      expect(at, name).toBeGreaterThan(-1);
      // Its entry holds a licence's words, not only the field of package.json.
      const entry = notices.slice(at, notices.indexOf(`\n${'-'.repeat(72)}`, at + 1) >>> 0);
      expect(entry, name).toMatch(/permission|licen[cs]e/i);
      expect(entry.length, name).toBeGreaterThan(200);
    }
  });

  it('spawns its upstream before it loads zod or the SDKs, bridges its tools (ajv from @toolfence/tools), and loads no bundled package again from node_modules', async () => {
    const config = join(folder, 'toolfence.json');
    const log = join(folder, 'modules.log');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: { a: { command: process.execPath, args: [SERVER, 'stdio'] } },
        gateway: { audit: join(folder, 'audit.jsonl'), pins: join(folder, 'lock.json') },
      }),
    );
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', PROBE, join(BIN, 'main.js'), 'serve', '--config', config],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
        // Without the NODE_PATH the test runner's bin shim sets (it lists pnpm's shared store, where
        // any package resolves from anywhere): a user's `toolfence-mcp` resolves only from its
        // install.
        env: {
          ...process.env,
          NODE_PATH: undefined,
          TOOLFENCE_MODULE_LOG: log,
          TOOLFENCE_EARLY_UPSTREAMS: '1',
        },
      },
    );
    let stderr = '';
    let stdout = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    try {
      child.stdin?.write(`${JSON.stringify(initializeRequest())}\n`);
      await until(
        () => /a: ready/.test(stderr) && stdout.includes('"protocolVersion"'),
        'the upstream ready and initialize answered',
      );
      // Its tools were bridged: their schemas checked with ajv, which @toolfence/tools' copy in the
      // bundle requires from @toolfence/tools (this package does not depend on it).
      expect(stderr).toMatch(/a: ready, [1-9]\d* tool/);
      expect(stderr).not.toMatch(/cannot be bridged|cannot be compiled/);
      const lines = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
      const spawnAt = lines.findIndex((line) => /^spawn:\d+ .* by:early$/.test(line));
      expect(spawnAt, lines.join('\n')).toBeGreaterThan(-1);
      const heavy = [...bundledPackages()]
        .filter(([, names]) => names.has('zod') || names.has('@modelcontextprotocol/server'))
        .map(([name]) => pathToFileURL(join(BIN, name)).href);
      expect(heavy.length).toBeGreaterThan(0);
      const loadedAt = heavy.map((url) => lines.indexOf(url)).filter((at) => at >= 0);
      // The start loaded them (the initialize answer needs them), after the spawn.
      expect(loadedAt.length).toBeGreaterThan(0);
      for (const at of loadedAt) expect(at).toBeGreaterThan(spawnAt);
      // Nothing bundled comes again from its own files.
      const again = lines.filter((line) =>
        /\/node_modules\/\.pnpm\/(zod@|@modelcontextprotocol\+(sdk|server|core)@|jose@|oauth4webapi@)|\/packages\/(tools|mcp-bridge|tool-contract)\/dist\/(?!bin\/)/.test(
          line,
        ),
      );
      expect(again).toEqual([]);
    } finally {
      await stopProcess(child, 'SIGKILL');
    }
  });
});
