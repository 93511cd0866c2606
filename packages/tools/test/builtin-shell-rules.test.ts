import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandbox } from '../src/builtin/bubblewrap-sandbox.js';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import { DEFAULT_PROGRAM_RULES } from '../src/builtin/program-rules.js';
import type { Sandbox } from '../src/builtin/sandbox.js';
import { ShellTool, type ShellToolOptions } from '../src/builtin/shell-tool.js';
import { ShellToolOptionsError } from '../src/builtin/shell-tool-options-error.js';
import { RiskPolicy } from '../src/policy/risk-policy.js';
import { PermissionDeniedError } from '../src/registry/permission-denied-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { ToolRegistry } from '../src/registry/tool-registry.js';

const context = createToolContext({ runId: 'rules-test' });
const root = process.getuid?.() === 0;
let base: string;
let workspace: string;
let bin: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-rules-'));
  workspace = join(base, 'workspace');
  mkdirSync(workspace);
  writeFileSync(join(workspace, 'notes.txt'), 'alpha\nbeta\n');
  // Names the host might allowlist, as links to real programs (resolved by real path too).
  bin = join(base, 'bin');
  mkdirSync(bin);
  for (const [name, target] of [
    ['python3.11', '/usr/bin/true'],
    ['perl', '/usr/bin/true'],
    ['my-shell', '/usr/bin/dash'],
    ['rg', '/usr/bin/echo'],
    ['xargs', '/usr/bin/true'],
    ['npx', '/usr/bin/true'],
  ] as const) {
    symlinkSync(target, join(bin, name));
  }
  if (root) {
    chmodSync(base, 0o755);
    chownSync(workspace, 65_534, 65_534);
    chownSync(join(workspace, 'notes.txt'), 65_534, 65_534);
  }
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

const searchPath = () => `/usr/bin:/bin:${bin}`;

function tool(options: Partial<ShellToolOptions> = {}): ShellTool {
  return new ShellTool({
    workspace,
    allowedCommands: ['find', 'git', 'tar', 'sed', 'env', 'rg', 'ls', 'cat', 'touch'],
    searchPath: searchPath(),
    ...options,
  });
}

async function run(shell: ShellTool, args: JsonObject): Promise<ToolResult> {
  return shell.invoke(args, context);
}

function marker(name: string): string {
  return join(workspace, `pwned-${name}`);
}

// Each payload creates its marker file if the program runs it. Refused before spawning, none may.
const ATTACKS: readonly (readonly [string, string, (mark: string) => string[]])[] = [
  ['find -exec', 'find', (mark) => ['.', '-maxdepth', '0', '-exec', 'touch', mark, ';']],
  ['find -execdir', 'find', (mark) => ['.', '-maxdepth', '0', '-execdir', 'touch', mark, ';']],
  ['find -fprint', 'find', (mark) => ['.', '-maxdepth', '0', '-fprint', mark]],
  ['git -c alias with !', 'git', (mark) => ['-c', `alias.x=!touch ${mark}`, 'x']],
  ['git -c core.pager', 'git', (mark) => ['-c', `core.pager=touch ${mark}`, '-p', 'version']],
  ['git --config-env', 'git', (mark) => [`--config-env=alias.x=${mark}`, 'x']],
  ['git config core.fsmonitor', 'git', (mark) => ['config', 'core.fsmonitor', `touch ${mark}`]],
  [
    'tar --checkpoint-action=exec',
    'tar',
    (mark) => ['-cf', '/dev/null', '--checkpoint=1', `--checkpoint-action=exec=touch ${mark}`, '.'],
  ],
  [
    'tar abbreviated --checkpoint-a',
    'tar',
    (mark) => ['-cf', '/dev/null', '--checkpoint=1', `--checkpoint-a=exec=touch ${mark}`, '.'],
  ],
  ['tar --to-command', 'tar', (mark) => ['-cf', '-', `--to-command=touch ${mark}`, 'notes.txt']],
  ['tar -I', 'tar', (mark) => ['-I', `touch ${mark}`, '-cf', 'out.tar', 'notes.txt']],
  ['tar old-style I', 'tar', (mark) => ['cIf', `touch ${mark}`, 'out.tar', 'notes.txt']],
  ['rg --pre', 'rg', (mark) => ['--pre', mark, 'x']],
  ['sed -i', 'sed', (mark) => ['-i', `1i ${mark}`, 'notes.txt']],
  ['env running touch', 'env', (mark) => ['touch', mark]],
];

describe('ShellTool program rules', () => {
  const sandboxes: readonly (readonly [string, () => Sandbox])[] = [
    ['LocalProcessSandbox', () => new LocalProcessSandbox()],
    ['BubblewrapSandbox', () => new BubblewrapSandbox()],
  ];

  describe.each(sandboxes)('under %s', (sandboxName, makeSandbox) => {
    it.each(ATTACKS)('refuses %s before spawning', async (name, command, payload) => {
      const mark = marker(`${sandboxName}-${name.replace(/[^a-z0-9]+/gi, '-')}`);
      const result = await run(tool({ sandbox: makeSandbox() }), {
        command,
        args: payload(mark),
      });
      expect(result.isError).toBe(true);
      expect(result.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED', command });
      expect((result.content[0] as { text: string }).text).toMatch(/is refused for/);
      expect(existsSync(mark)).toBe(false);
    });
  });

  it('runs what the rules allow, and sed under --sandbox refuses its own e and w commands', async () => {
    const shell = tool();
    const found = await run(shell, { command: 'find', args: ['.', '-name', '*.txt'] });
    expect(found.structuredContent?.stdout).toBe('./notes.txt\n');
    const printed = await run(shell, { command: 'sed', args: ['-n', '2p', 'notes.txt'] });
    expect(printed.structuredContent?.stdout).toBe('beta\n');
    for (const script of [`1e touch ${marker('sed-e')}`, `s/alpha/x/w ${marker('sed-w')}`]) {
      const result = await run(shell, { command: 'sed', args: [script, 'notes.txt'] });
      expect(result.isError).toBe(true);
      expect(result.structuredContent?.stderr).toContain('disabled in sandbox mode');
    }
    expect(existsSync(marker('sed-e'))).toBe(false);
    expect(existsSync(marker('sed-w'))).toBe(false);
    const environment = await run(shell, { command: 'env' });
    expect(environment.isError).not.toBe(true);
  });

  it("loosens a program's rule with programRules: the same payload then runs", async () => {
    const mark = marker('loosened-find');
    const shell = tool({ programRules: { find: 'unrestricted' } });
    const result = await run(shell, {
      command: 'find',
      args: ['.', '-maxdepth', '0', '-exec', 'touch', mark, ';'],
    });
    expect(result.isError).not.toBe(true);
    expect(existsSync(mark)).toBe(true);
    rmSync(mark);
    // Replacing the rule keeps the rest of the table: tar without -I still refuses the others.
    const custom = tool({
      programRules: {
        tar: {
          ...DEFAULT_PROGRAM_RULES.tar,
          shortLetters: 'F',
          reason: 'tar options that run programs',
        },
      },
    });
    const refused = await run(custom, { command: 'tar', args: ['--to-command=id', '-xf', 'a'] });
    expect(refused.metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
    // And a rule can tighten a program the table does not know.
    const tight = tool({ programRules: { cat: { reason: 'no line numbers', options: ['-n'] } } });
    const numbered = await run(tight, { command: 'cat', args: ['-n', 'notes.txt'] });
    expect(numbered.metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
  });

  it.each([
    ['sh', 'sh'],
    ['node', 'node'],
    ['a versioned interpreter (python3.11)', 'python3.11'],
    ['perl', 'perl'],
    ['a renamed link to dash', 'my-shell'],
    ['awk (a language)', 'awk'],
    ['xargs (runs any command)', 'xargs'],
    ['npx (package scripts)', 'npx'],
  ])('refuses to allowlist %s unless loosened', (_name, command) => {
    expect(() => tool({ allowedCommands: [command] })).toThrow(ShellToolOptionsError);
    expect(() => tool({ allowedCommands: [command] })).toThrow(/unrestricted/);
    expect(
      () => tool({ allowedCommands: [command], programRules: { [command]: 'unrestricted' } }).spec,
    ).not.toThrow();
  });

  it.each([
    ['an unknown option key', { allowedWrites: true }],
    ['programRules for a command not allowlisted', { programRules: { node: 'unrestricted' } }],
    ['programRules as an array', { programRules: [] }],
    ['a rule without a reason', { programRules: { find: { options: ['-x'] } } }],
    ['a rule with an unknown field', { programRules: { find: { reason: 'x', option: ['-x'] } } }],
    ['a rule with non-string options', { programRules: { find: { reason: 'x', options: [1] } } }],
    ['a rule with a bad letter set', { programRules: { tar: { reason: 'x', shortLetters: '-' } } }],
    ['readOnlyCommands not allowlisted', { readOnlyCommands: ['rm'] }],
    [
      'an interpreter declared read-only',
      {
        allowedCommands: ['ls', 'sh'],
        programRules: { sh: 'unrestricted' },
        readOnlyCommands: ['ls', 'sh'],
      },
    ],
    ['an unknown risk', { risk: 'harmless' }],
  ])('refuses %s', (_name, options) => {
    expect(() => tool(options as never)).toThrow(ShellToolOptionsError);
  });
});

describe('ShellTool contract and per-command risk', () => {
  it('declares commandRisks per command and judges each call by its own', async () => {
    const shell = tool({
      readOnlyCommands: ['ls'],
      commandRisks: { touch: 'low-risk-write', git: 'high-risk-write' },
    });
    const risks = Object.fromEntries(
      Object.entries(shell.spec.operationContracts?.operations ?? {}).map(([key, value]) => [
        key,
        value.risk,
      ]),
    );
    expect(risks).toMatchObject({
      ls: 'read-only',
      touch: 'low-risk-write',
      git: 'high-risk-write',
      find: 'destructive',
    });
    expect(shell.spec.contract?.risk).toBe('destructive');
    const lower = tool({
      allowedCommands: ['ls', 'touch'],
      readOnlyCommands: ['ls'],
      commandRisks: { touch: 'low-risk-write' },
    });
    expect(lower.spec.contract?.risk).toBe('low-risk-write');
    expect(lower.spec.annotations?.destructiveHint).toBe(false);
    const asked: string[] = [];
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy({ risk: { allowUpTo: 'low-risk-write' } }),
      tools: [shell],
      approval: (request) => {
        asked.push(`${request.operation} ${request.reason}`);
        return false;
      },
    });
    try {
      await registry.invoke('shell', { command: 'touch', args: ['made.txt'] }, { runId: 'r' });
      expect(readdirSync(workspace)).toContain('made.txt');
      await expect(
        registry.invoke('shell', { command: 'find', args: ['.'] }, { runId: 'r' }),
      ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
      expect(asked).toEqual(['find declared risk destructive']);
    } finally {
      await registry.close();
      rmSync(join(workspace, 'made.txt'), { force: true });
    }
  });

  it.each([
    ['an array', []],
    ['a command not allowlisted', { rm: 'destructive' }],
    ['read-only (readOnlyCommands checks the program rules)', { cat: 'read-only' }],
    ['an unknown level', { touch: 'harmless' }],
    ['a command also in readOnlyCommands', { ls: 'low-risk-write' }],
  ])('refuses commandRisks with %s', (_label, commandRisks) => {
    expect(() => tool({ readOnlyCommands: ['ls'], commandRisks: commandRisks as never })).toThrow(
      ShellToolOptionsError,
    );
  });

  it('declares a conservative contract for every command by default', () => {
    const shell = tool();
    expect(shell.spec.contract).toMatchObject({ risk: 'destructive', contentTrust: 'untrusted' });
    expect(shell.spec.effect).toBeUndefined();
    const contracts = shell.spec.operationContracts;
    expect(contracts?.select).toBe('command');
    for (const command of shell.programs.keys()) {
      expect(contracts?.operations[command]?.risk, command).toBe('destructive');
    }
  });

  it('declares read-only per command for readOnlyCommands, and read-only overall when all are', () => {
    const mixed = tool({ readOnlyCommands: ['ls', 'cat'] });
    expect(mixed.spec.operationContracts?.operations.ls?.risk).toBe('read-only');
    expect(mixed.spec.operationContracts?.operations.touch?.risk).toBe('destructive');
    expect(mixed.spec.contract?.risk).toBe('destructive');
    const reader = tool({ allowedCommands: ['ls', 'cat'], readOnlyCommands: ['ls', 'cat', 'ls'] });
    expect(reader.spec.contract?.risk).toBe('read-only');
    expect(reader.spec.annotations?.readOnlyHint).toBe(true);
  });

  it('lets RiskPolicy allow the commands the host declares read-only and ask for the rest', async () => {
    const asked: string[] = [];
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy(),
      tools: [tool({ readOnlyCommands: ['ls', 'cat'] })],
      approval: async (request) => {
        asked.push(String(request.args.command));
        return false;
      },
    });
    try {
      const listed = await registry.invoke('shell', { command: 'ls' }, { runId: 'r' });
      expect(listed.structuredContent?.stdout).toContain('notes.txt');
      await expect(
        registry.invoke('shell', { command: 'touch', args: ['made.txt'] }, { runId: 'r' }),
      ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
      expect(asked).toEqual(['touch']);
      expect(readdirSync(workspace)).not.toContain('made.txt');
      // A read-only scope allows the declared commands only.
      const scoped = await registry.invoke(
        'shell',
        { command: 'cat', args: ['notes.txt'] },
        { runId: 'r', accessScope: 'read-only' },
      );
      expect(scoped.structuredContent?.stdout).toBe('alpha\nbeta\n');
      await expect(
        registry.invoke(
          'shell',
          { command: 'find', args: ['.'] },
          { runId: 'r', accessScope: 'read-only' },
        ),
      ).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
    } finally {
      await registry.close();
    }
  });

  it('takes the declared risk of the other commands from the risk option', () => {
    const shell = tool({ risk: 'low-risk-write' });
    expect(shell.spec.contract?.risk).toBe('low-risk-write');
    const decision = new RiskPolicy({ risk: { allowUpTo: 'low-risk-write' } }).authorize({
      toolName: 'shell',
      spec: shell.spec,
      contract: shell.spec.contract,
      effect: 'unknown',
      args: { command: 'touch' },
      context,
    } as never);
    expect(decision.verdict).toBe('allow');
  });
});
