import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROGRAM_RULES,
  isDynamicLoaderName,
  programFamily,
  refusedArgument,
} from './program-rules.js';

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

  // Red team: refused short options inside getopt-style clusters (`-qx`: a refused letter after
  // other letters), and OpenSSL's other spellings of its single-dash long options.
  it.each([
    ['git rebase -qx', 'git', ['rebase', '-qx', 'id', 'HEAD~1']],
    ['git rebase -kx', 'git', ['rebase', '-kx', 'id', 'HEAD~1']],
    ['git rebase -fx', 'git', ['rebase', '-fx', 'id', 'HEAD~1']],
    ['git rebase -qxcmd (value attached)', 'git', ['rebase', '-qxid', 'HEAD~1']],
    ['git rebase -ix after a value-less letter', 'git', ['rebase', '-ivx', 'id', 'HEAD~1']],
    ['git clone -qu', 'git', ['clone', '-qu', 'id', 'a', 'b']],
    ['git clone -nqu', 'git', ['clone', '-nqu', 'id', 'a', 'b']],
    ['git clone -qc', 'git', ['clone', '-qc', 'core.fsmonitor=id', 'a', 'b']],
    ['git clone -lsc attached', 'git', ['clone', '-lscalias.x=!id', 'a', 'b']],
    ['git ls-remote -qu', 'git', ['ls-remote', '-qu', 'id', 'a']],
    ['git ls-remote -thu', 'git', ['ls-remote', '-thu', 'id', 'a']],
    ['git grep -iO', 'git', ['grep', '-iOid', 'x']],
    ['git grep -nwO', 'git', ['grep', '-nwO', 'x']],
    ['git grep -3O (a number, then O)', 'git', ['grep', '-3Oid', 'x']],
    ['git -pc before the subcommand', 'git', ['-pc', 'alias.x=!id', 'x']],
    ['git -pC before the subcommand', 'git', ['-pC', '/', 'status']],
    ['scp -4o', 'scp', ['-4o', 'ProxyCommand=id', 'x:y', 'z']],
    ['scp -4oProxyCommand attached', 'scp', ['-4oProxyCommand=id', 'x:y', 'z']],
    ['scp -qS', 'scp', ['-qS', 'id', 'x:y', 'z']],
    ['scp -rpF', 'scp', ['-rpF', 'evil.conf', 'x:y', 'z']],
    ['scp -3J', 'scp', ['-3J', 'jump', 'x:y', 'z']],
    ['scp -D (a local server program)', 'scp', ['-D', '/tmp/id', 'x:y', 'z']],
    ['scp -qD', 'scp', ['-qD', '/tmp/id', 'x:y', 'z']],
    ['scp -Bo (B takes no value in scp)', 'scp', ['-Bo', 'ProxyCommand=id', 'x:y', 'z']],
    ['sftp -4o', 'sftp', ['-4oProxyCommand=id', 'x']],
    ['sftp -D (a local server command)', 'sftp', ['-D', 'id', 'x']],
    ['sftp -aqD', 'sftp', ['-aqD', 'id', 'x']],
    ['sftp -NS', 'sftp', ['-NS', 'id', 'x']],
    ['man -aP', 'man', ['-aPid', 'ls']],
    ['man -aH', 'man', ['-aHid', 'ls']],
    ['man -tp', 'man', ['-tpid', 'ls']],
    ['wget -qe', 'wget', ['-qe', 'use_askpass=id', 'u']],
    ['wget -rNe attached', 'wget', ['-rNeuse_askpass=id', 'u']],
    ['zip -TTcmd (value attached)', 'zip', ['-TTid', '-T', 'a.zip', 'f']],
    ['zip -TT', 'zip', ['-TT', 'id', '-T', 'a.zip', 'f']],
    ['zip -qTT', 'zip', ['-qTT', 'id', '-T', 'a.zip', 'f']],
    ['zip -TT=cmd', 'zip', ['-TT=id', '-T', 'a.zip', 'f']],
    ['zip -rTTcmd', 'zip', ['-rTTid', '-T', 'a.zip', 'f']],
    ['rsync -avze (already a cluster rule)', 'rsync', ['-avze', 'id', 'a', 'h:b']],
    ['sed -ni (already a cluster rule)', 'sed', ['-ni', 'p', 'f']],
    ['openssl --engine', 'openssl', ['req', '--engine', 'x.so', '-new']],
    ['openssl -engine=', 'openssl', ['req', '-engine=x.so', '-new']],
    ['openssl --engine=', 'openssl', ['req', '--engine=x.so', '-new']],
    ['openssl --provider', 'openssl', ['req', '--provider', 'x', '-new']],
    ['openssl -provider=', 'openssl', ['req', '-provider=x', '-new']],
    ['openssl --provider-path', 'openssl', ['req', '--provider-path', '.', '-new']],
    ['openssl -provider-path=', 'openssl', ['req', '-provider-path=.', '-new']],
    ['openssl -config (engine sections load code)', 'openssl', ['req', '-config', 'x.cnf']],
    ['openssl --config=', 'openssl', ['req', '--config=x.cnf']],
    ['openssl -ssl_client_engine', 'openssl', ['s_client', '-ssl_client_engine', 'x']],
    ['find --exec (one extra dash)', 'find', ['.', '--exec', 'id', ';']],
  ] as const)('refuses %s (clusters and spellings)', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toEqual(expect.any(String));
  });

  // Ordinary commands stay allowed: a value after a letter that takes one is not read as more
  // options, and letters a rule does not refuse pass.
  it.each([
    ['git log -p', 'git', ['log', '-p']],
    ['git commit -qm msg', 'git', ['commit', '-qm', 'msg']],
    ['git commit -amfix (value attached)', 'git', ['commit', '-amfix']],
    ['git rebase -Xours', 'git', ['rebase', '-Xours', 'main']],
    ['git rebase -sours', 'git', ['rebase', '-sours', 'main']],
    ['git rebase -C3', 'git', ['rebase', '-C3', 'main']],
    ['git rebase -qi', 'git', ['rebase', '-qi', 'HEAD~2']],
    ['git clone -qb with x in the branch', 'git', ['clone', '-qbfix-u', 'a', 'b']],
    ['git clone -qo with c in the name', 'git', ['clone', '-qocu', 'a', 'b']],
    ['git ls-remote -qt', 'git', ['ls-remote', '-qt', 'a']],
    ['git grep -ePATTERN with an O', 'git', ['grep', '-eFOO', 'x']],
    ['git grep -inw', 'git', ['grep', '-inw', 'x']],
    ['git grep -fOrder (a pattern file)', 'git', ['grep', '-fOrder.txt']],
    ['git grep -C3', 'git', ['grep', '-C3', 'x']],
    ['git -p log', 'git', ['-p', 'log']],
    ['git -P log', 'git', ['-P', 'log']],
    ['scp -rp', 'scp', ['-rp', 'a', 'h:b']],
    ['scp -P with a port', 'scp', ['-P', '2222', 'a', 'h:b']],
    ['scp -i with an o in the key file', 'scp', ['-ikey.o', 'a', 'h:b']],
    ['scp -4Cq', 'scp', ['-4Cq', 'a', 'h:b']],
    ['sftp -b batch', 'sftp', ['-bjobs', 'h']],
    ['man -a', 'man', ['-a', 'ls']],
    ['man -k', 'man', ['-k', 'printf']],
    ['man -M with a P in the path', 'man', ['-M/opt/Pman', 'ls']],
    ['wget -qO-', 'wget', ['-qO-', 'https://x']],
    ['wget -O with an e in the file', 'wget', ['-Oreport.html', 'https://x']],
    ['wget -nv', 'wget', ['-nv', 'https://x']],
    ['wget -rnp', 'wget', ['-rnp', 'https://x']],
    ['zip -r', 'zip', ['-r', 'out.zip', 'dir']],
    ['zip -T (test, no command)', 'zip', ['-T', 'out.zip']],
    ['zip -qrT', 'zip', ['-qrT', 'out.zip', 'dir']],
    ['openssl version', 'openssl', ['version', '-a']],
    ['openssl dgst', 'openssl', ['dgst', '-sha256', 'f']],
    ['openssl -engine_impl alone (a flag)', 'openssl', ['dgst', '-engine_impl', 'f']],
    ['openssl x509 -noout -text', 'openssl', ['x509', '-noout', '-text', '-in', 'c.pem']],
    ['find -executable (not -exec)', 'find', ['.', '-executable', '-type', 'f']],
    ['find -newer', 'find', ['.', '-newer', 'f']],
    ['tar -czf', 'tar', ['-czf', 'x.tgz', 'dir']],
    ['tar -xzvf', 'tar', ['-xzvf', 'x.tgz']],
    ['sed -nE', 'sed', ['-nE', 's/a/b/p', 'f']],
    ['sed -e with an i', 'sed', ['-es/i/x/', 'f']],
    ['rsync -avz', 'rsync', ['-avz', 'a/', 'b/']],
  ] as const)('allows ordinary %s', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toBeUndefined();
  });

  // Red team (F1, F2): git's internal helpers ran commands (`bisect--helper run`,
  // `submodule--helper foreach`), an alias written to .git/config ran, and `--output` wrote
  // git's own configuration. Subcommands are an allowlist; output-file options are refused.
  it.each([
    'bisect--helper',
    'submodule--helper',
    'difftool--helper',
    'env--helper',
    'fsmonitor--daemon',
    'credential-cache--daemon',
    'checkout--worker',
    'upload-archive--writer',
    'sh-i18n--envsubst',
    'add--interactive',
    'some-future--helper',
    'pwn',
    'help',
    'checkout-index',
    'merge-file',
    'bundle',
    'maintenance',
    'fast-export',
    '',
  ])('refuses the git subcommand %j (not an allowed one)', (subcommand) => {
    expect(refusedArgument(rule('git'), ['-p', subcommand, 'x'])).toBe(subcommand);
  });

  it.each([
    ['log --output=', ['log', '-1', '--output=.git/config']],
    ['log --output <file>', ['log', '-1', '--output', '.git/config']],
    ['log abbreviated --outp=', ['log', '-1', '--outp=.git/config']],
    ['diff --output=', ['diff', '--output=/tmp/x']],
    ['show --output=', ['show', '--output=x']],
    ['format-patch -o', ['format-patch', '-1', '-o', '.git/hooks']],
    ['format-patch -o attached', ['format-patch', '-1', '-o.git/hooks']],
    ['format-patch -ko (a cluster)', ['format-patch', '-1', '-ko', '.git/hooks']],
    ['format-patch --output-directory', ['format-patch', '--output-directory=.git/hooks']],
    ['format-patch abbreviated --output-d', ['format-patch', '--output-d', 'x']],
    ['archive -o', ['archive', '-o', 'x.tar', 'HEAD']],
    ['archive -vo (a cluster)', ['archive', '-vo', 'x.tar', 'HEAD']],
    ['archive --output=', ['archive', '--output=x.tar', 'HEAD']],
    ['log --help (starts git help and its viewers)', ['log', '--help', '-w']],
    ['--help before the subcommand', ['--help', 'log']],
  ] as const)('refuses git %s', (_name, args) => {
    expect(refusedArgument(rule('git'), args)).toEqual(expect.any(String));
  });

  it.each([
    ['--version', ['--version']],
    ['status', ['status', '--short']],
    ['log --oneline', ['log', '--oneline']],
    ['log --output-indicator-new', ['log', '-p', '--output-indicator-new=+']],
    ['diff', ['diff', '--cached']],
    ['show', ['show', 'HEAD']],
    ['add', ['add', '-A']],
    ['commit', ['commit', '-m', 'x']],
    ['branch', ['branch', '-a']],
    ['checkout', ['checkout', '-b', 'x']],
    ['switch', ['switch', '-c', 'x']],
    ['restore', ['restore', '--staged', 'f']],
    ['rev-parse', ['rev-parse', 'HEAD']],
    ['ls-files -o (others, no value)', ['ls-files', '-o']],
    ['grep', ['grep', '-n', 'x']],
    ['blame', ['blame', 'f']],
    ['tag', ['tag', '-a', 'v1', '-m', 'x']],
    ['stash', ['stash', 'push', '-m', 'x']],
    ['merge', ['merge', '--no-ff', 'x']],
    ['rebase', ['rebase', '--onto', 'a', 'b']],
    ['fetch', ['fetch', 'origin']],
    ['pull', ['pull', '--rebase']],
    ['push', ['push', 'origin', 'main']],
    ['clone -o <name>', ['clone', '-o', 'up', 'a', 'b']],
    ['format-patch --stdout', ['format-patch', '-1', '--stdout']],
    ['archive to stdout', ['archive', '--format=tar', 'HEAD']],
    ['log -h', ['log', '-h']],
  ] as const)('allows git %s', (_name, args) => {
    expect(refusedArgument(rule('git'), args)).toBeUndefined();
  });

  it('reads the value of a global option as its value, not as the subcommand', () => {
    const git = rule('git');
    const loosened = {
      ...git,
      globalOptions: (git.globalOptions ?? []).filter((option) => option !== '-C'),
    };
    expect(refusedArgument(loosened, ['-C', 'sub', 'status'])).toBeUndefined();
    expect(refusedArgument(loosened, ['-C', 'status', 'pwn'])).toBe('pwn');
    expect(refusedArgument(loosened, ['-C', 'sub', 'config', 'a', 'b'])).toBe('config');
    // Without globalValueOptions, the value is read as the subcommand: refused, never allowed.
    const { globalValueOptions: _dropped, ...plain } = loosened;
    expect(refusedArgument(plain, ['-C', 'sub', 'status'])).toBe('sub');
  });

  it('pins the git configuration that runs commands before the caller arguments', () => {
    const pinned = rule('git').prependArguments ?? [];
    for (const setting of [
      'core.hooksPath=/dev/null',
      'core.fsmonitor=false',
      'core.editor=:',
      'sequence.editor=:',
      'protocol.ext.allow=never',
      'safe.bareRepository=explicit',
    ]) {
      expect(pinned[pinned.indexOf(setting) - 1], setting).toBe('-c');
    }
  });

  // Red team (F4): compilers run a wrapper, plugins and other programs; sqlite3's dot-commands
  // and SQL functions run commands and load code.
  it.each([
    ['gcc -wrapper', 'gcc', ['-wrapper', '/bin/sh,-c,id', '-c', 'a.c']],
    ['gcc -fplugin=', 'gcc', ['-fplugin=./x.so', '-c', 'a.c']],
    ['gcc -B', 'gcc', ['-B', '.', '-c', 'a.c']],
    ['gcc -Bdir', 'gcc', ['-B./bin', '-c', 'a.c']],
    ['gcc @file', 'gcc', ['@opts', 'a.c']],
    ['gcc -specs=', 'gcc', ['-specs=x.specs', 'a.c']],
    ['gcc --specs', 'gcc', ['--specs', 'x.specs', 'a.c']],
    ['gcc -Wl,-plugin', 'gcc', ['-Wl,-plugin,x.so', 'a.c']],
    ['gcc -Xlinker', 'gcc', ['-Xlinker', '-plugin', '-Xlinker', 'x.so', 'a.c']],
    ['cc -wrapper', 'cc', ['-wrapper', 'x', 'a.c']],
    ['g++ -fplugin', 'g++', ['-fplugin', 'x.so', 'a.cc']],
    ['clang -Xclang', 'clang', ['-Xclang', '-load', '-Xclang', 'x.so', 'a.c']],
    ['clang -fuse-ld=<path>', 'clang', ['-fuse-ld=/tmp/x', 'a.c']],
    ['sqlite3 -init (read before safe mode)', 'sqlite3', ['-init', 'x.sql', ':memory:']],
    ['sqlite3 --init', 'sqlite3', ['--init', 'x.sql', ':memory:']],
    ['sqlite3 -nonce (lifts safe mode)', 'sqlite3', ['-nonce', 'x', ':memory:']],
    ['sqlite3 -unsafe-testing', 'sqlite3', ['-unsafe-testing', ':memory:']],
    ['sqlite3 -Ax (archive mode writes files)', 'sqlite3', ['-Ax', 'a.sqlar']],
    ['sqlite3 --archive', 'sqlite3', ['--archive', '-x', 'a.sqlar']],
  ] as const)('refuses %s', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toEqual(expect.any(String));
  });

  it.each([
    ['gcc compiling', 'gcc', ['-O2', '-Wall', '-DBUILD=1', '-Iinclude', '-o', 'a', 'a.c']],
    ['gcc -std and -l', 'gcc', ['-std=c11', 'a.c', '-lm']],
    ['sqlite3 with SQL', 'sqlite3', ['db.sqlite', 'select 1']],
    ['sqlite3 -cmd (runs under -safe)', 'sqlite3', ['-cmd', '.tables', 'db.sqlite']],
  ] as const)('allows %s', (_name, program, args) => {
    expect(refusedArgument(rule(program), args)).toBeUndefined();
  });

  it('runs sqlite3 in safe mode', () => {
    expect(rule('sqlite3').prependArguments).toEqual(['-safe']);
  });

  it.each([
    'setarch',
    'linux32',
    'linux64',
    'i386',
    'x86_64',
    'time',
    'ld.so',
    'ssh-agent',
    'bwrap',
    'systemd-run',
    'capsh',
    'fakeroot',
    'firejail',
    'valgrind',
  ])('refuses the runner %s outright', (program) => {
    expect(refusedArgument(rule(program), [])).toBeNull();
  });

  it.each([
    ['ld.so', true],
    ['ld-linux-x86-64.so.2', true],
    ['ld-linux.so.2', true],
    ['ld-linux-aarch64.so.1', true],
    ['ld-musl-x86_64.so.1', true],
    ['ld64.so.2', true],
    ['ld', false],
    ['ld.bfd', false],
    ['ld.gold', false],
    ['ldd', false],
  ] as const)('knows whether %s is the dynamic loader', (name, loader) => {
    expect(isDynamicLoaderName(name)).toBe(loader);
  });

  it('refuses interpreters and program runners outright', () => {
    for (const program of [
      'sh',
      'bash',
      'node',
      'python',
      'perl',
      'awk',
      'xargs',
      'npm',
      'npx',
      'wish',
      'java',
      'jshell',
      'R',
      'Rscript',
      'julia',
      'guile',
      'racket',
      'pwsh',
      'erl',
      'escript',
      'ocaml',
      'systemd-nspawn',
      'fakechroot',
      'proot',
      'pkexec',
      'sg',
      'runcon',
      'start-stop-daemon',
      'dbus-run-session',
      'xvfb-run',
      'eatmydata',
      'faketime',
      'numactl',
      'torsocks',
      'proxychains',
      'catchsegv',
      'perlbug',
      'perlthanks',
      'pipx',
      'uv',
      'poetry',
      'gem',
      'bundle',
      'cpan',
      'composer',
      'cargo',
      'go',
      'mvn',
      'gradle',
      'ant',
      'cmake',
      'ninja',
      'meson',
      'scons',
      'rake',
      'lli',
    ]) {
      expect(refusedArgument(rule(program), [])).toBeNull();
    }
  });

  it('finds the family of a versioned name', () => {
    expect(programFamily('python3.11')).toBe('python');
    expect(programFamily('python3')).toBe('python');
    expect(programFamily('node')).toBe('node');
    expect(programFamily('lua5.4')).toBe('lua');
    expect(programFamily('perl5.36.0')).toBe('perl');
  });

  it.each([
    ['vim.basic', 'vim'],
    ['vim.tiny', 'vim'],
    ['vim.nox', 'vim'],
    ['vim.gtk3', 'vim'],
    ['sh.distrib', 'sh'],
    ['python3.11', 'python'],
    ['git', 'git'],
    ['python3.11-config', 'python3.11-config'],
    ['ssh-keygen', 'ssh-keygen'],
    ['7z', '7z'],
    ['123', '123'],
  ])('finds the family of %s without its distribution suffix', (name, family) => {
    expect(programFamily(name)).toBe(family);
  });

  it('runs sed with --sandbox', () => {
    expect(rule('sed').prependArguments).toEqual(['--sandbox']);
  });
});
