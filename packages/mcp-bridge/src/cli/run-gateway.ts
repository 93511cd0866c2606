import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { AuditLog, verifyAuditLog } from '../gateway/audit-log.js';
import { GatewayConfigError } from '../gateway/errors.js';
import { type GatewayBudget, gatewayBudget } from '../gateway/gateway-budget.js';
import {
  DEFAULT_AUDIT_MAX_BYTES,
  DEFAULT_HTTP_MAX_SESSIONS,
  decodeStoreKey,
  type GatewayConfig,
  parseGatewayConfig,
} from '../gateway/gateway-config.js';
import { McpGateway } from '../gateway/mcp-gateway.js';
import { escapeInvisible, type GatewayPinStore, PinStore, pinKey } from '../gateway/pin-store.js';
import { PostgresPinStore } from '../gateway/postgres-pin-store.js';
import {
  connectionStoreFromUrl,
  type PersistentConnectionStore,
} from '../store/connection-store-from-url.js';
import type { CliIo } from './cli-io.js';
import { watchConfigFile } from './config-watch.js';
import { type GatewayHttpOptions, serveGatewayHttp } from './gateway-http.js';
import { MAX_GATEWAY_CONFIG_BYTES, parseJsonText, readRegularFile } from './read-file.js';
import { readServePolicy } from './read-serve-policy.js';
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
        Replicas: gateway.store (sqlite:/postgres://, for servers with "oauth"), gateway.budget
        (memory or redis://) and gateway.pins (a file or postgres://) shared by every replica;
        they apply at start.
pin     --show lists the hidden tools and what changed; --accept takes one as the new pin.
audit   verify checks the audit log's hash chain (a removed or edited line is found).

Exit codes: 0 ok, 1 failure (or a broken audit chain), 2 usage error.
`;

/** What `serve` prints on stderr when nothing is enforced (`--observe` or `gateway.observe`). */
export const OBSERVE_BANNER: string =
  'toolfence-mcp: OBSERVE MODE: enforcement is OFF. Every call runs, whatever the policy, approvals and pins say; the audit log records what each decision would have been.\n';

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
  /** The lock file path, or a `postgres://` URL. */
  readonly pinsPath: string;
  readonly auditPath: string;
  /** `gateway.store` with a relative `sqlite:` path resolved beside the config file. */
  readonly storeUrl: string | undefined;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/** Opens the pins `gateway.pins` names: the lock file, or the shared PostgreSQL table. */
function openPins(loaded: LoadedConfig): Promise<GatewayPinStore> {
  return POSTGRES_URL.test(loaded.pinsPath)
    ? PostgresPinStore.open({ connectionString: loaded.pinsPath })
    : PinStore.open(loaded.pinsPath);
}

/** What a reload cannot change: the store, its key, the budget and a shared pin table. */
function startOnly(loaded: LoadedConfig): string {
  const { store, storeKey, budget } = loaded.config.gateway;
  return JSON.stringify({
    store,
    storeKey,
    budget,
    pins: POSTGRES_URL.test(loaded.pinsPath) ? loaded.pinsPath : 'file',
  });
}

async function loadConfig(parsed: GatewayArguments, io: CliIo): Promise<LoadedConfig> {
  if (parsed.config === undefined) throw usage('--config FILE is required');
  const path = isAbsolute(parsed.config)
    ? parsed.config
    : resolve(io.cwd ?? process.cwd(), parsed.config);
  const json = parseJsonText(
    (await readRegularFile(path, 'config file', MAX_GATEWAY_CONFIG_BYTES)).toString('utf8'),
    path,
  );
  const config = parseGatewayConfig(json, io.env ?? {}, {
    onWarning: (message) => io.err(`toolfence-mcp: ${message}\n`),
  });
  const folder = dirname(path);
  const at = (file: string | undefined, fallback: string): string =>
    file === undefined
      ? resolve(folder, fallback)
      : isAbsolute(file)
        ? file
        : resolve(folder, file);
  const pins = config.gateway.pins;
  const store = config.gateway.store;
  let storeUrl = store;
  if (store?.startsWith('sqlite:')) {
    const file = store.slice('sqlite:'.length).replace(/^\/\//, '');
    storeUrl = file === ':memory:' ? store : `sqlite:${at(file, file)}`;
  }
  return {
    path,
    config,
    pinsPath:
      pins !== undefined && POSTGRES_URL.test(pins) ? pins : at(pins, 'toolfence.lock.json'),
    auditPath: at(config.gateway.audit, 'toolfence-audit.jsonl'),
    storeUrl,
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
  let pins: GatewayPinStore | undefined;
  let store: PersistentConnectionStore | undefined;
  let budget: GatewayBudget | undefined;
  let current: GatewayConfig;
  const release = async (): Promise<void> => {
    await budget?.close();
    await store?.close();
    await pins?.close?.();
  };
  const readPolicy = (arguments_: GatewayArguments) => readServePolicy(arguments_.policy, io);
  try {
    parsed = parseArguments(argv);
    loaded = await loadConfig(parsed, io);
    const policy = await readPolicy(parsed);
    const settings = loaded.config.gateway;
    current = loaded.config;
    pins = await openPins(loaded);
    if (loaded.storeUrl !== undefined) {
      store = await connectionStoreFromUrl(loaded.storeUrl, {
        key: decodeStoreKey(settings.storeKey as string) as Uint8Array,
      });
    }
    if (settings.budget !== undefined) {
      // The offered name's namespace names its server, in the config of the latest reload.
      const serverOf = (toolName: string): string | undefined => {
        const split = toolName.indexOf('__');
        if (split === -1) return undefined;
        const namespace = toolName.slice(0, split);
        return Object.entries(current.mcpServers).find(
          ([, server]) => server.namespace === namespace,
        )?.[0];
      };
      budget = await gatewayBudget(settings.budget, serverOf, (message) =>
        io.err(`toolfence-mcp: ${message}\n`),
      );
    }
    const connectionStore = store;
    gateway = new McpGateway({
      config: loaded.config,
      authorizer: policy.authorizer,
      pins,
      audit: new AuditLog(loaded.auditPath, settings.auditMaxBytes ?? DEFAULT_AUDIT_MAX_BYTES),
      ...(parsed.observe ? { observe: true } : {}),
      ...(budget === undefined ? {} : { budget: budget.reserver }),
      clientOptions: (_name, server) => ({
        ...(server.url !== undefined && isLoopbackHost(new URL(server.url).hostname)
          ? { allowNonPublic: approveLoopback }
          : {}),
        ...(server.oauth === undefined || connectionStore === undefined
          ? {}
          : {
              oauth: {
                store: connectionStore,
                connectionId: server.oauth.connectionId,
                ...(server.oauth.refreshSkewMs === undefined
                  ? {}
                  : { refreshSkewMs: server.oauth.refreshSkewMs }),
              },
            }),
      }),
      logger: {
        warn: (message, details) =>
          io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
        error: (message, details) =>
          io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
      },
    });
    if (parsed.observe || settings.observe === true) io.err(OBSERVE_BANNER);
    await gateway.start();
  } catch (error) {
    await release();
    return fail(io, error);
  }
  // SIGHUP or a change to the config file reloads: the config, the pins and the policy are read
  // again; a config that cannot be used is reported and the running one stays.
  const reload = async (why: string): Promise<void> => {
    try {
      const next = await loadConfig(parsed, io);
      if (startOnly(next) !== startOnly(loaded)) {
        throw new GatewayConfigError(
          'gateway.store, gateway.storeKey, gateway.budget and a postgres:// gateway.pins apply at start; restart the gateway to change them',
        );
      }
      const policy = await readPolicy(parsed);
      // A shared pin table is read again by every review; a lock file is opened again.
      const nextPins = POSTGRES_URL.test(next.pinsPath) ? pins : await PinStore.open(next.pinsPath);
      await gateway.reload({
        config: next.config,
        ...(nextPins === undefined ? {} : { pins: nextPins }),
        authorizer: policy.authorizer,
      });
      current = next.config;
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
  const watcher = watchConfigFile(loaded.path, () => schedule('config changed'));
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
      watcher.close();
      unsubscribe?.();
      await gateway.close();
      await release();
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
  watcher.close();
  unsubscribe?.();
  if (timer !== undefined) clearTimeout(timer);
  await http?.close();
  await gateway.close();
  await release();
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
    const pins = await openPins(loaded);
    try {
      return await pinCommand(parsed, loaded, pins, io);
    } finally {
      await pins.close?.();
    }
  } catch (error) {
    return fail(io, error);
  }
}

async function pinCommand(
  parsed: GatewayArguments,
  loaded: LoadedConfig,
  pins: GatewayPinStore,
  io: CliIo,
): Promise<number> {
  {
    const namespaceOf = new Map(
      Object.entries(loaded.config.mcpServers).map(([name, server]) => [
        name,
        server.namespace as string,
      ]),
    );
    if (parsed.show) {
      const pending = pins.pending();
      if (pending.length === 0) io.out('No hidden tools.\n');
      for (const { server, tool, kind, pin, previous } of pending) {
        const what = kind === undefined || kind === 'tool' ? '' : `${kind}, `;
        io.out(
          `${namespaceOf.get(server) ?? server}__${tool} (${what}server ${server}): ${pin.reasons.join(', ')}\n`,
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
      // One name accepts what is hidden under it: a tool, a prompt or a resource template.
      let accepted = false;
      for (const kind of ['tool', 'prompt', 'resource-template'] as const) {
        if (
          server !== undefined &&
          (await pins.accept(pinKey(server, kind), name.slice(split + 2)))
        )
          accepted = true;
      }
      if (!accepted) {
        throw new GatewayConfigError(
          `Nothing is hidden under ${JSON.stringify(name)} (see pin --show)`,
        );
      }
      io.out(`Accepted ${name}; restart the gateway (or reload) to offer it.\n`);
    }
    await pins.save();
    return EXIT_CODES.ok;
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
