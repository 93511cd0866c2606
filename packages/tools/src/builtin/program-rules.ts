/**
 * What `ShellTool` refuses in the arguments of one program before spawning it. Every field but
 * `reason` is optional; a rule with only a reason refuses nothing.
 */
export interface ProgramRule {
  /** Why, shown to the model in the error result (for example `runs other programs`). */
  readonly reason: string;
  /**
   * Refuse the program itself: allowlisting it fails at construction unless the host loosens
   * the rule (interpreters, and programs that run other programs).
   */
  readonly refuseProgram?: boolean;
  /** Refuse any argument (the program alone stays allowed, for example `env` printing the environment). */
  readonly refuseArguments?: boolean;
  /**
   * Options refused wherever they appear. A `--long` option is refused exactly, as
   * `--long=value`, and as any abbreviation of it that GNU-style parsers accept (`--to-com`
   * for `--to-command`). A two-character option `-x` is a short option: refused alone, with a
   * value attached (`-xvalue`), and inside a single-dash cluster (`-qx`, see
   * {@link ProgramRule.valueLetters}). A longer single-dash option is a single-dash long option
   * (`-exec`, OpenSSL's `-engine`): refused exactly, with a second dash (`--engine`) and with
   * `=value` (`-engine=x.so`).
   */
  readonly options?: readonly string[];
  /**
   * More short option letters refused inside a single-dash cluster (`I` in `tar -xvIcmd`), and
   * in a first argument without a dash for programs with old-style clusters (`tar xIf`).
   */
  readonly shortLetters?: string;
  /**
   * Short option letters that take a value (required or optional): the scan of a cluster
   * stops at the first one, because the rest of the argument is its value (`tar -cfI` names
   * the archive `I`). Without it every letter of a cluster is scanned, which can only refuse
   * more. A letter listed here that does not take a value would let a refused letter after it
   * through: list only letters known to take one.
   */
  readonly valueLetters?: string;
  /**
   * {@link ProgramRule.valueLetters} after a given subcommand, whose short options are its
   * own (`git rebase -s <strategy>`, `git grep -e <pattern>`); after a subcommand not listed,
   * `valueLetters` applies.
   */
  readonly subcommandValueLetters?: Readonly<Record<string, string>>;
  /**
   * Short options of more than one letter, for programs whose parsers read them inside
   * clusters (zip's `TT`): refused wherever they start in a single-dash cluster (`-TT`,
   * `-qTTcmd`, `-TT=cmd`) before the first value letter.
   */
  readonly clusterOptions?: readonly string[];
  /** The first argument may be an old-style cluster without a dash (`tar xvf`). */
  readonly oldStyleClusters?: boolean;
  /**
   * Options refused only before the subcommand (the first argument that does not start with
   * `-`), matched like {@link ProgramRule.options}: git's `-c` is a global option there and
   * `git grep -c` counts matches.
   */
  readonly globalOptions?: readonly string[];
  /**
   * Options before the subcommand that take the next argument as their value (git's
   * `-C <path>`, `-c <name=value>`), matched exactly: that argument is not the subcommand.
   * Without it, a value after such an option is read as the subcommand, which can only refuse
   * more.
   */
  readonly globalValueOptions?: readonly string[];
  /**
   * Subcommands refused: the first argument that does not start with `-` (and is not the value
   * of a {@link ProgramRule.globalValueOptions} option).
   */
  readonly subcommands?: readonly string[];
  /**
   * The only subcommands allowed, when given: a first argument that does not start with `-`
   * and is not listed is refused, so aliases, internal helpers and subcommands added by later
   * versions are refused too. A call without a subcommand (`git --version`) stays allowed.
   */
  readonly allowedSubcommands?: readonly string[];
  /**
   * Arguments refused when they start with one of these, wherever they appear: `@` for a
   * compiler's response file (a file of more options), `-B` for its program folder.
   */
  readonly argumentPrefixes?: readonly string[];
  /**
   * Options refused only after a given subcommand, matched like {@link ProgramRule.options}
   * (`git clone -u <program>`, while `git add -u` stays allowed).
   */
  readonly subcommandOptions?: Readonly<Record<string, readonly string[]>>;
  /** Arguments put before the caller's (for example GNU sed's `--sandbox`). */
  readonly prependArguments?: readonly string[];
}

const INTERPRETER = 'is an interpreter: any allowlisted interpreter runs arbitrary code';
const RUNNER = 'runs other programs given as arguments';

function interpreter(name: string): ProgramRule {
  return Object.freeze({ reason: `${name} ${INTERPRETER}`, refuseProgram: true });
}

function runner(name: string): ProgramRule {
  return Object.freeze({ reason: `${name} ${RUNNER}`, refuseProgram: true });
}

const AWK: ProgramRule = Object.freeze({
  reason: 'awk is a language (system(), pipes and output redirection run programs and write files)',
  refuseProgram: true,
});

const FIND: ProgramRule = Object.freeze({
  reason: 'find actions that run programs, delete or write files',
  options: Object.freeze([
    '-exec',
    '-execdir',
    '-ok',
    '-okdir',
    '-delete',
    '-fprint',
    '-fprint0',
    '-fprintf',
    '-fls',
  ]),
});

/**
 * The git subcommands allowed: ordinary work on a repository and read-only plumbing. Not
 * listed, so refused: aliases (`alias.x = !cmd`), internal helpers (`bisect--helper run`,
 * `submodule--helper foreach`: every name with `--`), `help` (its viewers come from
 * configuration), `mv` (git 2.39 moves a file into `.git`, through a symbolic link too, so it
 * could replace `.git/config`), `checkout-index` (`--prefix` writes anywhere, `.git/` too),
 * and the subcommands of the git rule's `subcommands`.
 */
const GIT_SUBCOMMANDS: readonly string[] = Object.freeze([
  'add',
  'am',
  'annotate',
  'apply',
  'archive',
  'blame',
  'branch',
  'cat-file',
  'check-attr',
  'check-ignore',
  'check-mailmap',
  'checkout',
  'cherry',
  'cherry-pick',
  'clean',
  'clone',
  'commit',
  'commit-tree',
  'count-objects',
  'describe',
  'diff',
  'diff-files',
  'diff-index',
  'diff-tree',
  'fetch',
  'for-each-ref',
  'format-patch',
  'fsck',
  'gc',
  'grep',
  'hash-object',
  'init',
  'log',
  'ls-files',
  'ls-remote',
  'ls-tree',
  'merge',
  'merge-base',
  'name-rev',
  'notes',
  'prune',
  'pull',
  'push',
  'range-diff',
  'read-tree',
  'rebase',
  'reflog',
  'remote',
  'replace',
  'reset',
  'restore',
  'rev-list',
  'rev-parse',
  'revert',
  'rm',
  'shortlog',
  'show',
  'show-branch',
  'show-ref',
  'sparse-checkout',
  'stash',
  'status',
  'switch',
  'symbolic-ref',
  'tag',
  'update-index',
  'update-ref',
  'verify-commit',
  'verify-tag',
  'version',
  'whatchanged',
  'worktree',
  'write-tree',
]);

/**
 * Configuration every git call runs with (`-c`, read after the repository's own, so it wins):
 * the settings that run a command during ordinary work, set to run none, so a `.git/config`
 * or `.git/hooks` written by any means (a file tool on the same folder) runs nothing through
 * them. Each is what git does without configuration, except hooks (none) and the editors
 * (`:`, git's "no editor": `git commit` without `-m` stops for an empty message).
 */
const GIT_PINNED_CONFIGURATION: readonly string[] = Object.freeze([
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.editor=:',
  'sequence.editor=:',
  'core.askPass=',
  'core.sshCommand=ssh',
  'gpg.program=gpg',
  'gpg.ssh.program=ssh-keygen',
  'gpg.x509.program=gpgsm',
  'gpg.ssh.defaultKeyCommand=',
  'protocol.ext.allow=never',
  'safe.bareRepository=explicit',
]);

const GIT: ProgramRule = Object.freeze({
  reason:
    'git runs only the allowed subcommands, and refuses options that set configuration (aliases, hooks and core.* run programs), write files where asked, leave the workspace or run commands',
  globalOptions: Object.freeze([
    '-c',
    '-C',
    '--config-env',
    '--exec-path',
    '--git-dir',
    '--work-tree',
    '--namespace',
    '--super-prefix',
    '--attr-source',
  ]),
  globalValueOptions: Object.freeze([
    '-c',
    '-C',
    '--config-env',
    '--git-dir',
    '--work-tree',
    '--namespace',
    '--super-prefix',
    '--attr-source',
  ]),
  options: Object.freeze([
    '--config-env',
    '--exec-path',
    '--git-dir',
    '--work-tree',
    '--upload-pack',
    '--receive-pack',
    '--exec',
    '--extcmd',
    '--tool',
    '--ext-diff',
    '--template',
    '--separate-git-dir',
    '--open-files-in-pager',
    // Output files: `log --output=.git/config` wrote git's own configuration.
    '--output',
    '--output-directory',
    // `apply --unsafe-paths` writes through `.git/` and outside the work tree.
    '--unsafe-paths',
    // `<subcommand> --help` starts `git help`, whose viewers come from configuration.
    '--help',
  ]),
  subcommandOptions: Object.freeze({
    'format-patch': Object.freeze(['-o']),
    archive: Object.freeze(['-o']),
    rebase: Object.freeze(['-x']),
    // `clone -c core.fsmonitor=…` takes effect before the checkout runs.
    clone: Object.freeze(['-u', '-c', '--config']),
    'ls-remote': Object.freeze(['-u']),
    grep: Object.freeze(['-O']),
  }),
  // Letters that take a value after these subcommands (git 2.39 `-h`), so a value attached in
  // a cluster is not read as more options: `git grep -ePATTERN` stays allowed, `-iOcmd` is not.
  subcommandValueLetters: Object.freeze({
    'format-patch': 'ovUMCBlSGOI',
    archive: 'o',
    rebase: 'xsXSCr',
    clone: 'uocbj',
    'ls-remote': 'uo',
    grep: 'OefABCm',
  }),
  subcommands: Object.freeze([
    'config',
    'submodule',
    'bisect',
    'filter-branch',
    'difftool',
    'mergetool',
    'daemon',
    'instaweb',
    'web--browse',
    'shell',
    'upload-pack',
    'receive-pack',
    'archimport',
    'cvsimport',
    'svn',
    'p4',
    'credential',
    'hook',
    'run-command',
    'send-email',
    'imap-send',
    'remote-ext',
    'remote-fd',
  ]),
  allowedSubcommands: GIT_SUBCOMMANDS,
  prependArguments: Object.freeze(GIT_PINNED_CONFIGURATION.flatMap((setting) => ['-c', setting])),
});

const TAR: ProgramRule = Object.freeze({
  reason: 'tar options that run programs',
  options: Object.freeze([
    '--to-command',
    '--use-compress-program',
    '--checkpoint-action',
    '--info-script',
    '--new-volume-script',
    '--rsh-command',
    '--rmt-command',
  ]),
  shortLetters: 'IF',
  valueLetters: 'bCfgHKLNTVX',
  oldStyleClusters: true,
});

const SED: ProgramRule = Object.freeze({
  reason:
    'sed in-place editing writes files (and runs with --sandbox, so e, w and r commands are refused)',
  options: Object.freeze(['--in-place', '-i']),
  shortLetters: 'i',
  valueLetters: 'efl',
  prependArguments: Object.freeze(['--sandbox']),
});

const RG: ProgramRule = Object.freeze({
  reason: 'ripgrep options that run programs',
  options: Object.freeze(['--pre', '--hostname-bin']),
});

const ENV: ProgramRule = Object.freeze({
  reason: 'env with arguments runs a program; env alone prints the environment',
  refuseArguments: true,
});

const PACKAGE_MANAGER = 'runs package scripts and installs code';
const BUILD_TOOL = 'runs the commands of a build file, scripts and code it builds';

/**
 * C compilers: a wrapper, plugins, spec files and a program folder run or load programs, and a
 * response file (`@file`) or `-Wl,`/`-Wp,` pass-through can carry any of them.
 */
const COMPILER: ProgramRule = Object.freeze({
  reason:
    'compiler options that run or load other programs (wrapper, plugins, spec files, a program folder, response files, linker and preprocessor pass-through)',
  options: Object.freeze([
    '-wrapper',
    '-fplugin',
    '-specs',
    '-Xlinker',
    '-Xpreprocessor',
    '-Xclang',
    '-mllvm',
    '-fpass-plugin',
    '-fuse-ld',
    '--ld-path',
  ]),
  argumentPrefixes: Object.freeze(['@', '-B', '-Wl,', '-Wp,']),
});

/**
 * sqlite3 runs in safe mode (`-safe`, sqlite3 3.37 and later): `.shell`, `.system`, `.load`,
 * `.once '|cmd'`, `load_extension()`, `edit()` and `ATTACH` are refused by sqlite3 itself, in
 * SQL arguments and `-cmd` alike. An init file is read before safe mode starts, and a nonce
 * lifts it.
 */
const SQLITE: ProgramRule = Object.freeze({
  reason:
    'sqlite3 runs with -safe (its dot-commands and functions that run programs, load code or open other files are refused); -init is read before safe mode, -nonce lifts it, -A writes files',
  options: Object.freeze(['-init', '-nonce', '-unsafe-testing', '-archive']),
  // Archive mode (`-Ax`, `-Acf`) extracts and writes files where asked.
  argumentPrefixes: Object.freeze(['-A']),
  prependArguments: Object.freeze(['-safe']),
});

/**
 * Whether a program name is the dynamic loader (`ld.so`, `ld-linux-x86-64.so.2`,
 * `ld-musl-x86_64.so.1`, `ld64.so.2`), which runs the program given as its argument. The
 * linker (`ld`, `ld.bfd`) is not.
 */
export function isDynamicLoaderName(name: string): boolean {
  return /^ld(?:64)?(?:-[A-Za-z0-9_.-]+)?\.so(?:\.[0-9]+)*$/.test(name);
}

const SORT: ProgramRule = Object.freeze({
  reason: 'sort --compress-program runs a program',
  options: Object.freeze(['--compress-program']),
});

const DIFF_PROGRAM: ProgramRule = Object.freeze({
  reason: '--diff-program runs a program',
  options: Object.freeze(['--diff-program']),
});

const REMOTE_COPY_REASON =
  'options that choose the remote shell, a local server program or an ssh configuration run programs';
const REMOTE_COPY_OPTIONS = Object.freeze(['-S', '-D', '-o', '-F', '-J']);

const SCP: ProgramRule = Object.freeze({
  reason: REMOTE_COPY_REASON,
  options: REMOTE_COPY_OPTIONS,
  valueLetters: 'cDFiJloPSX',
});

const SFTP: ProgramRule = Object.freeze({
  reason: REMOTE_COPY_REASON,
  options: REMOTE_COPY_OPTIONS,
  valueLetters: 'BbcDFiJloPRSsX',
});

/**
 * The default table of code-running programs and options `ShellTool` refuses, by program name
 * (a name the program goes by: the allowlisted name, a symbolic link on the way to its file or
 * the file's name; else such a name without a distribution or version suffix: `python3.11` is
 * `python`, `vim.basic` is `vim`). It is a denylist of known cases (git's subcommands
 * excepted: an allowlist) and cannot be complete; the sandbox is the boundary. Loosen or replace a program's rule with
 * `ShellToolOptions.programRules`.
 */
export const DEFAULT_PROGRAM_RULES: Readonly<Record<string, ProgramRule>> = Object.freeze({
  find: FIND,
  git: GIT,
  tar: TAR,
  gtar: TAR,
  bsdtar: TAR,
  rg: RG,
  sed: SED,
  gsed: SED,
  env: ENV,
  sort: SORT,
  diff3: DIFF_PROGRAM,
  sdiff: DIFF_PROGRAM,
  scp: SCP,
  sftp: SFTP,
  rsync: Object.freeze({
    reason: 'rsync options that choose the remote shell or program run programs',
    options: Object.freeze(['--rsh', '--rsync-path', '-e', '--daemon', '--config']),
    shortLetters: 'e',
    valueLetters: 'BfTM',
  }),
  zip: Object.freeze({
    reason: 'zip -TT runs the given test command',
    options: Object.freeze(['--unzip-command']),
    // zip reads its multi-letter short options inside clusters: `-qTTcmd` is `-q -TT cmd`.
    clusterOptions: Object.freeze(['TT']),
  }),
  wget: Object.freeze({
    reason: 'wget options that run commands or read startup commands',
    options: Object.freeze(['--use-askpass', '-e', '--execute', '--config']),
    valueLetters: 'eoaiBtOTwQPUlARDXIn',
  }),
  openssl: Object.freeze({
    reason: 'openssl engines, providers and configuration files load code',
    // A configuration file's engine and provider sections load shared objects too.
    options: Object.freeze([
      '-engine',
      '-ssl_client_engine',
      '-provider',
      '-provider-path',
      '-config',
    ]),
    subcommands: Object.freeze(['engine']),
  }),
  man: Object.freeze({
    reason: 'man options that choose a pager, browser or preprocessor run programs',
    options: Object.freeze(['-P', '--pager', '-H', '--html', '-p', '--preprocessor']),
    valueLetters: 'CRLmMSsePrEpTHX',
  }),
  awk: AWK,
  gawk: AWK,
  mawk: AWK,
  nawk: AWK,
  xargs: runner('xargs'),
  sh: interpreter('sh'),
  bash: interpreter('bash'),
  dash: interpreter('dash'),
  zsh: interpreter('zsh'),
  ksh: interpreter('ksh'),
  fish: interpreter('fish'),
  csh: interpreter('csh'),
  tcsh: interpreter('tcsh'),
  busybox: interpreter('busybox'),
  python: interpreter('python'),
  pypy: interpreter('pypy'),
  node: interpreter('node'),
  nodejs: interpreter('nodejs'),
  deno: interpreter('deno'),
  bun: interpreter('bun'),
  perl: interpreter('perl'),
  ruby: interpreter('ruby'),
  php: interpreter('php'),
  lua: interpreter('lua'),
  luajit: interpreter('luajit'),
  tclsh: interpreter('tclsh'),
  expect: interpreter('expect'),
  make: Object.freeze({ reason: 'make runs the recipes of a Makefile', refuseProgram: true }),
  npm: Object.freeze({ reason: `npm ${PACKAGE_MANAGER}`, refuseProgram: true }),
  npx: Object.freeze({ reason: `npx ${PACKAGE_MANAGER}`, refuseProgram: true }),
  pnpm: Object.freeze({ reason: `pnpm ${PACKAGE_MANAGER}`, refuseProgram: true }),
  yarn: Object.freeze({ reason: `yarn ${PACKAGE_MANAGER}`, refuseProgram: true }),
  pip: Object.freeze({ reason: `pip ${PACKAGE_MANAGER}`, refuseProgram: true }),
  pipx: Object.freeze({ reason: `pipx ${PACKAGE_MANAGER}`, refuseProgram: true }),
  uv: Object.freeze({ reason: `uv ${PACKAGE_MANAGER}`, refuseProgram: true }),
  poetry: Object.freeze({ reason: `poetry ${PACKAGE_MANAGER}`, refuseProgram: true }),
  gem: Object.freeze({ reason: `gem ${PACKAGE_MANAGER}`, refuseProgram: true }),
  bundle: Object.freeze({ reason: `bundle ${PACKAGE_MANAGER}`, refuseProgram: true }),
  cpan: Object.freeze({ reason: `cpan ${PACKAGE_MANAGER}`, refuseProgram: true }),
  composer: Object.freeze({ reason: `composer ${PACKAGE_MANAGER}`, refuseProgram: true }),
  cargo: Object.freeze({ reason: `cargo ${BUILD_TOOL}`, refuseProgram: true }),
  go: Object.freeze({ reason: `go ${BUILD_TOOL}`, refuseProgram: true }),
  mvn: Object.freeze({ reason: `mvn ${BUILD_TOOL}`, refuseProgram: true }),
  gradle: Object.freeze({ reason: `gradle ${BUILD_TOOL}`, refuseProgram: true }),
  ant: Object.freeze({ reason: `ant ${BUILD_TOOL}`, refuseProgram: true }),
  cmake: Object.freeze({ reason: `cmake ${BUILD_TOOL}`, refuseProgram: true }),
  ninja: Object.freeze({ reason: `ninja ${BUILD_TOOL}`, refuseProgram: true }),
  meson: Object.freeze({ reason: `meson ${BUILD_TOOL}`, refuseProgram: true }),
  scons: Object.freeze({ reason: `scons ${BUILD_TOOL}`, refuseProgram: true }),
  rake: Object.freeze({ reason: `rake ${BUILD_TOOL}`, refuseProgram: true }),
  lli: interpreter('lli'),
  timeout: runner('timeout'),
  nice: runner('nice'),
  nohup: runner('nohup'),
  setsid: runner('setsid'),
  stdbuf: runner('stdbuf'),
  flock: runner('flock'),
  chroot: runner('chroot'),
  sudo: runner('sudo'),
  su: runner('su'),
  doas: runner('doas'),
  runuser: runner('runuser'),
  setpriv: runner('setpriv'),
  unshare: runner('unshare'),
  nsenter: runner('nsenter'),
  prlimit: runner('prlimit'),
  taskset: runner('taskset'),
  ionice: runner('ionice'),
  chrt: runner('chrt'),
  watch: runner('watch'),
  script: runner('script'),
  parallel: runner('parallel'),
  strace: runner('strace'),
  ltrace: runner('ltrace'),
  gdb: runner('gdb'),
  ssh: runner('ssh'),
  'ssh-agent': runner('ssh-agent'),
  setarch: runner('setarch'),
  linux32: runner('linux32'),
  linux64: runner('linux64'),
  i386: runner('i386'),
  x86_64: runner('x86_64'),
  time: runner('time'),
  // The dynamic loader under any of its names (isDynamicLoaderName) has this rule.
  'ld.so': runner('ld.so'),
  bwrap: runner('bwrap'),
  'systemd-run': runner('systemd-run'),
  'systemd-nspawn': runner('systemd-nspawn'),
  capsh: runner('capsh'),
  fakeroot: runner('fakeroot'),
  fakechroot: runner('fakechroot'),
  firejail: runner('firejail'),
  proot: runner('proot'),
  valgrind: runner('valgrind'),
  pkexec: runner('pkexec'),
  sg: runner('sg'),
  runcon: runner('runcon'),
  'start-stop-daemon': runner('start-stop-daemon'),
  'dbus-run-session': runner('dbus-run-session'),
  'xvfb-run': runner('xvfb-run'),
  eatmydata: runner('eatmydata'),
  faketime: runner('faketime'),
  numactl: runner('numactl'),
  torsocks: runner('torsocks'),
  proxychains: runner('proxychains'),
  catchsegv: runner('catchsegv'),
  // perlbug and perlthanks run the editor their `-e` names.
  perlbug: runner('perlbug'),
  perlthanks: runner('perlthanks'),
  java: interpreter('java'),
  jshell: interpreter('jshell'),
  R: interpreter('R'),
  Rscript: interpreter('Rscript'),
  julia: interpreter('julia'),
  guile: interpreter('guile'),
  racket: interpreter('racket'),
  wish: interpreter('wish'),
  pwsh: interpreter('pwsh'),
  erl: interpreter('erl'),
  escript: interpreter('escript'),
  ocaml: interpreter('ocaml'),
  gcc: COMPILER,
  cc: COMPILER,
  'c++': COMPILER,
  'g++': COMPILER,
  c89: COMPILER,
  c99: COMPILER,
  cpp: COMPILER,
  clang: COMPILER,
  'clang++': COMPILER,
  sqlite3: SQLITE,
  vi: interpreter('vi'),
  vim: interpreter('vim'),
  nvim: interpreter('nvim'),
  ex: interpreter('ex'),
  emacs: interpreter('emacs'),
});

/**
 * The rule key of a program name without a distribution or version suffix: the name before
 * its final `.suffix` components of letters and digits, without trailing version digits
 * (`python3.11` and `python3` are `python`, `vim.basic` is `vim`, `sh.distrib` is `sh`).
 */
export function programFamily(name: string): string {
  const family = name.replace(/(?:\.[A-Za-z0-9]+)+$/, '').replace(/[0-9][0-9.]*$/, '');
  return family === '' ? name : family;
}

function refusesOption(argument: string, option: string): boolean {
  if (option.startsWith('--')) {
    if (!argument.startsWith('--')) return false;
    const name = argument.split('=', 1)[0] as string;
    // GNU getopt_long and git's parse-options accept any unambiguous abbreviation.
    return name.length > 2 && option.startsWith(name);
  }
  if (!option.startsWith('-')) return argument === option;
  // A short option, alone or with its value attached; clusters are scanned apart.
  if (option.length === 2) return argument.startsWith(option);
  // A single-dash long option: OpenSSL also reads `--engine` and `-engine=value`.
  const name = (argument.startsWith('--') ? argument.slice(1) : argument).split('=', 1)[0];
  return name === option;
}

/** The letters of the short options (`-x`) of a list. */
function shortOptionLetters(options: readonly string[] | undefined): string {
  let letters = '';
  for (const option of options ?? []) {
    if (option.length === 2 && option[0] === '-' && option[1] !== '-') letters += option[1];
  }
  return letters;
}

/**
 * Whether a getopt-style cluster (the letters after one dash) holds a refused option: walked
 * left to right, a refused letter or multi-letter option refuses, and the first letter that
 * takes a value ends the scan (the rest is its value).
 */
function clusterRefuses(
  cluster: string,
  letters: string,
  valueLetters: string,
  multiLetter: readonly string[],
): boolean {
  for (let index = 0; index < cluster.length; index += 1) {
    if (multiLetter.some((option) => cluster.startsWith(option, index))) return true;
    const letter = cluster[index] as string;
    if (letters.includes(letter)) return true;
    if (valueLetters.includes(letter)) return false;
  }
  return false;
}

/**
 * The index of the subcommand: the first argument that does not start with `-` and is not the
 * value of a global option that takes one; -1 when there is none.
 */
export function findSubcommand(rule: ProgramRule, args: readonly string[]): number {
  for (let index = 0; index < args.length; index += 1) {
    const argument = args[index] as string;
    if (!argument.startsWith('-')) return index;
    if (rule.globalValueOptions?.includes(argument)) index += 1;
  }
  return -1;
}

/**
 * The argument refused by `rule`, if any (`null` when the program itself is refused): the
 * caller's arguments are checked, never the prepended ones.
 */
export function refusedArgument(
  rule: ProgramRule,
  args: readonly string[],
): string | null | undefined {
  if (rule.refuseProgram === true) return null;
  if (rule.refuseArguments === true && args.length > 0) return args[0];
  const subcommandIndex = findSubcommand(rule, args);
  const subcommand = subcommandIndex === -1 ? undefined : args[subcommandIndex];
  const subcommandOptions =
    subcommand !== undefined &&
    rule.subcommandOptions !== undefined &&
    Object.hasOwn(rule.subcommandOptions, subcommand)
      ? rule.subcommandOptions[subcommand]
      : undefined;
  const subcommandValueLetters =
    subcommand !== undefined &&
    rule.subcommandValueLetters !== undefined &&
    Object.hasOwn(rule.subcommandValueLetters, subcommand)
      ? rule.subcommandValueLetters[subcommand]
      : undefined;
  const everywhere = (rule.shortLetters ?? '') + shortOptionLetters(rule.options);
  const before = everywhere + shortOptionLetters(rule.globalOptions);
  const after = everywhere + shortOptionLetters(subcommandOptions);
  const multiLetter = rule.clusterOptions ?? [];
  for (const [index, argument] of args.entries()) {
    const isBefore = subcommandIndex === -1 || index < subcommandIndex;
    const isAfter = subcommandIndex !== -1 && index > subcommandIndex;
    if (isBefore) {
      for (const option of rule.globalOptions ?? []) {
        if (refusesOption(argument, option)) return argument;
      }
    }
    if (
      index === subcommandIndex &&
      (rule.subcommands?.includes(argument) ||
        (rule.allowedSubcommands !== undefined && !rule.allowedSubcommands.includes(argument)))
    ) {
      return argument;
    }
    if (rule.argumentPrefixes?.some((prefix) => argument.startsWith(prefix))) return argument;
    for (const option of rule.options ?? []) {
      if (refusesOption(argument, option)) return argument;
    }
    if (isAfter) {
      for (const option of subcommandOptions ?? []) {
        if (refusesOption(argument, option)) return argument;
      }
    }
    if (argument.startsWith('-') && !argument.startsWith('--') && argument.length > 1) {
      const letters = isBefore ? before : isAfter ? after : everywhere;
      const valueLetters = isAfter
        ? (subcommandValueLetters ?? rule.valueLetters ?? '')
        : (rule.valueLetters ?? '');
      if (clusterRefuses(argument.slice(1), letters, valueLetters, multiLetter)) return argument;
    } else if (
      index === 0 &&
      rule.oldStyleClusters === true &&
      /^[A-Za-z]+$/.test(argument) &&
      // Old-style clusters take every value from the following arguments: scan all letters.
      clusterRefuses(argument, everywhere, '', multiLetter)
    ) {
      return argument;
    }
  }
  return undefined;
}
