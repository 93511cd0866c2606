import { randomBytes } from 'node:crypto';
import type { ApprovalInbox } from '../gateway/approval-inbox.js';
import type { AuditLog } from '../gateway/audit-log.js';
import { GatewayConfigError } from '../gateway/errors.js';
import type { GatewayConfig } from '../gateway/gateway-config.js';
import type { GatewayHttpAuthSettings } from '../gateway/identity/http-auth-settings.js';
import type { GatewayResourceServer } from '../gateway/identity/resource-server.js';
import type { McpGateway } from '../gateway/mcp-gateway.js';
import type { ConsoleMount } from './gateway-http.js';
import { approveLoopback, isLoopbackHost } from './loopback.js';

/** With `gateway.httpAuth`: the console signs people in with the first authorization server. */
export interface ConsoleIdentity {
  /** `gateway.httpAuth` as configured. */
  readonly settings: GatewayHttpAuthSettings;
  /** The gateway's resource server (its bearer-token check). */
  readonly auth: GatewayResourceServer;
  /** `TOOLFENCE_CONSOLE_CLIENT_SECRET`, for a confidential console client. */
  readonly clientSecret: string | undefined;
}

/**
 * What `serve` was asked for: `--console [HOST:PORT]`, `--console-host`, `--console-origin`,
 * `--console-allow-remote`.
 */
export interface ConsoleArguments {
  /** `true` for a bare `--console`; else the HOST:PORT given. */
  readonly address: string | true;
  /** Extra Host header values accepted (`--console-host NAME:PORT`, repeatable). */
  readonly hosts: readonly string[];
  /**
   * The console's public origins (`--console-origin https://NAME[:PORT]`, repeatable), behind a
   * TLS-terminating reverse proxy that forwards the browser's `Host`.
   */
  readonly origins: readonly string[];
  /** `--console-allow-remote`: a console on an address other than loopback is allowed. */
  readonly allowRemote: boolean;
}

/** What the rest of `serve` needs to know of the gateway to build the console. */
export interface ConsoleTarget {
  readonly gateway: McpGateway;
  readonly audit: AuditLog;
  readonly auditKey: Uint8Array | undefined;
  readonly config: () => GatewayConfig;
  readonly reload: () => Promise<void>;
}

/** A console being set up: its inbox (for the gateway) and, once the gateway exists, the server. */
export interface PreparedConsole {
  /** Give it to `McpGateway` as `approvalInbox`. */
  readonly inbox: ApprovalInbox;
  /** On the HTTP listener (`--http` with a bare `--console`): mounted at `/console`. */
  readonly shared: boolean;
  /** The console for the HTTP listener (shared). */
  mount(target: ConsoleTarget): ConsoleMount;
  /** The console on its own listener; resolves with its URL and the closer. */
  listen(
    target: ConsoleTarget,
  ): Promise<{ readonly url: string; readonly close: () => Promise<void> }>;
  /** The line to print on stderr once the console is reachable at `url` (`http://host:port/console`). */
  announce(url: string): string;
}

function usage(message: string): GatewayConfigError {
  return new GatewayConfigError(message, { code: 'GATEWAY_USAGE' });
}

/**
 * Loads the console (only now: a gateway without `--console` never imports it) and checks its
 * address. The sign-in token is the gateway's bearer token when it has one (never printed), else
 * 32 random bytes printed once in the sign-in URL.
 */
export async function prepareConsole(
  request: ConsoleArguments,
  http: { readonly host: string; readonly token: string | undefined } | undefined,
  identity?: ConsoleIdentity | undefined,
): Promise<PreparedConsole> {
  const shared = http !== undefined && request.address === true;
  let host: string;
  let port: number;
  if (shared) {
    host = http.host;
    port = 0;
  } else {
    const value = request.address === true ? '127.0.0.1:0' : request.address;
    const match = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
    port = Number(match?.[2]);
    if (match === null || port > 65_535) {
      throw usage('--console takes HOST:PORT, for example 127.0.0.1:0 (PORT 0 picks a free one)');
    }
    host = (match[1] as string).replace(/^\[|\]$/g, '');
  }
  const loopback = isLoopbackHost(host);
  if (!loopback && !request.allowRemote) {
    throw usage(
      `the console would listen on ${host}, which is not loopback: anyone who can reach it could try the sign-in. Use 127.0.0.1, or add --console-allow-remote (and put TLS in front of it)`,
    );
  }
  const module = await import('../gateway/console/index.js');
  for (const origin of request.origins) {
    if (module.consoleOrigin(origin) === undefined) {
      throw usage(
        '--console-origin takes the public origin the console is reached at: https://NAME or https://NAME:PORT (or http://), with no path, query or user',
      );
    }
  }
  const configured = http?.token;
  const token = configured ?? randomBytes(32).toString('base64url');
  let login: InstanceType<typeof module.ConsoleLogin> | undefined;
  let inbox = new module.ConsoleInbox();
  if (identity !== undefined) {
    const { checkHttpAuthSettings } = await import('../gateway/identity/http-auth-settings.js');
    const settings = checkHttpAuthSettings(identity.settings);
    // One caller's share of the inbox (gateway.httpAuth.console.maxPendingPerPrincipal).
    inbox = new module.ConsoleInbox({
      maxPendingPerPrincipal: settings.console.maxPendingPerPrincipal,
    });
    const issuer = settings.authorizationServers[0] as string;
    login = new module.ConsoleLogin({
      issuer,
      resource: settings.resource,
      settings: settings.console,
      clientSecret: identity.clientSecret,
      // As for the resource server: an issuer on a loopback host may be reached there only.
      allowNonPublic: isLoopbackHost(new URL(issuer).hostname) ? approveLoopback : false,
      fetchMaxBytes: settings.fetchMaxBytes,
      fetchTimeoutMs: settings.fetchTimeoutMs,
      authenticate: (authorization) => identity.auth.authenticate(authorization),
      maxPendingPerSource: settings.console.maxPendingSignInsPerSource,
    });
  }
  const build = (target: ConsoleTarget) =>
    new module.GatewayConsole({
      gateway: target.gateway,
      inbox,
      audit: target.audit,
      auditKey: target.auditKey,
      config: target.config,
      reload: target.reload,
      ...(login === undefined ? { token } : { login }),
      hosts: request.hosts,
      origins: request.origins,
    });
  return {
    inbox,
    shared,
    mount: build,
    listen: (target) => module.serveConsole(build(target), host, port, loopback),
    announce: (url) =>
      login !== undefined
        ? `console: ${url}/ (sign in with the identity provider; admins: gateway.httpAuth.console.admins)`
        : configured === undefined
          ? `console: ${url}/login?token=${token} (this link signs you in; it is printed once)`
          : `console: ${url}/ (sign in with the gateway's bearer token)`,
  };
}
