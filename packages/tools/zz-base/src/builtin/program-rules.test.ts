import { describe, expect, it } from 'vitest';
import { DEFAULT_PROGRAM_RULES, programFamily, refusedArgument } from './program-rules.js';

const rule = (program: string) => {
  const found = DEFAULT_PROGRAM_RULES[program];
  if (found === undefined) throw new Error(`no rule for ${program}`);
  return found;
};

describe('DEFAULT_PROGRAM_RULES', () => {
  it.each([
    ['find -exec', 'find', ['.', '-exec', 'id', ';']],
    ['find -execdir', 'find', ['.', '-execdir', 'id', '{}', '+']],
    ['find -ok', 'find', ['.', '-ok', 'id', ';']],
    ['find -okdir', 'find', ['.', '-okdir', 'id', ';']],
    ['find -delete', 'find', ['.', '-name', '*.txt', '-delete']],
    ['find -fprint', 'find', ['.', '-fprint', '/tmp/out']],
    ['find -fprintf', 'find', ['.', '-fprintf', '/tmp/out', '%p']],
    ['git -c alias', 'git', ['-c', 'alias.x=!id', 'x']],
    ['git -c attached', 'git', ['-calias.x=!id', 'x']],
    ['git -c core.pager', 'git', ['-c', 'core.pager=id', 'log']],
    ['git --config-env', 'git', ['--config-env=core.pager=X', 'log']],
    ['git -C', 'git', ['-C', '/', 'status']],
    ['git --exec-path', 'git', ['--exec-path=/tmp', 'status']],
    ['git --git-dir', 'git', ['--git-dir=/tmp/evil/.git', 'status']],
    ['git --namespace before a subcommand', 'git', ['--namespace', 'config', 'config', 'a', 'b']],
    ['git config', 'git', ['config', 'core.fsmonitor', 'id']],
    ['git submodule foreach', 'git', ['submodule', 'foreach', 'id']],
    ['git bisect run', 'git', ['bisect', 'run', 'id']],
    ['git rebase -x', 'git', ['rebase', '-x', 'id', 'HEAD~1']],
    ['git rebase --exec', 'git', ['rebase', '--exec=id', 'HEAD~1']],
    ['git clone --upload-pack', 'git', ['clone', '--upload-pack=id', 'a', 'b']],
    ['git clone abbreviated --upload-p', 'git', ['clone', '--upload-p=id', 'a', 'b']],
    ['git fetch --receive-pack', 'git', ['push', '--receive-pack=id', 'origin']],
    ['git diff --ext-diff', 'git', ['diff', '--ext-diff']],
    ['git clone --template', 'git', ['clone', '--template=/tmp/hooks', 'a', 'b']],
    ['git difftool', 'git', ['difftool', '--extcmd=id']],
    ['git clone -u', 'git', ['clone', '-u', 'id', 'a', 'b']],
    ['git grep -O (a pager program)', 'git', ['grep', '-Oid', 'TODO']],
    ['git grep --open-files-in-pager', 'git', ['grep', '--open-files-in-pager=id', 'x']],
    ['git send-email', 'git', ['send-email', '--smtp-server=/tmp/x', 'p.patch']],
    [
      'git clone -c (applied before checkout)',
      'git',
      ['clone', '-c', 'core.fsmonitor=id', 'a', 'b'],
    ],
    ['git clone --config', 'git', ['clone', '--config=core.hooksPath=/x', 'a', 'b']],
    ['git remote-ext', 'git', ['remote-ext', 'origin', 'sh -c id']],
    ['sort --compress-program', 'sort', ['--compress-program=id', 'f']],
    ['sort abbreviated --compress', 'sort', ['--compress=id', 'f']],
    ['diff3 --diff-program', 'diff3', ['--diff-program=id', 'a', 'b', 'c']],
    ['scp -S', 'scp', ['-S', '/tmp/x', 'a', 'h:b']],
    ['scp -oProxyCommand', 'scp', ['-oProxyCommand=id', 'a', 'h:b']],
    ['rsync -e', 'rsync', ['-e', 'id', 'a', 'h:b']],
    ['rsync -e in a cluster', 'rsync', ['-avze', 'id', 'a', 'h:b']],
    ['rsync --rsync-path', 'rsync', ['--rsync-path=id', 'a', 'h:b']],
    ['zip -TT', 'zip', ['-T', '-TT', 'id', 'a.zip', 'f']],
    ['wget --use-askpass', 'wget', ['--use-askpass=id', 'https://x']],
    ['wget -e', 'wget', ['-e', 'use_askpass=id', 'https://x']],
    ['openssl -engine', 'openssl', ['dgst', '-engine', '/tmp/x.so', 'f']],
    ['man -P', 'man', ['-P', 'id', 'ls']],
    [
      'tar --checkpoint-action',
      'tar',
      ['-cf', '/dev/null', '--checkpoint=1', '--checkpoint-action=exec=id', '.'],
    ],
    ['tar abbreviated --checkpoint-a', 'tar', ['-cf', '/dev/null', '--checkpoint-a=exec=id', '.']],
    ['tar --to-command', 'tar', ['-xf', 'a.tar', '--to-command=id']],
    ['tar --use-compress-program', 'tar', ['-cf', 'a.tar', '--use-compress-program=id', '.']],
    ['tar abbreviated --use-comp', 'tar', ['-cf', 'a.tar', '--use-comp', 'id', '.']],
    ['tar -I', 'tar', ['-I', 'id', '-cf', 'a.tar', '.']],
    ['tar -I in a cluster', 'tar', ['-cvIid', '-f', 'a.tar', '.']],
    ['tar old-style cluster with I', 'tar', ['cIf', 'id', 'a.tar', '.']],
    ['tar old-style cluster with I after f', 'tar', ['cfI', 'a.tar', 'id', '.']],
    ['tar -F', 'tar', ['-M', '-F', 'id', '-cf', 'a.tar', '.']],
    ['tar --info-script', 'tar', ['--info-script=id', '-cf', 'a.tar', '.']],
    ['tar --rsh-command', 'tar', ['--rsh-command=id', '-xf', 'h:a.tar']],
    ['rg --pre', 'rg', ['--pre', 'id', 'x']],
    ['rg --pre=', 'rg', ['--pre=id', 'x']],
    ['rg --hostname-bin', 'rg', ['--hostname-bin=id', 'x']],
    ['sed -i', 'sed', ['-i', 's/a/b/', 'f']],
    ['sed -i with a suffix', 'sed', ['-i.bak', 's/a/b/', 'f']],
    ['sed -i in a cluster', 'sed', ['-ni', 'p', 'f']],
    ['sed --in-place', 'sed', ['--in-place=.bak', 's/a/b/', 'f']],
    ['sed abbreviated --in-pl', 'sed', ['--in-pl', 's/a/b/', 'f']],
    ['env running a program', 'env', ['id']],
    ['env -i running a program', 'env', ['-i', 'PATH=/bin', 'id']],
    ['env -S', 'env', ['-S', 'id -u']],
  ] as const)('refuses %s', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toEqual(expect.any(String));
  });

  it.each([
    ['find by name', 'find', ['.', '-name', '*.ts', '-type', 'f', '-print']],
    ['git status', 'git', ['status', '--short']],
    ['git log with a format', 'git', ['log', '--format=%H %s', '-n', '5']],
    ['git grep -c counts (not the global -c)', 'git', ['grep', '-c', 'TODO']],
    ['git log -C detects copies', 'git', ['log', '-C', '--stat']],
    ['git cherry-pick -x (a note, not a command)', 'git', ['cherry-pick', '-x', 'abc']],
    ['git add -u', 'git', ['add', '-u']],
    ['git diff -O (an order file)', 'git', ['diff', '-Oorder.txt']],
    ['tar list', 'tar', ['-tvf', 'a.tar']],
    ['tar old-style create', 'tar', ['cvf', 'a.tar', '.']],
    ['tar with a file named I', 'tar', ['-cf', 'I', '.']],
    ['tar cluster where I is the -f value', 'tar', ['-cfI', '.']],
    ['rg with --pre-glob alone', 'rg', ['--pre-glob', '*.gz', 'x']],
    ['rg search', 'rg', ['-n', '--hidden', 'TODO', 'src']],
    ['sed print', 'sed', ['-n', 's/a/b/p', 'f']],
    ['sed script with i in an -e value', 'sed', ['-e', 'i\\x', 'f']],
    ['sed -E cluster', 'sed', ['-nE', 's/a/b/p', 'f']],
    ['env alone', 'env', []],
    ['sort -u', 'sort', ['-u', 'f']],
    ['rsync -av locally', 'rsync', ['-av', 'a/', 'b/']],
    ['git clone plain', 'git', ['clone', '--depth', '1', 'a', 'b']],
    ['git log -c (combined diff, after the subcommand)', 'git', ['log', '-c']],
  ] as const)('allows %s', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toBeUndefined();
  });

  it('refuses interpreters and program runners outright', () => {
    for (const program of ['sh', 'bash', 'node', 'python', 'perl', 'awk', 'xargs', 'npm', 'npx']) {
      expect(refusedArgument(rule(program), [])).toBeNull();
    }
  });

  it('finds the family of a versioned name', () => {
    expect(programFamily('python3.11')).toBe('python');
    expect(programFamily('python3')).toBe('python');
    expect(programFamily('node')).toBe('node');
    expect(programFamily('lua5.4')).toBe('lua');
  });

  it('runs sed with --sandbox', () => {
    expect(rule('sed').prependArguments).toEqual(['--sandbox']);
  });
});
