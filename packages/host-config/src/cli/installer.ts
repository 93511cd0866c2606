import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  getHookSetup,
  HOOK_CLIENTS,
  type HookClient,
  type HookScope,
  type HookSetup,
} from '../attachments/client-setup.js';
import {
  HOOK_CONFIG_FILENAME,
  HOOK_PROTOCOL_VERSION,
  HOOK_SCRIPT,
  HOOK_SCRIPT_FILENAME,
  HOOK_SCRIPT_URL,
  LEGACY_HOOK_SCRIPT_FILENAMES,
  readHookProtocolVersion,
} from '../attachments/hook-script.js';
import { HostConfigError } from '../host-config-error.js';
import {
  type CodexHookState,
  codexHookTrustHash,
  editCodexTrustEntry,
  readCodexConfig,
} from './codex-config.js';
import {
  InstallConfigMalformedError,
  InstallHookConfigUntrustedError,
  InstallPathUnsafeError,
  InstallUsageError,
  InstallWriteError,
} from './errors.js';
import { stripJsonc } from './jsonc.js';

/** Where and for which client to (un)install the hook. */
export interface HookInstallOptions {
  /** The client to set up. */
  readonly client: HookClient;
  /** `user` (default) or `project`. */
  readonly scope?: HookScope;
  /** The home folder. Default `os.homedir()`. */
  readonly home?: string;
  /** The project folder for `scope: 'project'`. Default `process.cwd()`. */
  readonly projectDir?: string;
  /** Codex's home. Default `$CODEX_HOME`, else `<home>/.codex`. */
  readonly codexHome?: string;
  /** Compute and report the changes without writing anything. Default false. */
  readonly dryRun?: boolean;
  /**
   * install only: absolute directories the hook may read, written as `allowedRoots` to the hook
   * config file next to the script, each as its real path (symlinks resolved). Each must exist.
   * At project scope a root inside the project must not lead elsewhere through a symlink
   * (`INSTALL_PATH_UNSAFE`). Default: leave that file as it is.
   */
  readonly allowedRoots?: readonly string[];
  /**
   * install only: keep a hook config file found beside the script that makes the hook read more
   * than by default (`denyCredentialFiles: false`, a limit above its default, a shorter
   * `settleMs`). Default false: at project scope such a file (a repository can ship one) stops
   * the install with `INSTALL_HOOK_CONFIG_UNTRUSTED`; at user scope it is kept and named in
   * `warnings`.
   */
  readonly acceptHookConfig?: boolean;
  /**
   * install only: per-toolkit attachment budgets, MCP server name (as named in the client's
   * config) to the most attachment bytes one call to it may carry, merged into `toolkitBudgets`
   * of the hook config file. The hook denies a larger file with `HOOK_TOOLKIT_BUDGET_EXCEEDED`
   * and the size in the reason. Default: leave the budgets as they are.
   */
  readonly toolkitBudgets?: Readonly<Record<string, number>>;
  /**
   * install, Codex only: also write the trust entry Codex would write when you trust the hook in
   * `/hooks` (`[hooks.state."<hooks.json>:pre_tool_use:<group>:0"] trusted_hash = "sha256:..."` in
   * `$CODEX_HOME/config.toml`). Default false: trust it in Codex yourself. Either way, when
   * install replaces a registration of this hook that Codex trusted (the earlier `.mjs` form, or
   * an older handler), it moves that trust to the new command; it never trusts one on its own.
   */
  readonly trustCodexHook?: boolean;
  /**
   * The absolute path of the Node executable the registered command runs the hook with, so the
   * hook does not depend on the client's `PATH` (a GUI client often lacks the shell's). It must
   * be an existing file. Default `process.execPath`: the Node running the installer. `status`
   * compares the registration with the command install would write with the same value.
   */
  readonly node?: string;
}

/** Codex's view of the installed hook: trust and the hooks feature flag. */
export interface CodexHookTrust {
  /** Codex's `config.toml`, where trust and feature flags live. */
  readonly configTomlPath: string;
  /** The `hooks.state` key of this registration, when it is registered. */
  readonly key: string | undefined;
  /** The `trusted_hash` this registration needs. */
  readonly expectedHash: string | undefined;
  /** The `trusted_hash` found for the key, if any. */
  readonly trustedHash: string | undefined;
  /** Trusted: the stored hash is the expected one and the entry is not disabled. */
  readonly trusted: boolean;
  /** Hooks are on (`[features] hooks` and the deprecated `codex_hooks` are not `false`). */
  readonly hooksEnabled: boolean;
  /** Set when `config.toml` cannot be read. */
  readonly problem: string | undefined;
}

/** One file the installer creates, updates or deletes. */
export interface HookFileChange {
  /** Absolute path of the file. */
  readonly path: string;
  /**
   * Where the bytes go: `path` itself, or the file a symlinked client config leads to. At project
   * scope it is the real path (every symlink resolved), always inside the project.
   */
  readonly target: string;
  /**
   * Which file: the hook script, the client's config, the hook's own config (`allowedRoots`,
   * `toolkitBudgets`), or Codex's `config.toml` (the trust entry). An install or uninstall that
   * finds the earlier form of the script (`toolfence_attachment_substitution.mjs`) lists it as a
   * `script` change with action `delete`.
   */
  readonly kind: 'script' | 'config' | 'hook-config' | 'codex-config';
  /** What happened (or, in a dry run, would happen) to the file. */
  readonly action: 'create' | 'update' | 'delete' | 'unchanged';
  /** Text before the change (undefined when the file did not exist). */
  readonly before: string | undefined;
  /** Text after the change (undefined when the file is deleted). */
  readonly after: string | undefined;
  /** Where the previous config was copied before it was replaced. */
  readonly backupPath: string | undefined;
}

/** What an install or uninstall did (or, with `dryRun`, would do). */
export interface HookInstallResult {
  /** The client setup the installer applied. */
  readonly setup: HookSetup;
  /** Every file touched or checked, including unchanged ones. */
  readonly changes: readonly HookFileChange[];
  /** True when at least one file was (or would be) written or deleted. */
  readonly changed: boolean;
  /** True when nothing was written: `changes` only describe what would happen. */
  readonly dryRun: boolean;
  /**
   * Things the user should know that did not stop the install: a hook config kept at user scope
   * that makes the hook read more than by default (each such setting named).
   */
  readonly warnings: readonly string[];
}

/** One setting of the hook config file that differs from the hook's default. */
export interface HookConfigSetting {
  /** The config key (`maxBytes`, `denyCredentialFiles`, `toolkitBudgets.<server>`, ...). */
  readonly name: string;
  /** The value the hook uses, as text. */
  readonly value: string;
  /** The hook's default, as text (`unset` when there is none). */
  readonly default: string;
  /** True when it makes the hook read more than by default (credential files, a raised limit). */
  readonly weakens: boolean;
}

/** Whether the hook is installed for one client and scope. */
export interface HookStatus {
  /** The client checked. */
  readonly client: HookClient;
  /** The scope checked: the user's or the project's installation. */
  readonly scope: HookScope;
  /** Where the hook script is (or would be) installed. */
  readonly scriptPath: string;
  /** The client config file the hook is registered in. */
  readonly configPath: string;
  /** The script file exists, in its current form or an earlier one ({@link HookStatus.outdated}). */
  readonly scriptInstalled: boolean;
  /** `protocol=N` read from the installed script (the current form's file first), if any. */
  readonly installedProtocol: number | undefined;
  /** The protocol this package ships. */
  readonly availableProtocol: number;
  /**
   * The installed script is byte-for-byte the one this package ships, under its current name,
   * and nothing of an earlier form is left.
   */
  readonly current: boolean;
  /** Installed, but older or different from the shipped script, or outdated: run install again. */
  readonly stale: boolean;
  /**
   * An earlier form of the hook is installed: its file (`toolfence_attachment_substitution.mjs`)
   * beside the current one, or a registered command that runs it. It still works, but starts
   * slower; `install` migrates it (writes the `.cjs` file, moves the registration, deletes the old
   * file, keeps Codex's trust).
   */
  readonly outdated: boolean;
  /** Path of the earlier form's script file, when one is there. */
  readonly legacyScriptPath: string | undefined;
  /**
   * The client config registers the exact command this installer writes. (An outdated
   * installation registers the earlier form's command: false, with `outdated` true.)
   */
  readonly registered: boolean;
  /** The client config holds some command naming the hook's file name (in any form). */
  readonly referenced: boolean;
  /** Set when the client config cannot be read as JSON. */
  readonly configProblem: string | undefined;
  /** Where the hook's own config file (allowlist, limits) is. */
  readonly hookConfigPath: string;
  /** `allowedRoots` from the hook config file; undefined when none is set there. */
  readonly allowedRoots: readonly string[] | undefined;
  /**
   * Set when the hook config file exists but is not valid, as the hook itself reads it (its own
   * reason; the hook then denies every rewrite).
   */
  readonly hookConfigProblem: string | undefined;
  /** Every setting of the hook config file that differs from the hook's default. */
  readonly hookSettings: readonly HookConfigSetting[];
  /** `toolkitBudgets` from the hook config file; undefined when none is set there. */
  readonly toolkitBudgets: Readonly<Record<string, number>> | undefined;
  /** Codex only: trust and the hooks feature flag; undefined for the other clients. */
  readonly codex: CodexHookTrust | undefined;
  /** Why the installed hook cannot work (empty when it can). */
  readonly problems: readonly string[];
  /** The hook is installed, registered, valid and (Codex) trusted: it runs on the next call. */
  readonly working: boolean;
}

/** Suffix of the single backup kept next to a config file the installer changed. */
export const INSTALL_BACKUP_SUFFIX = '.toolfence.bak';

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const OPTION_KEYS = new Set([
  'client',
  'scope',
  'home',
  'projectDir',
  'codexHome',
  'dryRun',
  'allowedRoots',
  'toolkitBudgets',
  'trustCodexHook',
  'node',
  'acceptHookConfig',
]);

/** Longest home or project path accepted (Linux PATH_MAX). */
const MAX_PATH_CHARS = 4096;

/**
 * A home or project folder must be an absolute path to an existing directory, without control
 * characters: checked before anything is read or written, so a broken `$HOME` fails at once.
 */
function checkFolder(value: string, option: string): void {
  const shown = JSON.stringify(value.slice(0, 80));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (value.length > MAX_PATH_CHARS || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new InstallUsageError(
      `${option} ${shown} is not usable: a folder path must be at most ${MAX_PATH_CHARS} characters without control characters; set HOME (or pass --home) to your home folder`,
      { details: { option } },
    );
  }
  if (!isAbsolute(value)) {
    throw new InstallUsageError(
      `${option} ${shown} is not an absolute path; set HOME (or pass --home) to your home folder`,
      { details: { option } },
    );
  }
  let directory = false;
  try {
    directory = statSync(value).isDirectory();
  } catch {
    directory = false;
  }
  if (!directory) {
    throw new InstallUsageError(
      `${option} ${shown} is not an existing directory; set HOME (or pass --home) to your home folder`,
      { details: { option } },
    );
  }
}

/** CODEX_HOME (or `codexHome`): an absolute path without control characters. */
function checkCodexHome(value: string): void {
  const shown = JSON.stringify(value.slice(0, 80));
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (value.length > MAX_PATH_CHARS || /[\u0000-\u001f\u007f]/.test(value) || !isAbsolute(value)) {
    throw new InstallUsageError(
      `codexHome (CODEX_HOME) ${shown} is not an absolute path of at most ${MAX_PATH_CHARS} characters without control characters: the registered command and Codex's trust key hold it, and Codex resolves a relative one against wherever it starts. Set CODEX_HOME to an absolute path, or unset it for ~/.codex`,
      { details: { option: 'codexHome' } },
    );
  }
}

function codexHomeOf(options: HookInstallOptions, home: string): string {
  const environmentCodexHome = process.env.CODEX_HOME;
  return (
    options.codexHome ??
    (environmentCodexHome !== undefined && environmentCodexHome !== ''
      ? environmentCodexHome
      : join(home, '.codex'))
  );
}

/** The Node executable for the registered command: an absolute path to an existing file. */
function checkNode(node: unknown): string {
  if (
    typeof node !== 'string' ||
    node === '' ||
    node.length > MAX_PATH_CHARS ||
    !isAbsolute(node)
  ) {
    throw new InstallUsageError(
      'node must be the absolute path of a Node executable (default: the Node running the installer, process.execPath)',
      { details: { option: 'node' } },
    );
  }
  let isFile = false;
  try {
    isFile = statSync(node).isFile();
  } catch {
    // Reported below.
  }
  if (!isFile) {
    throw new InstallUsageError(
      'node names no existing file: give the absolute path of a Node executable',
      {
        details: { option: 'node' },
      },
    );
  }
  return node;
}

/** The setup to apply, and at project scope the project's real path, which no write may leave. */
interface Resolved {
  readonly setup: HookSetup;
  readonly projectRoot: string | undefined;
}

function resolveSetup(options: HookInstallOptions): Resolved {
  if (typeof options !== 'object' || options === null) {
    throw new InstallUsageError('options must be an object');
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw new InstallUsageError(
        `unknown option "${key.slice(0, 40)}"; accepted: ${[...OPTION_KEYS].join(', ')}`,
        { details: { option: key.slice(0, 40) } },
      );
    }
  }
  if (!(HOOK_CLIENTS as readonly unknown[]).includes(options.client)) {
    throw new InstallUsageError(`client must be one of ${HOOK_CLIENTS.join(', ')}`, {
      details: { option: 'client' },
    });
  }
  const scope = options.scope ?? 'user';
  if (scope !== 'user' && scope !== 'project') {
    throw new InstallUsageError('scope must be "user" or "project"', {
      details: { option: 'scope' },
    });
  }
  if (options.dryRun !== undefined && typeof options.dryRun !== 'boolean') {
    throw new InstallUsageError('dryRun must be a boolean', { details: { option: 'dryRun' } });
  }
  const home = options.home ?? homedir();
  const projectDir = options.projectDir ?? process.cwd();
  const environmentCodexHome = process.env.CODEX_HOME;
  const codexHome =
    options.codexHome ??
    (environmentCodexHome !== undefined && environmentCodexHome !== ''
      ? environmentCodexHome
      : undefined);
  for (const [option, value] of [
    ['home', home],
    ['projectDir', projectDir],
    ['codexHome', codexHome],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      throw new InstallUsageError(`${option} must be a non-empty path`, { details: { option } });
    }
  }
  checkFolder(home, 'home');
  if (scope === 'project') checkFolder(projectDir, 'projectDir');
  // Codex's folder (CODEX_HOME) is written into the registered command and the trust key, so
  // it must be absolute like the others; it may not exist yet (install creates it).
  if (options.client === 'codex' && codexHome !== undefined) {
    checkCodexHome(codexHome);
  }
  const node = checkNode(options.node ?? process.execPath);
  // At project scope every path is built on the project's real path, and registered so.
  const projectRoot = scope === 'project' ? realpathSync.native(projectDir) : undefined;
  const setup = getHookSetup(options.client, scope, {
    home,
    projectDir: projectRoot ?? projectDir,
    node,
    ...(codexHome === undefined ? {} : { codexHome }),
  });
  return { setup, projectRoot };
}

/** True when `path` is `folder` or inside it (both absolute). */
function isInside(path: string, folder: string): boolean {
  const rest = relative(folder, path);
  return rest === '' || (rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest));
}

function unsafePath(path: string, real: string, why: string): InstallPathUnsafeError {
  return new InstallPathUnsafeError(
    `the file ${why}, outside the project (to ${real}); a project-scope install writes inside the project only, so nothing was written. Remove or replace the link, or install at user scope`,
    { details: { path, real } },
  );
}

/**
 * The real path of `path` (the deepest existing folder above it resolved, the rest appended as
 * named), refused unless it is inside `projectRoot`. A link that cannot be resolved (dangling, a
 * loop) on the way is refused too: install would create folders through it.
 */
function realInside(path: string, projectRoot: string, original: string): string {
  const rest: string[] = [basename(path)];
  let folder = dirname(path);
  for (;;) {
    let present = true;
    try {
      lstatSync(folder);
    } catch {
      present = false;
    }
    if (present) {
      let real: string;
      try {
        real = realpathSync.native(folder);
      } catch {
        throw unsafePath(original, folder, 'passes through a symlink that leads nowhere');
      }
      const full = join(real, ...rest);
      if (!isInside(full, projectRoot)) {
        throw unsafePath(original, full, 'leads through a symlink');
      }
      return full;
    }
    const parent = dirname(folder);
    if (parent === folder) throw unsafePath(original, folder, 'has no existing folder above it');
    rest.unshift(basename(folder));
    folder = parent;
  }
}

/**
 * Where a change's bytes go, at project scope: the real path of the file's folder, and for a
 * client config each link of a link chain too, all inside the project's real path (else
 * `INSTALL_PATH_UNSAFE`). A script or hook config that is a link is replaced, never followed, so
 * only its folder counts.
 */
function confinedTarget(path: string, projectRoot: string, followLinks: boolean): string {
  let current = realInside(path, projectRoot, path);
  for (let hop = 0; hop < MAX_LINK_HOPS; hop += 1) {
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(current);
    } catch {
      return current;
    }
    if (!followLinks || !stats.isSymbolicLink()) return current;
    current = realInside(resolve(dirname(current), readlinkSync(current)), projectRoot, path);
  }
  throw new InstallWriteError('the config is a chain of too many symlinks; nothing was changed', {
    details: { path },
  });
}

/**
 * Every path a project-scope (un)install touches, checked before anything is read from it: the
 * script and its earlier forms, the client config and the hook config (each link of their link
 * chains: install reads both and writes what it read back into the project, so a link to a file
 * of the user's would copy it there), the backups.
 */
function assertConfined(setup: HookSetup, projectRoot: string | undefined): void {
  if (projectRoot === undefined) return;
  confinedTarget(setup.configPath, projectRoot, true);
  confinedTarget(hookConfigPathOf(setup), projectRoot, true);
  for (const path of [
    setup.scriptPath,
    ...legacyScriptPaths(setup),
    `${setup.configPath}${INSTALL_BACKUP_SUFFIX}`,
    `${hookConfigPathOf(setup)}${INSTALL_BACKUP_SUFFIX}`,
  ]) {
    confinedTarget(path, projectRoot, false);
  }
}

function readText(path: string): string | undefined {
  try {
    const stats = statSync(path);
    if (!stats.isFile()) {
      throw new InstallConfigMalformedError('the path exists but is not a regular file', {
        details: { path },
      });
    }
    if (stats.size > 16 * 1024 * 1024) {
      throw new InstallConfigMalformedError('the file is larger than 16 MiB', {
        details: { path },
      });
    }
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    if (InstallConfigMalformedError.isInstance(error)) throw error;
    throw new InstallWriteError('the file cannot be read', { details: { path }, cause: error });
  }
}

function parseConfig(text: string | undefined, setup: HookSetup): JsonObject {
  const parsed = parseJsonObject(text, setup.configPath, 'client config');
  const hooks = parsed.hooks;
  if (hooks !== undefined && !isObject(hooks)) {
    throw new InstallConfigMalformedError(
      '"hooks" in the client config is not an object (nothing was written)',
      {
        details: { path: setup.configPath },
      },
    );
  }
  const list = isObject(hooks) ? hooks[setup.format.eventKey] : undefined;
  if (list !== undefined && !Array.isArray(list)) {
    throw new InstallConfigMalformedError(
      `"hooks.${setup.format.eventKey}" in the client config is not a list (nothing was written)`,
      { details: { path: setup.configPath } },
    );
  }
  return parsed;
}

/** The hook's file name in every form it was ever installed under, the current one first. */
const OUR_FILENAMES: readonly string[] = [HOOK_SCRIPT_FILENAME, ...LEGACY_HOOK_SCRIPT_FILENAMES];

/** A handler whose command runs the hook, in its current or an earlier form. */
function isOurHandler(handler: unknown): boolean {
  return (
    isObject(handler) &&
    typeof handler.command === 'string' &&
    OUR_FILENAMES.some((name) => (handler.command as string).includes(name))
  );
}

/** A handler whose command runs an earlier form of the hook (the `.mjs` file). */
function isLegacyHandler(handler: unknown): boolean {
  return (
    isObject(handler) &&
    typeof handler.command === 'string' &&
    !handler.command.includes(HOOK_SCRIPT_FILENAME) &&
    LEGACY_HOOK_SCRIPT_FILENAMES.some((name) => (handler.command as string).includes(name))
  );
}

/** Where the earlier forms of the script sit: beside the current one, under their old names. */
function legacyScriptPaths(setup: HookSetup): string[] {
  return LEGACY_HOOK_SCRIPT_FILENAMES.map((name) => join(dirname(setup.scriptPath), name));
}

/** The entry an earlier installer wrote: this one's, naming the earlier file. */
function legacyEntries(setup: HookSetup): unknown[] {
  const text = JSON.stringify(setup.entry);
  return LEGACY_HOOK_SCRIPT_FILENAMES.map((name) =>
    JSON.parse(text.split(HOOK_SCRIPT_FILENAME).join(name)),
  );
}

/** An event-list entry that holds nothing but handlers of ours. */
function isWhollyOurs(entry: unknown, grouped: boolean): boolean {
  if (!grouped) return isOurHandler(entry);
  return (
    isObject(entry) &&
    Array.isArray(entry.hooks) &&
    entry.hooks.length > 0 &&
    entry.hooks.every(isOurHandler)
  );
}

/**
 * The event list with every handler of ours removed and `entry` added where the first entry
 * that was wholly ours sat (so its position, and Codex's trust key, stay the same), or at the end.
 */
function withOurEntry(list: readonly unknown[], setup: HookSetup): unknown[] {
  const kept = withoutOurs(list, setup.format.grouped);
  let before = 0;
  for (const entry of list) {
    if (isWhollyOurs(entry, setup.format.grouped)) {
      return [...kept.slice(0, before), setup.entry, ...kept.slice(before)];
    }
    before += 1;
  }
  return [...kept, setup.entry];
}

/** Removes every handler of ours from an event list, dropping groups that only held ours. */
function withoutOurs(list: readonly unknown[], grouped: boolean): unknown[] {
  if (!grouped) return list.filter((handler) => !isOurHandler(handler));
  const kept: unknown[] = [];
  for (const group of list) {
    if (!isObject(group) || !Array.isArray(group.hooks)) {
      kept.push(group);
      continue;
    }
    const handlers = group.hooks.filter((handler) => !isOurHandler(handler));
    if (handlers.length === group.hooks.length) kept.push(group);
    else if (handlers.length > 0) kept.push({ ...group, hooks: handlers });
  }
  return kept;
}

function same(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

function eventList(config: JsonObject, setup: HookSetup): unknown[] {
  const hooks = config.hooks;
  const list = isObject(hooks) ? hooks[setup.format.eventKey] : undefined;
  return Array.isArray(list) ? list : [];
}

function withEventList(config: JsonObject, setup: HookSetup, list: unknown[]): JsonObject {
  const hooks: JsonObject = isObject(config.hooks) ? { ...config.hooks } : {};
  if (list.length > 0) hooks[setup.format.eventKey] = list;
  else delete hooks[setup.format.eventKey];
  const next: JsonObject = { ...config };
  if (Object.keys(hooks).length > 0) next.hooks = hooks;
  else delete next.hooks;
  return next;
}

function registered(config: JsonObject, setup: HookSetup): boolean {
  return eventList(config, setup).some((entry) => same(entry, setup.entry));
}

/**
 * The exact decimal value a JSON number literal spells, as `<digits>e<exponent>` without
 * leading or trailing zeros, so `1.50`, `1.5` and `15e-1` compare equal and `1e400` does not
 * equal anything a double prints as.
 */
function decimalValue(literal: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (match === null) return literal;
  const fraction = match[3] ?? '';
  let digits = `${match[2]}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  let exponent = BigInt(match[4] ?? '0') - BigInt(fraction.length);
  const trimmed = digits.replace(/0+$/, '');
  exponent += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `${match[1]}${digits}e${exponent}`;
}

/**
 * How the numbers of a config file are spelt, so a rewrite keeps them: JSON.parse turns
 * `12345678901234567891` into 12345678901234567000, `1e400` into Infinity (written as `null`)
 * and `1.50` into 1.5. Maps each parsed value to the one literal the file spells it with, when
 * that is not the spelling JSON.stringify would write. Refuses (INSTALL_CONFIG_MALFORMED) when
 * two different values in the file parse to the same double, so no spelling can keep both.
 */
function numberSpellings(
  text: string | undefined,
  path: string,
  what: string,
  added: unknown,
): Map<number, string> {
  const spellings = new Map<number, string>();
  if (text === undefined) return spellings;
  const json = stripJsonc(text).json;
  /** Every distinct literal by parsed value, with the line it first appears on. */
  const byValue = new Map<number, Map<string, number>>();
  // The numbers install adds (a timeout, Cursor's version) are written as JSON spells them, so
  // a value the file spells otherwise (`120.0`) is then one value spelt two ways.
  const addedNumbers: number[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'number') addedNumbers.push(value);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(collect);
  };
  collect(added);
  for (const value of addedNumbers) {
    byValue.set(value, new Map([[JSON.stringify(value), 0]]));
  }
  let line = 1;
  for (let index = 0; index < json.length; index += 1) {
    const char = json[index] as string;
    if (char === '\n') line += 1;
    else if (char === '"') {
      for (index += 1; index < json.length && json[index] !== '"'; index += 1) {
        if (json[index] === '\\') index += 1;
      }
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      const match = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
      match.lastIndex = index;
      const literal = match.exec(json)?.[0];
      if (literal === undefined) continue;
      const value = Number(literal);
      const seen = byValue.get(value) ?? new Map<string, number>();
      if (!seen.has(literal)) seen.set(literal, line);
      byValue.set(value, seen);
      index += literal.length - 1;
    }
  }
  for (const [value, literals] of byValue) {
    const written = JSON.stringify(value);
    if (literals.size === 1) {
      const literal = [...literals.keys()][0] as string;
      if (literal !== written) spellings.set(value, literal);
      continue;
    }
    // Several spellings of one double: fine while they are one value (`1.5` and `1.50`, then
    // written as JSON.stringify spells it); two different values cannot both be kept.
    const values = new Set([...literals.keys()].map(decimalValue));
    if (values.size > 1) {
      const [[first, firstLine], [second, secondLine]] = [...literals.entries()] as [
        [string, number],
        [string, number],
      ];
      const where = (literal: string, at: number) =>
        at === 0 ? `${literal} (which install adds)` : `${literal} (line ${at})`;
      throw new InstallConfigMalformedError(
        `the ${what} file holds the numbers ${where(first, firstLine)} and ${where(second, secondLine)}, which JSON readers take for the same value ${written}; rewriting the file cannot keep both (nothing was written). Write the number as a string, or add the registration by hand (see print-setup)`,
        { details: { path, line: secondLine } },
      );
    }
  }
  return spellings;
}

/**
 * JSON text as `JSON.stringify(value, null, 2)` writes it, except that each number is spelt as
 * the file it came from spelt it (see {@link numberSpellings}): a rewrite changes no value of the
 * user's and no number's spelling.
 */
function serialize(
  config: JsonObject,
  original: { text: string | undefined; path: string; what: string; added?: unknown },
): string {
  const spellings = numberSpellings(original.text, original.path, original.what, original.added);
  const write = (value: unknown, indent: string): string => {
    if (typeof value === 'number') return spellings.get(value) ?? JSON.stringify(value);
    if (Array.isArray(value)) {
      if (value.length === 0) return '[]';
      const inner = `${indent}  `;
      const items = value.map((item) =>
        item === undefined || typeof item === 'function' ? 'null' : write(item, inner),
      );
      return `[\n${inner}${items.join(`,\n${inner}`)}\n${indent}]`;
    }
    if (isObject(value)) {
      const inner = `${indent}  `;
      const members = Object.entries(value)
        .filter(([, item]) => item !== undefined && typeof item !== 'function')
        .map(([key, item]) => `${inner}${JSON.stringify(key)}: ${write(item, inner)}`);
      return members.length === 0 ? '{}' : `{\n${members.join(',\n')}\n${indent}}`;
    }
    return JSON.stringify(value) ?? 'null';
  };
  return `${write(config, '')}\n`;
}

function modeOf(path: string, fallback: number): number {
  try {
    return statSync(path).mode & 0o777;
  } catch {
    return fallback;
  }
}

/** The mode of the file at `path` itself; a link's target does not lend its mode. */
function ownModeOf(path: string, fallback: number): number {
  try {
    const stats = lstatSync(path);
    return stats.isFile() ? stats.mode & 0o777 : fallback;
  } catch {
    return fallback;
  }
}

function change(
  path: string,
  kind: HookFileChange['kind'],
  before: string | undefined,
  after: string | undefined,
): HookFileChange {
  let action: HookFileChange['action'];
  if (before === after) action = 'unchanged';
  else if (after === undefined) action = 'delete';
  else if (before === undefined) action = 'create';
  else action = 'update';
  // A file is backed up before it is replaced; a file uninstall deletes is only one the
  // installer created (or the hook's own), so no copy of it is left behind.
  const backupPath =
    kind !== 'script' && before !== undefined && action !== 'unchanged' && action !== 'delete'
      ? `${path}${INSTALL_BACKUP_SUFFIX}`
      : undefined;
  return { path, target: path, kind, action, before, after, backupPath };
}

/** Writes `bytes` to a new temporary file beside `path` (never following a link) and returns its name. */
function writeTemporary(path: string, bytes: string | Buffer, mode: number): string {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  // 'wx' is O_CREAT|O_EXCL: it fails on any existing entry, a symlink included.
  const fd = openSync(temporary, 'wx', mode);
  try {
    if (typeof bytes === 'string') writeSync(fd, bytes);
    else writeSync(fd, bytes);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(fd);
  return temporary;
}

/** Most links followed for one client config (Linux's own limit is 40). */
const MAX_LINK_HOPS = 40;

/**
 * Where a client config's bytes live: a symlinked config (dotfile managers) is followed link by
 * link, so the link stays a link, even when its target does not exist yet. Only client configs
 * are followed: the script, the hook config and backups are written at their own path.
 */
function configTarget(path: string): string {
  let current = path;
  for (let hop = 0; hop < MAX_LINK_HOPS; hop += 1) {
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(current);
    } catch {
      return current; // not there (yet): written here
    }
    if (!stats.isSymbolicLink()) return current;
    current = resolve(dirname(current), readlinkSync(current));
  }
  throw new InstallWriteError('the config is a chain of too many symlinks; nothing was changed', {
    details: { path },
  });
}

/** What was at a path before install replaced it, to put it back if a later step fails. */
type Previous =
  | { readonly kind: 'absent' }
  | { readonly kind: 'file'; readonly bytes: Buffer; readonly mode: number }
  | { readonly kind: 'link'; readonly target: string };

function previousAt(path: string): Previous {
  let stats: ReturnType<typeof lstatSync>;
  try {
    stats = lstatSync(path);
  } catch {
    return { kind: 'absent' };
  }
  if (stats.isSymbolicLink()) return { kind: 'link', target: readlinkSync(path) };
  return { kind: 'file', bytes: readFileSync(path), mode: stats.mode & 0o777 };
}

function restore(path: string, previous: Previous): void {
  if (previous.kind === 'absent') {
    rmSync(path, { force: true });
    return;
  }
  if (previous.kind === 'file') {
    renameSync(writeTemporary(path, previous.bytes, previous.mode), path);
    return;
  }
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  symlinkSync(previous.target, temporary);
  renameSync(temporary, path);
}

/** One change, ready to be renamed into place. */
interface Prepared {
  readonly item: HookFileChange;
  /** Where the bytes go: the path itself, or a client config's link target. */
  readonly target: string;
  /** The new content in a temporary file beside the target; undefined for a delete. */
  readonly temporary: string | undefined;
  /** The backup's content in a temporary file beside the backup path. */
  readonly backupTemporary: string | undefined;
}

function followsLinks(kind: HookFileChange['kind']): boolean {
  return kind === 'config' || kind === 'codex-config';
}

/**
 * Applies the changes in their order, all or nothing. First every backup and every new file is
 * written to a temporary file beside its place (nothing a client or the hook reads has changed
 * yet); then each is renamed into place (backups, which replace whatever entry is at the backup
 * path, a planted link included, then the file itself; a deleted file is moved aside, not
 * removed). If any step fails, what was already renamed is put back as it was, in reverse order,
 * and the error says nothing was changed. Callers order the changes so that a crash between two
 * renames never leaves a registered hook without its config (the hook config first on install,
 * the registration first on uninstall).
 */
function apply(changes: readonly HookFileChange[]): void {
  const prepared: Prepared[] = [];
  const temporaries: string[] = [];
  const discard = () => {
    for (const temporary of temporaries) rmSync(temporary, { force: true });
  };
  for (const item of changes) {
    if (item.action === 'unchanged') continue;
    const target = item.target;
    let backupTemporary: string | undefined;
    let temporary: string | undefined;
    let failedPath = item.path;
    try {
      if (item.backupPath !== undefined) {
        failedPath = item.backupPath;
        backupTemporary = writeTemporary(
          item.backupPath,
          readFileSync(target),
          modeOf(target, 0o644),
        );
        temporaries.push(backupTemporary);
      }
      failedPath = target;
      if (item.after !== undefined) {
        const mode = followsLinks(item.kind) ? modeOf(target, 0o644) : ownModeOf(target, 0o644);
        temporary = writeTemporary(target, item.after, mode);
        temporaries.push(temporary);
      }
    } catch (error) {
      discard();
      if (HostConfigError.isInstance(error)) throw error;
      throw new InstallWriteError('preparing the new files failed; nothing was changed', {
        details: { path: failedPath, code: (error as { code?: unknown }).code },
        cause: error,
      });
    }
    prepared.push({ item, target, temporary, backupTemporary });
  }
  /** What each renamed path held before, newest last. */
  const done: { path: string; previous: Previous }[] = [];
  /** Deleted entries moved aside, removed once every step succeeded. */
  const aside: string[] = [];
  let failedPath = '';
  try {
    for (const step of prepared) {
      if (step.backupTemporary !== undefined && step.item.backupPath !== undefined) {
        failedPath = step.item.backupPath;
        renameSync(step.backupTemporary, step.item.backupPath);
      }
      failedPath = step.target;
      const previous = previousAt(step.target);
      if (step.temporary !== undefined) {
        renameSync(step.temporary, step.target);
        done.push({ path: step.target, previous });
      } else if (previous.kind !== 'absent') {
        // A symlink is moved itself: what it points at may be outside the hooks folder.
        const away = `${step.target}.${process.pid}.${randomBytes(6).toString('hex')}.deleted`;
        renameSync(step.target, away);
        aside.push(away);
        done.push({ path: step.target, previous });
      }
    }
  } catch (error) {
    const unrestored: string[] = [];
    for (const { path, previous } of done.reverse()) {
      try {
        restore(path, previous);
      } catch {
        unrestored.push(path);
      }
    }
    for (const away of aside) rmSync(away, { force: true });
    discard();
    throw new InstallWriteError(
      unrestored.length === 0
        ? 'writing the file failed; every file already written was put back, so nothing was changed'
        : `writing the file failed, and putting back ${unrestored.join(', ')} failed too: check them, then run this again`,
      {
        details: { path: failedPath, code: (error as { code?: unknown }).code },
        cause: error,
      },
    );
  }
  for (const away of aside) rmSync(away, { force: true });
}

/**
 * Each change with the place its bytes go: at project scope the real path, checked to be inside
 * the project (Codex's `config.toml` is the user's own, by design); else a client config's link
 * target (dotfile managers), or the path itself.
 */
function withTargets(
  changes: readonly HookFileChange[],
  projectRoot: string | undefined,
): HookFileChange[] {
  return changes.map((item) => {
    let target: string;
    try {
      target =
        projectRoot !== undefined && item.kind !== 'codex-config'
          ? confinedTarget(item.path, projectRoot, followsLinks(item.kind))
          : followsLinks(item.kind)
            ? configTarget(item.path)
            : item.path;
      if (projectRoot !== undefined && item.backupPath !== undefined) {
        confinedTarget(item.backupPath, projectRoot, false);
      }
    } catch (error) {
      if (HostConfigError.isInstance(error)) throw error;
      throw new InstallWriteError('the path cannot be resolved; nothing was changed', {
        details: { path: item.path, code: (error as { code?: unknown }).code },
        cause: error,
      });
    }
    return { ...item, target };
  });
}

function result(
  resolved: Resolved,
  changes: HookFileChange[],
  dryRun: boolean,
  warnings: readonly string[] = [],
): HookInstallResult {
  const targeted = withTargets(changes, resolved.projectRoot);
  if (!dryRun) apply(targeted);
  return {
    setup: resolved.setup,
    changes: targeted,
    changed: targeted.some((item) => item.action !== 'unchanged'),
    dryRun,
    warnings,
  };
}

/**
 * Writes the hook script under its stable file name and merges the registration into the
 * client's config, keeping every other hook. Idempotent: a second install changes nothing.
 * Config files are replaced atomically after a backup (`<file>.toolfence.bak`).
 *
 * @throws {InstallConfigMalformedError} the config is not a JSON object of the expected shape.
 * @throws {InstallWriteError} a file could not be read, backed up or written.
 * @throws {InstallUsageError} a bad client, scope or path option.
 */
export function installHook(options: HookInstallOptions): HookInstallResult {
  const resolved = resolveSetup(options);
  const { setup, projectRoot } = resolved;
  assertConfined(setup, projectRoot);
  if (options.acceptHookConfig !== undefined && typeof options.acceptHookConfig !== 'boolean') {
    throw new InstallUsageError('acceptHookConfig must be a boolean', {
      details: { option: 'acceptHookConfig' },
    });
  }
  const warnings = hookConfigWarnings(setup, projectRoot, options.acceptHookConfig === true);
  const configBefore = readText(setup.configPath);
  const config = parseConfig(configBefore, setup);
  const list = eventList(config, setup);
  const ours = list.filter((entry) =>
    setup.format.grouped
      ? isObject(entry) && Array.isArray(entry.hooks) && entry.hooks.some(isOurHandler)
      : isOurHandler(entry),
  );
  let next: JsonObject;
  if (ours.length === 1 && same(ours[0], setup.entry)) {
    next = config;
  } else {
    next = withEventList(config, setup, withOurEntry(list, setup));
  }
  for (const [key, value] of Object.entries(setup.format.topLevel)) {
    if (!(key in next)) next = { [key]: value, ...next };
  }
  const configAfter =
    same(next, config) && configBefore !== undefined
      ? configBefore
      : serialize(next, {
          text: configBefore,
          path: setup.configPath,
          what: 'client config',
          added: [setup.entry, setup.format.topLevel],
        });
  if (configAfter !== configBefore) assertWritable(configBefore, setup.configPath, 'client config');
  const scriptBefore = readText(setup.scriptPath);
  // In the order they are applied: the hook's own config (allowlist, budgets) and the script
  // before the registration that makes the client run them, Codex's trust after it, and the
  // earlier form of the script (`.mjs`) last: nothing runs it once the registration moved.
  const changes: HookFileChange[] = [];
  if (options.allowedRoots !== undefined || options.toolkitBudgets !== undefined) {
    const path = hookConfigPathOf(setup);
    const before = readText(path);
    const existing = parseHookConfig(before, path);
    const updated: JsonObject = { ...existing };
    if (options.allowedRoots !== undefined) {
      updated.allowedRoots = checkRoots(options.allowedRoots, options, projectRoot);
    }
    if (options.toolkitBudgets !== undefined) {
      const budgets = checkBudgets(options.toolkitBudgets);
      const previous = isObject(existing.toolkitBudgets) ? existing.toolkitBudgets : {};
      updated.toolkitBudgets = { ...previous, ...budgets };
    }
    const after =
      before !== undefined && same(updated, existing)
        ? before
        : serialize(updated, {
            text: before,
            path,
            what: 'hook config',
            added: options.toolkitBudgets,
          });
    if (after !== before) assertWritable(before, path, 'hook config');
    changes.push(change(path, 'hook-config', before, after));
  }
  changes.push(
    change(setup.scriptPath, 'script', scriptBefore, HOOK_SCRIPT),
    change(setup.configPath, 'config', configBefore, configAfter),
  );
  if (options.trustCodexHook !== undefined && typeof options.trustCodexHook !== 'boolean') {
    throw new InstallUsageError('trustCodexHook must be a boolean', {
      details: { option: 'trustCodexHook' },
    });
  }
  if (options.trustCodexHook === true && setup.client !== 'codex') {
    throw new InstallUsageError('trustCodexHook applies to --client codex only', {
      details: { option: 'trustCodexHook' },
    });
  }
  if (setup.client === 'codex') {
    const trust = codexTrustChange(options, setup, list, next, next !== config);
    if (trust !== undefined) changes.push(trust);
  }
  changes.push(...legacyScriptChanges(setup));
  return result(resolved, changes, options.dryRun ?? false, warnings);
}

/** The shipped hook, loaded as a module: it lends its own config reader (one code for both). */
interface HookModule {
  inspectConfigFile(
    path: string,
  ): { valid: true; settings: HookConfigSetting[] } | { valid: false; reason: string };
}

const requireHook = createRequire(import.meta.url);

/**
 * What the hook config file at `path` makes the hook do, read by the hook's own code: the script
 * this package ships (never the installed copy, which a repository could have replaced), loaded
 * with require(), where it runs nothing but lends `inspectConfigFile`.
 */
function inspectHookConfig(path: string): ReturnType<HookModule['inspectConfigFile']> {
  const hook = requireHook(fileURLToPath(HOOK_SCRIPT_URL)) as HookModule;
  return hook.inspectConfigFile(path);
}

function describeSetting(setting: HookConfigSetting): string {
  return `${setting.name}=${setting.value} (default ${setting.default})`;
}

/**
 * A hook config file install did not write may already sit beside the script (a repository can
 * ship one in its hooks folder). When it makes the hook read more than by default, a
 * project-scope install stops (`INSTALL_HOOK_CONFIG_UNTRUSTED`, naming the file and each such
 * setting) unless `acceptHookConfig`; a user-scope install keeps it and returns a warning.
 */
function hookConfigWarnings(
  setup: HookSetup,
  projectRoot: string | undefined,
  accepted: boolean,
): string[] {
  const path = hookConfigPathOf(setup);
  if (!existsOrLink(path)) return [];
  const report = inspectHookConfig(path);
  if (!report.valid) return [];
  const weakening = report.settings.filter((setting) => setting.weakens);
  if (weakening.length === 0) return [];
  const listed = weakening.map(describeSetting).join(', ');
  if (projectRoot !== undefined && !accepted) {
    throw new InstallHookConfigUntrustedError(
      `the hook config file already in the project's hooks folder makes the hook read more than by default: ${listed}. install did not write it (a repository can ship one), so nothing was written: remove the file, or keep it on purpose with --accept-hook-config (acceptHookConfig: true)`,
      { details: { path, settings: weakening.map((setting) => setting.name) } },
    );
  }
  return [
    `the hook config ${path} is kept and makes the hook read more than by default: ${listed}`,
  ];
}

/**
 * The trust entry install writes to Codex's `config.toml`: with `trustCodexHook`, or to carry
 * over the trust Codex gave the registration this install replaces (the `.mjs` form, or an older
 * handler). The user trusted this hook, and the new entry names only the command this installer
 * wrote; a disabled or untrusted registration stays untrusted. Carrying over never fails the
 * install: a `config.toml` it cannot read or edit just leaves the new registration untrusted,
 * which `status` reports.
 */
function codexTrustChange(
  options: HookInstallOptions,
  setup: HookSetup,
  list: readonly unknown[],
  next: JsonObject,
  replaced: boolean,
): HookFileChange | undefined {
  const requested = options.trustCodexHook === true;
  if (!requested && !replaced) return undefined;
  const tomlPath = join(codexHomeOf(options, options.home ?? homedir()), 'config.toml');
  let before: string | undefined;
  try {
    before = readText(tomlPath);
  } catch (error) {
    if (requested) throw error;
    return undefined;
  }
  if (!requested && !trustedInCodex(before, codexIdentity(list, setup))) return undefined;
  const identity = codexIdentity(eventList(next, setup), setup);
  if (identity === undefined) {
    throw new InstallWriteError('the Codex registration could not be located after the merge', {
      details: { path: setup.configPath },
    });
  }
  if (before !== undefined) {
    try {
      assertUtf8(
        before,
        tomlPath,
        'Codex config.toml',
        `set its trusted_hash to ${identity.hash} by hand, or trust the hook in Codex's /hooks`,
      );
    } catch (error) {
      if (requested) throw error;
      return undefined; // carrying trust over never fails the install; status reports it
    }
  }
  const edited = editCodexTrustEntry(before ?? '', identity.key, identity.hash);
  if ('refused' in edited) {
    if (!requested) return undefined;
    const why: Record<typeof edited.refused, string> = {
      inline: `holds the trust entry for this hook inline ("${identity.key}" = { ... })`,
      'defined-twice': `defines the trust entry for this hook ("${identity.key}") more than once`,
      'dotted-without-hash': `defines the trust entry for this hook ("${identity.key}") with dotted keys but no trusted_hash`,
      'inline-hooks-table':
        'holds its hooks table inline (hooks = { ... }), where no entry can be added',
      'not-verified': `would not define the trust entry for this hook ("${identity.key}") exactly once after the edit`,
    };
    throw new InstallConfigMalformedError(
      `config.toml ${why[edited.refused]}; set its trusted_hash to ${identity.hash} by hand, or trust the hook in Codex's /hooks (nothing was written)`,
      { details: { path: tomlPath } },
    );
  }
  return change(tomlPath, 'codex-config', before, edited.text);
}

/** Codex trusts this registration: its stored hash is the one it needs, and it is not disabled. */
function trustedInCodex(
  toml: string | undefined,
  identity: { key: string; hash: string } | undefined,
): boolean {
  if (identity === undefined || toml === undefined) return false;
  let state: CodexHookState | undefined;
  try {
    state = readCodexConfig(toml).hookStates.get(identity.key);
  } catch {
    return false;
  }
  return state?.trustedHash === identity.hash && state.enabled !== false;
}

/** Deletions of the earlier forms of the script that exist beside the current one. */
function legacyScriptChanges(setup: HookSetup): HookFileChange[] {
  const changes: HookFileChange[] = [];
  for (const path of legacyScriptPaths(setup)) {
    const before = readText(path);
    if (before !== undefined) changes.push(change(path, 'script', before, undefined));
  }
  return changes;
}

/** Where our Codex registration sits in hooks.json, its trust key and the hash it needs. */
function codexIdentity(
  list: readonly unknown[],
  setup: HookSetup,
): { key: string; hash: string } | undefined {
  for (const [groupIndex, group] of list.entries()) {
    if (!isObject(group) || !Array.isArray(group.hooks)) continue;
    const handlerIndex = group.hooks.findIndex(isOurHandler);
    if (handlerIndex < 0) continue;
    const handler = group.hooks[handlerIndex] as JsonObject;
    return {
      key: `${setup.configPath}:pre_tool_use:${groupIndex}:${handlerIndex}`,
      hash: codexHookTrustHash(
        'pre_tool_use',
        typeof group.matcher === 'string' ? group.matcher : undefined,
        {
          command: handler.command as string,
          ...(typeof handler.timeout === 'number' ? { timeout: handler.timeout } : {}),
          ...(typeof handler.statusMessage === 'string'
            ? { statusMessage: handler.statusMessage }
            : {}),
        },
      ),
    };
  }
  return undefined;
}

const SERVER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const BUDGET_CEILING = 268435456;

function checkBudgets(budgets: unknown): Record<string, number> {
  if (!isObject(budgets) || Object.keys(budgets).length === 0) {
    throw new InstallUsageError(
      'toolkitBudgets must map MCP server names to byte counts, e.g. { linear: 7340032 }',
      { details: { option: 'toolkitBudgets' } },
    );
  }
  const checked: Record<string, number> = {};
  for (const [name, bytes] of Object.entries(budgets)) {
    if (!SERVER_NAME.test(name)) {
      throw new InstallUsageError(
        `toolkit budget name "${name.slice(0, 40)}" is not an MCP server name (1 to 128 letters, digits, "_", "-", ".")`,
        { details: { option: 'toolkitBudgets' } },
      );
    }
    if (
      typeof bytes !== 'number' ||
      !Number.isSafeInteger(bytes) ||
      bytes < 1 ||
      bytes > BUDGET_CEILING
    ) {
      throw new InstallUsageError(
        `the budget for "${name}" must be a whole number of bytes from 1 to ${BUDGET_CEILING}`,
        { details: { option: 'toolkitBudgets' } },
      );
    }
    checked[name] = bytes;
  }
  return checked;
}

function hookConfigPathOf(setup: HookSetup): string {
  return join(dirname(setup.scriptPath), HOOK_CONFIG_FILENAME);
}

/**
 * The allowlist as real paths (what the hook compares with). At project scope a root named inside
 * the project must be that folder itself, not a symlink (or a path through one) leading elsewhere:
 * a repository's `docs` link to `/` would widen the allowlist to everything.
 */
function checkRoots(
  roots: unknown,
  options: HookInstallOptions,
  projectRoot: string | undefined,
): string[] {
  if (!Array.isArray(roots) || roots.length === 0) {
    throw new InstallUsageError('allowedRoots must be a non-empty list of directories', {
      details: { option: 'allowedRoots' },
    });
  }
  return roots.map((root: unknown) => {
    if (typeof root !== 'string' || !isAbsolute(root)) {
      throw new InstallUsageError('each allowed root must be an absolute path', {
        details: { option: 'allowedRoots' },
      });
    }
    let directory = false;
    try {
      directory = statSync(root).isDirectory();
    } catch {
      directory = false;
    }
    if (!directory) {
      throw new InstallUsageError('each allowed root must be an existing directory', {
        details: { option: 'allowedRoots', path: root },
      });
    }
    const real = realpathSync.native(root);
    if (projectRoot !== undefined) {
      // The root as named, on the project's real path when it was named inside the project.
      const given = resolve(root);
      const projectDir = resolve(options.projectDir ?? process.cwd());
      const named = isInside(given, projectDir)
        ? join(projectRoot, relative(projectDir, given))
        : isInside(given, projectRoot)
          ? given
          : undefined;
      if (named !== undefined && named !== real) {
        throw new InstallPathUnsafeError(
          `the --allow root ${named} is a symlink (or passes through one) leading to ${real}; at project scope a root inside the project must be the folder itself (nothing was written). Give the real path if that folder is meant`,
          { details: { option: 'allowedRoots', path: named, real } },
        );
      }
    }
    return real;
  });
}

function parseHookConfig(text: string | undefined, path: string): JsonObject {
  return parseJsonObject(text, path, 'hook config');
}

/** Decodes UTF-8 and throws on the first invalid byte (a byte order mark is kept as text). */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The first key given twice in one object of a JSON text (compared as decoded, so `"env"` and
 * `"\u0065nv"` are the same key), with its line; JSON.parse keeps only the last of them.
 */
function firstDuplicateKey(json: string): { key: string; line: number } | undefined {
  const stack: (Set<string> | undefined)[] = [];
  let line = 1;
  for (let index = 0; index < json.length; index += 1) {
    const char = json[index];
    if (char === '\n') line += 1;
    else if (char === '{') stack.push(new Set());
    else if (char === '[') stack.push(undefined);
    else if (char === '}' || char === ']') stack.pop();
    else if (char === '"') {
      const start = index;
      for (index += 1; index < json.length && json[index] !== '"'; index += 1) {
        if (json[index] === '\\') index += 1;
      }
      let next = index + 1;
      while (next < json.length && /\s/.test(json[next] as string)) next += 1;
      const keys = stack[stack.length - 1];
      if (json[next] !== ':' || keys === undefined) continue;
      const raw = json.slice(start, index + 1);
      let key: string;
      try {
        key = JSON.parse(raw) as string;
      } catch {
        key = raw;
      }
      if (keys.has(key)) return { key, line };
      keys.add(key);
    }
  }
  return undefined;
}

/**
 * Refuses to rewrite a file whose bytes are not UTF-8: it was read with each invalid byte as
 * U+FFFD, so writing that text back would change them. Names the line and byte offset.
 */
function assertUtf8(text: string, path: string, what: string, ways: string): void {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return; // read a moment ago; a failure now shows when the file is written
  }
  try {
    STRICT_UTF8.decode(bytes);
  } catch {
    const decoded = Buffer.from(text, 'utf8');
    let at = 0;
    while (at < bytes.length && bytes[at] === decoded[at]) at += 1;
    const line = bytes.subarray(0, at).toString('latin1').split('\n').length;
    throw new InstallConfigMalformedError(
      `the ${what} file is not valid UTF-8 (line ${line}, byte offset ${at}); rewriting it would turn those bytes into U+FFFD (nothing was written). Save it as UTF-8, or ${ways}`,
      { details: { path, line } },
    );
  }
}

/**
 * Refuses to rewrite a file the rewrite would change without saying so (the file is read as
 * JSONC, written as JSON): comments or trailing commas it would drop, a key given twice (JSON
 * readers keep the last, so the other would go), bytes that are not UTF-8 (each would become
 * U+FFFD). Names the line and the ways out.
 */
function assertWritable(text: string | undefined, path: string, what: string): void {
  if (text === undefined) return;
  const ways =
    'add the registration by hand (see print-setup), or move the file away and run this again';
  const { json, firstCommentLine, firstTrailingCommaLine } = stripJsonc(text);
  const line = firstCommentLine ?? firstTrailingCommaLine;
  if (line !== undefined) {
    const found = firstCommentLine !== undefined ? 'a comment' : 'a trailing comma';
    throw new InstallConfigMalformedError(
      `the ${what} file has ${found} on line ${line}, which rewriting it would drop (nothing was written). Remove the comments and trailing commas, or ${ways}`,
      { details: { path, line } },
    );
  }
  assertUtf8(text, path, what, ways);
  const duplicate = firstDuplicateKey(json);
  if (duplicate !== undefined) {
    throw new InstallConfigMalformedError(
      `the ${what} file gives the key ${JSON.stringify(duplicate.key.slice(0, 40))} twice in one object (line ${duplicate.line}); JSON readers keep only the last, so rewriting it would drop the other (nothing was written). Remove one of them, or ${ways}`,
      { details: { path, line: duplicate.line } },
    );
  }
}

/** Parses a config file that must hold a JSON object (JSONC read); empty or missing is `{}`. */
function parseJsonObject(text: string | undefined, path: string, what: string): JsonObject {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripJsonc(text).json);
  } catch (error) {
    throw new InstallConfigMalformedError(
      `the ${what} file is not valid JSON; fix it or move it away, then retry (nothing was written)`,
      { details: { path }, cause: error },
    );
  }
  if (!isObject(parsed)) {
    throw new InstallConfigMalformedError(
      `the ${what} file does not hold a JSON object (nothing was written)`,
      { details: { path } },
    );
  }
  return parsed;
}

/**
 * Removes the hook's registration (keeping every other hook) and the script file. VS Code's
 * dedicated hooks file is deleted when nothing else is left in it.
 *
 * @throws {InstallConfigMalformedError} the config is not a JSON object of the expected shape.
 * @throws {InstallWriteError} a file could not be read, backed up, written or deleted.
 */
export function uninstallHook(options: HookInstallOptions): HookInstallResult {
  const resolved = resolveSetup(options);
  const { setup, projectRoot } = resolved;
  if (
    options.allowedRoots !== undefined ||
    options.toolkitBudgets !== undefined ||
    options.trustCodexHook !== undefined ||
    options.acceptHookConfig !== undefined
  ) {
    throw new InstallUsageError(
      'allowedRoots, toolkitBudgets, trustCodexHook and acceptHookConfig apply to install only',
    );
  }
  assertConfined(setup, projectRoot);
  const configBefore = readText(setup.configPath);
  const config = parseConfig(configBefore, setup);
  const list = eventList(config, setup);
  const remaining = withoutOurs(list, setup.format.grouped);
  let configAfter = configBefore;
  if (remaining.length !== list.length || !same(remaining, list)) {
    const next = withEventList(config, setup, remaining);
    // A config this installer created (no backup of an earlier file exists) is deleted once only
    // what the installer put there is left; so is VS Code's hooks file, which is ours.
    const createdByUs =
      setup.client === 'vscode' || !existsOrLink(`${setup.configPath}${INSTALL_BACKUP_SUFFIX}`);
    const onlyOurs = Object.entries(next).every(([key, value]) =>
      same(value, setup.format.topLevel[key]),
    );
    configAfter =
      createdByUs && onlyOurs
        ? undefined
        : serialize(next, { text: configBefore, path: setup.configPath, what: 'client config' });
    if (configAfter !== undefined) assertWritable(configBefore, setup.configPath, 'client config');
  }
  const scriptBefore = readText(setup.scriptPath);
  const hookConfigPath = hookConfigPathOf(setup);
  const hookConfigBefore = readText(hookConfigPath);
  const dryRun = options.dryRun ?? false;
  const outcome = result(
    resolved,
    // The registration goes first, so the hook is never registered without its script or config.
    [
      change(setup.configPath, 'config', configBefore, configAfter),
      change(setup.scriptPath, 'script', scriptBefore, undefined),
      ...legacyScriptChanges(setup),
      change(hookConfigPath, 'hook-config', hookConfigBefore, undefined),
    ],
    dryRun,
  );
  if (!dryRun) {
    // The hooks folders the installer created go too, when nothing else is in them.
    for (const folder of new Set([dirname(setup.scriptPath), dirname(setup.configPath)])) {
      try {
        rmdirSync(folder);
      } catch {
        // Not empty, or not there: leave it.
      }
    }
  }
  return outcome;
}

function existsOrLink(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Reports whether the hook is installed, registered and current for one client and scope. */
export function getHookStatus(options: Omit<HookInstallOptions, 'dryRun'>): HookStatus {
  const { setup } = resolveSetup(options);
  let script: string | undefined;
  try {
    script = readText(setup.scriptPath);
  } catch {
    script = undefined;
  }
  let configProblem: string | undefined;
  let config: JsonObject = {};
  try {
    config = parseConfig(readText(setup.configPath), setup);
  } catch (error) {
    configProblem = error instanceof Error ? error.message : 'unreadable';
  }
  const list = eventList(config, setup);
  const listText = JSON.stringify(list);
  const referenced = OUR_FILENAMES.some((name) => listText.includes(name));
  // The earlier form (`.mjs`): its file beside the current one, or a command that runs it.
  let legacyScriptPath: string | undefined;
  let legacyScript: string | undefined;
  for (const path of legacyScriptPaths(setup)) {
    try {
      legacyScript = readText(path);
    } catch {
      legacyScript = undefined;
    }
    if (legacyScript !== undefined) {
      legacyScriptPath = path;
      break;
    }
  }
  const legacyRegistered = legacyEntries(setup).some((legacy) =>
    list.some((entry) => same(entry, legacy)),
  );
  const legacyReferenced = setup.format.grouped
    ? list.some(
        (group) =>
          isObject(group) && Array.isArray(group.hooks) && group.hooks.some(isLegacyHandler),
      )
    : list.some(isLegacyHandler);
  const outdated = legacyScriptPath !== undefined || legacyReferenced;
  const installedScript = script ?? legacyScript;
  const installedProtocol =
    installedScript === undefined ? undefined : readHookProtocolVersion(installedScript);
  const current = script === HOOK_SCRIPT && !outdated;
  const hookConfigPath = hookConfigPathOf(setup);
  let allowedRoots: readonly string[] | undefined;
  let hookConfigProblem: string | undefined;
  let toolkitBudgets: Record<string, number> | undefined;
  try {
    const hookConfigText = readText(hookConfigPath);
    const hookConfig = parseHookConfig(hookConfigText, hookConfigPath);
    if (hookConfigText !== undefined && hookConfigText.trim() !== '') {
      try {
        JSON.parse(hookConfigText);
      } catch {
        hookConfigProblem =
          'the hook config file is not plain JSON (the hook reads it strictly: remove comments and trailing commas)';
      }
    }
    const roots = hookConfig.allowedRoots;
    if (Array.isArray(roots) && roots.every((root) => typeof root === 'string')) {
      allowedRoots = roots as string[];
    } else if (roots !== undefined) {
      hookConfigProblem = 'allowedRoots is not a list of paths';
    }
    const budgets = hookConfig.toolkitBudgets;
    if (isObject(budgets) && Object.values(budgets).every((bytes) => typeof bytes === 'number')) {
      toolkitBudgets = budgets as Record<string, number>;
    } else if (budgets !== undefined) {
      hookConfigProblem = 'toolkitBudgets is not a map of server names to byte counts';
    }
  } catch (error) {
    hookConfigProblem = error instanceof Error ? error.message : 'unreadable';
  }
  // The hook's own reader has the last word: what it refuses, it refuses for every rewrite.
  let hookSettings: readonly HookConfigSetting[] = [];
  const hookReport = inspectHookConfig(hookConfigPath);
  if (!hookReport.valid) hookConfigProblem ??= hookReport.reason;
  else hookSettings = hookReport.settings;
  const isRegistered = registered(config, setup);
  let codex: CodexHookTrust | undefined;
  if (setup.client === 'codex') {
    const configTomlPath = join(codexHomeOf(options, options.home ?? homedir()), 'config.toml');
    const identity = codexIdentity(list, setup);
    let problem: string | undefined;
    let facts: ReturnType<typeof readCodexConfig> | undefined;
    try {
      facts = readCodexConfig(readText(configTomlPath) ?? '');
    } catch (error) {
      problem = error instanceof Error ? error.message : 'unreadable';
    }
    const state = identity === undefined ? undefined : facts?.hookStates.get(identity.key);
    const hooksEnabled = facts?.hooksFeature !== false && facts?.codexHooksFeature !== false;
    codex = {
      configTomlPath,
      key: identity?.key,
      expectedHash: identity?.hash,
      trustedHash: state?.trustedHash,
      trusted:
        identity !== undefined && state?.trustedHash === identity.hash && state.enabled !== false,
      hooksEnabled,
      problem,
    };
  }
  const problems: string[] = [];
  if (script === undefined && legacyScript === undefined) {
    problems.push(`the hook script is not installed at ${setup.scriptPath}`);
  } else if (isRegistered && script === undefined) {
    problems.push(`the hook script is not installed at ${setup.scriptPath}: run install again`);
  } else if (!isRegistered && legacyRegistered && legacyScript === undefined) {
    problems.push(
      `the registered command runs the earlier ${LEGACY_HOOK_SCRIPT_FILENAMES.join(' or ')}, which is not there: run install again`,
    );
  }
  if (configProblem !== undefined) problems.push(`client config: ${configProblem}`);
  else if (!isRegistered && !legacyRegistered) {
    problems.push(
      referenced
        ? `registered in ${setup.configPath} with a different command or matcher: run install again`
        : `not registered in ${setup.configPath}`,
    );
  }
  if (hookConfigProblem !== undefined) {
    problems.push(`hook config: ${hookConfigProblem} (every rewrite is denied)`);
  }
  if (codex !== undefined) {
    if (codex.problem !== undefined) problems.push(`Codex config.toml: ${codex.problem}`);
    if (!codex.hooksEnabled) {
      problems.push(
        `hooks are turned off in ${codex.configTomlPath} ([features] hooks = false or codex_hooks = false)`,
      );
    }
    if ((isRegistered || legacyRegistered) && !codex.trusted) {
      problems.push(
        codex.trustedHash === undefined
          ? 'Codex has not trusted this hook, so it skips it silently: open /hooks in Codex and trust it, or run install --client codex --trust-codex-hook'
          : 'Codex trusted an earlier definition of this hook (the trust hash differs), so it skips it: trust it again in /hooks, or run install --client codex --trust-codex-hook',
      );
    }
  }
  return {
    client: setup.client,
    scope: setup.scope,
    scriptPath: setup.scriptPath,
    configPath: setup.configPath,
    scriptInstalled: installedScript !== undefined,
    installedProtocol,
    availableProtocol: HOOK_PROTOCOL_VERSION,
    current,
    stale: installedScript !== undefined && !current,
    outdated,
    legacyScriptPath,
    registered: isRegistered,
    referenced,
    configProblem,
    hookConfigPath,
    allowedRoots,
    hookConfigProblem,
    hookSettings,
    toolkitBudgets,
    codex,
    problems,
    working: problems.length === 0,
  };
}
