import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandbox } from '../src/builtin/bubblewrap-sandbox.js';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import type { Sandbox } from '../src/builtin/sandbox.js';
import { SandboxUnavailableError } from '../src/builtin/sandbox-unavailable-error.js';
import { ShellTool, type ShellToolOptions } from '../src/builtin/shell-tool.js';
import { ShellToolOptionsError } from '../src/builtin/shell-tool-options-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';

const context = createToolContext({ runId: 'shell-test' });
let base: string;
let workspace: string;
let outsideFile: string;
let server: Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-shell-'));
  workspace = join(base, 'workspace');
  mkdirSync(join(workspace, 'sub'), { recursive: true });
  writeFileSync(join(workspace, 'inside.txt'), 'INSIDE');
  outsideFile = join(base, 'outside-secret.txt');
  writeFileSync(outsideFile, 'OUTSIDE-SECRET');
  symlinkSync(base, join(workspace, 'escape'));
  // As root, BubblewrapSandbox runs commands as nobody (65534): give it the workspace.
  if (process.getuid?.() === 0) {
    chmodSync(base, 0o755);
    for (const path of [workspace, join(workspace, 'sub'), join(workspace, 'inside.txt')]) {
      chownSync(path, 65_534, 65_534);
    }
  }
  server = createServer((socket) => {
    connections += 1;
    // The client process may exit before reading; its reset is expected, not a failure.
    socket.on('error', () => {});
    socket.end('hello');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(base, { recursive: true, force: true });
});

// These tests drive the sandboxes with interpreters on purpose, so they loosen the default
// program rules that refuse them.
const INTERPRETERS = { sh: 'unrestricted', node: 'unrestricted', env: 'unrestricted' } as const;

function tool(options: Partial<ShellToolOptions> = {}): ShellTool {
  return new ShellTool({
    workspace,
    allowedCommands: ['echo', 'sh', 'env', 'pwd', 'cat', 'yes', 'node', 'sleep'],
    programRules: INTERPRETERS,
    ...options,
  });
}

function out(result: ToolResult): Record<string, unknown> {
  return result.structuredContent as Record<string, unknown>;
}

async function run(shell: ShellTool, args: JsonObject): Promise<ToolResult> {
  return shell.invoke(args, context);
}

const connectScript = (target: number) =>
  `const s=require('net').connect(${target},'127.0.0.1');s.on('connect',()=>{console.log('CONNECTED');process.exit(0)});s.on('error',e=>{console.log('ERR '+e.code);process.exit(2)});setTimeout(()=>{console.log('TIMEOUT');process.exit(3)},2000)`;

describe('ShellTool with LocalProcessSandbox', () => {
  it('passes arguments literally, never through a shell', async () => {
    const result = await run(tool(), {
      command: 'echo',
      args: ['hi; echo INJECTED', '$(id)', '`id`'],
    });
    expect(out(result).stdout).toBe('hi; echo INJECTED $(id) `id`\n');
    expect(result.isError).not.toBe(true);
  });

  it.each([
    ['an unlisted program', 'ls'],
    ['an absolute path', '/bin/sh'],
    ['a relative path', './sh'],
    ['a parent path', '../bin/sh'],
    ['an empty name', ''],
  ])('refuses %s', async (_name, command) => {
    const result = await run(tool(), { command });
    expect(result.isError).toBe(true);
    expect(result.metadata?.code).toBe('SHELL_COMMAND_NOT_ALLOWED');
  });

  it.each([
    ['a NUL byte', { command: 'echo', args: ['a\u0000b'] }, 'SHELL_ARGUMENT_INVALID'],
    ['a non-string argument', { command: 'echo', args: [1] }, 'SHELL_ARGUMENT_INVALID'],
    [
      'too many arguments',
      { command: 'echo', args: Array(1025).fill('x') },
      'SHELL_ARGUMENT_INVALID',
    ],
    [
      'arguments too long',
      { command: 'echo', args: ['x'.repeat(140_000)] },
      'SHELL_ARGUMENT_INVALID',
    ],
    [
      'a timeout above the maximum',
      { command: 'echo', timeoutSeconds: 61 },
      'SHELL_ARGUMENT_INVALID',
    ],
    ['a timeout as a string', { command: 'echo', timeoutSeconds: '1' }, 'SHELL_ARGUMENT_INVALID'],
    ['cwd outside the workspace', { command: 'pwd', cwd: '../' }, 'SHELL_CWD_INVALID'],
    ['cwd absolute', { command: 'pwd', cwd: '/etc' }, 'SHELL_CWD_INVALID'],
    ['cwd through a symlink', { command: 'pwd', cwd: 'escape' }, 'SHELL_CWD_INVALID'],
    ['cwd that is a file', { command: 'pwd', cwd: 'inside.txt' }, 'SHELL_CWD_INVALID'],
  ] as const)('refuses %s', async (_name, args, code) => {
    const result = await run(tool(), args as unknown as JsonObject);
    expect(result.isError).toBe(true);
    expect(result.metadata?.code).toBe(code);
  });

  it('runs in a workspace folder', async () => {
    const result = await run(tool(), { command: 'pwd', cwd: 'sub' });
    expect(out(result).stdout).toBe(`${join(workspace, 'sub')}\n`);
  });

  it('gives the program only allowlisted environment variables', async () => {
    const shell = tool({
      baseEnvironment: { PATH: '/usr/bin:/bin', SECRET_TOKEN: 'hunter2', LANG: 'C.UTF-8' },
      allowedEnvironment: ['PATH', 'LANG'],
    });
    const result = await run(shell, { command: 'env' });
    const lines = (out(result).stdout as string).trim().split('\n').sort();
    expect(lines).toEqual(['LANG=C.UTF-8', 'PATH=/usr/bin:/bin']);
  });

  it('does not inherit the parent environment by default beyond the allowlist', async () => {
    process.env.TOOLFENCE_TEST_SECRET = 'do-not-leak';
    try {
      const result = await run(tool(), { command: 'env' });
      expect(out(result).stdout).not.toContain('do-not-leak');
    } finally {
      delete process.env.TOOLFENCE_TEST_SECRET;
    }
  });

  it('reports a non-zero exit as an error result', async () => {
    const result = await run(tool(), {
      command: 'sh',
      args: ['-c', 'echo out; echo err >&2; exit 3'],
    });
    expect(result.isError).toBe(true);
    expect(result.metadata?.code).toBe('SHELL_NONZERO_EXIT');
    expect(out(result)).toMatchObject({
      exitCode: 3,
      signal: null,
      stdout: 'out\n',
      stderr: 'err\n',
      timedOut: false,
      truncated: false,
    });
  });

  it('takes maxTimeoutMs in milliseconds as the default time limit of a call', async () => {
    const result = await run(tool({ maxTimeoutMs: 300 }), { command: 'sleep', args: ['30'] });
    expect(result.metadata?.code).toBe('SHELL_TIMEOUT');
  });

  it('kills the whole process group on timeout, grandchildren too', async () => {
    const marker = join(workspace, 'marker');
    const result = await run(tool(), {
      command: 'sh',
      args: ['-c', `(sleep 1; touch ${marker}) & sleep 30`],
      timeoutSeconds: 0.3,
    });
    expect(result.isError).toBe(true);
    expect(result.metadata?.code).toBe('SHELL_TIMEOUT');
    expect(out(result)).toMatchObject({ timedOut: true, exitCode: null, signal: 'SIGKILL' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(existsSync(marker)).toBe(false);
  });

  it('cuts output at the shared budget and kills the flood', async () => {
    const shell = tool({ maxOutputBytes: 1000 });
    const result = await run(shell, { command: 'yes' });
    const content = out(result);
    expect(content.truncated).toBe(true);
    expect((content.stdout as string).length).toBe(1000);
    expect(result.isError).toBe(true);
  });

  it('counts stdout and stderr against one budget', async () => {
    const shell = tool({ maxOutputBytes: 15 });
    const result = await run(shell, {
      command: 'sh',
      args: ['-c', 'printf 1234567890; sleep 0.1; printf abcdefghij >&2; sleep 1'],
    });
    const content = out(result);
    expect(content.truncated).toBe(true);
    expect((content.stdout as string) + (content.stderr as string)).toBe('1234567890abcde');
  });

  it('stops when the call is aborted', async () => {
    const controller = new AbortController();
    const shell = tool();
    const pending = shell.invoke(
      { command: 'sleep', args: ['30'] },
      createToolContext({ runId: 'abort', signal: controller.signal }),
    );
    setTimeout(() => controller.abort(), 100);
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(out(result).signal).toBe('SIGKILL');
  });

  it('declares a contract per command and the command as the operation', () => {
    const shell = tool();
    expect(shell.spec.effect).toBeUndefined();
    expect(shell.spec.operationContracts?.operations.echo?.risk).toBe('destructive');
    expect(shell.spec.operationArgument).toBe('command');
    expect(shell.programs.get('echo')).toMatch(/^\/.*echo$/);
  });

  it('is not isolation: a local command can reach loopback and outside files', async () => {
    const before = connections;
    const local = tool({ sandbox: new LocalProcessSandbox() });
    expect(local.spec.description).toContain('node');
    const result = await run(local, { command: 'node', args: ['-e', connectScript(port)] });
    expect(out(result).stdout).toContain('CONNECTED');
    expect(connections).toBe(before + 1);
    const read = await run(tool(), { command: 'cat', args: [outsideFile] });
    expect(out(read).stdout).toBe('OUTSIDE-SECRET');
  });
});

describe('ShellTool options', () => {
  it.each([
    ['no workspace', { workspace: '' }],
    ['missing workspace', { workspace: '/nonexistent/toolfence' }],
    ['empty allowedCommands', { allowedCommands: [] }],
    ['a path in allowedCommands', { allowedCommands: ['/bin/sh'] }],
    ['a parent in allowedCommands', { allowedCommands: ['..'] }],
    ['an unknown program', { allowedCommands: ['definitely-not-a-program-xyz'] }],
    ['maxTimeoutMs as a boolean', { maxTimeoutMs: true }],
    ['maxTimeoutMs zero', { maxTimeoutMs: 0 }],
    ['maxTimeoutMs over a day', { maxTimeoutMs: 86_400_001 }],
    ['maxOutputBytes as a string', { maxOutputBytes: '10' }],
    ['maxOutputBytes zero', { maxOutputBytes: 0 }],
    ['a sandbox without run', { sandbox: {} }],
    ['a bad environment key', { allowedEnvironment: ['A=B'] }],
  ])('rejects %s', (_name, options) => {
    expect(() => tool(options as never)).toThrow(ShellToolOptionsError);
  });

  it('verifies a working sandbox on start and refuses a broken one', async () => {
    await expect(tool({ sandbox: new BubblewrapSandbox() }).start()).resolves.toBeUndefined();
    const broken = new BubblewrapSandbox({ bwrapPath: '/usr/bin/false' });
    await expect(tool({ sandbox: broken }).start()).rejects.toSatisfy((error) =>
      SandboxUnavailableError.isInstance(error),
    );
  });

  it('fails clearly when bwrap is missing', () => {
    expect(() => new BubblewrapSandbox({ bwrapPath: '/nonexistent/bwrap' })).toThrow(
      SandboxUnavailableError,
    );
    expect(() => new BubblewrapSandbox({ searchPath: '/nonexistent' })).toThrow(/bubblewrap/);
  });
});

describe('ShellTool with BubblewrapSandbox', () => {
  let sandbox: Sandbox;
  beforeAll(() => {
    sandbox = new BubblewrapSandbox();
  });

  it('cannot connect to a loopback listener of the host', async () => {
    const before = connections;
    const result = await run(tool({ sandbox }), {
      command: 'node',
      args: ['-e', connectScript(port)],
    });
    expect(out(result).stdout).not.toContain('CONNECTED');
    expect(out(result).stdout).toMatch(/ERR|TIMEOUT/);
    expect(connections).toBe(before);
  });

  it('cannot read a file outside its binds', async () => {
    const result = await run(tool({ sandbox }), { command: 'cat', args: [outsideFile] });
    expect(JSON.stringify(result)).not.toContain('OUTSIDE-SECRET');
    expect(result.isError).toBe(true);
    const etc = await run(tool({ sandbox }), { command: 'cat', args: ['/etc/hostname'] });
    expect(etc.isError).toBe(true);
  });

  it('reads and writes the workspace', async () => {
    const read = await run(tool({ sandbox }), { command: 'cat', args: ['inside.txt'] });
    expect(out(read).stdout).toBe('INSIDE');
    const write = await run(tool({ sandbox }), {
      command: 'sh',
      args: ['-c', 'echo made > sub/made.txt'],
    });
    expect(write.isError).not.toBe(true);
    expect(readFileSync(join(workspace, 'sub', 'made.txt'), 'utf8')).toBe('made\n');
  });

  it('cannot write outside the workspace', async () => {
    // The folder above the workspace is only a mount point on the private /tmp: the write lands there.
    await run(tool({ sandbox }), {
      command: 'sh',
      args: ['-c', `echo x > ${join(base, 'escaped.txt')}`],
    });
    expect(existsSync(join(base, 'escaped.txt'))).toBe(false);
    const system = await run(tool({ sandbox }), {
      command: 'sh',
      args: ['-c', 'echo x > /usr/toolfence-escaped'],
    });
    expect(system.isError).toBe(true);
    expect(existsSync('/usr/toolfence-escaped')).toBe(false);
  });

  it('starts with a clear environment plus the allowlisted keys', async () => {
    const shell = tool({
      sandbox,
      baseEnvironment: { PATH: '/usr/bin:/bin', SECRET: 'x' },
      allowedEnvironment: ['PATH'],
    });
    const result = await run(shell, { command: 'env' });
    const keys = (out(result).stdout as string)
      .trim()
      .split('\n')
      .map((line) => line.split('=')[0])
      .sort();
    expect(keys).not.toContain('SECRET');
    expect(keys).toContain('PATH');
  });

  it('has a private /tmp and its own PID namespace', async () => {
    writeFileSync(join(tmpdir(), 'toolfence-host-tmp-marker'), 'host');
    const result = await run(tool({ sandbox }), {
      command: 'sh',
      args: ['-c', 'ls /tmp; echo pid=$$'],
    });
    expect(out(result).stdout).not.toContain('toolfence-host-tmp-marker');
    expect(out(result).stdout).toMatch(/pid=[0-9]$|pid=[0-9]\n/);
    rmSync(join(tmpdir(), 'toolfence-host-tmp-marker'), { force: true });
  });

  it('enforces the time limit inside the sandbox', async () => {
    const result = await run(tool({ sandbox }), {
      command: 'sleep',
      args: ['30'],
      timeoutSeconds: 0.5,
    });
    expect(out(result).timedOut).toBe(true);
  });

  it('builds its argv without a shell', () => {
    const argv = (sandbox as BubblewrapSandbox).argv({
      program: '/usr/bin/echo',
      args: ['a b'],
      cwd: workspace,
      env: { PATH: '/usr/bin' },
      workspace,
      timeoutMs: 1000,
      maxOutputBytes: 10,
    });
    expect(argv).toEqual(
      expect.arrayContaining(['--unshare-all', '--die-with-parent', '--new-session', '--clearenv']),
    );
    expect(argv.slice(-3)).toEqual(['--', '/usr/bin/echo', 'a b']);
  });
});
