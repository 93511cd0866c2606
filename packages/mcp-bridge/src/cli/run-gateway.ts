import { existsSync, type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, resolve } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { AuditLog, verifyAuditLog } from '../gateway/audit-log.js';
import { GatewayConfigError } from '../gateway/errors.js';
import {
  DEFAULT_AUDIT_MAX_BYTES,
  DEFAULT_HTTP_MAX_SESSIONS,
  type GatewayConfig,
  parseGatewayConfig,
} from '../gateway/gateway-config.js';
import { McpGateway } from '../gateway/mcp-gateway.js';
import { escapeInvisible, PinStore } from '../gateway/pin-store.js';
import { McpBridgeError } from '../mcp-bridge-error.js';
import type { CliIo } from './cli-io.js';
import { type GatewayHttpOptions, serveGatewayHttp } from './gateway-http.js';
import { defaultInspectPolicy, loadInspectPolicy } from './inspect-policy.js';
import { MAX_GATEWAY_CONFIG_BYTES, readRegularFile } from './read-file.js';
import { approveLoopback, EXIT_CODES, isLoopbackHost, safeFailureMessage } from './run-inspect.js';

/** Quiet time after a config change or SIGHUP before the reload starts, in milliseconds. */
const RELOAD_DEBOUNCE_MS = 200;

/** The help text of `toolfence-mcp serve`, `pin` and `audit`. */
export const GATEWAY_HELP: string = `Usage:
  toolfence-mcp serve --config FILE [--policy FILE] [--observe] [--http HOST:PORT]
  toolfence-mcp pin --config FILE (--show | --accept SERVER__TOOL)
  toolfence-mcp audit verify --config FILE

serve   Runs the gateway on stdin/stdout: one MCP server in front of the config's "mcpServers".
        Every call passes validation, the policy (--policy, default RiskPolicy's defaults), an
        approval asked of you through your client when the policy says ask, and the audit log.
        Tool definitions are pinned in the lock file; a changed, renamed or new tool is hidden
        until you accept it. --observe enforces nothing and logs what would have happened.
        Clients may speak MCP 2026-07-28 (stateless; an ask comes back as input_required) or
        2025-11-25 (a session; an ask is an elicitation).
        --http 127.0.0.1:PORT serves Streamable HTTP at /mcp instead of stdio (PORT 0 picks
        one; the URL is printed on stderr); off loopback a bearer token is required
        (gateway.httpToken or TOOLFENCE_GATEWAY_TOKEN).
        SIGHUP, or a change to the config file, reloads the config, the pins and the policy
        without dropping calls in flight (a config that cannot be used is refused; the running
        one stays).
pin     --show lists the hidden tools and what changed; --accept takes one as the new pin.
audit   verify checks the audit log's hash chain (a removed or edited line is found).

Exit codes: 0 ok, 1 failure (or a broken audit chain), 2 usage error.
`;

interface GatewayArguments {
  config?: string;
  http?: string;
  policy?: string;
  observe: boolean;
  show: boolean;
  accept: string[];
}

function usage(message: string): GatewayConfigError {
  return new GatewayConfigError(message, { code: 'GATEWAY_USAGE' });
}

function parseArguments(argv: readonly string[]): GatewayArguments {
  const parsed: GatewayArguments = { observe: false, show: false, accept: [] };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index] as string;
    const value = (): string => {
      const next = argv[index + 1];
      if (next === undefined || next.startsWith('--')) throw usage(`${flag} needs a value`);
      index += 1;
      return next;
    };
    if (flag === '--config') parsed.config = value();
    else if (flag === '--policy') parsed.policy = value();
    else if (flag === '--http') parsed.http = value();
    else if (flag === '--observe') parsed.observe = true;
    else if (flag === '--show') parsed.show = true;
    else if (flag === '--accept') parsed.accept.push(value());
    else throw usage(`unknown option ${/^[\w-]{1,40}$/.test(flag) ? flag : ''}`.trim());
  }
  return parsed;
}

interface LoadedConfig {
  readonly path: string;
  readonly config: GatewayConfig;
  readonly pinsPath: string;
  readonly auditPath: string;
}

async function loadConfig(parsed: GatewayArguments, io: CliIo): Promise<LoadedConfig> {
  if (parsed.config === undefined) throw usage('--config FILE is required');
  const path = isAbsolute(parsed.config)
    ? parsed.config
    : resolve(io.cwd ?? process.cwd(), parsed.config);
  let json: unknown;
  try {
    json = JSON.parse(
      (await readRegularFile(path, 'config file', MAX_GATEWAY_CONFIG_BYTES)).toString('utf8'),
    );
  } catch (error) {
    if (McpBridgeError.isInstance(error)) throw error;
    throw new GatewayConfigError('The config file is not valid JSON', { cause: error });
  }
  const config = parseGatewayConfig(json, io.env ?? {});
  const folder = dirname(path);
  const at = (file: string | undefined, fallback: string): string =>
    file === undefined
      ? resolve(folder, fallback)
      : isAbsolute(file)
        ? file
        : resolve(folder, file);
  return {
    path,
    config,
    pinsPath: at(config.gateway.pins, 'toolfence.lock.json'),
    auditPath: at(config.gateway.audit, 'toolfence-audit.jsonl'),
  };
}

function fail(io: CliIo, error: unknown): number {
  io.err(`toolfence-mcp: ${safeFailureMessage(error)}\n`);
  const code = (error as { code?: unknown }).code;
  if (code === 'GATEWAY_USAGE') {
    io.err('Run "toolfence-mcp serve --help" for usage.\n');
    return EXIT_CODES.usage;
  }
  return EXIT_CODES.failure;
}

/** `toolfence-mcp serve`: runs the gateway on the process's stdin and stdout until stopped. */
export async function runServe(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(GATEWAY_HELP);
    return EXIT_CODES.ok;
  }
  let gateway: McpGateway;
  let parsed: GatewayArguments;
  let loaded: LoadedConfig;
  const readPolicy = (arguments_: GatewayArguments) =>
    arguments_.policy === undefined
      ? Promise.resolve(defaultInspectPolicy())
      : loadInspectPolicy(
          isAbsolute(arguments_.policy)
            ? arguments_.policy
            : resolve(io.cwd ?? process.cwd(), arguments_.policy),
        );
  try {
    parsed = parseArguments(argv);
    loaded = await loadConfig(parsed, io);
    const policy = await readPolicy(parsed);
    gateway = new McpGateway({
      config: loaded.config,
      authorizer: policy.authorizer,
      pins: await PinStore.open(loaded.pinsPath),
      audit: new AuditLog(
        loaded.auditPath,
        loaded.config.gateway.auditMaxBytes ?? DEFAULT_AUDIT_MAX_BYTES,
      ),
      ...(parsed.observe ? { observe: true } : {}),
      clientOptions: (_name, server) =>
        server.url !== undefined && isLoopbackHost(new URL(server.url).hostname)
          ? { allowNonPublic: approveLoopback }
          : {},
      logger: {
        warn: (message, details) =>
          io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
        error: (message, details) =>
          io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
      },
    });
    await gateway.start();
  } catch (error) {
    return fail(io, error);
  }
  // SIGHUP or a change to the config file reloads: the config, the pins and the policy are read
  // again; a config that cannot be used is reported and the running one stays.
  const reload = async (why: string): Promise<void> => {
    try {
      const next = await loadConfig(parsed, io);
      const policy = await readPolicy(parsed);
      await gateway.reload({
        config: next.config,
        pins: await PinStore.open(next.pinsPath),
        authorizer: policy.authorizer,
      });
      io.err(`toolfence-mcp: reloaded (${why}): ${gateway.toolNames().length} tool(s)\n`);
    } catch (error) {
      io.err(
        `toolfence-mcp: reload refused, the running config stays: ${safeFailureMessage(error)}\n`,
      );
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const schedule = (why: string): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void reload(why);
    }, RELOAD_DEBOUNCE_MS);
  };
  const unsubscribe = io.reloads?.(() => schedule('SIGHUP'));
  let watcher: FSWatcher | undefined;
  try {
    // The folder is watched, not the file: editors save by writing a new file and renaming it.
    watcher = watch(dirname(loaded.path), (_event, file) => {
      if (file === basename(loaded.path)) schedule('config changed');
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  for (const upstream of gateway.upstreams) {
    io.err(
      `toolfence-mcp: ${upstream.name}: ${upstream.state}, ${upstream.tools.length} tool(s)${
        Object.keys(upstream.hidden).length > 0
          ? `, ${Object.keys(upstream.hidden).length} hidden (toolfence-mcp pin --show)`
          : ''
      }\n`,
    );
  }
  let closed: Promise<void>;
  let http: { readonly url: string; readonly close: () => Promise<void> } | undefined;
  if (parsed.http !== undefined) {
    try {
      http = await serveGatewayHttp(gateway, httpOptions(parsed.http, loaded.config, io));
    } catch (error) {
      watcher?.close();
      unsubscribe?.();
      await gateway.close();
      return fail(io, error);
    }
    io.err(`toolfence-mcp: listening on ${http.url}\n`);
    closed = new Promise<void>(() => undefined);
  } else {
    const stdio = io.stdio ?? { stdin: process.stdin, stdout: process.stdout };
    const transport = new StdioServerTransport(stdio.stdin as never, stdio.stdout as never);
    closed = new Promise<void>((resolveClosed) => {
      transport.onclose = () => resolveClosed();
    });
    await gateway.connect(transport);
  }
  await Promise.race([closed, io.stopped ?? new Promise<void>(() => undefined)]);
  watcher?.close();
  unsubscribe?.();
  if (timer !== undefined) clearTimeout(timer);
  await http?.close();
  await gateway.close();
  return EXIT_CODES.ok;
}

function httpOptions(value: string, config: GatewayConfig, io: CliIo): GatewayHttpOptions {
  const match = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || port > 65_535) {
    throw usage('--http takes HOST:PORT, for example 127.0.0.1:8765 (PORT 0 picks a free one)');
  }
  const host = (match[1] as string).replace(/^\[|\]$/g, '');
  const loopback = isLoopbackHost(host);
  const fromEnv = io.env?.TOOLFENCE_GATEWAY_TOKEN;
  const token =
    config.gateway.httpToken ?? (fromEnv === undefined || fromEnv === '' ? undefined : fromEnv);
  if (!loopback && token === undefined) {
    throw new GatewayConfigError(
      '--http off loopback needs a bearer token: set gateway.httpToken or TOOLFENCE_GATEWAY_TOKEN',
      { details: { at: '--http' } },
    );
  }
  if (token !== undefined && token.length < 16) {
    throw new GatewayConfigError('The bearer token must be at least 16 characters', {
      details: { at: 'TOOLFENCE_GATEWAY_TOKEN' },
    });
  }
  return {
    host,
    port,
    token,
    loopback,
    maxSessions: config.gateway.httpMaxSessions ?? DEFAULT_HTTP_MAX_SESSIONS,
  };
}

/** `toolfence-mcp pin`: shows hidden tools and their changes, or accepts one as the new pin. */
export async function runPin(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const parsed = parseArguments(argv);
    if (parsed.show === parsed.accept.length > 0)
      throw usage('give exactly one of --show or --accept');
    const loaded = await loadConfig(parsed, io);
    const pins = await PinStore.open(loaded.pinsPath);
    const namespaceOf = new Map(
      Object.entries(loaded.config.mcpServers).map(([name, server]) => [
        name,
        server.namespace as string,
      ]),
    );
    if (parsed.show) {
      const pending = pins.pending();
      if (pending.length === 0) io.out('No hidden tools.\n');
      for (const { server, tool, pin, previous } of pending) {
        io.out(
          `${namespaceOf.get(server) ?? server}__${tool} (server ${server}): ${pin.reasons.join(', ')}\n`,
        );
        for (const key of new Set([
          ...Object.keys(previous?.definition ?? {}),
          ...Object.keys(pin.definition),
        ])) {
          const before = JSON.stringify(previous?.definition[key]);
          const after = JSON.stringify(pin.definition[key]);
          if (before === after) continue;
          io.out(
            `  ${key}:\n    - ${escapeInvisible(before ?? '(none)')}\n    + ${escapeInvisible(after ?? '(none)')}\n`,
          );
        }
        if (pin.flagged.length > 0) io.out(`  invisible Unicode in: ${pin.flagged.join(', ')}\n`);
      }
      return EXIT_CODES.ok;
    }
    for (const name of parsed.accept) {
      const split = name.indexOf('__');
      const namespace = split === -1 ? '' : name.slice(0, split);
      const server = [...namespaceOf].find(([, value]) => value === namespace)?.[0];
      if (server === undefined || !pins.accept(server, name.slice(split + 2))) {
        throw new GatewayConfigError(
          `Nothing is hidden under ${JSON.stringify(name)} (see pin --show)`,
        );
      }
      io.out(`Accepted ${name}; restart the gateway (or reload) to offer it.\n`);
    }
    await pins.save();
    return EXIT_CODES.ok;
  } catch (error) {
    return fail(io, error);
  }
}

/** `toolfence-mcp audit verify`: checks the audit log's hash chain, rotated file included. */
export async function runAudit(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const [verb, ...rest] = argv;
    if (verb !== 'verify') throw usage('the audit command is "audit verify --config FILE"');
    const loaded = await loadConfig(parseArguments(rest), io);
    let startsAfter: string | undefined = 'genesis';
    const rotated = `${loaded.auditPath}.1`;
    if (existsSync(rotated)) {
      // The rotated file's own start is not checked: anything before it was rotated away.
      const older = await verifyAuditLog(rotated, undefined);
      if (!older.ok) {
        io.out(`audit: ${rotated} is broken at line ${older.brokenAt} (${older.reason})\n`);
        return EXIT_CODES.failure;
      }
      startsAfter = (await lastLineHash(rotated)) ?? 'genesis';
    }
    if (!existsSync(loaded.auditPath)) {
      io.out('audit: no log yet\n');
      return EXIT_CODES.ok;
    }
    const result = await verifyAuditLog(loaded.auditPath, startsAfter);
    if (!result.ok) {
      io.out(
        `audit: broken at line ${result.brokenAt} (${result.reason}); lines after it cannot be trusted\n`,
      );
      return EXIT_CODES.failure;
    }
    io.out(`audit: ${result.lines} line(s), chain intact\n`);
    return EXIT_CODES.ok;
  } catch (error) {
    return fail(io, error);
  }
}

async function lastLineHash(path: string): Promise<string | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const last = text.trimEnd().split('\n').pop();
  try {
    return (JSON.parse(last ?? '') as { hash?: string }).hash;
  } catch {
    return undefined;
  }
}
