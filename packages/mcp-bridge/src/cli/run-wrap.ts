import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  CLIENT_KINDS,
  type ClientKind,
  importClientServers,
  wrapClientFile,
} from '../gateway/client-formats.js';
import { GatewayConfigError } from '../gateway/errors.js';
import { parseGatewayConfig } from '../gateway/gateway-config.js';
import type { CliIo } from './cli-io.js';
import { MAX_GATEWAY_CONFIG_BYTES, readRegularFile } from './read-file.js';
import { EXIT_CODES, safeFailureMessage } from './run-inspect.js';

/** Largest client config file read by `wrap`, in bytes (8 MiB: `~/.claude.json` grows). */
const MAX_CLIENT_FILE_BYTES = 8 * 1024 * 1024;

/** The help text of `toolfence-mcp wrap` and `unwrap`. */
export const WRAP_HELP: string = `Usage:
  toolfence-mcp wrap --client <claude|cursor|vscode|codex> [--file PATH] [--config PATH]
                     [--project DIR] [--command CMD]
  toolfence-mcp unwrap --client <claude|cursor|vscode|codex> [--file PATH] [--force]

wrap    Moves the client's MCP servers into toolfence.json (--config, default beside the client
        file) and leaves the client file listing only the gateway ("toolfence"). The original is
        kept as <file>.toolfence-backup. Default files: claude .mcp.json, cursor .cursor/mcp.json,
        vscode .vscode/mcp.json (all in the current folder), codex ~/.codex/config.toml.
        --project DIR picks that project's servers in Claude Code's ~/.claude.json.
        --command CMD is the gateway executable written into the client file (default
        toolfence-mcp).
unwrap  Puts the original file back byte for byte; refuses when the file changed since wrap
        (--force restores it anyway). toolfence.json is left as it is.
`;

interface WrapArguments {
  client?: ClientKind;
  file?: string;
  config?: string;
  project?: string;
  command?: string;
  force: boolean;
}

interface WrapState {
  readonly version: 1;
  readonly client: ClientKind;
  readonly config: string;
  readonly servers: readonly string[];
  readonly wrote: string;
}

function usage(message: string): GatewayConfigError {
  return new GatewayConfigError(message, { code: 'GATEWAY_USAGE' });
}

function parseArguments(argv: readonly string[], unwrap: boolean): WrapArguments {
  const parsed: WrapArguments = { force: false };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index] as string;
    const value = (): string => {
      const next = argv[index + 1];
      if (next === undefined || next.startsWith('--')) throw usage(`${flag} needs a value`);
      index += 1;
      return next;
    };
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
    else if (flag === '--force' && unwrap) parsed.force = true;
    else throw usage(`unknown option ${/^[\w-]{1,40}$/.test(flag) ? flag : ''}`.trim());
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

/** Writes `bytes` to `path` atomically (a temporary file in the same folder, then a rename). */
async function writeAtomic(path: string, bytes: Buffer | string, mode: number): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const handle = await open(temporary, 'wx', mode);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new GatewayConfigError(`Cannot write ${path}`, { cause: error });
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
    throw new GatewayConfigError(`Cannot write ${path}`, { cause: error });
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

async function mergedConfig(
  configPath: string,
  servers: Readonly<Record<string, Record<string, unknown>>>,
  io: CliIo,
): Promise<string> {
  let existing: Record<string, unknown> = { mcpServers: {} };
  try {
    const text = (
      await readRegularFile(configPath, 'config file', MAX_GATEWAY_CONFIG_BYTES)
    ).toString('utf8');
    try {
      existing = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new GatewayConfigError(`${configPath}: is not valid JSON`, { cause: error });
    }
  } catch (error) {
    if ((error as { cause?: { code?: unknown } }).cause?.code !== 'ENOENT') throw error;
  }
  const current = (existing.mcpServers ?? {}) as Record<string, unknown>;
  for (const name of Object.keys(servers)) {
    if (Object.hasOwn(current, name)) {
      throw new GatewayConfigError(
        `${configPath}: already has a server named "${name}"; rename one of them first`,
      );
    }
  }
  const next = { ...existing, mcpServers: { ...current, ...servers } };
  parseGatewayConfig(next, placeholderEnv(io.env));
  return `${JSON.stringify(next, null, 2)}\n`;
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
    const mode = (await stat(file)).mode & 0o777;
    const cwd = io.cwd ?? process.cwd();
    const configPath =
      parsed.config === undefined
        ? join(dirname(file), 'toolfence.json')
        : isAbsolute(parsed.config)
          ? parsed.config
          : resolve(cwd, parsed.config);
    const home = homeOf(io);
    const workspace = workspaceOf(client, file);
    const options = {
      ...(parsed.project === undefined ? {} : { project: parsed.project }),
      ...(home === undefined ? {} : { home }),
      ...(workspace === undefined ? {} : { workspace }),
    };
    const text = original.toString('utf8');
    importClientServers(client, text, file, options);
    const wrapped = wrapClientFile(
      client,
      text,
      file,
      {
        ...(parsed.command === undefined ? {} : { command: parsed.command }),
        args: ['serve', '--config', configPath],
      },
      options,
    );
    const config = await mergedConfig(configPath, wrapped.imported.mcpServers, io);
    if (!(await writeNew(backup, original, mode))) {
      throw new GatewayConfigError(
        `${file} is already wrapped (${backup} exists); run toolfence-mcp unwrap first`,
      );
    }
    try {
      await writeAtomic(configPath, config, 0o600);
      const state: WrapState = {
        version: 1,
        client,
        config: configPath,
        servers: Object.keys(wrapped.imported.mcpServers),
        wrote: sha256(wrapped.text),
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
    if (wrapped.imported.variables.length > 0) {
      io.out(
        `  variables read when the gateway starts: ${wrapped.imported.variables.join(', ')}\n`,
      );
    }
    if (wrapped.imported.dropped.length > 0) {
      io.out(
        `  not carried over (the gateway's own limits apply): ${wrapped.imported.dropped.join(', ')}\n`,
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

/** `toolfence-mcp unwrap`: restores the client file `wrap` changed, byte for byte. */
export async function runUnwrap(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(WRAP_HELP);
    return EXIT_CODES.ok;
  }
  try {
    const parsed = parseArguments(argv, true);
    const file = clientFile(parsed, io);
    const backup = `${file}.toolfence-backup`;
    const statePath = `${file}.toolfence-wrap.json`;
    const original = await readRegularFile(backup, 'backup file', MAX_CLIENT_FILE_BYTES).catch(
      (error: unknown) => {
        throw new GatewayConfigError(`${file} is not wrapped (no ${backup})`, { cause: error });
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
      `${parsed.client} config file`,
      MAX_CLIENT_FILE_BYTES,
    ).catch(() => undefined);
    if (
      !parsed.force &&
      current !== undefined &&
      (state === undefined || sha256(current) !== state.wrote)
    ) {
      throw new GatewayConfigError(
        `${file} changed since wrap; unwrap would lose those changes (--force restores the backup anyway)`,
      );
    }
    const mode = current === undefined ? 0o600 : (await stat(file)).mode & 0o777;
    await writeAtomic(file, original, mode);
    await rm(statePath, { force: true });
    await rm(backup, { force: true });
    io.out(
      `Restored ${file}.${state === undefined ? '' : ` ${state.config} still lists the moved servers.`}\n`,
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
