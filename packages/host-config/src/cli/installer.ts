import { randomBytes } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
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
  readHookProtocolVersion,
} from '../attachments/hook-script.js';
import { InstallConfigMalformedError, InstallUsageError, InstallWriteError } from './errors.js';

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
   * config file next to the script. Each must exist. Default: leave that file as it is.
   */
  readonly allowedRoots?: readonly string[];
}

/** One file the installer creates, updates or deletes. */
export interface HookFileChange {
  /** Absolute path of the file. */
  readonly path: string;
  /** Which file: the hook script, the client's config, or the hook's own config (`allowedRoots`). */
  readonly kind: 'script' | 'config' | 'hook-config';
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
  /** The script file exists. */
  readonly scriptInstalled: boolean;
  /** `protocol=N` read from the installed script, if any. */
  readonly installedProtocol: number | undefined;
  /** The protocol this package ships. */
  readonly availableProtocol: number;
  /** The installed script is byte-for-byte the one this package ships. */
  readonly current: boolean;
  /** Installed, but older or different from the shipped script: run install again. */
  readonly stale: boolean;
  /** The client config registers the exact command this installer writes. */
  readonly registered: boolean;
  /** The client config holds some command naming the hook's file name. */
  readonly referenced: boolean;
  /** Set when the client config cannot be read as JSON. */
  readonly configProblem: string | undefined;
  /** Where the hook's own config file (allowlist, limits) is. */
  readonly hookConfigPath: string;
  /** `allowedRoots` from the hook config file; undefined when none is set there. */
  readonly allowedRoots: readonly string[] | undefined;
  /** Set when the hook config file exists but is not valid (the hook then denies every rewrite). */
  readonly hookConfigProblem: string | undefined;
}

/** Suffix of the single backup kept next to a config file the installer changed. */
export const INSTALL_BACKUP_SUFFIX = '.toolfence.bak';

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function resolveSetup(options: HookInstallOptions): HookSetup {
  if (typeof options !== 'object' || options === null) {
    throw new InstallUsageError('options must be an object');
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
  return getHookSetup(options.client, scope, {
    home,
    projectDir,
    ...(codexHome === undefined ? {} : { codexHome }),
  });
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

function isOurHandler(handler: unknown): boolean {
  return (
    isObject(handler) &&
    typeof handler.command === 'string' &&
    handler.command.includes(HOOK_SCRIPT_FILENAME)
  );
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

function serialize(config: JsonObject): string {
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** Writes through a temporary file and a rename, so readers see the old or the new file, never half. */
function writeAtomic(path: string, text: string, mode: number): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    const fd = openSync(temporary, 'wx', mode);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new InstallWriteError('writing the file failed; the previous file is unchanged', {
      details: { path, code: (error as { code?: unknown }).code },
      cause: error,
    });
  }
}

/** Follows a symlinked config (dotfile managers) so the link stays a link. */
function targetOf(path: string): string {
  try {
    if (lstatSync(path).isSymbolicLink()) return realpathSync(path);
  } catch {
    // Missing file: write at the path itself.
  }
  return path;
}

function modeOf(path: string, fallback: number): number {
  try {
    return statSync(path).mode & 0o777;
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
  const backupPath =
    kind !== 'script' && before !== undefined && action !== 'unchanged'
      ? `${path}${INSTALL_BACKUP_SUFFIX}`
      : undefined;
  return { path, kind, action, before, after, backupPath };
}

function apply(changes: readonly HookFileChange[]): void {
  for (const item of changes) {
    if (item.action === 'unchanged') continue;
    const target = targetOf(item.path);
    if (item.backupPath !== undefined) {
      try {
        copyFileSync(target, item.backupPath);
      } catch (error) {
        throw new InstallWriteError('backing up the config file failed; nothing was changed', {
          details: { path: item.backupPath },
          cause: error,
        });
      }
    }
    if (item.after === undefined) {
      try {
        unlinkSync(target);
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ENOENT') {
          throw new InstallWriteError('deleting the file failed', {
            details: { path: item.path },
            cause: error,
          });
        }
      }
    } else {
      writeAtomic(target, item.after, modeOf(target, 0o644));
    }
  }
}

function result(setup: HookSetup, changes: HookFileChange[], dryRun: boolean): HookInstallResult {
  if (!dryRun) apply(changes);
  return { setup, changes, changed: changes.some((item) => item.action !== 'unchanged'), dryRun };
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
  const setup = resolveSetup(options);
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
    next = withEventList(config, setup, [...withoutOurs(list, setup.format.grouped), setup.entry]);
  }
  for (const [key, value] of Object.entries(setup.format.topLevel)) {
    if (!(key in next)) next = { [key]: value, ...next };
  }
  const configAfter =
    same(next, config) && configBefore !== undefined ? configBefore : serialize(next);
  const scriptBefore = readText(setup.scriptPath);
  const changes = [
    change(setup.scriptPath, 'script', scriptBefore, HOOK_SCRIPT),
    change(setup.configPath, 'config', configBefore, configAfter),
  ];
  if (options.allowedRoots !== undefined) {
    const roots = checkRoots(options.allowedRoots);
    const path = hookConfigPathOf(setup);
    const before = readText(path);
    const existing = parseHookConfig(before, path);
    const next = { ...existing, allowedRoots: roots };
    const after = before !== undefined && same(next, existing) ? before : serialize(next);
    changes.push(change(path, 'hook-config', before, after));
  }
  return result(setup, changes, options.dryRun ?? false);
}

function hookConfigPathOf(setup: HookSetup): string {
  return join(dirname(setup.scriptPath), HOOK_CONFIG_FILENAME);
}

function checkRoots(roots: unknown): string[] {
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
    return root;
  });
}

function parseHookConfig(text: string | undefined, path: string): JsonObject {
  return parseJsonObject(text, path, 'hook config');
}

/** Parses a config file that must hold a JSON object; empty or missing is `{}`. */
function parseJsonObject(text: string | undefined, path: string, what: string): JsonObject {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
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
  const setup = resolveSetup(options);
  const configBefore = readText(setup.configPath);
  const config = parseConfig(configBefore, setup);
  const list = eventList(config, setup);
  const remaining = withoutOurs(list, setup.format.grouped);
  let configAfter = configBefore;
  if (remaining.length !== list.length || !same(remaining, list)) {
    const next = withEventList(config, setup, remaining);
    const ownFile = setup.client === 'vscode';
    configAfter = ownFile && Object.keys(next).length === 0 ? undefined : serialize(next);
  }
  const scriptBefore = readText(setup.scriptPath);
  return result(
    setup,
    [
      change(setup.scriptPath, 'script', scriptBefore, undefined),
      change(setup.configPath, 'config', configBefore, configAfter),
    ],
    options.dryRun ?? false,
  );
}

/** Reports whether the hook is installed, registered and current for one client and scope. */
export function getHookStatus(options: Omit<HookInstallOptions, 'dryRun'>): HookStatus {
  const setup = resolveSetup(options);
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
  const referenced = JSON.stringify(list).includes(HOOK_SCRIPT_FILENAME);
  const installedProtocol = script === undefined ? undefined : readHookProtocolVersion(script);
  const current = script === HOOK_SCRIPT;
  const hookConfigPath = hookConfigPathOf(setup);
  let allowedRoots: readonly string[] | undefined;
  let hookConfigProblem: string | undefined;
  try {
    const hookConfig = parseHookConfig(readText(hookConfigPath), hookConfigPath);
    const roots = hookConfig.allowedRoots;
    if (Array.isArray(roots) && roots.every((root) => typeof root === 'string')) {
      allowedRoots = roots as string[];
    } else if (roots !== undefined) {
      hookConfigProblem = 'allowedRoots is not a list of paths';
    }
  } catch (error) {
    hookConfigProblem = error instanceof Error ? error.message : 'unreadable';
  }
  return {
    client: setup.client,
    scope: setup.scope,
    scriptPath: setup.scriptPath,
    configPath: setup.configPath,
    scriptInstalled: script !== undefined,
    installedProtocol,
    availableProtocol: HOOK_PROTOCOL_VERSION,
    current,
    stale: script !== undefined && !current,
    registered: registered(config, setup),
    referenced,
    configProblem,
    hookConfigPath,
    allowedRoots,
    hookConfigProblem,
  };
}
