import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { lstat, open, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CLIENT_KINDS,
  type ClientKind,
  importClientServers,
  unwrapClientFile,
  wrapClientFile,
} from '../gateway/client-formats.js';
import { GatewayConfigError } from '../gateway/errors.js';
import { parseGatewayConfig } from '../gateway/gateway-config.js';
import { loadInspectPolicy } from '../gateway/policy-file.js';
import { shownPath } from '../gateway/shown-path.js';
import { isRecord } from '../is-record.js';
import { type CliIo, flagValue, unknownOption } from './cli-io.js';
import { EXIT_CODES } from './exit-codes.js';
import { MAX_GATEWAY_CONFIG_BYTES, parseJsonText, readRegularFile } from './read-file.js';
import { safeFailureMessage } from './safe-failure-message.js';

/** Largest client config file read by `wrap`, in bytes (8 MiB: `~/.claude.json` grows). */
const MAX_CLIENT_FILE_BYTES = 8 * 1024 * 1024;

/** Default milliseconds `wrap` waits for the gateway command's `--version` (`--check-timeout-ms`). */
export const DEFAULT_WRAP_CHECK_TIMEOUT_MS = 20_000;

/** What `--command npx` writes: the package's own bin, whatever else npm has under that name. */
const NPX_ARGS = ['-y', '-p', '@toolfence/mcp-bridge', 'toolfence-mcp'];

/** The help text of `toolfence-mcp wrap` and `unwrap`. */
export const WRAP_HELP: string = `Usage:
  toolfence-mcp wrap --client <claude|cursor|vscode|codex> [--file PATH] [--config PATH]
                     [--project DIR] [--command CMD] [--policy FILE] [--merge]
                     [--no-check] [--check-timeout-ms MS]
  toolfence-mcp unwrap --client <claude|cursor|vscode|codex> [--file PATH] [--force]

wrap    Moves the client's MCP servers into toolfence.json (--config, default beside the client
        file) and leaves the client file listing only the gateway ("toolfence"). The original is
        kept as <file>.toolfence-backup. Default files: claude .mcp.json, cursor .cursor/mcp.json,
        vscode .vscode/mcp.json (all in the current folder), codex ~/.codex/config.toml.
        --project DIR picks that project's servers in Claude Code's ~/.claude.json.
        --command CMD is what the client runs: default this toolfence-mcp by absolute path
        (node and its script), so it runs without PATH; "npx" writes
        npx -y -p @toolfence/mcp-bridge toolfence-mcp; several words are a command and its
        arguments. Before writing, wrap runs it with --version (at most --check-timeout-ms,
        default 20000; --no-check skips this).
        --policy FILE is written as serve's --policy (checked first).
        An existing toolfence.json holding anything but these same servers is refused unless
        --merge (its gateway settings are kept and printed; one that turns enforcement off is a
        warning).
unwrap  Puts the original file back byte for byte when it is as wrap left it. When the client
        has rewritten it since, puts back only the servers wrap moved, in place of the gateway,
        and keeps the rest of the file as it is now. --force restores the backup whole. The
        servers stay in toolfence.json, so wrap can run again.
`;

interface WrapArguments {
  client?: ClientKind;
  file?: string;
  config?: string;
  project?: string;
  command?: string;
  policy?: string;
  merge: boolean;
  check: boolean;
  checkTimeoutMs: number;
  force: boolean;
}

interface WrapState {
  readonly version: 1 | 2;
  readonly client: ClientKind;
  readonly config: string;
  readonly servers: readonly string[];
  readonly wrote: string;
  /** Version 2: where the servers sit in the file, and the gateway entry's name. */
  readonly serversPath?: readonly string[];
  readonly name?: string;
}

function usage(message: string): GatewayConfigError {
  return new GatewayConfigError(message, { code: 'GATEWAY_USAGE' });
}

function parseArguments(argv: readonly string[], unwrap: boolean): WrapArguments {
  const parsed: WrapArguments = {
    force: false,
    merge: false,
    check: true,
    checkTimeoutMs: DEFAULT_WRAP_CHECK_TIMEOUT_MS,
  };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index] as string;
    // The word after the flag; the loop goes on after it.
    const value = (): string => flagValue(argv, index++, usage);
    if (flag === '--client') {
      const client = value();
      if (!(CLIENT_KINDS as readonly string[]).includes(client)) {
        throw usage(`--client is one of ${CLIENT_KINDS.join(', ')}`);
      }
      parsed.client = client as ClientKind;
    } else if (flag === '--file') parsed.file = value();
    else if (flag === '--config' && !unwrap) parsed.config = value();
    else if (flag === '--project' && !unwrap) parsed.project = value();
    else if (flag === '--command' && !unwrap) parsed.command = value();
    else if (flag === '--policy' && !unwrap) parsed.policy = value();
    else if (flag === '--merge' && !unwrap) parsed.merge = true;
    else if (flag === '--no-check' && !unwrap) parsed.check = false;
    else if (flag === '--check-timeout-ms' && !unwrap) {
      const text = value();
      const number = Number(text);
      if (!/^\d{1,7}$/.test(text) || number < 1) {
        throw usage('--check-timeout-ms takes a positive number of milliseconds');
      }
      parsed.checkTimeoutMs = number;
    } else if (flag === '--force' && unwrap) parsed.force = true;
    else throw usage(unknownOption(flag));
  }
  if (parsed.client === undefined) throw usage(`--client <${CLIENT_KINDS.join('|')}> is required`);
  return parsed;
}

function homeOf(io: CliIo): string | undefined {
  const home = io.env?.HOME;
  return home === undefined || home === '' ? undefined : home;
}

function clientFile(parsed: WrapArguments, io: CliIo): string {
  const cwd = io.cwd ?? process.cwd();
  if (parsed.file !== undefined)
    return isAbsolute(parsed.file) ? parsed.file : resolve(cwd, parsed.file);
  if (parsed.client === 'codex') {
    const codexHome = io.env?.CODEX_HOME;
    if (codexHome !== undefined && codexHome !== '') return join(codexHome, 'config.toml');
    const home = homeOf(io);
    if (home === undefined) throw usage('HOME is not set; give --file PATH');
    return join(home, '.codex', 'config.toml');
  }
  const relative = { claude: '.mcp.json', cursor: '.cursor/mcp.json', vscode: '.vscode/mcp.json' }[
    parsed.client as 'claude' | 'cursor' | 'vscode'
  ];
  return resolve(cwd, relative);
}

function workspaceOf(client: ClientKind, file: string): string | undefined {
  const folder = dirname(file);
  if (client === 'cursor' && folder.endsWith('/.cursor')) return dirname(folder);
  if (client === 'vscode' && folder.endsWith('/.vscode')) return dirname(folder);
  return undefined;
}

/**
 * Where a write to `path` must land: the file a symbolic link points to (so the link stays a link
 * and its target is updated), or `path` itself. A dangling link is refused.
 */
async function writeTarget(path: string): Promise<string> {
  let info: Awaited<ReturnType<typeof lstat>>;
  try {
    info = await lstat(path);
  } catch {
    return path;
  }
  if (!info.isSymbolicLink()) return path;
  try {
    return await realpath(path);
  } catch (error) {
    throw new GatewayConfigError(
      `${shownPath(path)} is a symbolic link to a file that does not exist; fix the link first`,
      { cause: error, details: { at: path } },
    );
  }
}

/**
 * Writes `bytes` to `path` atomically (a temporary file beside the target, then a rename). A
 * symbolic link is written through: its target is replaced, the link is kept.
 */
async function writeAtomic(path: string, bytes: Buffer | string, mode: number): Promise<void> {
  const target = await writeTarget(path);
  const temporary = `${target}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(temporary, 'wx', mode);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new GatewayConfigError(`Cannot write ${shownPath(path)}`, { cause: error });
  }
}

/** Writes a file that must not exist yet (the backup); false when it exists. */
async function writeNew(path: string, bytes: Buffer | string, mode: number): Promise<boolean> {
  try {
    const handle = await open(path, 'wx', mode);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') return false;
    throw new GatewayConfigError(`Cannot write ${shownPath(path)}`, { cause: error });
  }
}

const sha256 = (bytes: Buffer | string): string =>
  `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

// Every variable reads as set, so wrap checks the moved servers' shape without their values.
const placeholderEnv = (env: CliIo['env']): Record<string, string> =>
  new Proxy({} as Record<string, string>, {
    get: (_target, key) =>
      typeof key === 'string' && env?.[key] !== undefined && env[key] !== ''
        ? env[key]
        : 'toolfence-placeholder',
  });

function canonical(value: unknown): string {
  const sort = (item: unknown): unknown =>
    Array.isArray(item)
      ? item.map(sort)
      : isRecord(item)
        ? Object.fromEntries(
            Object.keys(item)
              .sort()
              .map((key) => [key, sort(item[key])]),
          )
        : item;
  return JSON.stringify(sort(value));
}

/** The gateway settings of an existing config that turn enforcement off or weaken it. */
function weakenedSettings(gateway: Record<string, unknown>, configPath: string): string[] {
  const out: string[] = [];
  if (gateway.observe === true) out.push('gateway.observe is true: nothing is enforced');
  if (typeof gateway.audit === 'string') {
    const audit = isAbsolute(gateway.audit)
      ? gateway.audit
      : resolve(dirname(configPath), gateway.audit);
    let regular = true;
    try {
      const info = existsSync(audit) ? statSync(audit) : undefined;
      regular = info === undefined || info.isFile();
    } catch {
      regular = true;
    }
    if (!regular || audit === '/dev/null') {
      out.push(
        `gateway.audit is ${shownPath(gateway.audit)}, not a regular file: nothing is audited`,
      );
    }
  }
  const budget = gateway.budget;
  if (isRecord(budget) && budget.onUnavailable === 'allow') {
    out.push(
      'gateway.budget.onUnavailable is "allow": calls run without a budget when Redis is down',
    );
  }
  return out;
}

interface MergedConfig {
  readonly text: string;
  /** Lines to show: the existing config's settings that are kept. */
  readonly kept: readonly string[];
  /** Lines to warn about: kept settings that turn enforcement off or weaken it. */
  readonly weakened: readonly string[];
}

async function mergedConfig(
  configPath: string,
  servers: Readonly<Record<string, Record<string, unknown>>>,
  io: CliIo,
  merge: boolean,
): Promise<MergedConfig> {
  let existing: Record<string, unknown> | undefined;
  try {
    const text = (
      await readRegularFile(configPath, 'config file', MAX_GATEWAY_CONFIG_BYTES)
    ).toString('utf8');
    const parsed = parseJsonText(text, configPath);
    if (!isRecord(parsed)) {
      throw new GatewayConfigError(`${shownPath(configPath)}: must hold a JSON object`);
    }
    existing = parsed;
  } catch (error) {
    if ((error as { cause?: { code?: unknown } }).cause?.code !== 'ENOENT') throw error;
  }
  const base = existing ?? { mcpServers: {} };
  const current = isRecord(base.mcpServers) ? base.mcpServers : {};
  const added: Record<string, unknown> = {};
  for (const name of Object.keys(servers)) {
    if (Object.hasOwn(current, name)) {
      // What an earlier wrap moved (wrap, unwrap, wrap) is already there as it is: kept.
      if (canonical(current[name]) === canonical(servers[name])) continue;
      throw new GatewayConfigError(
        `${shownPath(configPath)}: already has a server named "${name}" with another entry; rename one of them first`,
      );
    }
    added[name] = servers[name];
  }
  const others = Object.keys(base).filter((key) => key !== 'mcpServers' && key !== '$schema');
  const otherServers = Object.keys(current).filter((name) => !Object.hasOwn(servers, name));
  if (existing !== undefined && !merge && (others.length > 0 || otherServers.length > 0)) {
    throw new GatewayConfigError(
      `${shownPath(configPath)} already exists with ${
        otherServers.length > 0 ? 'other servers' : 'gateway settings'
      }; give --merge to add these servers to it (its settings are kept and shown), or --config a new path`,
      { code: 'WRAP_CONFIG_EXISTS', details: { at: configPath } },
    );
  }
  const gateway = isRecord(base.gateway) ? base.gateway : {};
  const kept = [
    ...otherServers.map((name) => `mcpServers.${name}`),
    ...Object.keys(gateway).map((key) => `gateway.${key}`),
  ];
  const next = { ...base, mcpServers: { ...current, ...added } };
  parseGatewayConfig(next, placeholderEnv(io.env));
  return {
    text: `${JSON.stringify(next, null, 2)}\n`,
    kept,
    weakened: weakenedSettings(gateway, configPath),
  };
}

/** The running CLI's script: dist/bin/main.js beside this module (the bundled command), or the built one from source. */
function runningCliScript(): string {
  const here = fileURLToPath(import.meta.url);
  const beside = join(dirname(here), 'main.js');
  if (here.endsWith('.js') && existsSync(beside)) return beside;
  return fileURLToPath(new URL('../../dist/bin/main.js', import.meta.url));
}

/** Splits a `--command` into words: spaces separate, "double" and 'single' quotes group. */
function splitCommand(text: string): string[] {
  const words: string[] = [];
  const pattern = /\s*(?:"([^"]*)"|'([^']*)'|([^\s"']+))/y;
  let word: string | undefined;
  let last = 0;
  for (;;) {
    const match = pattern.exec(text);
    if (match === null) break;
    const part = match[1] ?? match[2] ?? match[3] ?? '';
    const joined = match.index === last && word !== undefined && !/^\s/.test(match[0]);
    if (joined) word = `${word}${part}`;
    else {
      if (word !== undefined) words.push(word);
      word = part;
    }
    last = pattern.lastIndex;
  }
  if (word !== undefined) words.push(word);
  if (text.slice(last).trim() !== '') throw usage('--command has an unclosed quote');
  return words;
}

/** What the client file runs: the command and the arguments before `serve`. */
async function gatewayCommand(
  given: string | undefined,
): Promise<{ command: string; args: string[] }> {
  if (given === undefined) {
    return { command: process.execPath, args: [await realpath(runningCliScript())] };
  }
  const words = splitCommand(given);
  const [command, ...args] = words;
  if (command === undefined || command === '') throw usage('--command needs a command');
  if (args.length === 0 && basename(command) === 'npx') return { command, args: [...NPX_ARGS] };
  return { command, args };
}

/** Runs the gateway command with `--version`: it must exit 0 within `timeoutMs`. */
function checkCommand(
  gateway: { command: string; args: string[] },
  io: CliIo,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolveCheck, reject) => {
    const shown = shownPath([gateway.command, ...gateway.args].join(' '));
    execFile(
      gateway.command,
      [...gateway.args, '--version'],
      {
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024,
        env: { ...(io.env ?? {}) } as NodeJS.ProcessEnv,
        cwd: io.cwd ?? process.cwd(),
        windowsHide: true,
      },
      (error) => {
        if (error === null) {
          resolveCheck();
          return;
        }
        const code = (error as { code?: unknown }).code;
        const why =
          (error as { killed?: boolean }).killed === true
            ? `gave no answer within ${timeoutMs} ms (--check-timeout-ms)`
            : typeof code === 'string'
              ? `could not be started (${/^E[A-Z]+$/.test(code) ? code : 'error'})`
              : `exited with ${typeof code === 'number' ? `code ${code}` : 'a signal'}`;
        reject(
          new GatewayConfigError(
            `The gateway command "${shown} --version" ${why}; the client could not start it. Give --command with a command that runs (or --no-check to write it anyway)`,
            { code: 'WRAP_COMMAND_FAILED', cause: error },
          ),
        );
      },
    );
  });
}

function absolute(path: string, io: CliIo): string {
  return isAbsolute(path) ? path : resolve(io.cwd ?? process.cwd(), path);
}

/** `toolfence-mcp wrap`: moves a client's servers behind the gateway, keeping a backup. */
export async function runWrap(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(WRAP_HELP);
    return EXIT_CODES.ok;
  }
  try {
    const parsed = parseArguments(argv, false);
    const client = parsed.client as ClientKind;
    const file = clientFile(parsed, io);
    const backup = `${file}.toolfence-backup`;
    const statePath = `${file}.toolfence-wrap.json`;
    const original = await readRegularFile(file, `${client} config file`, MAX_CLIENT_FILE_BYTES);
    if (existsSync(backup)) {
      throw new GatewayConfigError(
        `${shownPath(file)} is already wrapped (${shownPath(backup)} exists); run toolfence-mcp unwrap first`,
      );
    }
    const mode = (await stat(file)).mode & 0o777;
    const configPath =
      parsed.config === undefined
        ? join(dirname(file), 'toolfence.json')
        : absolute(parsed.config, io);
    const policyPath = parsed.policy === undefined ? undefined : absolute(parsed.policy, io);
    // The policy the client's gateway will read is checked now, as serve reads it.
    if (policyPath !== undefined) await loadInspectPolicy(policyPath);
    const home = homeOf(io);
    const workspace = workspaceOf(client, file);
    const options = {
      ...(parsed.project === undefined ? {} : { project: parsed.project }),
      ...(home === undefined ? {} : { home }),
      ...(workspace === undefined ? {} : { workspace }),
    };
    const text = original.toString('utf8');
    if (Object.hasOwn(importClientServers(client, text, file, options).mcpServers, 'toolfence')) {
      throw new GatewayConfigError(
        `${shownPath(file)} already lists a server named "toolfence" (the gateway's entry); unwrap first, or rename that server`,
      );
    }
    const command = await gatewayCommand(parsed.command);
    const wrapped = wrapClientFile(
      client,
      text,
      file,
      {
        command: command.command,
        args: [
          ...command.args,
          'serve',
          '--config',
          configPath,
          ...(policyPath === undefined ? [] : ['--policy', policyPath]),
        ],
      },
      options,
    );
    const config = await mergedConfig(configPath, wrapped.imported.mcpServers, io, parsed.merge);
    if (parsed.check) await checkCommand(command, io, parsed.checkTimeoutMs);
    if (!(await writeNew(backup, original, mode))) {
      throw new GatewayConfigError(
        `${shownPath(file)} is already wrapped (${shownPath(backup)} exists); run toolfence-mcp unwrap first`,
      );
    }
    try {
      await writeAtomic(configPath, config.text, 0o600);
      const state: WrapState = {
        version: 2,
        client,
        config: configPath,
        servers: Object.keys(wrapped.imported.mcpServers),
        wrote: sha256(wrapped.text),
        serversPath: wrapped.serversPath,
        name: 'toolfence',
      };
      await writeAtomic(statePath, `${JSON.stringify(state, null, 2)}\n`, 0o600);
      await writeAtomic(file, wrapped.text, mode);
    } catch (error) {
      await rm(backup, { force: true });
      await rm(statePath, { force: true });
      throw error;
    }
    const names = Object.keys(wrapped.imported.mcpServers);
    io.out(`Moved ${names.length} server(s) behind the gateway: ${names.join(', ')}\n`);
    io.out(`  config: ${configPath}\n  backup: ${backup}\n`);
    io.out(`  the client runs: ${[command.command, ...command.args].join(' ')} serve ...\n`);
    if (config.kept.length > 0) {
      io.out(`  kept from the existing config: ${config.kept.join(', ')}\n`);
    }
    for (const warning of config.weakened) {
      io.err(`toolfence-mcp: warning: ${shownPath(configPath)} keeps ${warning}\n`);
    }
    if (wrapped.imported.variables.length > 0) {
      io.out(
        `  variables read when the gateway starts: ${wrapped.imported.variables.join(', ')}\n`,
      );
    }
    if (wrapped.imported.dropped.length > 0) {
      io.out(
        `  not carried over (the gateway's own limits and policy apply): ${wrapped.imported.dropped.join(', ')}\n`,
      );
    }
    if (wrapped.imported.kept.length > 0) {
      io.out(`  left in the client file (disabled): ${wrapped.imported.kept.join(', ')}\n`);
    }
    io.out('Restart your client; toolfence-mcp unwrap puts the original file back.\n');
    return EXIT_CODES.ok;
  } catch (error) {
    return fail(io, error);
  }
}

/** `toolfence-mcp unwrap`: puts back what `wrap` changed, keeping the client's later changes. */
export async function runUnwrap(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(WRAP_HELP);
    return EXIT_CODES.ok;
  }
  try {
    const parsed = parseArguments(argv, true);
    const client = parsed.client as ClientKind;
    const file = clientFile(parsed, io);
    const backup = `${file}.toolfence-backup`;
    const statePath = `${file}.toolfence-wrap.json`;
    const original = await readRegularFile(backup, 'backup file', MAX_CLIENT_FILE_BYTES).catch(
      (error: unknown) => {
        throw new GatewayConfigError(
          `${shownPath(file)} is not wrapped (no ${shownPath(backup)})`,
          {
            cause: error,
          },
        );
      },
    );
    let state: WrapState | undefined;
    try {
      state = JSON.parse(await readFile(statePath, 'utf8')) as WrapState;
    } catch {
      state = undefined;
    }
    const current = await readRegularFile(
      file,
      `${client} config file`,
      MAX_CLIENT_FILE_BYTES,
    ).catch(() => undefined);
    const mode = current === undefined ? 0o600 : (await stat(file)).mode & 0o777;
    let restored: Buffer | string = original;
    let surgical = false;
    if (
      !parsed.force &&
      current !== undefined &&
      (state === undefined || sha256(current) !== state.wrote)
    ) {
      // Without wrap's record of what it moved and where (an older wrap wrote no place), only the
      // whole backup can be restored, and that would drop the client's changes: refused.
      if (
        state === undefined ||
        !Array.isArray(state.servers) ||
        state.client !== client ||
        !Array.isArray(state.serversPath)
      ) {
        throw new GatewayConfigError(
          `${shownPath(file)} changed since wrap and wrap's record of what it moved (${shownPath(statePath)}) is missing or from an older version; unwrap --force restores the backup whole`,
        );
      }
      restored = unwrapClientFile(
        client,
        current.toString('utf8'),
        original.toString('utf8'),
        file,
        {
          name: state.name ?? 'toolfence',
          servers: state.servers,
          serversPath: state.serversPath,
        },
      );
      surgical = true;
    }
    await writeAtomic(file, restored, mode);
    await rm(statePath, { force: true });
    await rm(backup, { force: true });
    io.out(
      surgical
        ? `Put the moved servers back into ${file} (${state?.servers.join(', ')}), keeping the client's changes since wrap.`
        : `Restored ${file}.`,
    );
    io.out(
      `${state === undefined ? '' : ` ${state.config} still lists the moved servers (wrap can use it again).`}\n`,
    );
    return EXIT_CODES.ok;
  } catch (error) {
    return fail(io, error);
  }
}

function fail(io: CliIo, error: unknown): number {
  io.err(`toolfence-mcp: ${safeFailureMessage(error)}\n`);
  if ((error as { code?: unknown }).code === 'GATEWAY_USAGE') {
    io.err('Run "toolfence-mcp wrap --help" for usage.\n');
    return EXIT_CODES.usage;
  }
  return EXIT_CODES.failure;
}
