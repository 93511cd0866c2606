// The options and the config file of `serve`, `pin` and `audit`: read before anything else loads,
// so `serve` can start its stdio upstreams while it loads the gateway (serve-start.ts).
import { dirname, isAbsolute, resolve } from 'node:path';
import { GatewayConfigError } from '../gateway/errors.js';
import { type GatewayConfig, parseGatewayConfig } from '../gateway/gateway-config.js';
import { type CliIo, flagValue, unknownOption } from './cli-io.js';
import type { ConsoleArguments } from './console-start.js';
import { isLoopbackHost } from './loopback.js';
import { MAX_GATEWAY_CONFIG_BYTES, parseJsonText, readRegularFile } from './read-file.js';

/** The options of `serve`, `pin` and `audit --config`. */
export interface GatewayArguments {
  config?: string;
  http?: string;
  policy?: string;
  observe: boolean;
  verbose: boolean;
  show: boolean;
  accept: string[];
  /** `--console [HOST:PORT]`, `--console-host`, `--console-origin`, `--console-allow-remote` (console-start.ts). */
  console?: ConsoleArguments;
}

/** A usage error (exit code 2). */
export function usage(message: string): GatewayConfigError {
  return new GatewayConfigError(message, { code: 'GATEWAY_USAGE' });
}

/** Reads the options of `serve` and `pin`; a bad one is a usage error. */
export function parseArguments(argv: readonly string[]): GatewayArguments {
  const parsed: GatewayArguments = { observe: false, verbose: false, show: false, accept: [] };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index] as string;
    // The word after the flag; the loop goes on after it.
    const value = (): string => flagValue(argv, index++, usage);
    if (flag === '--config') parsed.config = value();
    else if (flag === '--policy') parsed.policy = value();
    else if (flag === '--http') parsed.http = value();
    else if (flag === '--observe') parsed.observe = true;
    else if (flag === '--verbose') parsed.verbose = true;
    else if (flag === '--show') parsed.show = true;
    else if (flag === '--accept') parsed.accept.push(value());
    else if (flag.startsWith('--console')) index = consoleFlag(parsed, argv, index);
    else throw usage(unknownOption(flag));
  }
  return parsed;
}

/** Reads one `--console*` flag at `index`; returns the index of its last word. */
function consoleFlag(parsed: GatewayArguments, argv: readonly string[], index: number): number {
  const flag = argv[index] as string;
  const next = argv[index + 1];
  const current = parsed.console ?? { address: true, hosts: [], origins: [], allowRemote: false };
  const has = next !== undefined && !next.startsWith('--');
  if (flag === '--console') {
    parsed.console = { ...current, address: has ? next : true };
    return has ? index + 1 : index;
  }
  if (flag === '--console-host' && has) {
    parsed.console = { ...current, hosts: [...current.hosts, next] };
    return index + 1;
  }
  if (flag === '--console-origin' && has) {
    parsed.console = { ...current, origins: [...current.origins, next] };
    return index + 1;
  }
  if (flag === '--console-allow-remote') {
    parsed.console = { ...current, allowRemote: true };
    return index;
  }
  throw usage(
    `${/^[\w-]{1,40}$/.test(flag) ? flag : 'a --console option'} needs a value or is unknown`,
  );
}

/** A config file read and checked, with its paths resolved beside it. */
export interface LoadedConfig {
  readonly path: string;
  readonly config: GatewayConfig;
  /** The lock file path, or a `postgres://` URL. */
  readonly pinsPath: string;
  readonly auditPath: string;
  /** `gateway.store` with a relative `sqlite:` path resolved beside the config file. */
  readonly storeUrl: string | undefined;
}

/** A `postgres://` or `postgresql://` URL. */
export const POSTGRES_URL: RegExp = /^postgres(ql)?:\/\//i;

/** Reads and checks the `--config` file (warnings go to `io.err`). */
export async function loadConfig(parsed: GatewayArguments, io: CliIo): Promise<LoadedConfig> {
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

/** The `--http HOST:PORT` value checked, with the bearer token it needs. */
export interface CheckedHttpAddress {
  readonly host: string;
  readonly port: number;
  readonly loopback: boolean;
  /** `gateway.httpToken`, else `TOOLFENCE_GATEWAY_TOKEN`. */
  readonly token: string | undefined;
}

/**
 * Checks `--http HOST:PORT` against the config (a bearer token off loopback, not both a token and
 * `gateway.httpAuth`, a token of at least 16 characters). Refused before anything starts.
 */
export function checkHttpAddress(
  value: string,
  config: GatewayConfig,
  io: CliIo,
): CheckedHttpAddress {
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
  const httpAuth = config.gateway.httpAuth;
  if (httpAuth !== undefined && token !== undefined) {
    throw new GatewayConfigError(
      "gateway.httpAuth checks each caller's access token: unset TOOLFENCE_GATEWAY_TOKEN (one shared token) or remove gateway.httpAuth",
      { details: { at: 'TOOLFENCE_GATEWAY_TOKEN' } },
    );
  }
  if (!loopback && token === undefined && httpAuth === undefined) {
    throw new GatewayConfigError(
      '--http off loopback needs a bearer token: set gateway.httpToken or TOOLFENCE_GATEWAY_TOKEN (one shared token), or gateway.httpAuth (an access token per caller)',
      { details: { at: '--http' } },
    );
  }
  if (token !== undefined && token.length < 16) {
    throw new GatewayConfigError('The bearer token must be at least 16 characters', {
      details: { at: 'TOOLFENCE_GATEWAY_TOKEN' },
    });
  }
  return { host, port, loopback, token };
}
