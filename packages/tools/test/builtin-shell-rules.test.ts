import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandbox } from '../src/builtin/bubblewrap-sandbox.js';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import { DEFAULT_PROGRAM_RULES, type ProgramRule } from '../src/builtin/program-rules.js';
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
    // A rule spread from the default git rule keeps its allowlist and pinned configuration.
    const git = DEFAULT_PROGRAM_RULES.git as ProgramRule;
    const spread = tool({
      programRules: {
        git: { ...git, globalOptions: (git.globalOptions ?? []).filter((o) => o !== '-C') },
      },
    });
    const alias = await run(spread, { command: 'git', args: ['-C', '.', 'pwn'] });
    expect(alias.metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
    expect((alias.content[0] as { text: string }).text).toMatch(/^"pwn" is refused for git/);
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
    [
      'a rule with non-string allowedSubcommands',
      { programRules: { git: { reason: 'x', allowedSubcommands: ['log', 1] } } },
    ],
    [
      'a rule with an empty argument prefix',
      { programRules: { git: { reason: 'x', argumentPrefixes: [''] } } },
    ],
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

// Red team: refused options inside getopt-style clusters and OpenSSL's other spellings ran code
// (each payload creates its marker if it runs). The rows spawn nothing once refused; the
// programs they need are skipped where missing.
describe('ShellTool refuses clusters and other spellings of refused options (real programs)', () => {
  let space: string;
  let marks: string;
  let compiled = false;
  const which = (program: string): boolean =>
    ['/usr/bin', '/bin'].some((folder) => existsSync(join(folder, program)));
  const allowed = ['git', 'scp', 'sftp', 'zip', 'openssl', 'man', 'wget'].filter(which);

  beforeAll(() => {
    space = mkdtempSync(join(tmpdir(), 'toolfence-clusters-'));
    marks = join(space, 'marks');
    mkdirSync(marks);
    writeFileSync(join(space, 'notes.txt'), 'hello\n');
    if (which('git')) {
      const git = (...args: string[]) =>
        execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
          cwd: space,
          stdio: 'ignore',
        });
      git('init', '-q');
      git('add', 'notes.txt');
      git('commit', '-q', '-m', 'one');
      git('commit', '-q', '--allow-empty', '-m', 'two');
    }
    // A shared object that writes its marker when loaded (what a model could write with a
    // FileSystemTool), and an OpenSSL configuration whose engine section loads it.
    try {
      writeFileSync(
        join(space, 'evil.c'),
        `#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) { FILE *f = fopen("${marks}/openssl", "w"); if (f) fclose(f); }\n`,
      );
      execFileSync(
        'cc',
        ['-shared', '-fPIC', '-o', join(space, 'evil.so'), join(space, 'evil.c')],
        {
          stdio: 'ignore',
        },
      );
      compiled = true;
    } catch {
      // No C compiler: the OpenSSL rows are skipped.
    }
    writeFileSync(
      join(space, 'evil.cnf'),
      `openssl_conf = init\n[init]\nengines = eng\n[eng]\nevil = evs\n[evs]\ndynamic_path = ${join(space, 'evil.so')}\ninit = 1\n[req]\ndistinguished_name = dn\n[dn]\n`,
    );
  });

  afterAll(() => {
    rmSync(space, { recursive: true, force: true });
  });

  const CLUSTERS: readonly (readonly [string, string, (mark: string) => string[]])[] = [
    ['git rebase -qx', 'git', (mark) => ['rebase', '-qx', `touch ${mark}`, 'HEAD~1']],
    ['git rebase -kx', 'git', (mark) => ['rebase', '-kx', `touch ${mark}`, 'HEAD~1']],
    ['git rebase -fxcmd', 'git', (mark) => ['rebase', `-fxtouch ${mark}`, 'HEAD~1']],
    [
      'git clone -qu',
      'git',
      (mark) => ['clone', '-qu', `sh -c 'touch ${mark}; exit 1'`, `file://${space}`, 'c1'],
    ],
    [
      'git clone -qc core.fsmonitor',
      'git',
      (mark) => ['clone', '-qc', `core.fsmonitor=touch ${mark}`, `file://${space}`, 'c2'],
    ],
    [
      'git ls-remote -qu',
      'git',
      (mark) => ['ls-remote', '-qu', `sh -c 'touch ${mark}; exit 1'`, `file://${space}`],
    ],
    ['git grep -iO', 'git', (mark) => ['grep', `-iOtouch ${mark}`, 'hello']],
    ['scp -4o', 'scp', (mark) => ['-4o', `ProxyCommand=touch ${mark}`, 'x:y', 'out']],
    ['sftp -4o', 'sftp', (mark) => ['-4o', `ProxyCommand=touch ${mark}`, 'x']],
    ['sftp -qD (a local server command)', 'sftp', (mark) => ['-qD', `touch ${mark}`, 'x']],
    ['zip -TTcmd', 'zip', (mark) => [`-TTtouch ${mark}`, '-T', 'out.zip', 'notes.txt']],
    ['zip -qTT', 'zip', (mark) => ['-qTT', `touch ${mark}`, '-T', 'out.zip', 'notes.txt']],
    ['man -aPcmd', 'man', (mark) => [`-aPtouch ${mark}`, 'man']],
  ];

  it.each(CLUSTERS)('refuses %s before spawning', async (name, command, payload) => {
    if (!allowed.includes(command)) return;
    const mark = join(marks, name.replace(/[^a-z0-9]+/gi, '-'));
    const shell = new ShellTool({ workspace: space, allowedCommands: allowed });
    const result = await run(shell, { command, args: payload(mark), timeoutSeconds: 20 });
    expect(result.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED', command });
    expect((result.content[0] as { text: string }).text).toMatch(/^"-[^"]+" is refused for /);
    expect(existsSync(mark)).toBe(false);
  });

  it.each([
    ['openssl req -engine=<file>', (so: string) => ['req', `-engine=${so}`, '-new']],
    ['openssl req --engine <file>', (so: string) => ['req', '--engine', so, '-new']],
    ['openssl version --engine <file>', (so: string) => ['version', '--engine', so]],
    ['openssl req -config <engine section>', () => ['req', '-config', 'evil.cnf', '-new']],
  ])('refuses %s before spawning', async (_name, payload) => {
    if (!compiled || !allowed.includes('openssl')) return;
    const shell = new ShellTool({ workspace: space, allowedCommands: allowed });
    const result = await run(shell, {
      command: 'openssl',
      args: payload(join(space, 'evil.so')),
      timeoutSeconds: 20,
    });
    expect(result.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED' });
    expect(existsSync(join(marks, 'openssl'))).toBe(false);
  });

  it('still runs ordinary clustered commands', async () => {
    if (!allowed.includes('git')) return;
    const shell = new ShellTool({ workspace: space, allowedCommands: allowed });
    const log = await run(shell, { command: 'git', args: ['log', '-p', '--format=%s', '-n1'] });
    expect(log.structuredContent?.stdout).toContain('two');
    const grep = await run(shell, { command: 'git', args: ['grep', '-inw', 'HELLO'] });
    expect(grep.structuredContent?.stdout).toBe('notes.txt:1:hello\n');
    const pattern = await run(shell, { command: 'git', args: ['grep', '-ehel', '-c'] });
    expect(pattern.structuredContent?.stdout).toBe('notes.txt:1\n');
    if (allowed.includes('zip')) {
      const zipped = await run(shell, { command: 'zip', args: ['-qT', 'ok.zip', 'notes.txt'] });
      expect(zipped.isError).not.toBe(true);
    }
    if (compiled && allowed.includes('openssl')) {
      const digest = await run(shell, {
        command: 'openssl',
        args: ['dgst', '-sha256', 'notes.txt'],
      });
      expect(digest.structuredContent?.stdout).toContain('SHA2-256(notes.txt)=');
    }
  });
});

// Red team: vim under other names (`view` → /etc/alternatives/view → /usr/bin/vim.basic) was
// allowed: the names it goes by, and their family without a distribution suffix, are matched.
describe('ShellTool finds a refused program under its other names', () => {
  let folder: string;
  let names: string;

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'toolfence-names-'));
    mkdirSync(join(folder, 'ws'));
    names = join(folder, 'bin');
    const alternatives = join(folder, 'alternatives');
    const real = join(folder, 'real');
    for (const made of [names, alternatives, real]) mkdirSync(made);
    // Real files (copies, so each is its own file); a program's behaviour does not matter here.
    for (const file of [
      'vim.tiny',
      'emacs-gtk',
      'ssh-keygen',
      'ssh',
      'nvim',
      'perl5.36.0',
      'perl5.36-x86_64-linux-gnu',
      'python3.11-dbg',
      'ld-linux-x86-64.so.2',
      'setarch',
      'time',
      'ssh-agent',
      'clang-15',
      'x86_64-linux-gnu-gcc-12',
      'lua-5.4',
    ]) {
      copyFileSync('/usr/bin/true', join(real, file));
    }
    // The alternatives system: bin/NAME → alternatives/NAME → real/vim.tiny.
    for (const name of ['view', 'rview', 'vimdiff', 'editor']) {
      symlinkSync(join(real, 'vim.tiny'), join(alternatives, name));
      symlinkSync(join(alternatives, name), join(names, name));
    }
    symlinkSync('../real/vim.tiny', join(names, 'vim.tiny'));
    // A link named vim.basic to an ordinary program is still vim by name.
    symlinkSync('/usr/bin/true', join(names, 'vim.basic'));
    symlinkSync(join(real, 'nvim'), join(alternatives, 'vi-nvim'));
    symlinkSync(join(alternatives, 'vi-nvim'), join(names, 'my-editor'));
    symlinkSync(join(real, 'emacs-gtk'), join(names, 'emacs'));
    symlinkSync(join(real, 'emacs-gtk'), join(names, 'emacs-gtk'));
    linkSync(join(real, 'emacs-gtk'), join(names, 'emacs-29.1'));
    symlinkSync(join(real, 'ssh'), join(names, 'ssh'));
    symlinkSync(join(real, 'ssh-keygen'), join(names, 'ssh-keygen'));
    symlinkSync(join(real, 'perl5.36.0'), join(names, 'perl5.36.0'));
    // Red team (F4): a versioned interpreter under a `-suffix` name of its own file (not the
    // file `perl` leads to), the dynamic loader by any name, and runners.
    symlinkSync(join(real, 'perl5.36-x86_64-linux-gnu'), join(names, 'perl5.36-x86_64-linux-gnu'));
    symlinkSync(join(real, 'python3.11-dbg'), join(names, 'python3.11-dbg'));
    symlinkSync(join(real, 'ld-linux-x86-64.so.2'), join(names, 'ld.so'));
    symlinkSync(join(real, 'ld-linux-x86-64.so.2'), join(names, 'my-loader'));
    symlinkSync(join(real, 'setarch'), join(names, 'setarch'));
    symlinkSync('setarch', join(names, 'x86_64'));
    symlinkSync(join(real, 'time'), join(names, 'time'));
    symlinkSync(join(real, 'ssh-agent'), join(names, 'ssh-agent'));
    for (const file of ['clang-15', 'x86_64-linux-gnu-gcc-12', 'lua-5.4']) {
      symlinkSync(join(real, file), join(names, file));
    }
  });

  afterAll(() => {
    rmSync(folder, { recursive: true, force: true });
  });

  const named = (command: string) =>
    new ShellTool({
      workspace: join(folder, 'ws'),
      allowedCommands: [command],
      searchPath: names,
    });

  it.each([
    ['view through the alternatives to vim.tiny', 'view', /vim is an interpreter/],
    ['rview through the alternatives', 'rview', /vim is an interpreter/],
    ['vimdiff through the alternatives', 'vimdiff', /vim is an interpreter/],
    ['editor through the alternatives', 'editor', /vim is an interpreter/],
    ['vim.tiny itself', 'vim.tiny', /vim is an interpreter/],
    ['a link named vim.basic', 'vim.basic', /vim is an interpreter/],
    ['a renamed link to nvim', 'my-editor', /nvim is an interpreter/],
    ['emacs-gtk, where emacs leads to the same file', 'emacs-gtk', /emacs is an interpreter/],
    ['emacs-29.1, a hard link of emacs', 'emacs-29.1', /emacs is an interpreter/],
    ['perl5.36.0', 'perl5.36.0', /perl is an interpreter/],
    [
      'perl5.36-x86_64-linux-gnu (a versioned family before the -, no inode check)',
      'perl5.36-x86_64-linux-gnu',
      /perl is an interpreter/,
    ],
    ['python3.11-dbg', 'python3.11-dbg', /python is an interpreter/],
    ['ld.so (the dynamic loader)', 'ld.so', /ld\.so runs other programs/],
    ['a renamed link to ld-linux-x86-64.so.2', 'my-loader', /ld\.so runs other programs/],
    ['setarch', 'setarch', /setarch runs other programs/],
    ['x86_64, a link to setarch', 'x86_64', /x86_64 runs other programs/],
    ['time', 'time', /time runs other programs/],
    ['ssh-agent', 'ssh-agent', /ssh-agent runs other programs/],
    [
      'lua-5.4 (a name, a dash and a version; no lua beside it)',
      'lua-5.4',
      /lua is an interpreter/,
    ],
  ])('refuses %s', (_name, command, reason) => {
    expect(() => named(command)).toThrow(ShellToolOptionsError);
    expect(() => named(command)).toThrow(reason);
    expect(() => named(command)).toThrow(/unrestricted/);
  });

  it.each([
    ['clang-15, with no clang beside it', 'clang-15'],
    ['a cross compiler (x86_64-linux-gnu-gcc-12)', 'x86_64-linux-gnu-gcc-12'],
  ])('applies the compiler rule to %s', async (_name, command) => {
    const result = await run(named(command), { command, args: ['-wrapper', 'x', '-c', 'a.c'] });
    expect(result.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED' });
  });

  it('keeps a program whose name only starts like a refused one (ssh-keygen is not ssh)', () => {
    expect(named('ssh-keygen').programs.get('ssh-keygen')).toBe(join(names, 'ssh-keygen'));
  });

  it.each([
    'perl5.36-x86_64-linux-gnu',
    'ld.so',
    'setarch',
    'x86_64',
    'linux32',
    'time',
    'ssh-agent',
    'valgrind',
    'fakeroot',
    'systemd-run',
    'bwrap',
  ])('refuses this system %s where it is installed', (command) => {
    if (!['/usr/bin', '/bin'].some((folder) => existsSync(join(folder, command)))) return;
    expect(
      () => new ShellTool({ workspace: join(folder, 'ws'), allowedCommands: [command] }),
    ).toThrow(/unrestricted/);
  });

  it.each(['view', 'vimdiff', 'rview', 'editor'])(
    'refuses this system %s when it is vim',
    (command) => {
      let real: string;
      try {
        real = realpathSync(join('/usr/bin', command));
      } catch {
        return;
      }
      if (!/^n?vim/.test(basename(real))) return;
      expect(
        () => new ShellTool({ workspace: join(folder, 'ws'), allowedCommands: [command] }),
      ).toThrow(/vim is an interpreter/);
    },
  );
});

// Red team (F4): compilers ran a wrapper program (`gcc -wrapper /bin/sh,-c,cmd`) and sqlite3 ran
// `.shell cmd`. Real programs where installed; each payload creates its marker if it runs.
describe('ShellTool refuses code-running compiler options and runs sqlite3 in safe mode', () => {
  let space: string;
  const which = (program: string): boolean =>
    ['/usr/bin', '/bin'].some((folder) => existsSync(join(folder, program)));

  beforeAll(() => {
    space = mkdtempSync(join(tmpdir(), 'toolfence-compilers-'));
    writeFileSync(join(space, 'main.c'), 'int main(void) { return 0; }\n');
    writeFileSync(join(space, 'opts'), `-wrapper /bin/sh,-c,touch ${join(space, 'at-file')}\n`);
  });

  afterAll(() => {
    rmSync(space, { recursive: true, force: true });
  });

  it.each([
    ['-wrapper', (mark: string) => ['-wrapper', `/bin/sh,-c,touch ${mark}`, '-c', 'main.c']],
    ['@file', () => ['@opts', '-c', 'main.c']],
    ['-B', () => ['-B', '.', '-c', 'main.c']],
    ['-fplugin=', () => ['-fplugin=./x.so', '-c', 'main.c']],
  ])('refuses gcc %s before spawning, and compiles an ordinary file', async (_name, payload) => {
    if (!which('gcc')) return;
    const mark = join(space, 'wrapper');
    const shell = new ShellTool({ workspace: space, allowedCommands: ['gcc'] });
    const refused = await run(shell, { command: 'gcc', args: payload(mark) });
    expect(refused.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED', command: 'gcc' });
    expect(existsSync(mark)).toBe(false);
    expect(existsSync(join(space, 'at-file'))).toBe(false);
    const compiled = await run(shell, {
      command: 'gcc',
      args: ['-O2', '-Wall', '-DBUILD=1', '-c', 'main.c', '-o', 'main.o'],
    });
    expect(compiled.isError, JSON.stringify(compiled.structuredContent)).not.toBe(true);
  });

  it.each([
    ['.shell in a SQL argument', (mark: string) => [':memory:', `.shell touch ${mark}`]],
    [
      '.system in -cmd',
      (mark: string) => ['-cmd', `.system touch ${mark}`, ':memory:', 'select 1'],
    ],
    ['edit() with a command', (mark: string) => [':memory:', `select edit('x', 'touch ${mark}')`]],
    ['.once to a pipe', (mark: string) => [':memory:', `.once '|touch ${mark}'`, 'select 1']],
    ['ATTACH of another file', (mark: string) => [':memory:', `attach '${mark}' as other`]],
    ['.load of a shared object', (mark: string) => [':memory:', `.load ${mark}`]],
    ['load_extension()', (mark: string) => [':memory:', `select load_extension('${mark}')`]],
  ])('runs sqlite3 in safe mode: %s runs nothing', async (_name, payload) => {
    if (!which('sqlite3')) return;
    const mark = join(space, 'sqlite');
    const shell = new ShellTool({ workspace: space, allowedCommands: ['sqlite3'] });
    const result = await run(shell, { command: 'sqlite3', args: payload(mark) });
    expect(result.isError).toBe(true);
    expect(result.structuredContent?.stderr).toMatch(/safe mode/);
    expect(existsSync(mark)).toBe(false);
    const init = await run(shell, { command: 'sqlite3', args: ['-init', 'x.sql', ':memory:'] });
    expect(init.metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
    const ordinary = await run(shell, {
      command: 'sqlite3',
      args: [
        'data.db',
        'create table if not exists t(x); insert into t values (42); select x from t;',
      ],
    });
    expect(ordinary.structuredContent?.stdout).toMatch(/42/);
  });
});
