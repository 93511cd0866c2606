import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandbox, DEFAULT_BUBBLEWRAP_LIMITS } from '../src/builtin/bubblewrap-sandbox.js';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import { DEFAULT_PROCESS_RESOURCE_LIMITS } from '../src/builtin/resource-limits.js';
import type { Sandbox } from '../src/builtin/sandbox.js';
import { SandboxUnavailableError } from '../src/builtin/sandbox-unavailable-error.js';
import { ShellTool, type ShellToolOptions } from '../src/builtin/shell-tool.js';
import { ShellToolOptionsError } from '../src/builtin/shell-tool-options-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';

const context = createToolContext({ runId: 'limits-test' });
const root = process.getuid?.() === 0;
const MIB = 1_048_576;
let base: string;
let workspace: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-limits-'));
  workspace = join(base, 'workspace');
  mkdirSync(workspace);
  // As root the sandbox runs as nobody (65534): it must reach and write the workspace.
  if (root) {
    chmodSync(base, 0o755);
    chownSync(workspace, 65_534, 65_534);
  }
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

function shell(sandbox: Sandbox, options: Partial<ShellToolOptions> = {}): ShellTool {
  return new ShellTool({
    workspace,
    allowedCommands: ['sh', 'dd', 'cat', 'node'],
    // The bounded bombs below need an interpreter; loosening the rule is what a host does too.
    programRules: { sh: 'unrestricted', node: 'unrestricted' },
    sandbox,
    ...options,
  });
}

function out(result: ToolResult): Record<string, unknown> {
  return result.structuredContent as Record<string, unknown>;
}

async function run(tool: ShellTool, args: JsonObject): Promise<ToolResult> {
  return tool.invoke(args, context);
}

/** The soft limits of /proc/self/limits, by name, as printed inside the sandbox. */
function limitsOf(text: string): Record<string, string> {
  const limits: Record<string, string> = {};
  for (const line of text.split('\n').slice(1)) {
    const match = /^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
    if (match) limits[match[1] as string] = match[2] as string;
  }
  return limits;
}

/** Host processes whose command line is exactly `argv`. */
function hostProcesses(argv: readonly string[]): number {
  const wanted = `${argv.join('\0')}\0`;
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === wanted) count += 1;
    } catch {
      // Gone already.
    }
  }
  return count;
}

describe('BubblewrapSandbox limits', () => {
  it('states its defaults and builds --size before each --tmpfs, a read-only /dev and prlimit', () => {
    expect(DEFAULT_BUBBLEWRAP_LIMITS).toMatchObject({
      tmpSizeBytes: 64 * MIB,
      maxProcesses: 128,
      maxMemoryBytes: 2048 * MIB,
      maxFileSizeBytes: 128 * MIB,
      maxOpenFiles: 1024,
    });
    const sandbox = new BubblewrapSandbox();
    const argv = sandbox.argv({
      program: '/usr/bin/true',
      args: ['x'],
      cwd: workspace,
      env: {},
      workspace,
      timeoutMs: 1000,
      maxOutputBytes: 10,
    });
    const text = argv.join(' ');
    expect(text).toContain(`--size ${64 * MIB} --tmpfs /tmp`);
    expect(text).toContain(`--dev /dev --size ${64 * MIB} --tmpfs /dev/shm --remount-ro /dev`);
    expect(text).toMatch(
      /-- \/\S*prlimit --nproc=128:128 --as=2147483648:2147483648 --fsize=134217728:134217728 --nofile=1024:1024 --core=0:0 -- \/usr\/bin\/true x$/,
    );
    expect(sandbox.user).toEqual(root ? { uid: 65_534, gid: 65_534 } : undefined);
  });

  it('applies every limit inside the sandbox (read back from /proc/self/limits)', async () => {
    const sandbox = new BubblewrapSandbox({
      maxProcesses: 40,
      maxMemoryBytes: 1024 * MIB,
      maxFileSizeBytes: 4 * MIB,
      maxOpenFiles: 64,
    });
    const result = await run(shell(sandbox), { command: 'cat', args: ['/proc/self/limits'] });
    expect(result.isError).not.toBe(true);
    expect(limitsOf(out(result).stdout as string)).toMatchObject({
      'Max processes': '40',
      'Max address space': String(1024 * MIB),
      'Max file size': String(4 * MIB),
      'Max open files': '64',
      'Max core file size': '0',
    });
    const id = await run(shell(sandbox), { command: 'sh', args: ['-c', 'id -u'] });
    expect(out(id).stdout).toBe(root ? '65534\n' : `${process.getuid?.()}\n`);
  });

  it('ends a bounded fork bomb with a typed error below maxProcesses and leaves no process behind', async () => {
    const sandbox = new BubblewrapSandbox({ maxProcesses: 24 });
    const tool = shell(sandbox);
    // Hard cap: 600 forks at most, each a `sleep 41` that the sandbox's end kills.
    const result = await run(tool, {
      command: 'sh',
      args: ['-c', 'i=0; while [ $i -lt 600 ]; do sleep 41 & i=$((i+1)); echo $i; done'],
      timeoutSeconds: 20,
    });
    expect(result.isError).toBe(true);
    expect(result.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'processes' });
    expect(out(result)).toMatchObject({ limit: 'processes', timedOut: false });
    const started = (out(result).stdout as string).trim().split('\n').map(Number);
    const most = Math.max(0, ...started);
    expect(most).toBeGreaterThan(5);
    expect(most).toBeLessThan(24);
    expect(hostProcesses(['sleep', '41'])).toBe(0);
  });

  it('counts processes per sandbox: two bounded bombs at once each get their own budget', async () => {
    const sandbox = new BubblewrapSandbox({ maxProcesses: 20 });
    const tool = shell(sandbox);
    const bomb = {
      command: 'sh',
      args: ['-c', 'i=0; while [ $i -lt 400 ]; do sleep 43 & i=$((i+1)); echo $i; done'],
      timeoutSeconds: 20,
    };
    const results = await Promise.all([run(tool, bomb), run(tool, bomb)]);
    for (const result of results) {
      expect(result.metadata?.limit).toBe('processes');
      const most = Math.max(0, ...(out(result).stdout as string).trim().split('\n').map(Number));
      // Each sandbox reaches (nearly) its own budget, though both run as the same host user.
      expect(most).toBeGreaterThan(12);
      expect(most).toBeLessThan(20);
    }
    expect(hostProcesses(['sleep', '43'])).toBe(0);
  });

  it('ends a bounded /tmp fill at tmpSizeBytes with a typed error; nothing reaches the host', async () => {
    const sandbox = new BubblewrapSandbox({ tmpSizeBytes: 8 * MIB });
    const tool = shell(sandbox);
    // Hard cap: 64 MiB at most, against an 8 MiB /tmp.
    for (const target of ['/tmp/fill', '/dev/shm/fill']) {
      const result = await run(tool, {
        command: 'dd',
        args: ['if=/dev/zero', `of=${target}`, 'bs=1M', 'count=64'],
      });
      expect(result.isError).toBe(true);
      expect(result.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'disk-space' });
      expect(out(result).stderr).toContain(`${8 * MIB} bytes`);
    }
    const device = await run(tool, {
      command: 'dd',
      args: ['if=/dev/zero', 'of=/dev/fill', 'bs=1M', 'count=64'],
    });
    expect(device.isError).toBe(true);
    expect(out(device).stderr).toContain('Read-only file system');
    // Nothing written inside reached the host (other tests may create their own temp entries,
    // so the host folders are checked by name, not counted).
    expect(existsSync(join(tmpdir(), 'fill'))).toBe(false);
    expect(existsSync('/dev/shm/fill')).toBe(false);
  });

  it('stops a file at maxFileSizeBytes (SIGXFSZ) with a typed error', async () => {
    const sandbox = new BubblewrapSandbox({ maxFileSizeBytes: 2 * MIB });
    const result = await run(shell(sandbox), {
      command: 'dd',
      args: ['if=/dev/zero', 'of=big.bin', 'bs=1M', 'count=16'],
    });
    expect(result.isError).toBe(true);
    expect(result.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'file-size' });
    expect(statSync(join(workspace, 'big.bin')).size).toBe(2 * MIB);
    rmSync(join(workspace, 'big.bin'));
  });

  it('refuses an allocation above maxMemoryBytes and too many open files, with typed errors', async () => {
    const sandbox = new BubblewrapSandbox({ maxMemoryBytes: 1024 * MIB, maxOpenFiles: 32 });
    const memory = await run(shell(sandbox), {
      command: 'node',
      args: ['-e', 'new ArrayBuffer(3 * 2 ** 30)'],
    });
    expect(memory.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'memory' });
    const files = await run(shell(sandbox), {
      command: 'node',
      args: ['-e', "for (let i = 0; i < 100; i++) require('fs').openSync('/dev/null')"],
    });
    expect(files.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'open-files' });
  });

  it('holds the process limit for a root caller only with an unprivileged user', () => {
    if (root) {
      expect(() => new BubblewrapSandbox({ user: 'caller' })).toThrow(/exempts uid 0/);
      expect(() => new BubblewrapSandbox({ user: { uid: 0, gid: 0 } })).toThrow(/exempts it/);
      expect(new BubblewrapSandbox({ user: 'caller', maxProcesses: null }).user).toBeUndefined();
      expect(new BubblewrapSandbox({ user: { uid: 1234, gid: 1234 } }).user).toEqual({
        uid: 1234,
        gid: 1234,
      });
    } else {
      expect(() => new BubblewrapSandbox({ user: { uid: 0, gid: 0 } })).toThrow(
        ShellToolOptionsError,
      );
      expect(new BubblewrapSandbox({ user: 'caller' }).user).toBeUndefined();
    }
  });

  it.each([
    ['an unknown key', { maxProcess: 10 }],
    ['tmpSizeBytes below 1 MiB', { tmpSizeBytes: 4096 }],
    ['tmpSizeBytes null', { tmpSizeBytes: null }],
    ['tmpSizeBytes as a string', { tmpSizeBytes: '64m' }],
    ['maxProcesses zero', { maxProcesses: 0 }],
    ['maxProcesses fractional', { maxProcesses: 10.5 }],
    ['maxMemoryBytes too small to start anything', { maxMemoryBytes: 1024 }],
    ['maxFileSizeBytes negative', { maxFileSizeBytes: -1 }],
    ['maxOpenFiles as a boolean', { maxOpenFiles: true }],
    ['a user with a negative uid', { user: { uid: -1, gid: 0 } }],
    ['a user with an extra key', { user: { uid: 1000, gid: 1000, groups: [] } }],
    ['a user as a number', { user: 1000 }],
    ['a relative prlimitPath', { prlimitPath: 'prlimit' }],
    ['prlimit outside readOnlyPaths', { readOnlyPaths: ['/lib', '/lib64'] }],
  ])('refuses %s', (_name, options) => {
    expect(() => new BubblewrapSandbox(options as never)).toThrow(ShellToolOptionsError);
  });

  it('needs prlimit for its limits, and runs without it only when every limit is off', () => {
    expect(() => new BubblewrapSandbox({ prlimitPath: '/nonexistent/prlimit' })).toThrow(
      SandboxUnavailableError,
    );
    const bare = new BubblewrapSandbox({
      prlimitPath: '/nonexistent/prlimit',
      maxProcesses: null,
      maxMemoryBytes: null,
      maxFileSizeBytes: null,
      maxOpenFiles: null,
      ...(root ? { user: { uid: 65_534, gid: 65_534 } } : {}),
    });
    const argv = bare.argv({
      program: '/usr/bin/true',
      args: [],
      cwd: workspace,
      env: {},
      workspace,
      timeoutMs: 1000,
      maxOutputBytes: 10,
    });
    expect(argv.slice(-2)).toEqual(['--', '/usr/bin/true']);
  });

  it('lowers a limit above the host hard limit to it, so runs still start', () => {
    // A child agent whose hard limits are below the defaults: the sandbox cannot raise them.
    const script = `
      import { BubblewrapSandbox } from '@toolfence/tools';
      const sandbox = new BubblewrapSandbox();
      const result = await sandbox.run({ program: '/usr/bin/cat', args: ['/proc/self/limits'],
        cwd: ${JSON.stringify(workspace)}, env: {}, workspace: ${JSON.stringify(workspace)},
        timeoutMs: 10000, maxOutputBytes: 100000 });
      console.log(JSON.stringify(result));`;
    const output = execFileSync(
      '/usr/bin/prlimit',
      [
        '--nofile=100:100',
        '--fsize=1000000:1000000',
        '--',
        process.execPath,
        '--input-type=module',
        '-e',
        script,
      ],
      { cwd: join(import.meta.dirname, '..'), encoding: 'utf8' },
    );
    const result = JSON.parse(output) as { exitCode: number; stdout: string; stderr: string };
    expect(result.exitCode, result.stderr).toBe(0);
    expect(limitsOf(result.stdout)).toMatchObject({
      'Max open files': '100',
      'Max file size': '1000000',
      'Max processes': '128',
    });
  });

  it('verifies itself without a workspace (its own temporary one), limits included', async () => {
    await expect(new BubblewrapSandbox().verify()).resolves.toBeUndefined();
    await expect(new BubblewrapSandbox({ bwrapPath: '/usr/bin/false' }).verify()).rejects.toSatisfy(
      (error) => SandboxUnavailableError.isInstance(error),
    );
  });

  it('refuses on start a workspace the sandbox user cannot reach', async () => {
    const closed = mkdtempSync(join(base, 'closed-'));
    chmodSync(closed, 0o700);
    const sandbox = new BubblewrapSandbox(root ? {} : { maxProcesses: null });
    const tool = new ShellTool({ workspace: closed, allowedCommands: ['cat'], sandbox });
    if (root) {
      await expect(tool.start()).rejects.toSatisfy(
        (error) => SandboxUnavailableError.isInstance(error) && /reach it/.test(String(error)),
      );
    } else {
      await expect(tool.start()).resolves.toBeUndefined();
    }
  });
});

describe('LocalProcessSandbox limits', () => {
  it('applies memory, file-size and descriptor limits, and no process limit', async () => {
    expect(new LocalProcessSandbox().limits).toEqual(DEFAULT_PROCESS_RESOURCE_LIMITS);
    const sandbox = new LocalProcessSandbox({
      maxMemoryBytes: 1024 * MIB,
      maxFileSizeBytes: 4 * MIB,
      maxOpenFiles: 64,
    });
    const result = await run(shell(sandbox), { command: 'cat', args: ['/proc/self/limits'] });
    const limits = limitsOf(out(result).stdout as string);
    const host = limitsOf(readFileSync('/proc/self/limits', 'utf8'));
    expect(limits).toMatchObject({
      'Max address space': String(1024 * MIB),
      'Max file size': String(4 * MIB),
      'Max open files': '64',
      'Max processes': host['Max processes'],
    });
  });

  it('stops a file at maxFileSizeBytes with a typed error', async () => {
    const sandbox = new LocalProcessSandbox({ maxFileSizeBytes: 2 * MIB });
    const result = await run(shell(sandbox), {
      command: 'dd',
      args: ['if=/dev/zero', `of=${join(workspace, 'local.bin')}`, 'bs=1M', 'count=16'],
    });
    expect(result.metadata).toMatchObject({ code: 'SHELL_RESOURCE_LIMIT', limit: 'file-size' });
    expect(out(result).signal).toBe('SIGXFSZ');
    expect(statSync(join(workspace, 'local.bin')).size).toBe(2 * MIB);
    rmSync(join(workspace, 'local.bin'));
  });

  it('leaves the host limits with every limit null, and refuses bad options', async () => {
    const sandbox = new LocalProcessSandbox({
      maxMemoryBytes: null,
      maxFileSizeBytes: null,
      maxOpenFiles: null,
      prlimitPath: '/nonexistent/prlimit',
    });
    const result = await run(shell(sandbox), { command: 'cat', args: ['/proc/self/limits'] });
    expect(limitsOf(out(result).stdout as string)['Max file size']).toBe(
      limitsOf(readFileSync('/proc/self/limits', 'utf8'))['Max file size'],
    );
    expect(() => new LocalProcessSandbox({ prlimitPath: '/nonexistent/prlimit' })).toThrow(
      SandboxUnavailableError,
    );
    expect(() => new LocalProcessSandbox({ maxProcesses: 10 } as never)).toThrow(
      ShellToolOptionsError,
    );
    expect(() => new LocalProcessSandbox({ maxOpenFiles: 0 })).toThrow(ShellToolOptionsError);
  });
});
