import { accessSync, constants, readlinkSync, realpathSync, type Stats, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import {
  compareRisk,
  defineContract,
  isRiskLevel,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from '@toolfence/tool-contract';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { errorResult, jsonResult } from '../registry/tool.js';
import { parseRelativePath, resolveInside } from './confined-path.js';
import { FileSystemAccessError } from './file-system-error.js';
import { LocalProcessSandbox } from './local-process-sandbox.js';
import {
  DEFAULT_PROGRAM_RULES,
  findSubcommand,
  isDynamicLoaderName,
  type ProgramRule,
  programFamily,
  refusedArgument,
} from './program-rules.js';
import type { Sandbox } from './sandbox.js';
import { ShellToolOptionsError } from './shell-tool-options-error.js';
import {
  descriptorWorkingDirectoriesWork,
  openWorkingDirectory,
  type WorkingDirectoryRefusal,
  WorkingDirectoryRefusedError,
} from './working-directory.js';

const CWD_MESSAGES: Readonly<Record<WorkingDirectoryRefusal, string>> = {
  workspace_changed:
    'The workspace was moved or replaced after the tool was created; nothing was run. Recreate the tool for the new folder.',
  symlink: 'cwd goes through a symbolic link; links are refused. Send the real folder path.',
  not_found: 'cwd must be a folder inside the workspace; it does not exist.',
  not_a_folder: 'cwd must be a folder inside the workspace.',
  unreadable: 'cwd must be a folder inside the workspace that can be opened.',
};

/** The cwd argument as workspace-relative segments; refuses anything else. */
function parseCwd(value: unknown): readonly string[] {
  try {
    return parseRelativePath(value);
  } catch (error) {
    if (FileSystemAccessError.isInstance(error)) {
      fail('cwd must be a folder inside the workspace.', 'SHELL_CWD_INVALID');
    }
    throw error;
  }
}

/** Options of {@link ShellTool}. */
export interface ShellToolOptions {
  /** Folder commands run in (and, with `BubblewrapSandbox`, the only writable one). Its real path is taken once. */
  readonly workspace: string;
  /** Bare program names (no `/`), each resolved once, at construction, to the absolute path found in `searchPath`. */
  readonly allowedCommands: readonly string[];
  /** Runs the process. Default `new LocalProcessSandbox()` (limits, not isolation). */
  readonly sandbox?: Sandbox;
  /**
   * Per-program rules that replace the default ones of {@link DEFAULT_PROGRAM_RULES} (by
   * allowlisted command name): a {@link ProgramRule}, or `'unrestricted'` to drop the default
   * rule of that program. Default none (the default table applies).
   */
  readonly programRules?: Readonly<Record<string, ProgramRule | 'unrestricted'>>;
  /**
   * Allowlisted commands the host declares read-only: their calls have the `read` effect, so
   * `RiskPolicy` judges them `read-only` and a read-only access scope allows them. Default `[]`.
   * Declare only programs that cannot write with any argument the program rules let through.
   */
  readonly readOnlyCommands?: readonly string[];
  /** Declared risk of every other command (the tool's contract). Default `'destructive'`. */
  readonly risk?: RiskLevel;
  /**
   * Declared risk per allowlisted command, for commands that are neither read-only nor as risky
   * as `risk` (for example `{ touch: 'low-risk-write' }`); each call is judged by its command's.
   * Any level but `read-only` (declare those in `readOnlyCommands`, which checks the program
   * rules). Default none: every command not in `readOnlyCommands` has `risk`.
   */
  readonly commandRisks?: Readonly<Record<string, RiskLevel>>;
  /** Where environment values come from. Default `process.env` as it is at construction. */
  readonly baseEnvironment?: Readonly<Record<string, string | undefined>>;
  /**
   * Keys copied from `baseEnvironment` (so, by default, from the host's environment);
   * everything else is left out. Default `['PATH', 'LANG', 'LC_ALL', 'TZ']`; `[]` starts from
   * an empty environment.
   */
  readonly allowedEnvironment?: readonly string[];
  /**
   * Upper bound (and default) of a call's time limit, in milliseconds, at most 86,400,000 (one
   * day). Default 60,000. The model gives its own limit as `timeoutSeconds` (at most this).
   */
  readonly maxTimeoutMs?: number;
  /** Byte budget shared by stdout and stderr. Default 1,000,000. */
  readonly maxOutputBytes?: number;
  /** Folders searched when resolving `allowedCommands`. Default `/usr/local/bin:/usr/bin:/bin`. */
  readonly searchPath?: string;
  /** Tool name in a registry. Default `shell`. */
  readonly name?: string;
}

/** Most arguments one call may pass. */
export const MAX_SHELL_ARGUMENTS = 1024;
/** Most bytes all arguments of one call may total. */
export const MAX_SHELL_ARGUMENT_BYTES = 131_072;

const COMMAND_NAME = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}$/;

const optionError = (message: string, option: string): Error =>
  new ShellToolOptionsError(message, { details: { option } });

const OPTION_KEYS: readonly string[] = Object.freeze([
  'workspace',
  'allowedCommands',
  'sandbox',
  'programRules',
  'readOnlyCommands',
  'risk',
  'commandRisks',
  'baseEnvironment',
  'allowedEnvironment',
  'maxTimeoutMs',
  'maxOutputBytes',
  'searchPath',
  'name',
]);

const RULE_KEYS: ReadonlySet<string> = new Set([
  'reason',
  'refuseProgram',
  'refuseArguments',
  'options',
  'globalOptions',
  'shortLetters',
  'valueLetters',
  'subcommandValueLetters',
  'clusterOptions',
  'oldStyleClusters',
  'globalValueOptions',
  'subcommands',
  'allowedSubcommands',
  'subcommandOptions',
  'argumentPrefixes',
  'prependArguments',
]);

function checkRule(command: string, rule: unknown): ProgramRule | undefined {
  if (rule === 'unrestricted') return undefined;
  const fail = (what: string): never => {
    throw new ShellToolOptionsError(
      `programRules.${command} ${what}; pass 'unrestricted' or a rule { reason, refuseProgram?, refuseArguments?, options?, globalOptions?, shortLetters?, valueLetters?, subcommandValueLetters?, clusterOptions?, oldStyleClusters?, globalValueOptions?, subcommands?, allowedSubcommands?, subcommandOptions?, argumentPrefixes?, prependArguments? }.`,
      { details: { option: 'programRules', command } },
    );
  };
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) fail('is not a rule');
  const record = rule as Record<string, unknown>;
  for (const key of Object.keys(record)) if (!RULE_KEYS.has(key)) fail('has an unknown field');
  if (typeof record.reason !== 'string' || record.reason === '' || record.reason.length > 200) {
    fail('needs a reason of 1-200 characters');
  }
  for (const key of ['refuseProgram', 'refuseArguments', 'oldStyleClusters']) {
    if (record[key] !== undefined && typeof record[key] !== 'boolean')
      fail(`${key} must be a boolean`);
  }
  for (const key of ['shortLetters', 'valueLetters']) {
    if (
      record[key] !== undefined &&
      (typeof record[key] !== 'string' || !/^[A-Za-z0-9]*$/.test(record[key]))
    ) {
      fail(`${key} must be a string of letters`);
    }
  }
  if (record.subcommandValueLetters !== undefined) {
    const table = record.subcommandValueLetters;
    if (
      typeof table !== 'object' ||
      table === null ||
      Array.isArray(table) ||
      Object.values(table).some(
        (letters) => typeof letters !== 'string' || !/^[A-Za-z0-9]*$/.test(letters),
      )
    ) {
      fail('subcommandValueLetters must map subcommands to strings of letters');
    }
  }
  if (
    record.clusterOptions !== undefined &&
    (!Array.isArray(record.clusterOptions) ||
      record.clusterOptions.some(
        (item) => typeof item !== 'string' || !/^[A-Za-z0-9]+$/.test(item),
      ))
  ) {
    fail('clusterOptions must be an array of non-empty strings of letters');
  }
  if (record.subcommandOptions !== undefined) {
    const table = record.subcommandOptions;
    if (
      typeof table !== 'object' ||
      table === null ||
      Array.isArray(table) ||
      Object.values(table).some(
        (list) =>
          !Array.isArray(list) ||
          list.some((item) => typeof item !== 'string' || item === '' || item.includes('\0')),
      )
    ) {
      fail('subcommandOptions must map subcommands to arrays of non-empty strings');
    }
  }
  for (const key of [
    'options',
    'globalOptions',
    'globalValueOptions',
    'subcommands',
    'allowedSubcommands',
    'argumentPrefixes',
    'prependArguments',
  ]) {
    const list = record[key];
    if (
      list !== undefined &&
      (!Array.isArray(list) ||
        list.some((item) => typeof item !== 'string' || item === '' || item.includes('\0')))
    ) {
      fail(`${key} must be an array of non-empty strings`);
    }
  }
  // A frozen deep copy: changing the host's object later changes nothing.
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (Array.isArray(value)) copy[key] = Object.freeze([...value]);
    else if (key === 'subcommandOptions') {
      const table: Record<string, readonly string[]> = {};
      for (const [subcommand, list] of Object.entries(value as Record<string, string[]>)) {
        table[subcommand] = Object.freeze([...list]);
      }
      copy[key] = Object.freeze(table);
    } else if (key === 'subcommandValueLetters') {
      copy[key] = Object.freeze({ ...(value as Record<string, string>) });
    } else copy[key] = value;
  }
  return Object.freeze(copy) as unknown as ProgramRule;
}

function ruleFor(
  command: string,
  program: string,
  rules: Readonly<Record<string, unknown>>,
  searchPath: string,
): ProgramRule | undefined {
  if (Object.hasOwn(rules, command)) return checkRule(command, rules[command]);
  return defaultRuleFor(program, searchPath);
}

/** Most symbolic links followed from an allowlisted program to its file (the kernel's is 40). */
const MAX_LINKS = 40;

/**
 * The names a program goes by: the name found, the name of every symbolic link on the way to
 * its file (`/usr/bin/view` → `/etc/alternatives/view` → `/usr/bin/vim.basic`), and its real
 * file's name.
 */
function programNames(program: string): string[] {
  const names = [basename(program)];
  let current = program;
  for (let hop = 0; hop < MAX_LINKS; hop += 1) {
    try {
      const target = readlinkSync(current);
      current = resolve(realpathSync(dirname(current)), target);
    } catch {
      break;
    }
    names.push(basename(current));
  }
  try {
    names.push(basename(realpathSync(program)));
  } catch {
    // Resolved at construction; keep the names found.
  }
  return names;
}

/**
 * A cross compiler's name: a target triple of three parts, the compiler, an optional version
 * (`x86_64-linux-gnu-gcc-12`, `arm-none-eabi-g++`): group 1 is the compiler.
 */
const CROSS_COMPILER = /^[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-(.+?)(?:-[0-9][0-9.]*)?$/;

/** Folders where a program's family name is looked up to confirm a `-suffix` (below). */
const FAMILY_FOLDERS: readonly string[] = ['/usr/local/bin', '/usr/bin', '/bin'];

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/**
 * The default rule of a program, by the names it goes by ({@link programNames}): a name of
 * the table, else a name's family without a distribution or version suffix (`vim.basic` and
 * `view` → `vim.basic` are `vim`, `python3.11` is `python`), else the dynamic loader under any
 * of its names (`ld-linux-x86-64.so.2`), else a cross compiler by its compiler
 * (`x86_64-linux-gnu-gcc-12` is `gcc`), else the part before a `-`: a refused program with a
 * version (`perl5.36-x86_64-linux-gnu` is `perl`, `python3.11-dbg` is `python`) or followed by
 * a version (`clang-15`, `lua-5.4`) at once, any other family name only when, found in
 * `searchPath` or the system folders, it is the very same file (`emacs-gtk` is `emacs` where
 * `emacs` leads to it; `ssh-keygen` is not `ssh`).
 */
function defaultRuleFor(program: string, searchPath: string): ProgramRule | undefined {
  const names = programNames(program);
  for (const key of [...names, ...names.map(programFamily)]) {
    if (Object.hasOwn(DEFAULT_PROGRAM_RULES, key)) return DEFAULT_PROGRAM_RULES[key];
  }
  if (names.some(isDynamicLoaderName)) return DEFAULT_PROGRAM_RULES['ld.so'];
  let file: Stats | undefined;
  for (const name of names) {
    const dash = name.indexOf('-');
    if (dash <= 0) continue;
    const before = name.slice(0, dash);
    const family = programFamily(before);
    // A cross compiler: a target triple, then the compiler (`x86_64-linux-gnu-gcc-12`).
    const cross = CROSS_COMPILER.exec(name)?.[1];
    if (cross !== undefined && DEFAULT_PROGRAM_RULES[cross] === DEFAULT_PROGRAM_RULES.gcc) {
      return DEFAULT_PROGRAM_RULES[cross];
    }
    if (!Object.hasOwn(DEFAULT_PROGRAM_RULES, family)) continue;
    // A versioned interpreter's own file (`perl5.36-x86_64-linux-gnu` is not the file `perl`
    // leads to), and a name, a dash and a version (`clang-15`, `lua-5.4`), count without the
    // same-file check.
    if (
      (family !== before && DEFAULT_PROGRAM_RULES[family]?.refuseProgram === true) ||
      /^[0-9][0-9.]*$/.test(name.slice(dash + 1))
    ) {
      return DEFAULT_PROGRAM_RULES[family];
    }
    try {
      file ??= statSync(program);
    } catch {
      return undefined;
    }
    const folders = [...searchPath.split(':'), ...FAMILY_FOLDERS].filter((folder) =>
      folder.startsWith('/'),
    );
    for (const folder of new Set(folders)) {
      try {
        if (sameFile(statSync(`${folder.replace(/\/+$/, '')}/${family}`), file)) {
          return DEFAULT_PROGRAM_RULES[family];
        }
      } catch {
        // Not here.
      }
    }
  }
  return undefined;
}

function resolveProgram(name: string, searchPath: string): string {
  for (const folder of searchPath.split(':')) {
    if (!folder.startsWith('/')) continue;
    const candidate = `${folder.replace(/\/+$/, '')}/${name}`;
    try {
      // Keep the path found (not its real path): multi-call programs such as busybox choose
      // what to do from the name they are started as.
      if (statSync(realpathSync(candidate)).isFile()) {
        accessSync(candidate, constants.X_OK);
        return candidate;
      }
    } catch {
      // Not here.
    }
  }
  throw new ShellToolOptionsError('An allowed command was not found in searchPath.', {
    details: { command: name },
  });
}

function fail(message: string, code: string): never {
  throw Object.assign(new Error(message), { shellCode: code });
}

/**
 * Runs allowlisted programs with argv (never a shell) inside a workspace, through a
 * {@link Sandbox}. Programs and options of {@link DEFAULT_PROGRAM_RULES} that run code are
 * refused before spawning. The environment holds only the allowlisted keys of the host's;
 * stdout and stderr share one byte budget; on timeout or budget the whole process group is
 * killed. The result is `{ exitCode, signal, stdout, stderr, timedOut, truncated, limit }`, an
 * error result for a non-zero exit, a signal, a timeout or a resource limit.
 */
export class ShellTool implements Tool {
  /** Name, description, input schema and risk of the tool as the registry and models see it. */
  readonly spec: ToolSpec;
  readonly #workspace: string;
  readonly #workspaceStat: Stats;
  readonly #programs: ReadonlyMap<string, string>;
  readonly #sandbox: Sandbox;
  readonly #environment: Readonly<Record<string, string>>;
  readonly #maxTimeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #rules: ReadonlyMap<string, ProgramRule>;

  /**
   * Resolves the workspace and each allowed command to a program path and checks the options.
   * Throws {@link ShellToolOptionsError} for an invalid or unknown option, a command that is
   * not found, or a command whose program rule refuses it outright (an interpreter, a program
   * runner) unless `programRules` loosens it.
   */
  constructor(options: ShellToolOptions) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ShellToolOptionsError('ShellTool needs an options object.');
    }
    checkOptionKeys(options, OPTION_KEYS, 'ShellTool', optionError, {
      maxTimeoutSeconds: 'maxTimeoutMs',
    });
    const {
      workspace,
      allowedCommands,
      programRules = {},
      readOnlyCommands = [],
      risk = 'destructive',
      commandRisks = {},
      baseEnvironment = process.env,
      allowedEnvironment = ['PATH', 'LANG', 'LC_ALL', 'TZ'],
      maxTimeoutMs = 60_000,
      maxOutputBytes = 1_000_000,
      searchPath = '/usr/local/bin:/usr/bin:/bin',
      name = 'shell',
    } = options;
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) {
      throw new ShellToolOptionsError('name must be 1-64 letters, digits, _ . or -.');
    }
    if (typeof workspace !== 'string' || workspace === '' || workspace.includes('\0')) {
      throw new ShellToolOptionsError('workspace must be a folder path.');
    }
    try {
      this.#workspace = realpathSync(workspace);
      this.#workspaceStat = statSync(this.#workspace);
    } catch (error) {
      throw new ShellToolOptionsError('workspace must be an existing folder.', { cause: error });
    }
    if (!this.#workspaceStat.isDirectory()) {
      throw new ShellToolOptionsError('workspace must be a folder.');
    }
    if (
      !Array.isArray(allowedCommands) ||
      allowedCommands.length === 0 ||
      allowedCommands.some((command) => typeof command !== 'string' || !COMMAND_NAME.test(command))
    ) {
      throw new ShellToolOptionsError(
        'allowedCommands must be a non-empty array of bare program names.',
      );
    }
    if (typeof searchPath !== 'string')
      throw new ShellToolOptionsError('searchPath must be a string.');
    const sandbox: Sandbox = options.sandbox ?? new LocalProcessSandbox();
    if (
      typeof sandbox !== 'object' ||
      sandbox === null ||
      typeof sandbox.run !== 'function' ||
      (sandbox.verify !== undefined && typeof sandbox.verify !== 'function')
    ) {
      throw new ShellToolOptionsError('sandbox must implement run().');
    }
    if (
      typeof maxTimeoutMs !== 'number' ||
      !Number.isSafeInteger(maxTimeoutMs) ||
      maxTimeoutMs <= 0 ||
      maxTimeoutMs > 86_400_000
    ) {
      throw new ShellToolOptionsError(
        'maxTimeoutMs must be a whole number of milliseconds from 1 to 86400000 (one day).',
      );
    }
    if (
      typeof maxOutputBytes !== 'number' ||
      !Number.isSafeInteger(maxOutputBytes) ||
      maxOutputBytes < 1
    ) {
      throw new ShellToolOptionsError('maxOutputBytes must be a positive safe integer.');
    }
    if (typeof baseEnvironment !== 'object' || baseEnvironment === null) {
      throw new ShellToolOptionsError('baseEnvironment must be an object.');
    }
    if (
      !Array.isArray(allowedEnvironment) ||
      allowedEnvironment.some(
        (key) => typeof key !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key),
      )
    ) {
      throw new ShellToolOptionsError('allowedEnvironment must be an array of variable names.');
    }
    if (typeof programRules !== 'object' || programRules === null || Array.isArray(programRules)) {
      throw new ShellToolOptionsError('programRules must be an object keyed by command name.', {
        details: { option: 'programRules' },
      });
    }
    for (const command of Object.keys(programRules)) {
      if (!allowedCommands.includes(command)) {
        throw new ShellToolOptionsError(
          `programRules names ${JSON.stringify(command.slice(0, 64))}, which is not in allowedCommands.`,
          { details: { option: 'programRules' } },
        );
      }
    }
    if (
      !Array.isArray(readOnlyCommands) ||
      readOnlyCommands.some(
        (command) => typeof command !== 'string' || !allowedCommands.includes(command),
      )
    ) {
      throw new ShellToolOptionsError('readOnlyCommands must name commands of allowedCommands.', {
        details: { option: 'readOnlyCommands' },
      });
    }
    if (!isRiskLevel(risk)) {
      throw new ShellToolOptionsError(`risk must be one of ${RISK_LEVELS.join(', ')}.`, {
        details: { option: 'risk' },
      });
    }
    if (typeof commandRisks !== 'object' || commandRisks === null || Array.isArray(commandRisks)) {
      throw new ShellToolOptionsError('commandRisks must be an object keyed by command name.', {
        details: { option: 'commandRisks' },
      });
    }
    for (const [command, level] of Object.entries(commandRisks)) {
      const shown = JSON.stringify(command.slice(0, 64));
      if (!allowedCommands.includes(command)) {
        throw new ShellToolOptionsError(
          `commandRisks names ${shown}, which is not in allowedCommands.`,
          { details: { option: 'commandRisks' } },
        );
      }
      if (!isRiskLevel(level) || level === 'read-only') {
        throw new ShellToolOptionsError(
          `commandRisks[${shown}] must be one of ${RISK_LEVELS.filter((item) => item !== 'read-only').join(', ')} (declare read-only commands in readOnlyCommands).`,
          { details: { option: 'commandRisks', command } },
        );
      }
      if (readOnlyCommands.includes(command)) {
        throw new ShellToolOptionsError(
          `${shown} is in both readOnlyCommands and commandRisks; declare it once.`,
          { details: { option: 'commandRisks', command } },
        );
      }
    }
    const programs = new Map<string, string>();
    const rules = new Map<string, ProgramRule>();
    for (const command of allowedCommands) {
      const program = resolveProgram(command, searchPath);
      programs.set(command, program);
      const rule = ruleFor(command, program, programRules, searchPath);
      if (rule?.refuseProgram === true) {
        throw new ShellToolOptionsError(
          `${command} is refused: ${rule.reason}. Allowlisting it hands the model everything the sandbox allows; if that is intended, pass programRules: { ${JSON.stringify(command)}: 'unrestricted' }.`,
          { details: { option: 'allowedCommands', command } },
        );
      }
      if (rule !== undefined) rules.set(command, rule);
      const builtIn = defaultRuleFor(program, searchPath);
      if (readOnlyCommands.includes(command) && builtIn?.refuseProgram === true) {
        throw new ShellToolOptionsError(
          `${command} cannot be declared read-only: ${builtIn.reason}.`,
          { details: { option: 'readOnlyCommands', command } },
        );
      }
    }
    const environment: Record<string, string> = {};
    for (const key of allowedEnvironment) {
      const value = baseEnvironment[key];
      if (typeof value === 'string' && !value.includes('\0')) environment[key] = value;
    }
    this.#programs = programs;
    this.#sandbox = sandbox;
    this.#environment = Object.freeze(environment);
    this.#maxTimeoutMs = maxTimeoutMs;
    this.#maxOutputBytes = maxOutputBytes;
    this.#rules = rules;
    // One contract per allowlisted command: read-only for readOnlyCommands, commandRisks' level,
    // else `risk`, so each call is judged by the command it runs; tools/list publishes the
    // riskiest.
    const readOnlyContract = defineContract({ risk: 'read-only', contentTrust: 'untrusted' });
    const byRisk = new Map<RiskLevel, ToolContract>();
    const contractAt = (level: RiskLevel): ToolContract => {
      let contract = byRisk.get(level);
      if (contract === undefined) {
        contract = defineContract({ risk: level, contentTrust: 'untrusted' });
        byRisk.set(level, contract);
      }
      return contract;
    };
    const readOnly = new Set(readOnlyCommands);
    const operations: Record<string, ToolContract> = {};
    let riskiest: ToolContract = readOnlyContract;
    for (const command of programs.keys()) {
      const contract = readOnly.has(command)
        ? readOnlyContract
        : contractAt(
            Object.hasOwn(commandRisks, command) ? (commandRisks[command] as RiskLevel) : risk,
          );
      operations[command] = contract;
      if (compareRisk(contract.risk, riskiest.risk) > 0) riskiest = contract;
    }
    const onlyReads = riskiest === readOnlyContract;
    this.spec = Object.freeze({
      name,
      description: `Runs one allowlisted program with arguments (no shell) in the workspace. Programs: ${[...programs.keys()].join(', ')}.`,
      inputSchema: {
        type: 'object',
        properties: {
          command: { type: 'string', enum: [...programs.keys()] },
          args: {
            type: 'array',
            items: { type: 'string' },
            maxItems: MAX_SHELL_ARGUMENTS,
            default: [],
          },
          cwd: { type: 'string', description: 'Workspace-relative folder; default the workspace.' },
          timeoutSeconds: { type: 'number', exclusiveMinimum: 0, maximum: maxTimeoutMs / 1000 },
        },
        required: ['command'],
        additionalProperties: false,
      },
      contract: riskiest,
      operationContracts: Object.freeze({
        select: 'command',
        operations: Object.freeze(operations),
      }),
      operationArgument: 'command',
      annotations: {
        readOnlyHint: onlyReads,
        destructiveHint: riskiest.risk === 'destructive',
        openWorldHint: true,
      },
    });
  }

  /** Checks the sandbox in the workspace (a registry runs this before the tool takes calls). */
  async start(): Promise<void> {
    await this.#sandbox.verify?.({ workspace: this.#workspace });
  }

  /** The workspace's real path. */
  get workspace(): string {
    return this.#workspace;
  }

  /** Allowed command names and the absolute programs they run. */
  get programs(): ReadonlyMap<string, string> {
    return this.#programs;
  }

  /**
   * Opens the working folder. On Linux through descriptors ({@link openWorkingDirectory}): the
   * child starts in the folder opened (`cwdHandle`), never in whatever the name points to by
   * then. Without `/proc` (macOS): checked by name, the weaker mode the README describes.
   */
  async #openCwd(segments: readonly string[]): Promise<{
    readonly cwd: string;
    readonly handlePath?: string;
    close(): Promise<void>;
  }> {
    const cwd =
      segments.length === 0 ? this.#workspace : `${this.#workspace}/${segments.join('/')}`;
    if (descriptorWorkingDirectoriesWork()) {
      let opened: Awaited<ReturnType<typeof openWorkingDirectory>>;
      try {
        opened = await openWorkingDirectory(this.#workspace, this.#workspaceStat, segments);
      } catch (error) {
        if (error instanceof WorkingDirectoryRefusedError) {
          fail(CWD_MESSAGES[error.reason], 'SHELL_CWD_INVALID');
        }
        throw error;
      }
      return { cwd, handlePath: opened.handlePath, close: opened.close };
    }
    if (segments.length > 0) {
      let resolved: Awaited<ReturnType<typeof resolveInside>>;
      try {
        resolved = await resolveInside(this.#workspace, this.#workspaceStat, segments, {
          allowMissing: false,
        });
      } catch (error) {
        if (FileSystemAccessError.isInstance(error))
          fail('cwd must be a folder inside the workspace.', 'SHELL_CWD_INVALID');
        throw error;
      }
      if (!resolved.stat?.isDirectory())
        fail('cwd must be a folder inside the workspace.', 'SHELL_CWD_INVALID');
    }
    return { cwd, close: async () => {} };
  }

  async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    const command = args.command;
    const metadata = {
      command: typeof command === 'string' ? command : null,
      sandbox: this.#sandbox.name,
    };
    try {
      if (typeof command !== 'string' || !this.#programs.has(command)) {
        fail('The command is not allowed.', 'SHELL_COMMAND_NOT_ALLOWED');
      }
      const program = this.#programs.get(command) as string;
      const list = args.args ?? [];
      if (!Array.isArray(list) || list.length > MAX_SHELL_ARGUMENTS) {
        fail('args must be an array of at most 1024 strings.', 'SHELL_ARGUMENT_INVALID');
      }
      let total = 0;
      for (const item of list) {
        if (typeof item !== 'string' || item.includes('\0')) {
          fail('Every argument must be a string without NUL.', 'SHELL_ARGUMENT_INVALID');
        }
        total += Buffer.byteLength(item, 'utf8');
      }
      if (total > MAX_SHELL_ARGUMENT_BYTES)
        fail('The arguments are too long.', 'SHELL_ARGUMENT_INVALID');
      const rule = this.#rules.get(command);
      if (rule !== undefined) {
        const refused = refusedArgument(rule, list as string[]);
        if (refused !== undefined) {
          const shown =
            refused === null ? command : JSON.stringify(refused.split('=', 1)[0]?.slice(0, 64));
          // A subcommand outside an allowlist: name the ones that run.
          const allowed =
            refused !== null &&
            rule.allowedSubcommands !== undefined &&
            !rule.allowedSubcommands.includes(refused) &&
            (list as string[])[findSubcommand(rule, list as string[])] === refused
              ? ` Allowed ${command} subcommands: ${rule.allowedSubcommands.join(', ')}.`
              : '';
          fail(
            `${shown} is refused for ${command}: ${rule.reason}.${allowed}`,
            'SHELL_ARGUMENT_REFUSED',
          );
        }
      }
      const timeoutSeconds = args.timeoutSeconds ?? this.#maxTimeoutMs / 1000;
      if (
        typeof timeoutSeconds !== 'number' ||
        !Number.isFinite(timeoutSeconds) ||
        timeoutSeconds <= 0 ||
        timeoutSeconds > this.#maxTimeoutMs / 1000
      ) {
        fail('timeoutSeconds is out of range.', 'SHELL_ARGUMENT_INVALID');
      }
      const segments =
        args.cwd === undefined || args.cwd === '.' ? [] : parseCwd(args.cwd as unknown);
      if (context?.signal?.aborted) fail('The call was cancelled.', 'SHELL_CANCELLED');
      const working = await this.#openCwd(segments);
      let result: Awaited<ReturnType<Sandbox['run']>>;
      try {
        result = await this.#sandbox.run({
          program,
          args: [...(rule?.prependArguments ?? []), ...(list as string[])],
          cwd: working.cwd,
          ...(working.handlePath === undefined ? {} : { cwdHandle: working.handlePath }),
          env: this.#environment,
          workspace: this.#workspace,
          timeoutMs: Math.min(this.#maxTimeoutMs, Math.ceil(timeoutSeconds * 1000)),
          maxOutputBytes: this.#maxOutputBytes,
          ...(context?.signal === undefined ? {} : { signal: context.signal }),
        });
      } finally {
        await working.close();
      }
      const failed = result.exitCode !== 0 || result.timedOut;
      const limit = failed ? (result.limit ?? null) : null;
      const code =
        limit !== null
          ? 'SHELL_RESOURCE_LIMIT'
          : result.timedOut
            ? 'SHELL_TIMEOUT'
            : 'SHELL_NONZERO_EXIT';
      return jsonResult(
        {
          exitCode: result.exitCode,
          signal: result.signal,
          stdout: result.stdout,
          stderr: result.stderr,
          timedOut: result.timedOut,
          truncated: result.truncated,
          limit,
        },
        {
          ...(failed ? { isError: true } : {}),
          metadata: {
            ...metadata,
            ...(failed ? { code } : {}),
            ...(limit === null ? {} : { limit }),
          },
        },
      );
    } catch (error) {
      const code = (error as { shellCode?: unknown } | null)?.shellCode;
      if (typeof code === 'string') {
        return errorResult((error as Error).message, { metadata: { ...metadata, code } });
      }
      return errorResult('The command could not be started.', {
        metadata: { ...metadata, code: 'SHELL_SPAWN_FAILED' },
      });
    }
  }
}
