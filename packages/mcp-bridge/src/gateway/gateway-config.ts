import { isRecord } from '../is-record.js';
import { GatewayConfigError } from './errors.js';
import {
  checkHttpAuthSettings,
  type GatewayHttpAuthSettings,
} from './identity/http-auth-settings.js';
import {
  checkServerCredentials,
  type GatewayServerCredentials,
} from './identity/upstream-credentials.js';
import type { ApprovalSealKeys } from './seal-box.js';
import { shownName } from './shown-name.js';

/** One upstream server, in the shape MCP clients' config files use. */
export interface GatewayServerConfig {
  /** Stdio: the executable (`npx`, `node`, an absolute path). Exclusive with `url`. */
  readonly command?: string;
  /** Stdio: its arguments. Default `[]`. */
  readonly args?: readonly string[];
  /** Stdio: variables set for the server, on top of PATH, HOME and the other inherited basics. */
  readonly env?: Readonly<Record<string, string>>;
  /** Streamable HTTP endpoint. Exclusive with `command`. */
  readonly url?: string;
  /** HTTP: fixed headers sent with every request (`Authorization: Bearer ${TOKEN}`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** `stdio`, `http` or `streamable-http`; inferred from `command` / `url` when absent. */
  readonly type?: 'stdio' | 'http' | 'streamable-http';
  /** Remote tool names to offer; default all. */
  readonly allow?: readonly string[];
  /** Remote tool names never offered (wins over `allow`). */
  readonly deny?: readonly string[];
  /** Prefix of the offered names (`<namespace>__<tool>`). Default: the server's name. */
  readonly namespace?: string;
  /** HTTP: OAuth through a connection in `gateway.store` (exclusive with an Authorization header). */
  readonly oauth?: GatewayServerOAuth;
  /**
   * HTTP: each call carries a token exchanged for the caller (RFC 8693), see
   * `GatewayServerCredentials`. Default none: the shared credential (`headers`, `oauth`).
   */
  readonly credentials?: GatewayServerCredentials;
  /** Milliseconds this server may take to start and list its tools. Default `gateway.startTimeoutMs`. */
  readonly startTimeoutMs?: number;
}

/** What {@link parseGatewayConfig} reports besides the config. */
export interface GatewayConfigParseOptions {
  /**
   * Called once for each thing read and not applied: a disabled server that is not started, a
   * client key the gateway ignores (`timeout`, `autoApprove`, ...). Default: nothing is reported.
   */
  readonly onWarning?: (message: string) => void;
}

/** Per-server `oauth`: which connection of the gateway's store authorizes this server. */
export interface GatewayServerOAuth {
  /** Id of the connection's record in `gateway.store` (as given to `authorizeConnection`). */
  readonly connectionId: string;
  /** Refresh this many milliseconds before the access token expires. Default 60,000. */
  readonly refreshSkewMs?: number;
}

/** Limits of one budget scope in the config. An omitted limit is unlimited. */
export interface GatewayBudgetLimits {
  /**
   * Most calls that may start. A call counts from the moment its request may have left for the
   * upstream; it is refunded only when it certainly did not (refused, or cancelled before it
   * was sent).
   */
  readonly maxCalls?: number;
  /** Most calls running at the same time (a cancelled call's slot is held: `cancelHoldMs`). */
  readonly maxConcurrent?: number;
}

/** `gateway.budget`: call budgets, in this process or shared by replicas through Redis. */
export interface GatewayBudgetSettings extends GatewayBudgetLimits {
  /** `memory` (default: this process only) or `redis://…` / `rediss://…` (shared by replicas). */
  readonly url?: string;
  /** Limits of each upstream server (a counter per server), beside the gateway-wide ones. */
  readonly perServer?: GatewayBudgetLimits;
  /** Limits of each offered tool (a counter per `server__tool`), beside the others. */
  readonly perTool?: GatewayBudgetLimits;
  /**
   * Limits of each caller (a counter per principal: issuer and subject), with `gateway.httpAuth`;
   * a call without a principal counts under one shared `anonymous` counter. Beside the others.
   */
  readonly perPrincipal?: GatewayBudgetLimits;
  /** Redis: prefix of every key, so deployments share one Redis. Default `toolfence:gateway`. */
  readonly keyPrefix?: string;
  /** Redis: milliseconds a counter lives after its last call. Default 86,400,000 (one day). */
  readonly ttlMs?: number;
  /** Redis: milliseconds one round trip may take before Redis counts as unreachable. Default 2,000. */
  readonly timeoutMs?: number;
  /** Redis unreachable: `deny` (default, fail closed) or `allow` (no budget applies). */
  readonly onUnavailable?: 'deny' | 'allow';
  /**
   * Milliseconds the concurrency slot of a call that was cancelled (or timed out) after its
   * request may have reached the upstream stays taken: the upstream may still be running it and
   * sends no answer to a cancelled request. Default 30,000; `0` frees it at once.
   */
  readonly cancelHoldMs?: number;
}

/** The gateway's own settings, under `gateway` in the config file. */
export interface GatewaySettings {
  /**
   * The pins: a lock file path (default `toolfence.lock.json` beside the config file), or a
   * `postgres://…` URL so replicas on several machines share one pin table.
   */
  readonly pins?: string;
  /**
   * The OAuth connection store of the servers with `oauth`: `sqlite:<path>` (relative to the
   * config file) or `postgres://…` (shared by replicas). Default none.
   */
  readonly store?: string;
  /**
   * The store's AES-256-GCM key: 32 bytes as 64 hex digits or base64 (variables expanded, so
   * `${TOOLFENCE_STORE_KEY}`). Default: `TOOLFENCE_STORE_KEY` from the environment.
   */
  readonly storeKey?: string;
  /** Call budgets. Default none (no limit). */
  readonly budget?: GatewayBudgetSettings;
  /** The audit log (JSON lines, hash-chained). Default `toolfence-audit.jsonl` beside the config file. */
  readonly audit?: string;
  /** Size at which the audit log is rotated, in bytes. Default 10 MiB. */
  readonly auditMaxBytes?: number;
  /**
   * The audit key: 32 bytes as 64 hex digits or base64 (variables expanded). With it each line's
   * hash is an HMAC-SHA256 and the head is sealed with it. Default: `TOOLFENCE_AUDIT_KEY` from the
   * environment where the key is used (`auditKeyOf`), else none (SHA-256, unkeyed).
   */
  readonly auditKey?: string;
  /**
   * The key sealing approvals into `requestState` (AES-256-GCM), shared by every replica: 32
   * bytes as 64 hex digits or base64 (variables expanded). Default: `TOOLFENCE_SEAL_KEY` from the
   * environment (`sealKeysOf`), else a random key of the process (an approval asked by one
   * gateway is honoured by that process only).
   */
  readonly sealKey?: string;
  /**
   * Keys rotated out, still accepted to open approvals they sealed: one key, or several joined
   * by commas (at most 4). Default: `TOOLFENCE_SEAL_KEY_PREVIOUS` from the environment, else none.
   */
  readonly sealKeyPrevious?: string;
  /**
   * Where approvals are recorded as spent (single use across replicas): `memory`, `redis://…`
   * or `postgres://…`. Default: the budget's `redis://` URL, else a `postgres://` `pins`, else a
   * `postgres://` `store`, else `memory`.
   */
  readonly approvals?: string;
  /** `fdatasync` the audit log and its head after each write. Default false. */
  readonly auditFsync?: boolean;
  /**
   * Audit lines at most in one write (group commit: lines of concurrent calls share a write, its
   * `fdatasync` and the head seal). An integer from 1 to 10,000. Default 128.
   */
  readonly auditMaxBatchLines?: number;
  /** Enforce nothing; log what each decision would have been. Default false. */
  readonly observe?: boolean;
  /** Milliseconds an `ask` waits for the user's answer before it is a deny. Default 120,000. */
  readonly approvalTimeoutMs?: number;
  /**
   * Characters of arguments an approval prompt shows whole; an `ask` over it is refused without
   * asking. Default 8,192.
   */
  readonly approvalMaxArgumentChars?: number;
  /** Calls the gateway runs at once on one upstream; the rest wait their turn. Default 8. */
  readonly maxConcurrentCalls?: number;
  /**
   * `--http`: the bearer token every request must carry (variables expanded). Required off
   * loopback; `TOOLFENCE_GATEWAY_TOKEN` in the environment is used when this is absent.
   */
  readonly httpToken?: string;
  /** `--http`: sessions open at once. Default 64. */
  readonly httpMaxSessions?: number;
  /**
   * `--http` as an OAuth 2.1 protected resource: each caller's access token is checked and the
   * caller becomes the calls' principal (see `GatewayHttpAuthSettings`). Exclusive with
   * `httpToken`. Default none.
   */
  readonly httpAuth?: GatewayHttpAuthSettings;
  /**
   * Milliseconds each upstream may take to start (connect, handshake) and list its tools; past
   * it the upstream counts as failed and the others are not held up. Default 30,000.
   */
  readonly startTimeoutMs?: number;
  /**
   * Milliseconds a `tools/list` (or a call of a tool not offered yet) waits for upstreams still
   * starting before it answers with the tools ready so far (0: no wait). Default 5,000.
   */
  readonly listWaitMs?: number;
  /**
   * `--http`: milliseconds a legacy (2025-11-25) session may stay idle before it is closed;
   * idle sessions are closed before an initialize is refused. Default 300,000 (five minutes).
   */
  readonly httpSessionIdleMs?: number;
  /**
   * `--http` with a sealing key: milliseconds a legacy session's sealed id is valid after its
   * `initialize`, on any replica. Default 86,400,000 (one day).
   */
  readonly httpSessionMaxAgeMs?: number;
  /** `--http`: `tools/call` requests one legacy session may have in flight. Default 4. */
  readonly httpMaxCallsPerSession?: number;
  /** `--http`: stateless (2026-07-28) `tools/call` requests in flight, all clients. Default 16. */
  readonly httpMaxStatelessCalls?: number;
  /**
   * `--http` with `httpAuth`: legacy sessions one principal (issuer and subject) may hold open;
   * one more initialize (or resumption) of theirs is answered 429 `GATEWAY_HTTP_BUSY`. Default 8.
   */
  readonly httpMaxSessionsPerPrincipal?: number;
  /**
   * `--http` with `httpAuth`: `tools/call` requests one principal may have in flight, both eras
   * together (across their legacy sessions, and stateless); one more is answered
   * `GATEWAY_HTTP_BUSY`. Default 4.
   */
  readonly httpMaxCallsPerPrincipal?: number;
  /** `--http`: `subscriptions/listen` streams open at once, all clients. Default 256. */
  readonly httpMaxListenStreams?: number;
  /** `--http` with `httpAuth`: `subscriptions/listen` streams one principal may hold open. Default 8. */
  readonly httpMaxListenStreamsPerPrincipal?: number;
  /**
   * `--http` with a sealing key: sealed legacy session ids one replica remembers until their max
   * age, in each of two sets (the sessions it held, whose flow labels it continues on
   * resumption; the sessions deleted there, refused); beyond it the oldest is forgotten (a held
   * one then resumes judged as dropped, a deleted one too). Default 10,000.
   */
  readonly httpMaxRememberedSessions?: number;
  /**
   * Characters of a `tools/call` name that no offered tool has; a longer one is refused before
   * anything else (outcome `name-too-long`). McpGateway's `maxToolNameChars`. Default 512.
   */
  readonly maxToolNameChars?: number;
  /**
   * Bytes of one tool's (prompt's, resource's) definition the pins store; a larger one is hidden
   * (reason `definition-too-large`) and cannot be accepted. The pin store's `maxDefinitionBytes`.
   * Default 131,072 (128 KiB).
   */
  readonly pinsMaxDefinitionBytes?: number;
  /**
   * Pending definitions kept per server and kind; a new or changed one beyond them is hidden and
   * not stored. The pin store's `maxPendingPerServer`. Default 1,000.
   */
  readonly pinsMaxPendingPerServer?: number;
  /**
   * Bytes of the pin lock file read and written; a larger file is refused at start, a review that
   * would make it larger fails that server. The lock file's `maxLockBytes` (not with a
   * `postgres://` `pins`). Default 16,777,216 (16 MiB).
   */
  readonly pinsMaxLockBytes?: number;
  /**
   * Characters of a `resources/read` URI the gateway reads; a longer one is refused
   * (`GATEWAY_RESOURCE_URI_TOO_LONG`). McpGateway's `passthrough.maxReadUriChars`. Default 8,192.
   */
  readonly passthroughMaxReadUriChars?: number;
  /**
   * Expressions of one upstream resource template; a template with more is left out.
   * McpGateway's `passthrough.maxTemplateExpressions`. Default 32.
   */
  readonly passthroughMaxTemplateExpressions?: number;
  /**
   * Steps spent matching one `resources/read` URI against the resource templates; a read that
   * would take more is refused (`GATEWAY_RESOURCE_MATCH_LIMIT`). McpGateway's
   * `passthrough.maxTemplateMatchWork`. Default 20,000,000.
   */
  readonly passthroughMaxTemplateMatchWork?: number;
}

/** A checked gateway config: servers by name, and settings with paths resolved by the caller. */
export interface GatewayConfig {
  /** Upstream servers by name (1-24 of `[A-Za-z0-9_-]`, starting with a letter or digit). */
  readonly mcpServers: Readonly<Record<string, GatewayServerConfig>>;
  /** The gateway's own settings. */
  readonly gateway: GatewaySettings;
}

/** Default size at which the audit log rotates: 10 MiB. */
export const DEFAULT_AUDIT_MAX_BYTES: number = 10 * 1024 * 1024;
/** Default milliseconds an approval prompt waits: 120,000 (two minutes). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 120_000;
/** @deprecated In seconds; use {@link DEFAULT_APPROVAL_TIMEOUT_MS}. Removed in the next minor. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 120;
/** Default `--http` sessions open at once: 64. */
export const DEFAULT_HTTP_MAX_SESSIONS = 64;
/** Default milliseconds an idle `--http` legacy session lives: 300,000 (five minutes). */
export const DEFAULT_HTTP_SESSION_IDLE_MS = 300_000;
/** Default `tools/call` requests in flight per `--http` legacy session: 4. */
export const DEFAULT_HTTP_MAX_CALLS_PER_SESSION = 4;
/** Default stateless `tools/call` requests in flight on `--http`, all clients: 16. */
export const DEFAULT_HTTP_MAX_STATELESS_CALLS = 16;
/** Default legacy `--http` sessions one principal may hold open (with `httpAuth`): 8. */
export const DEFAULT_HTTP_MAX_SESSIONS_PER_PRINCIPAL = 8;
/** Default `tools/call` requests one principal may have in flight, both eras (with `httpAuth`): 4. */
export const DEFAULT_HTTP_MAX_CALLS_PER_PRINCIPAL = 4;
/** Default `subscriptions/listen` streams open at once on `--http`, all clients: 256. */
export const DEFAULT_HTTP_MAX_LISTEN_STREAMS = 256;
/** Default `subscriptions/listen` streams one principal may hold open (with `httpAuth`): 8. */
export const DEFAULT_HTTP_MAX_LISTEN_STREAMS_PER_PRINCIPAL = 8;
/** Default sealed legacy session ids one `--http` replica remembers, per set: 10,000. */
export const DEFAULT_HTTP_MAX_REMEMBERED_SESSIONS = 10_000;
/** Default calls run at once on one upstream: 8. */
export const DEFAULT_MAX_CONCURRENT_CALLS = 8;
/** Default milliseconds an upstream may take to start and list its tools: 30,000. */
export const DEFAULT_START_TIMEOUT_MS = 30_000;
/** Default milliseconds a `tools/list` waits for upstreams still starting: 5,000. */
export const DEFAULT_LIST_WAIT_MS = 5_000;
/** Largest timer in Node (about 24.8 days): a longer timeout would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

const SERVER_KEYS = [
  'command',
  'args',
  'env',
  'url',
  'headers',
  'type',
  'allow',
  'deny',
  'namespace',
  'oauth',
  'credentials',
  'disabled',
  'enabled',
  'disabledTools',
  'startTimeoutMs',
];
/**
 * Keys MCP clients write in a server entry that the gateway reads and does not apply, each with
 * why: Cline's and Roo's `timeout` (seconds) and `autoApprove`/`alwaysAllow`, Gemini CLI's
 * `timeout` (milliseconds) and `trust`, a `description`, VS Code's `dev`, `gallery` and `version`.
 * An approval list never bypasses the gateway's policy.
 */
const IGNORED_CLIENT_KEYS: Readonly<Record<string, string>> = {
  timeout: "the gateway's own start and call limits apply",
  autoApprove: "approvals come from the gateway's policy (--policy)",
  alwaysAllow: "approvals come from the gateway's policy (--policy)",
  trust: "approvals come from the gateway's policy (--policy)",
  description: 'descriptions are not used',
  dev: "VS Code's watch and debug settings apply to servers VS Code starts itself",
  gallery: 'editor metadata, not used',
  version: 'editor metadata, not used',
};
const SETTINGS_KEYS = [
  'pins',
  'audit',
  'auditMaxBytes',
  'auditKey',
  'auditFsync',
  'auditMaxBatchLines',
  'approvalMaxArgumentChars',
  'observe',
  'approvalTimeoutMs',
  'maxConcurrentCalls',
  'httpToken',
  'httpMaxSessions',
  'startTimeoutMs',
  'listWaitMs',
  'httpSessionIdleMs',
  'httpMaxCallsPerSession',
  'httpMaxStatelessCalls',
  'httpAuth',
  'httpSessionMaxAgeMs',
  'httpMaxSessionsPerPrincipal',
  'httpMaxCallsPerPrincipal',
  'httpMaxListenStreams',
  'httpMaxListenStreamsPerPrincipal',
  'httpMaxRememberedSessions',
  'maxToolNameChars',
  'pinsMaxDefinitionBytes',
  'pinsMaxPendingPerServer',
  'pinsMaxLockBytes',
  'passthroughMaxReadUriChars',
  'passthroughMaxTemplateExpressions',
  'passthroughMaxTemplateMatchWork',
  'store',
  'storeKey',
  'budget',
  'sealKey',
  'sealKeyPrevious',
  'approvals',
];
const BUDGET_KEYS = [
  'url',
  'maxCalls',
  'maxConcurrent',
  'perServer',
  'perTool',
  'perPrincipal',
  'keyPrefix',
  'ttlMs',
  'timeoutMs',
  'onUnavailable',
  'cancelHoldMs',
];
const REDIS_ONLY_KEYS = ['keyPrefix', 'ttlMs', 'timeoutMs', 'onUnavailable'] as const;
const LIMIT_KEYS = ['maxCalls', 'maxConcurrent'];
const OAUTH_KEYS = ['connectionId', 'refreshSkewMs'];
// What a server name and a namespace may be: offered names are `<namespace>__<tool>`, so a "_"
// next to the separator would make two servers' names one (`a_` + `x` and `a` + `_x`); the
// bridge refuses such a namespace too (isValidMcpToolNamespace).
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_|$)){0,23}$/;
const NAME_RULE =
  '1-24 of letters, digits, "-" and "_", starting with a letter or digit, with no "__" and no "_" at the end';

/**
 * The gateway's limit keys that are the library's options (the pin store's, McpGateway's and its
 * passthrough's), with the library's defaults. They are stated here, not imported: mcp-gateway.ts
 * imports this module, and serve reads the config before it loads @toolfence/tools (which
 * pin-store.ts imports) so its upstreams spawn first; gateway-config.test.ts checks they agree.
 */
export const GATEWAY_LIMIT_DEFAULTS: Readonly<Record<string, number>> = Object.freeze({
  maxToolNameChars: 512,
  pinsMaxDefinitionBytes: 128 * 1024,
  pinsMaxPendingPerServer: 1_000,
  pinsMaxLockBytes: 16 * 1024 * 1024,
  passthroughMaxReadUriChars: 8_192,
  passthroughMaxTemplateExpressions: 32,
  passthroughMaxTemplateMatchWork: 20_000_000,
});

function fail(message: string, at: string): never {
  throw new GatewayConfigError(`${at}: ${message}`, { details: { at } });
}

/** Config keys that counted seconds (now milliseconds, named `…Ms`), by section. */
const RENAMED_KEYS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  gateway: { approvalTimeoutSeconds: 'approvalTimeoutMs' },
  'gateway.budget': { ttlSeconds: 'ttlMs', timeoutSeconds: 'timeoutMs' },
};

function onlyKeys(
  record: Record<string, unknown>,
  allowed: readonly string[],
  at: string,
  ignored: Readonly<Record<string, string>> = {},
): void {
  const renamed = RENAMED_KEYS[at] ?? {};
  for (const key of Object.keys(record)) {
    if (Object.hasOwn(ignored, key)) continue;
    const renamedTo = Object.hasOwn(renamed, key) ? renamed[key] : undefined;
    if (renamedTo !== undefined) {
      fail(
        `"${key}" was renamed to "${renamedTo}" (milliseconds; multiply a value in seconds by 1000)`,
        `${at}.${key}`,
      );
    }
    if (!allowed.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? `"${key}"` : 'a key';
      const alsoIgnored = Object.keys(ignored);
      fail(
        `unknown key ${shown} (accepted: ${allowed.join(', ')}${
          alsoIgnored.length > 0 ? `; read and ignored: ${alsoIgnored.join(', ')}` : ''
        })`,
        at,
      );
    }
  }
}

/**
 * Expands `${VAR}`, `${VAR:-default}` (Claude Code) and `${env:VAR}` (Cursor, VS Code) in one
 * string from `env`. An unset variable without a default stops the start.
 */
export function expandVariables(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  at: string,
): string {
  return text.replace(
    /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_match, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      return fail(`variable ${name} is not set (write \${${name}:-default} for a default)`, at);
    },
  );
}

function stringList(value: unknown, at: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    fail('must be an array of strings', at);
  }
  return Object.freeze([...value]);
}

function stringMap(
  value: unknown,
  at: string,
  env: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, string>> | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) fail('must be an object of strings', at);
  // No prototype: a key named "__proto__" is kept like any other, never dropped.
  const out = Object.create(null) as Record<string, string>;
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') fail(`${JSON.stringify(key)} must be a string`, at);
    out[key] = expandVariables(item, env, `${at}.${key}`);
  }
  return Object.freeze(out);
}

/** Checks a server entry; undefined for one the user turned off (`disabled: true`, `enabled: false`). */
function checkServer(
  name: string,
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  warn: (message: string) => void,
): GatewayServerConfig | undefined {
  const at = `mcpServers.${NAME.test(name) ? name : shownName(name)}`;
  if (!NAME.test(name)) {
    fail(
      `the server name ${shownName(name)} cannot be used: a server name is ${NAME_RULE}`,
      'mcpServers',
    );
  }
  if (!isRecord(value)) fail('must be an object with "command" or "url"', at);
  onlyKeys(value, SERVER_KEYS, at, IGNORED_CLIENT_KEYS);
  for (const key of ['disabled', 'enabled'] as const) {
    if (value[key] !== undefined && typeof value[key] !== 'boolean') {
      fail('must be true or false', `${at}.${key}`);
    }
  }
  for (const [key, why] of Object.entries(IGNORED_CLIENT_KEYS)) {
    if (value[key] !== undefined) warn(`${at}.${key} is ignored: ${why}`);
  }
  if (value.disabled === true || value.enabled === false) {
    warn(`${at} is ${value.disabled === true ? 'disabled' : 'not enabled'}: not started`);
    return undefined;
  }
  const type = value.type;
  if (type !== undefined && type !== 'stdio' && type !== 'http' && type !== 'streamable-http') {
    fail(
      'type must be "stdio", "http" or "streamable-http" (SSE-only servers are not supported)',
      `${at}.type`,
    );
  }
  const hasCommand = value.command !== undefined;
  const hasUrl = value.url !== undefined;
  if (hasCommand === hasUrl) fail('needs exactly one of "command" (stdio) or "url" (HTTP)', at);
  if (hasCommand) {
    if (typeof value.command !== 'string' || value.command.trim() === '') {
      fail('must be a non-empty string (the executable; arguments go in "args")', `${at}.command`);
    }
    if (type !== undefined && type !== 'stdio')
      fail(`type "${type}" needs "url", not "command"`, at);
    if (value.headers !== undefined) fail('"headers" applies to url servers only', at);
    if (value.oauth !== undefined) fail('"oauth" applies to url servers only', at);
    checkServerCredentials(value.credentials, `${at}.credentials`, false, (text) => text);
    return Object.freeze({
      command: expandVariables(value.command, env, `${at}.command`),
      args: Object.freeze(
        (stringList(value.args, `${at}.args`) ?? []).map((arg, index) =>
          expandVariables(arg, env, `${at}.args[${index}]`),
        ),
      ),
      ...optional('env', stringMap(value.env, `${at}.env`, env)),
      ...common(value, at, name),
    });
  }
  if (typeof value.url !== 'string') fail('must be a string', `${at}.url`);
  const url = expandVariables(value.url, env, `${at}.url`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    fail('is not a valid URL', `${at}.url`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    fail('must be an https:// URL (http:// only to a loopback host)', `${at}.url`);
  }
  if (type === 'stdio') fail('type "stdio" needs "command", not "url"', at);
  if (value.env !== undefined || value.args !== undefined) {
    fail('"env" and "args" apply to command servers only', at);
  }
  const headers = stringMap(value.headers, `${at}.headers`, env);
  const oauth = serverOAuth(value.oauth, `${at}.oauth`);
  if (
    oauth !== undefined &&
    Object.keys(headers ?? {}).some((header) => header.toLowerCase() === 'authorization')
  ) {
    fail('give either "oauth" or an Authorization header, not both', at);
  }
  const credentials = checkServerCredentials(
    value.credentials,
    `${at}.credentials`,
    true,
    (text, where) => expandVariables(text, env, where),
  );
  return Object.freeze({
    url,
    ...optional('headers', headers),
    ...common(value, at, name),
    ...optional('oauth', oauth),
    ...optional('credentials', credentials),
  });
}

function serverOAuth(value: unknown, at: string): GatewayServerOAuth | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) fail('must be an object with "connectionId"', at);
  onlyKeys(value, OAUTH_KEYS, at);
  const { connectionId, refreshSkewMs } = value;
  if (typeof connectionId !== 'string' || connectionId.length === 0 || connectionId.length > 200) {
    fail('must be a non-empty string (the connection id in gateway.store)', `${at}.connectionId`);
  }
  if (
    refreshSkewMs !== undefined &&
    (typeof refreshSkewMs !== 'number' || !Number.isSafeInteger(refreshSkewMs) || refreshSkewMs < 0)
  ) {
    fail('must be a non-negative integer (milliseconds)', `${at}.refreshSkewMs`);
  }
  return Object.freeze({
    connectionId,
    ...optional('refreshSkewMs', refreshSkewMs as number | undefined),
  });
}

/** True for a `postgres://` or `postgresql://` URL with a host (the URL is never echoed). */
function isPostgresUrl(text: string): boolean {
  if (!/^postgres(ql)?:\/\//i.test(text)) return false;
  try {
    return new URL(text).hostname !== '';
  } catch {
    return false;
  }
}

function checkStore(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const at = 'gateway.store';
  if (typeof value !== 'string' || value === '') {
    fail('must be "sqlite:<path>" or "postgres://user:password@host:port/database"', at);
  }
  if (/^postgres(ql)?:/i.test(value)) {
    if (!isPostgresUrl(value)) {
      fail('is not a valid postgres:// URL (postgres://user:password@host:port/database)', at);
    }
    return value;
  }
  if (value.startsWith('sqlite:')) {
    if (value.length === 'sqlite:'.length) fail('a sqlite: URL needs a path (sqlite:store.db)', at);
    return value;
  }
  fail('must be "sqlite:<path>" or "postgres://user:password@host:port/database"', at);
}

function checkApprovals(value: unknown): void {
  if (value === undefined || value === 'memory') return;
  const at = 'gateway.approvals';
  if (typeof value === 'string' && isPostgresUrl(value)) return;
  if (typeof value === 'string' && /^rediss?:\/\//i.test(value)) {
    try {
      if (new URL(value).hostname !== '') return;
    } catch {
      // Refused below.
    }
  }
  fail('must be "memory", a redis://host:port URL or a postgres:// URL', at);
}

function checkStoreKey(value: unknown, env: Readonly<Record<string, string | undefined>>): string {
  return (
    keySetting(value, env, 'gateway.storeKey', 'TOOLFENCE_STORE_KEY') ??
    fail(
      'gateway.store needs a key: set gateway.storeKey, or TOOLFENCE_STORE_KEY in the environment, to 32 random bytes as 64 hex digits or base64',
      'gateway.storeKey',
    )
  );
}

/**
 * The audit key's 32 bytes: `gateway.auditKey` (checked when the config was parsed), else
 * `TOOLFENCE_AUDIT_KEY` from `env` (checked here, when the gateway or `audit verify` uses it, so
 * a config read for its shape alone, as `wrap` does, needs no key); undefined when neither is set.
 */
export function auditKeyOf(
  settings: Pick<GatewaySettings, 'auditKey'>,
  env: Readonly<Record<string, string | undefined>>,
): Uint8Array | undefined {
  const text =
    settings.auditKey ?? keySetting(undefined, env, 'gateway.auditKey', 'TOOLFENCE_AUDIT_KEY');
  return text === undefined ? undefined : decodeStoreKey(text);
}

/** Most previous sealing keys accepted (`gateway.sealKeyPrevious`). */
const MAX_PREVIOUS_SEAL_KEYS = 4;

/**
 * The approval sealing keys: `gateway.sealKey` (else `TOOLFENCE_SEAL_KEY`) and the previous ones,
 * `gateway.sealKeyPrevious` (else `TOOLFENCE_SEAL_KEY_PREVIOUS`; comma-separated, at most 4);
 * undefined when no current key is set (the gateway then seals under a random key of its own).
 * @throws {GatewayConfigError} for a key that is not 32 bytes, or previous keys without a current one.
 */
export function sealKeysOf(
  settings: Pick<GatewaySettings, 'sealKey' | 'sealKeyPrevious'>,
  env: Readonly<Record<string, string | undefined>>,
): ApprovalSealKeys | undefined {
  const current = keySetting(settings.sealKey, env, 'gateway.sealKey', 'TOOLFENCE_SEAL_KEY');
  const at = 'gateway.sealKeyPrevious';
  const given =
    settings.sealKeyPrevious === undefined
      ? env.TOOLFENCE_SEAL_KEY_PREVIOUS
      : expandVariables(settings.sealKeyPrevious, env, at);
  const list = (given ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (list.length > MAX_PREVIOUS_SEAL_KEYS) {
    fail(`at most ${MAX_PREVIOUS_SEAL_KEYS} previous keys, joined by commas`, at);
  }
  const previous = list.map(
    (item) =>
      decodeStoreKey(item) ??
      fail('each key must be 32 bytes: 64 hex digits or 44 characters of base64', at),
  );
  if (current === undefined) {
    if (previous.length > 0)
      fail('needs a current key (gateway.sealKey or TOOLFENCE_SEAL_KEY)', at);
    return undefined;
  }
  return { current: decodeStoreKey(current) as Uint8Array, previous };
}

/**
 * Where spent approvals are recorded: `gateway.approvals`, else the budget's `redis://` URL, else
 * a `postgres://` `pins`, else a `postgres://` `store`, else `memory`.
 */
export function approvalStoreUrlOf(settings: GatewaySettings): string {
  if (settings.approvals !== undefined) return settings.approvals;
  const budget = settings.budget?.url;
  if (budget !== undefined && /^rediss?:/i.test(budget)) return budget;
  for (const url of [settings.pins, settings.store]) {
    if (url !== undefined && isPostgresUrl(url)) return url;
  }
  return 'memory';
}

/** A 32-byte key setting (variables expanded), else the variable `name`; undefined when unset. */
function keySetting(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  at: string,
  name: string,
): string | undefined {
  const given =
    value === undefined
      ? env[name]
      : typeof value === 'string'
        ? expandVariables(value, env, at)
        : fail('must be a string (64 hex digits or base64 of 32 bytes)', at);
  if (given === undefined || given === '') return undefined;
  if (decodeStoreKey(given) === undefined) {
    fail(
      `must be 32 bytes: 64 hex digits or 44 characters of base64${value === undefined ? ` (from ${name})` : ''}`,
      at,
    );
  }
  return given;
}

/** The 32 key bytes of a `storeKey` (64 hex digits or base64), or undefined when it is neither. */
export function decodeStoreKey(text: string): Uint8Array | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) {
    const bytes = Buffer.from(text, 'base64');
    return bytes.length === 32 ? bytes : undefined;
  }
  return undefined;
}

function checkLimits(value: unknown, at: string): GatewayBudgetLimits | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) fail('must be an object with maxCalls and/or maxConcurrent', at);
  onlyKeys(value, LIMIT_KEYS, at);
  return limitsOf(value, at);
}

function limitsOf(value: Record<string, unknown>, at: string): GatewayBudgetLimits {
  const out: Record<string, number> = {};
  for (const key of LIMIT_KEYS) {
    const number = value[key];
    if (number === undefined) continue;
    if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
      fail('must be a non-negative integer', `${at}.${key}`);
    }
    out[key] = number;
  }
  return out;
}

function checkBudget(value: unknown): GatewayBudgetSettings | undefined {
  if (value === undefined) return undefined;
  const at = 'gateway.budget';
  if (!isRecord(value))
    fail('must be an object (url, maxCalls, maxConcurrent, perServer, perTool, perPrincipal)', at);
  onlyKeys(value, BUDGET_KEYS, at);
  const url = value.url ?? 'memory';
  if (typeof url !== 'string') fail('must be "memory" or a redis:// URL', `${at}.url`);
  if (url !== 'memory') {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    if (
      parsed === undefined ||
      (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') ||
      parsed.hostname === ''
    ) {
      fail('must be "memory" or a redis://host:port (or rediss://) URL', `${at}.url`);
    }
  } else {
    const given = REDIS_ONLY_KEYS.find((key) => value[key] !== undefined);
    if (given !== undefined) fail(`"${given}" applies to a redis:// budget only`, `${at}.${given}`);
  }
  for (const key of ['ttlMs', 'timeoutMs'] as const) {
    const number = value[key];
    if (
      number !== undefined &&
      (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 1)
    ) {
      fail('must be a positive integer (milliseconds)', `${at}.${key}`);
    }
  }
  const hold = value.cancelHoldMs;
  if (
    hold !== undefined &&
    (typeof hold !== 'number' || !Number.isSafeInteger(hold) || hold < 0 || hold > 86_400_000)
  ) {
    fail('must be an integer from 0 to 86400000 (milliseconds)', `${at}.cancelHoldMs`);
  }
  if (value.keyPrefix !== undefined) {
    if (typeof value.keyPrefix !== 'string' || !/^[\w:.-]{1,100}$/.test(value.keyPrefix)) {
      fail('must be 1-100 of letters, digits, "_", ":", "." and "-"', `${at}.keyPrefix`);
    }
  }
  if (
    value.onUnavailable !== undefined &&
    value.onUnavailable !== 'deny' &&
    value.onUnavailable !== 'allow'
  ) {
    fail('must be "deny" (fail closed) or "allow"', `${at}.onUnavailable`);
  }
  return Object.freeze({
    ...value,
    url,
    ...limitsOf(value, at),
    ...optional('perServer', checkLimits(value.perServer, `${at}.perServer`)),
    ...optional('perTool', checkLimits(value.perTool, `${at}.perTool`)),
    ...optional('perPrincipal', checkLimits(value.perPrincipal, `${at}.perPrincipal`)),
  }) as GatewayBudgetSettings;
}

function common(
  value: Record<string, unknown>,
  at: string,
  name: string,
): Pick<GatewayServerConfig, 'allow' | 'deny' | 'namespace' | 'startTimeoutMs'> {
  const namespace = value.namespace ?? name;
  if (typeof namespace !== 'string' || !NAME.test(namespace)) {
    fail(`namespace is ${NAME_RULE}`, `${at}.namespace`);
  }
  const deny = stringList(value.deny, `${at}.deny`);
  // Windsurf's and Cline's `disabledTools` are tools never offered: they join `deny`.
  const disabledTools = stringList(value.disabledTools, `${at}.disabledTools`);
  return {
    ...optional('allow', stringList(value.allow, `${at}.allow`)),
    ...optional(
      'deny',
      disabledTools === undefined
        ? deny
        : Object.freeze([...new Set([...(deny ?? []), ...disabledTools])]),
    ),
    namespace,
    ...optional('startTimeoutMs', milliseconds(value.startTimeoutMs, 1, `${at}.startTimeoutMs`)),
  };
}

/** A whole number of milliseconds from `min` to the timer limit, or the error naming the key. */
function milliseconds(value: unknown, min: number, at: string): number | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < min ||
    value > MAX_TIMER_MS
  ) {
    fail(`must be a whole number of milliseconds from ${min} to ${MAX_TIMER_MS}`, at);
  }
  return value;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Checks a parsed config file: `mcpServers` (each with `command` or `url`), and `gateway`
 * settings. Unknown keys are refused, variables are expanded from `env`. Throws
 * {@link GatewayConfigError} with one clear line naming the server and the key.
 *
 * Keys MCP clients write in a server entry are read: `disabled: true` or `enabled: false` leaves
 * the server out (not started, its variables not expanded), `disabledTools` joins `deny`, and
 * `timeout`, `autoApprove`, `alwaysAllow`, `trust`, `description`, `dev`, `gallery` and `version`
 * are ignored. Each of these
 * is reported through `options.onWarning`.
 */
export function parseGatewayConfig(
  value: unknown,
  env: Readonly<Record<string, string | undefined>> = {},
  options: GatewayConfigParseOptions = {},
): GatewayConfig {
  const warn = options.onWarning ?? (() => undefined);
  if (!isRecord(value)) fail('the config must be a JSON object with "mcpServers"', 'config');
  onlyKeys(value, ['mcpServers', 'gateway', '$schema'], 'config');
  if (!isRecord(value.mcpServers)) fail('must be an object of servers by name', 'mcpServers');
  const servers: Record<string, GatewayServerConfig> = {};
  const namespaces = new Map<string, string>();
  for (const [name, server] of Object.entries(value.mcpServers)) {
    const checked = checkServer(name, server, env, warn);
    if (checked === undefined) continue;
    const owner = namespaces.get(checked.namespace as string);
    if (owner !== undefined) {
      fail(`namespace "${checked.namespace}" is also used by ${owner}`, `mcpServers.${name}`);
    }
    namespaces.set(checked.namespace as string, name);
    servers[name] = checked;
  }
  const given = value.gateway ?? {};
  if (!isRecord(given)) fail('must be an object', 'gateway');
  onlyKeys(given, SETTINGS_KEYS, 'gateway');
  // The locations are expanded as the servers' fields are (`postgres://gateway:${PGPASSWORD}@…`).
  const settings: Record<string, unknown> = { ...given };
  for (const key of ['store', 'pins', 'audit', 'approvals'] as const) {
    const text = given[key];
    if (typeof text === 'string') settings[key] = expandVariables(text, env, `gateway.${key}`);
  }
  if (isRecord(given.budget) && typeof given.budget.url === 'string') {
    settings.budget = {
      ...given.budget,
      url: expandVariables(given.budget.url, env, 'gateway.budget.url'),
    };
  }
  if (
    typeof settings.pins === 'string' &&
    /^postgres(ql)?:/i.test(settings.pins) &&
    !isPostgresUrl(settings.pins)
  ) {
    fail(
      'is not a valid postgres:// URL (postgres://user:password@host:port/database)',
      'gateway.pins',
    );
  }
  const store = checkStore(settings.store);
  const storeKey =
    store === undefined
      ? settings.storeKey === undefined
        ? undefined
        : fail('applies only with gateway.store', 'gateway.storeKey')
      : checkStoreKey(settings.storeKey, env);
  const budget = checkBudget(settings.budget);
  checkApprovals(settings.approvals);
  for (const [name, server] of Object.entries(servers)) {
    if (server.oauth !== undefined && store === undefined) {
      fail(
        'needs gateway.store (sqlite:<path> or postgres://…), where the connection is kept',
        `mcpServers.${name}.oauth`,
      );
    }
  }
  for (const key of ['pins', 'audit'] as const) {
    if (
      settings[key] !== undefined &&
      (typeof settings[key] !== 'string' || settings[key] === '')
    ) {
      fail('must be a file path', `gateway.${key}`);
    }
  }
  for (const key of [
    'auditMaxBytes',
    'approvalTimeoutMs',
    'approvalMaxArgumentChars',
    'maxConcurrentCalls',
    'httpMaxSessions',
    'httpSessionIdleMs',
    'httpMaxCallsPerSession',
    'httpMaxStatelessCalls',
    'httpSessionMaxAgeMs',
    'httpMaxSessionsPerPrincipal',
    'httpMaxCallsPerPrincipal',
    'httpMaxListenStreams',
    'httpMaxListenStreamsPerPrincipal',
    'httpMaxRememberedSessions',
  ] as const) {
    const number = settings[key];
    if (
      number !== undefined &&
      (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 1)
    ) {
      fail('must be a positive integer', `gateway.${key}`);
    }
  }
  for (const [key, fallback] of Object.entries(GATEWAY_LIMIT_DEFAULTS)) {
    const number = settings[key as keyof typeof settings];
    if (
      number !== undefined &&
      (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 1)
    ) {
      fail(`must be a whole number of at least 1 (default ${fallback})`, `gateway.${key}`);
    }
  }
  if (
    settings.pinsMaxLockBytes !== undefined &&
    typeof settings.pins === 'string' &&
    isPostgresUrl(settings.pins)
  ) {
    fail(
      'applies only to a pin lock file; a postgres:// gateway.pins is a table (remove the key, or set gateway.pins to a file path)',
      'gateway.pinsMaxLockBytes',
    );
  }
  milliseconds(settings.startTimeoutMs, 1, 'gateway.startTimeoutMs');
  milliseconds(settings.listWaitMs, 0, 'gateway.listWaitMs');
  if (settings.observe !== undefined && typeof settings.observe !== 'boolean') {
    fail('must be true or false', 'gateway.observe');
  }
  if (settings.auditFsync !== undefined && typeof settings.auditFsync !== 'boolean') {
    fail('must be true or false', 'gateway.auditFsync');
  }
  const batch = settings.auditMaxBatchLines;
  if (
    batch !== undefined &&
    (typeof batch !== 'number' || !Number.isSafeInteger(batch) || batch < 1 || batch > 10_000)
  ) {
    fail('must be an integer from 1 to 10,000 (default 128)', 'gateway.auditMaxBatchLines');
  }
  const auditKey =
    settings.auditKey === undefined
      ? undefined
      : keySetting(settings.auditKey, env, 'gateway.auditKey', 'TOOLFENCE_AUDIT_KEY');
  for (const key of ['sealKey', 'sealKeyPrevious'] as const) {
    if (settings[key] !== undefined && typeof settings[key] !== 'string') {
      fail('must be a string (64 hex digits or base64 of 32 bytes)', `gateway.${key}`);
    }
  }
  if (settings.sealKey !== undefined || settings.sealKeyPrevious !== undefined) {
    sealKeysOf(settings as Pick<GatewaySettings, 'sealKey' | 'sealKeyPrevious'>, env);
  }
  let httpToken: string | undefined;
  if (settings.httpToken !== undefined) {
    if (typeof settings.httpToken !== 'string') fail('must be a string', 'gateway.httpToken');
    httpToken = expandVariables(settings.httpToken, env, 'gateway.httpToken');
    if (httpToken.length < 16) {
      fail('must be at least 16 characters (a random token)', 'gateway.httpToken');
    }
  }
  const httpAuth =
    settings.httpAuth === undefined ? undefined : checkHttpAuthSettings(settings.httpAuth);
  if (httpAuth !== undefined && httpToken !== undefined) {
    fail(
      'give gateway.httpToken (one shared token) or gateway.httpAuth (access tokens per caller), not both',
      'gateway.httpAuth',
    );
  }
  const exchanging = Object.keys(servers).find((name) => servers[name]?.credentials !== undefined);
  if (exchanging !== undefined && httpAuth === undefined) {
    fail(
      'a token exchanged for the caller needs a caller: set gateway.httpAuth (serve --http with an access token per caller)',
      `mcpServers.${exchanging}.credentials`,
    );
  }
  return Object.freeze({
    mcpServers: Object.freeze(servers),
    gateway: Object.freeze({
      ...settings,
      ...(httpToken === undefined ? {} : { httpToken }),
      ...(httpAuth === undefined ? {} : { httpAuth }),
      ...(storeKey === undefined ? {} : { storeKey }),
      ...(auditKey === undefined ? {} : { auditKey }),
      ...(budget === undefined ? {} : { budget }),
    }) as GatewaySettings,
  });
}
