import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandbox } from '../src/builtin/bubblewrap-sandbox.js';
import { LocalProcessSandbox } from '../src/builtin/local-process-sandbox.js';
import type { Sandbox } from '../src/builtin/sandbox.js';
import { ShellTool } from '../src/builtin/shell-tool.js';
import type { ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';

// Red team (F1, F2): with only `git` allowlisted, git's internal helpers (`bisect--helper run`,
// `submodule--helper foreach`) ran any command, and `log --output=.git/config` wrote an alias
// that the next call ran. Every case runs real git in a real repository under both sandboxes;
// each payload creates a marker file if it runs.
const context = createToolContext({ runId: 'git-test' });
const root = process.getuid?.() === 0;
let base: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-git-'));
  if (root) chmodSync(base, 0o755);
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

/**
 * A repository with two commits and a folder for markers, owned by the user the sandbox runs
 * as (`nobody` for BubblewrapSandbox under root; git refuses a repository of another owner).
 */
function repository(
  name: string,
  { remote = false }: { remote?: boolean } = {},
): { workspace: string; marks: string } {
  const workspace = join(base, name);
  mkdirSync(workspace);
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', workspace, ...args], { stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  // The identity is the repository's own (no HOME reaches the sandboxed git).
  git('config', 'user.name', 'Test');
  git('config', 'user.email', 'test@example.test');
  for (const content of ['one\n', 'two\n']) {
    writeFileSync(join(workspace, 'notes.txt'), content);
    git('add', 'notes.txt');
    git('commit', '-q', '-m', content.trim());
  }
  if (remote) {
    // A remote inside the workspace (the only folder BubblewrapSandbox shows), for fetch,
    // pull, push and clone.
    execFileSync('git', ['clone', '-q', '--bare', workspace, join(workspace, 'remote.git')], {
      stdio: 'ignore',
    });
    git('remote', 'add', 'origin', join(workspace, 'remote.git'));
    writeFileSync(join(workspace, '.gitignore'), 'remote.git/\ncopy/\nmarks/\n');
  }
  const marks = join(workspace, 'marks');
  mkdirSync(marks);
  giveToSandbox(workspace);
  return { workspace, marks };
}

function giveToSandbox(workspace: string): void {
  if (root && workspace.includes('BubblewrapSandbox')) {
    execFileSync('chown', ['-R', '65534:65534', workspace]);
  }
}

async function git(shell: ShellTool, args: string[]): Promise<ToolResult> {
  return shell.invoke({ command: 'git', args, timeoutSeconds: 30 }, context);
}

const sandboxes: readonly (readonly [string, () => Sandbox])[] = [
  ['LocalProcessSandbox', () => new LocalProcessSandbox()],
  ['BubblewrapSandbox', () => new BubblewrapSandbox()],
];

describe.each(sandboxes)('ShellTool with only git allowlisted, under %s', (label, makeSandbox) => {
  const shellIn = (workspace: string) =>
    new ShellTool({ workspace, allowedCommands: ['git'], sandbox: makeSandbox() });

  it("refuses git's internal helpers (bisect--helper run, submodule--helper foreach)", async () => {
    const { workspace, marks } = repository(`helpers-${label}`);
    const shell = shellIn(workspace);
    const calls = [
      ['bisect--helper', 'start', 'HEAD', 'HEAD~1'],
      ['bisect--helper', 'run', 'touch', join(marks, 'bisect')],
      ['submodule--helper', 'foreach', `touch ${join(marks, 'submodule')}`],
    ];
    for (const args of calls) {
      const result = await git(shell, args);
      expect(result.metadata, args.join(' ')).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED' });
    }
    expect(existsSync(join(marks, 'bisect'))).toBe(false);
    expect(existsSync(join(marks, 'submodule'))).toBe(false);
  });

  it('refuses output-file options, so git cannot write its own configuration', async () => {
    const { workspace, marks } = repository(`output-${label}`);
    const shell = shellIn(workspace);
    const config = readFileSync(join(workspace, '.git/config'), 'utf8');
    const alias = `--format=[alias]%n\tpwn = !touch ${join(marks, 'alias')}`;
    for (const args of [
      ['log', '-1', alias, '--output=.git/config'],
      ['log', '-1', alias, '--output', '.git/config'],
      ['log', '-1', alias, '--outp=.git/config'],
      ['show', '-s', alias, '--output=.git/config'],
      ['format-patch', '-1', '-o', '.git/hooks'],
      ['format-patch', '-1', '-ko', '.git/hooks'],
      ['format-patch', '-1', '--output-directory=.git/hooks'],
      ['archive', '-o', '.git/config', 'HEAD'],
      ['archive', '--output=.git/config', 'HEAD'],
      // git 2.39 moves a file into .git (through a symbolic link too) despite its own error.
      ['mv', '-f', 'notes.txt', '.git/config'],
      ['apply', '--unsafe-paths', 'change.patch'],
    ]) {
      const result = await git(shell, args);
      expect(result.metadata, args.join(' ')).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED' });
    }
    expect(readFileSync(join(workspace, '.git/config'), 'utf8')).toBe(config);
    const pwn = await git(shell, ['pwn']);
    expect(pwn.metadata).toMatchObject({ code: 'SHELL_ARGUMENT_REFUSED' });
    // The refusal names the subcommands that run, so the model can pick one.
    const text = (pwn.content[0] as { text: string }).text;
    expect(text).toMatch(/^"pwn" is refused for git: .*\. Allowed git subcommands: add, am, /);
    expect(text).toContain(' status, switch, ');
    expect(existsSync(join(marks, 'alias'))).toBe(false);
  });

  it('runs no command a configuration written by other means names (hooks, fsmonitor, editors, aliases, ext::, a bare repository)', async () => {
    const { workspace, marks } = repository(`config-${label}`);
    // What a FileSystemTool with write access to the same folder could write.
    const touch = (name: string) => `touch ${join(marks, name)}`;
    writeFileSync(
      join(workspace, '.git/config'),
      `${readFileSync(join(workspace, '.git/config'), 'utf8')}[core]\n\tfsmonitor = ${touch('fsmonitor')}; echo\n\teditor = ${touch('editor')}; true\n[sequence]\n\teditor = ${touch('sequence')}; true\n[alias]\n\tpwn = !${touch('alias')}\n\tst = !${touch('alias-st')}\n[protocol]\n\tallow = always\n`,
    );
    // A bare repository inside the workspace, with a configuration of its own.
    const bare = join(workspace, 'bare');
    execFileSync('git', ['init', '-q', '--bare', bare], { stdio: 'ignore' });
    writeFileSync(
      join(bare, 'config'),
      `${readFileSync(join(bare, 'config'), 'utf8')}[core]\n\tfsmonitor = ${touch('bare')}; echo\n`,
    );
    for (const hook of ['pre-commit', 'post-commit', 'post-checkout', 'commit-msg']) {
      writeFileSync(join(workspace, '.git/hooks', hook), `#!/bin/sh\n${touch(hook)}\n`, {
        mode: 0o755,
      });
    }
    giveToSandbox(workspace);
    const shell = shellIn(workspace);
    writeFileSync(join(workspace, 'notes.txt'), 'three\n');
    expect((await git(shell, ['status', '--short'])).structuredContent?.stdout).toBe(
      ' M notes.txt\n?? bare/\n',
    );
    expect((await git(shell, ['commit', '-a'])).isError).toBe(true);
    expect((await git(shell, ['commit', '-a', '-m', 'three'])).isError).not.toBe(true);
    expect((await git(shell, ['checkout', '-q', '-b', 'side'])).isError).not.toBe(true);
    expect((await git(shell, ['rebase', '-q', '-i', 'HEAD~1'])).isError).not.toBe(true);
    expect((await git(shell, ['pwn'])).metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
    expect((await git(shell, ['st'])).metadata?.code).toBe('SHELL_ARGUMENT_REFUSED');
    const ext = await git(shell, ['ls-remote', `ext::sh -c touch% ${join(marks, 'ext')}`]);
    expect(ext.structuredContent?.stderr).toMatch(/transport 'ext' not allowed/);
    const inBare = await shell.invoke(
      { command: 'git', args: ['status'], cwd: 'bare', timeoutSeconds: 30 },
      context,
    );
    expect(inBare.structuredContent?.stderr).toMatch(/cannot use bare repository/);
    expect(execFileSync('ls', ['-A', marks], { encoding: 'utf8' })).toBe('');
  });

  it('runs ordinary git work without a refusal', async () => {
    const { workspace } = repository(`ordinary-${label}`, { remote: true });
    const shell = shellIn(workspace);
    writeFileSync(join(workspace, 'notes.txt'), 'three\n');
    writeFileSync(join(workspace, 'new.txt'), 'new\n');
    const calls: string[][] = [
      ['--version'],
      ['status', '--short'],
      ['diff', '--stat'],
      ['add', 'notes.txt', 'new.txt'],
      ['commit', '-q', '-m', 'three'],
      ['log', '--oneline', '-n', '3'],
      ['log', '-p', '-1', '--format=%H %s'],
      ['show', '--stat', 'HEAD'],
      ['rev-parse', 'HEAD'],
      ['ls-files', '-o', '--exclude-standard'],
      ['grep', '-n', 'three'],
      ['blame', 'notes.txt'],
      ['branch', 'side'],
      ['switch', '-q', 'side'],
      ['checkout', '-q', 'main'],
      ['tag', 'v1'],
      ['restore', '--source=HEAD~1', 'notes.txt'],
      ['stash', '-q'],
      ['stash', 'list'],
      ['stash', 'pop', '-q'],
      ['restore', 'notes.txt'],
      ['merge', '-q', 'side'],
      ['rebase', '-q', 'side'],
      ['format-patch', '-1', '--stdout'],
      ['archive', '--format=tar', 'HEAD'],
      ['reset', '-q', '--soft', 'HEAD~1'],
      ['commit', '-q', '-m', 'again'],
      ['describe', '--tags', '--always'],
      ['fetch', '-q', 'origin'],
      ['ls-remote', 'origin'],
      ['push', '-q', '-u', 'origin', 'main'],
      ['pull', '-q', '--rebase', 'origin', 'main'],
      ['clone', '-q', 'remote.git', 'copy'],
      ['log', '-1', '-h'],
    ];
    for (const args of calls) {
      const result = await git(shell, args);
      expect(result.metadata?.code, args.join(' ')).not.toBe('SHELL_ARGUMENT_REFUSED');
      // `-h` prints usage and exits 129; every other call succeeds.
      if (args.at(-1) !== '-h')
        expect(
          result.isError,
          `${args.join(' ')}: ${JSON.stringify(result.structuredContent)}`,
        ).not.toBe(true);
    }
  });
});
