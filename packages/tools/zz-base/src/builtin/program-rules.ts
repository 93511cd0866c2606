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
   * for `--to-command`). A single-dash option is refused exactly (`-exec`); a two-character
   * one also with a value attached (`-cname=value`).
   */
  readonly options?: readonly string[];
  /**
   * Short option letters refused inside a single-dash cluster (`I` in `tar -xvIcmd`), and in a
   * first argument without a dash for programs with old-style clusters (`tar xIf`). The scan
   * of a cluster stops at the first letter of {@link ProgramRule.valueLetters}.
   */
  readonly shortLetters?: string;
  /** Letters that take a value, ending the scan of a cluster. */
  readonly valueLetters?: string;
  /** The first argument may be an old-style cluster without a dash (`tar xvf`). */
  readonly oldStyleClusters?: boolean;
  /**
   * Options refused only before the subcommand (the first argument that does not start with
   * `-`), matched like {@link ProgramRule.options}: git's `-c` is a global option there and
   * `git grep -c` counts matches.
   */
  readonly globalOptions?: readonly string[];
  /** Subcommands refused: the first argument that does not start with `-`. */
  readonly subcommands?: readonly string[];
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

const GIT: ProgramRule = Object.freeze({
  reason:
    'git options and subcommands that set configuration (aliases, core.* and hooks run programs), leave the workspace, or run commands',
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
  ]),
  subcommandOptions: Object.freeze({
    rebase: Object.freeze(['-x']),
    // `clone -c core.fsmonitor=…` takes effect before the checkout runs.
    clone: Object.freeze(['-u', '-c', '--config']),
    'ls-remote': Object.freeze(['-u']),
    grep: Object.freeze(['-O']),
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

const SORT: ProgramRule = Object.freeze({
  reason: 'sort --compress-program runs a program',
  options: Object.freeze(['--compress-program']),
});

const DIFF_PROGRAM: ProgramRule = Object.freeze({
  reason: '--diff-program runs a program',
  options: Object.freeze(['--diff-program']),
});

const REMOTE_COPY: ProgramRule = Object.freeze({
  reason: 'options that choose the remote shell or an ssh configuration run programs',
  options: Object.freeze(['-S', '-o', '-F', '-J']),
});

/**
 * The default table of code-running programs and options `ShellTool` refuses, by program name
 * (the allowlisted name, else the resolved program's file name, else that name without a
 * version suffix: `python3.11` is `python`). It is a denylist of known cases and cannot be
 * complete; the sandbox is the boundary. Loosen or replace a program's rule with
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
  scp: REMOTE_COPY,
  sftp: REMOTE_COPY,
  rsync: Object.freeze({
    reason: 'rsync options that choose the remote shell or program run programs',
    options: Object.freeze(['--rsh', '--rsync-path', '-e', '--daemon', '--config']),
    shortLetters: 'e',
    valueLetters: 'BfTM',
  }),
  zip: Object.freeze({
    reason: 'zip -TT runs the given test command',
    options: Object.freeze(['-TT', '--unzip-command']),
  }),
  wget: Object.freeze({
    reason: 'wget options that run commands or read startup commands',
    options: Object.freeze(['--use-askpass', '-e', '--execute', '--config']),
  }),
  openssl: Object.freeze({
    reason: 'openssl engines and providers load code',
    options: Object.freeze(['-engine', '-provider', '-provider-path']),
    subcommands: Object.freeze(['engine']),
  }),
  man: Object.freeze({
    reason: 'man options that choose a pager, browser or preprocessor run programs',
    options: Object.freeze(['-P', '--pager', '-H', '--html', '-p', '--preprocessor']),
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
  vi: interpreter('vi'),
  vim: interpreter('vim'),
  ex: interpreter('ex'),
  emacs: interpreter('emacs'),
});

/** The rule key of a program name without a version suffix (`python3.11` is `python`). */
export function programFamily(name: string): string {
  return name.replace(/[0-9][0-9.]*$/, '');
}

function refusesOption(argument: string, option: string): boolean {
  if (option.startsWith('--')) {
    if (!argument.startsWith('--')) return false;
    const name = argument.split('=', 1)[0] as string;
    // GNU getopt_long and git's parse-options accept any unambiguous abbreviation.
    return name.length > 2 && option.startsWith(name);
  }
  return argument === option || (option.length === 2 && argument.startsWith(option));
}

function clusterRefuses(cluster: string, letters: string, valueLetters: string): boolean {
  for (const letter of cluster) {
    if (letters.includes(letter)) return true;
    if (valueLetters.includes(letter)) return false;
  }
  return false;
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
  const subcommandIndex = args.findIndex((argument) => !argument.startsWith('-'));
  const subcommand = subcommandIndex === -1 ? undefined : args[subcommandIndex];
  for (const [index, argument] of args.entries()) {
    if (subcommandIndex === -1 || index < subcommandIndex) {
      for (const option of rule.globalOptions ?? []) {
        if (refusesOption(argument, option)) return argument;
      }
    }
    if (
      index === subcommandIndex &&
      subcommand !== undefined &&
      rule.subcommands?.includes(subcommand)
    ) {
      return subcommand;
    }
    for (const option of rule.options ?? []) {
      if (refusesOption(argument, option)) return argument;
    }
    const table = rule.subcommandOptions;
    if (
      table !== undefined &&
      subcommand !== undefined &&
      index > subcommandIndex &&
      Object.hasOwn(table, subcommand)
    ) {
      for (const option of table[subcommand] ?? []) {
        if (refusesOption(argument, option)) return argument;
      }
    }
    if (rule.shortLetters !== undefined) {
      const valueLetters = rule.valueLetters ?? '';
      if (argument.startsWith('-') && !argument.startsWith('--') && argument.length > 1) {
        if (clusterRefuses(argument.slice(1), rule.shortLetters, valueLetters)) return argument;
      } else if (
        index === 0 &&
        rule.oldStyleClusters === true &&
        /^[A-Za-z]+$/.test(argument) &&
        // Old-style clusters take every value from the following arguments: scan all letters.
        clusterRefuses(argument, rule.shortLetters, '')
      ) {
        return argument;
      }
    }
  }
  return undefined;
}
