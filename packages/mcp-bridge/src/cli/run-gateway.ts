import { isAbsolute, resolve } from 'node:path';
import type { ApprovalSpentStore } from '../gateway/approval-spent-store.js';
import { AuditLog, verifyAuditChain } from '../gateway/audit-log.js';
import { GatewayConfigError } from '../gateway/errors.js';
import type { GatewayBudget } from '../gateway/gateway-budget.js';
import {
  auditKeyOf,
  DEFAULT_AUDIT_MAX_BYTES,
  DEFAULT_HTTP_MAX_SESSIONS,
  decodeStoreKey,
  type GatewayConfig,
  type GatewaySettings,
  sealKeysOf,
} from '../gateway/gateway-config.js';
import type { GatewayPassthroughOptions } from '../gateway/gateway-passthrough.js';
import type { McpGateway } from '../gateway/mcp-gateway.js';
import { openApprovalStore } from '../gateway/open-approval-store.js';
import { type GatewayPinStore, PinStore } from '../gateway/pin-store.js';
import {
  defaultInspectPolicy,
  type InspectPolicy,
  loadInspectPolicy,
  refuseIssuerlessPrincipalRules,
  refuseUnkeptPrincipalClaims,
  warnUnmatchedRules,
} from '../gateway/policy-file.js';
import { formatUpstreamFailure } from '../gateway/upstream-failure.js';
import type { PersistentConnectionStore } from '../store/connection-store-from-url.js';
import { type CliIo, unknownOption } from './cli-io.js';
import { watchConfigFile } from './config-watch.js';
import type { ConsoleTarget, PreparedConsole } from './console-start.js';
import { EXIT_CODES } from './exit-codes.js';
import type { GatewayHttpOptions } from './gateway-http.js';
import { approveLoopback, isLoopbackHost } from './loopback.js';
import { safeFailureMessage } from './safe-failure-message.js';
import {
  checkHttpAddress,
  type GatewayArguments,
  type LoadedConfig,
  loadConfig,
  POSTGRES_URL,
  parseArguments,
  usage,
} from './serve-arguments.js';
import type { PreparedServe } from './serve-start.js';

/** Quiet time after a config change or SIGHUP before the reload starts, in milliseconds. */
const RELOAD_DEBOUNCE_MS = 200;

/** The help text of `toolfence-mcp serve`, `pin` and `audit`. */
export const GATEWAY_HELP: string = `Usage:
  toolfence-mcp serve --config FILE [--policy FILE] [--observe] [--verbose] [--http HOST:PORT]
                      [--console [HOST:PORT]] [--console-host NAME:PORT]
                      [--console-origin https://NAME[:PORT]] [--console-allow-remote]
  toolfence-mcp pin --config FILE (--show | --accept SERVER__TOOL@DIGEST)
  toolfence-mcp audit verify (--log FILE | --config FILE)

serve   Runs the gateway on stdin/stdout: one MCP server in front of the config's "mcpServers".
        Every call passes validation, the policy (--policy, default RiskPolicy's defaults), an
        approval asked of you through your client when the policy says ask, and the audit log.
        Tool definitions are pinned in the lock file; a changed, renamed or new tool is hidden
        until you accept it. --observe enforces nothing and logs what would have happened.
        The flow guard (on by default; the policy file's "flow" section) asks before a call
        that can publish, pay or destroy once the conversation read untrusted text, and denies
        it once the conversation also holds private data, unless "flow.permit" allows it.
        --verbose also prints the upstreams' stderr lines and the transports' diagnostics.
        Clients may speak MCP 2026-07-28 (stateless; an ask comes back as input_required) or
        2025-11-25 (a session; an ask is an elicitation).
        The client is answered at once; the upstreams start in parallel, each within
        gateway.startTimeoutMs (default 30 s; or the server's own startTimeoutMs), and their
        tools are announced with list_changed as each is ready (a tools/list waits at most
        gateway.listWaitMs, default 5 s, for those still starting). As many stdio upstreams
        as the cores less one (none on one core; TOOLFENCE_EARLY_UPSTREAMS=N sets the number)
        are spawned before the gateway loads, the other stdio upstreams once the client's
        initialize is answered (on stdio; TOOLFENCE_EARLY_UPSTREAMS=0 spawns none early).
        --http 127.0.0.1:PORT serves Streamable HTTP at /mcp instead of stdio (PORT 0 picks
        one; the URL is printed on stderr); off loopback a bearer token is required
        (gateway.httpToken or TOOLFENCE_GATEWAY_TOKEN).
        --console serves the web console (approvals, pins, audit, upstreams): at /console of
        the --http listener, or on its own loopback port (default 127.0.0.1:0; the sign-in URL
        is printed on stderr once). An ask your client cannot put to you waits there up to the
        approval timeout instead of being refused. --console-host accepts another Host name;
        --console-origin https://NAME[:PORT] declares the public origin behind a TLS proxy
        (that forwards the Host): POSTs must come from it, the sign-in's redirect_uri is built
        from it, cookies are Secure; a console off loopback needs --console-allow-remote.
        SIGHUP, or a change to the config file, reloads the config, the pins and the policy
        without dropping calls in flight (a config that cannot be used is refused; the running
        one stays).
        Replicas: gateway.store (sqlite:/postgres://, for servers with "oauth"), gateway.budget
        (memory or redis://) and gateway.pins (a file or postgres://) shared by every replica;
        they apply at start.
pin     --show lists the hidden tools, what changed, and for each a SERVER__TOOL@DIGEST token;
        --accept TOKEN takes exactly that definition as the new pin. If the server listed
        another definition since, nothing is accepted (run --show again). A bare name is
        refused.
audit   verify checks the audit log's hash chain and its sealed head (a cut, a deleted file,
        an edited line are found). See "toolfence-mcp audit --help".

Exit codes: 0 ok, 1 failure (or a broken audit chain), 2 usage error.
`;

/** What `serve` prints on stderr when nothing is enforced (`--observe` or `gateway.observe`). */
export const OBSERVE_BANNER: string =
  'toolfence-mcp: OBSERVE MODE: enforcement is OFF. Every call runs, whatever the policy, approvals and pins say; the audit log records what each decision would have been.\n';

/** Opens the pins `gateway.pins` names: the lock file, or the shared PostgreSQL table. */
async function openPins(loaded: LoadedConfig): Promise<GatewayPinStore> {
  if (!POSTGRES_URL.test(loaded.pinsPath)) return openLockFile(loaded);
  const { PostgresPinStore } = await import('../gateway/postgres-pin-store.js');
  return PostgresPinStore.open({
    connectionString: loaded.pinsPath,
    ...pinLimits(loaded.config.gateway),
  });
}

/** The pin lock file `gateway.pins` names, with the config's `gateway.pinsMax*` limits. */
function openLockFile(loaded: LoadedConfig): Promise<PinStore> {
  const { pinsMaxLockBytes } = loaded.config.gateway;
  return PinStore.open(loaded.pinsPath, {
    ...pinLimits(loaded.config.gateway),
    ...(pinsMaxLockBytes === undefined ? {} : { maxLockBytes: pinsMaxLockBytes }),
  });
}

/** `gateway.pinsMaxDefinitionBytes` and `pinsMaxPendingPerServer`: the limits both pin stores take. */
function pinLimits(settings: GatewaySettings): {
  maxDefinitionBytes?: number;
  maxPendingPerServer?: number;
} {
  return {
    ...(settings.pinsMaxDefinitionBytes === undefined
      ? {}
      : { maxDefinitionBytes: settings.pinsMaxDefinitionBytes }),
    ...(settings.pinsMaxPendingPerServer === undefined
      ? {}
      : { maxPendingPerServer: settings.pinsMaxPendingPerServer }),
  };
}

/** `gateway.passthroughMax*`: McpGateway's `passthrough` limits the config sets. */
function passthroughOf(settings: GatewaySettings): GatewayPassthroughOptions {
  return {
    ...(settings.passthroughMaxReadUriChars === undefined
      ? {}
      : { maxReadUriChars: settings.passthroughMaxReadUriChars }),
    ...(settings.passthroughMaxTemplateExpressions === undefined
      ? {}
      : { maxTemplateExpressions: settings.passthroughMaxTemplateExpressions }),
    ...(settings.passthroughMaxTemplateMatchWork === undefined
      ? {}
      : { maxTemplateMatchWork: settings.passthroughMaxTemplateMatchWork }),
  };
}

/** What a reload cannot change: the store, its key, the budget and a shared pin table. */
function startOnly(loaded: LoadedConfig): string {
  const { store, storeKey, budget, sealKey, sealKeyPrevious, approvals } = loaded.config.gateway;
  const shared = POSTGRES_URL.test(loaded.pinsPath);
  return JSON.stringify({
    store,
    storeKey,
    budget,
    sealKey,
    sealKeyPrevious,
    approvals,
    pins: shared ? loaded.pinsPath : 'file',
    // The shared table's limits are its open's; a lock file is opened again with the new ones.
    pinLimits: shared ? pinLimits(loaded.config.gateway) : 'file',
    maxToolNameChars: loaded.config.gateway.maxToolNameChars,
    passthrough: passthroughOf(loaded.config.gateway),
  });
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
export async function runServe(
  argv: readonly string[],
  io: CliIo,
  prepared?: PreparedServe,
): Promise<number> {
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
  let approvals: ApprovalSpentStore | undefined;
  let current: GatewayConfig;
  // The stdio upstreams spawned before this module loaded (serve-start.ts): the gateway's first
  // start adopts them; whatever it did not take is ended once it settled and on every way out.
  const early = prepared !== undefined && 'upstreams' in prepared ? prepared.upstreams : undefined;
  const release = async (): Promise<void> => {
    await early?.dispose();
    await approvals?.close();
    await budget?.close();
    await store?.close();
    await pins?.close?.();
  };
  // `--policy FILE` (relative to the working folder), or RiskPolicy's defaults. With identity
  // (`gateway.httpAuth`), a rule reading a claim the principal does not keep is refused, at start
  // and at every reload (the claims kept are those of the resource server in force), and so is,
  // with several trusted issuers, an allow or ask rule on a subject or claims naming no issuer.
  const readPolicy = async (arguments_: GatewayArguments): Promise<InspectPolicy> => {
    if (arguments_.policy === undefined) return defaultInspectPolicy();
    const path = isAbsolute(arguments_.policy)
      ? arguments_.policy
      : resolve(io.cwd ?? process.cwd(), arguments_.policy);
    const policy = await loadInspectPolicy(path);
    const kept = http?.auth?.principalClaims;
    if (kept !== undefined) refuseUnkeptPrincipalClaims(policy, kept, path);
    const issuers = http?.auth?.authorizationServers;
    if (issuers !== undefined) refuseIssuerlessPrincipalRules(policy, issuers, path);
    return policy;
  };
  let http: GatewayHttpOptions | undefined;
  let webConsole: PreparedConsole | undefined;
  let consoleTarget: ConsoleTarget | undefined;
  let startPolicy: Awaited<ReturnType<typeof readPolicy>> | undefined;
  try {
    if (prepared !== undefined && 'error' in prepared) throw prepared.error;
    parsed = prepared === undefined ? parseArguments(argv) : prepared.parsed;
    loaded = prepared === undefined ? await loadConfig(parsed, io) : prepared.loaded;
    // A bad --http value is refused before anything starts.
    if (parsed.http !== undefined) http = await httpOptions(parsed.http, loaded.config, io);
    // The console's modules are loaded only when asked for.
    if (parsed.console !== undefined) {
      const httpAuth = loaded.config.gateway.httpAuth;
      const { prepareConsole } = await import('./console-start.js');
      webConsole = await prepareConsole(
        parsed.console,
        http,
        http?.auth === undefined || httpAuth === undefined
          ? undefined
          : {
              settings: httpAuth,
              auth: http.auth,
              clientSecret: io.env?.TOOLFENCE_CONSOLE_CLIENT_SECRET,
            },
      );
    }
    const policy = await readPolicy(parsed);
    const settings = loaded.config.gateway;
    const auditKey = auditKeyOf(settings, io.env ?? {});
    const sealKeys = sealKeysOf(settings, io.env ?? {});
    // Legacy sessions sealed under the same key resume on any replica.
    if (http !== undefined && sealKeys !== undefined) http = { ...http, sealKeys };
    current = loaded.config;
    const auditLog = new AuditLog(
      loaded.auditPath,
      settings.auditMaxBytes ?? DEFAULT_AUDIT_MAX_BYTES,
      {
        ...(auditKey === undefined ? {} : { key: auditKey }),
        ...(settings.auditFsync === true ? { fsync: true } : {}),
        ...(settings.auditMaxBatchLines === undefined
          ? {}
          : { maxBatchLines: settings.auditMaxBatchLines }),
      },
    );
    pins = await openPins(loaded);
    if (loaded.storeUrl !== undefined) {
      const { connectionStoreFromUrl } = await import('../store/connection-store-from-url.js');
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
      const { gatewayBudget } = await import('../gateway/gateway-budget.js');
      budget = await gatewayBudget(settings.budget, serverOf, (message) =>
        io.err(`toolfence-mcp: ${message}\n`),
      );
    }
    approvals = await openApprovalStore(settings);
    if (http !== undefined && sealKeys === undefined) {
      io.err(
        'toolfence-mcp: approvals are sealed under a random key of this process: an approval it asks is honoured by it alone, and none survives a restart (set TOOLFENCE_SEAL_KEY, 32 bytes, on every replica)\n',
      );
    }
    if (http !== undefined && sealKeys !== undefined && approvals.kind === 'memory') {
      io.err(
        'toolfence-mcp: gateway.approvals is memory: an approval is single use within this process only; replicas sharing the sealing key need gateway.approvals (redis:// or postgres://)\n',
      );
    }
    const connectionStore = store;
    // Loaded per command (see run-cli.ts): the gateway, the SDK server and the upstream client
    // are what `serve` needs, and `pin` or `audit` never do.
    const { McpGateway } = await import('../gateway/mcp-gateway.js');
    gateway = new McpGateway({
      config: loaded.config,
      authorizer: policy.authorizer,
      // The flow guard is on unless the policy file's "flow" says otherwise.
      flow: policy.flow ?? {},
      pins,
      audit: auditLog,
      ...(loaded.config.gateway.maxToolNameChars === undefined
        ? {}
        : { maxToolNameChars: loaded.config.gateway.maxToolNameChars }),
      passthrough: passthroughOf(loaded.config.gateway),
      ...(parsed.observe ? { observe: true } : {}),
      ...(budget === undefined ? {} : { budget: budget.reserver }),
      ...(webConsole === undefined ? {} : { approvalInbox: webConsole.inbox }),
      // Token exchanges (servers with `credentials`) may reach an authorization server the
      // config names on a loopback host (gateway.httpAuth's issuers, a tokenEndpoint).
      ...(exchangesOnLoopback(loaded.config)
        ? { tokenExchangeAllowNonPublic: approveLoopback }
        : {}),
      ...(sealKeys === undefined ? {} : { sealKeys }),
      approvalStore: approvals,
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
        // --verbose: the upstreams' stderr lines (cut at 4 KiB by the transport), reconnections
        // and other diagnostics, escaped to one line each.
        ...(parsed.verbose
          ? {
              info: (message: string, details?: Record<string, unknown>) =>
                io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
              debug: (message: string, details?: Record<string, unknown>) =>
                io.err(`toolfence-mcp: ${message} ${JSON.stringify(details ?? {})}\n`),
            }
          : {}),
      },
    });
    if (parsed.observe || settings.observe === true) io.err(OBSERVE_BANNER);
    startPolicy = policy;
    const built = gateway;
    consoleTarget = {
      gateway: built,
      audit: auditLog,
      auditKey,
      config: () => current,
      reload: () => reload('console'),
    };
  } catch (error) {
    await release();
    return fail(io, error);
  }
  // The downstream is served first: the client's initialize or server/discover is answered at
  // once, whatever the upstreams do; they start in parallel below, and their tools are announced
  // with list_changed as each is ready.
  let closed: Promise<void>;
  let server: { readonly url: string; readonly close: () => Promise<void> } | undefined;
  let consoleServer: { readonly close: () => Promise<void> } | undefined;
  if (http !== undefined) {
    try {
      const { serveGatewayHttp } = await import('./gateway-http.js');
      server = await serveGatewayHttp(gateway, {
        ...http,
        ...(webConsole?.shared === true
          ? { console: webConsole.mount(consoleTarget as ConsoleTarget) }
          : {}),
      });
    } catch (error) {
      await gateway.close();
      await release();
      return fail(io, error);
    }
    io.err(`toolfence-mcp: listening on ${server.url}\n`);
    if (webConsole?.shared === true) {
      io.err(`toolfence-mcp: ${webConsole.announce(server.url.replace(/\/mcp$/, '/console'))}\n`);
    }
    closed = new Promise<void>(() => undefined);
  } else {
    const stdio = io.stdio ?? { stdin: process.stdin, stdout: process.stdout };
    // The SDK v2 stdio transport's behaviour, without its schema copy of plain messages.
    const { StdioFrontTransport } = await import('../gateway/stdio-front-transport.js');
    const transport = new StdioFrontTransport({
      stdin: stdio.stdin as never,
      stdout: stdio.stdout as never,
    });
    closed = new Promise<void>((resolveClosed) => {
      transport.onclose = () => resolveClosed();
    });
    // Once the client's first answer (its `initialize`) is out, the stdio upstreams kept back from
    // the early spawn start: while the upstream client loads, not once it has (and not before
    // that answer, which they would slow down).
    if (early !== undefined) transport.onfirstsend = () => setImmediate(() => early.startRest());
    await gateway.connect(transport);
  }
  if (webConsole !== undefined && !webConsole.shared) {
    try {
      const listening = await webConsole.listen(consoleTarget as ConsoleTarget);
      consoleServer = listening;
      io.err(`toolfence-mcp: ${webConsole.announce(listening.url)}\n`);
    } catch (error) {
      await server?.close();
      await gateway.close();
      await release();
      return fail(io, error);
    }
  }
  const starting = gateway.start();
  // Every upstream's load settled: an early process no client took is ended now.
  void starting.then(
    () => early?.dispose(),
    () => early?.dispose(),
  );
  const started = starting.then(
    () => {
      if (startPolicy !== undefined) {
        warnUnmatchedRules(startPolicy, gateway.offeredTools(), (line) =>
          io.err(`toolfence-mcp: ${line}\n`),
        );
      }
      for (const upstream of gateway.upstreams) {
        io.err(
          `toolfence-mcp: ${upstream.name}: ${upstream.state}, ${upstream.tools.length} tool(s)${
            Object.keys(upstream.hidden).length > 0
              ? `, ${Object.keys(upstream.hidden).length} hidden (toolfence-mcp pin --show)`
              : ''
          }${upstream.error === undefined ? '' : ` (${upstream.error})`}\n`,
        );
        // Why it failed: our messages, the process's exit code and its stderr tail.
        if (upstream.failure !== undefined) {
          io.err(
            formatUpstreamFailure(upstream.name, upstream.failure)
              .split('\n')
              .map((line) => (line === '' ? line : `toolfence-mcp: ${line}`))
              .join('\n'),
          );
        }
      }
      return undefined;
    },
    (error: unknown) => ({ error }),
  );
  // SIGHUP or a change to the config file reloads: the config, the pins and the policy are read
  // again; a config that cannot be used is reported and the running one stays.
  const reload = async (why: string): Promise<void> => {
    try {
      const next = await loadConfig(parsed, io);
      if (startOnly(next) !== startOnly(loaded)) {
        throw new GatewayConfigError(
          'gateway.store, gateway.storeKey, gateway.budget, gateway.sealKey, gateway.sealKeyPrevious, gateway.approvals, gateway.maxToolNameChars, gateway.passthroughMax*, and a postgres:// gateway.pins with its gateway.pinsMax* apply at start; restart the gateway to change them',
        );
      }
      const policy = await readPolicy(parsed);
      // A shared pin table is read again by every review; a lock file is opened again.
      const nextPins = POSTGRES_URL.test(next.pinsPath) ? pins : await openLockFile(next);
      await gateway.reload({
        config: next.config,
        ...(nextPins === undefined ? {} : { pins: nextPins }),
        authorizer: policy.authorizer,
        flow: policy.flow ?? {},
      });
      current = next.config;
      io.err(`toolfence-mcp: reloaded (${why}): ${gateway.toolNames().length} tool(s)\n`);
      warnUnmatchedRules(policy, gateway.offeredTools(), (line) =>
        io.err(`toolfence-mcp: ${line}\n`),
      );
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
  // A start that fails (the pins cannot be saved) stops the gateway.
  const startFailed = started.then((outcome) =>
    outcome === undefined ? new Promise<{ error: unknown }>(() => undefined) : outcome,
  );
  const ended = await Promise.race([
    closed,
    io.stopped ?? new Promise<void>(() => undefined),
    startFailed,
  ]);
  watcher.close();
  unsubscribe?.();
  if (timer !== undefined) clearTimeout(timer);
  // Asks waiting in the console inbox are answered "not approved" while their clients can hear.
  await gateway.declineWaitingAsks();
  await consoleServer?.close();
  await server?.close();
  await gateway.close();
  await release();
  return ended === undefined ? EXIT_CODES.ok : fail(io, ended.error);
}

/** True when a server with `credentials` may exchange at a loopback authorization server. */
function exchangesOnLoopback(config: GatewayConfig): boolean {
  const servers = Object.values(config.mcpServers).filter(
    (server) => server.credentials !== undefined,
  );
  if (servers.length === 0) return false;
  const hosts = [
    ...(config.gateway.httpAuth?.authorizationServers ?? []),
    ...servers.flatMap((server) => server.credentials?.tokenEndpoint ?? []),
  ];
  return hosts.some((url) => isLoopbackHost(new URL(url).hostname));
}

async function httpOptions(
  value: string,
  config: GatewayConfig,
  io: CliIo,
): Promise<GatewayHttpOptions> {
  const { host, loopback, port, token } = checkHttpAddress(value, config, io);
  const httpAuth = config.gateway.httpAuth;
  return {
    host,
    port,
    token,
    ...(httpAuth === undefined
      ? {}
      : {
          // Loaded only with `gateway.httpAuth` (jose, the OAuth discovery).
          auth: new (await import('../gateway/identity/resource-server.js')).GatewayResourceServer({
            settings: (
              await import('../gateway/identity/http-auth-settings.js')
            ).checkHttpAuthSettings(httpAuth),
            ...(httpAuth.introspection === true
              ? {
                  introspectionCredentials: {
                    clientId: io.env?.TOOLFENCE_INTROSPECTION_CLIENT_ID ?? '',
                    clientSecret: io.env?.TOOLFENCE_INTROSPECTION_CLIENT_SECRET ?? '',
                  },
                }
              : {}),
            // As for upstreams: an authorization server the config names on a loopback host may
            // be reached there; every other one must be public HTTPS.
            ...(httpAuth.authorizationServers.some((issuer) =>
              isLoopbackHost(new URL(issuer).hostname),
            )
              ? { allowNonPublic: approveLoopback }
              : {}),
          }),
        }),
    loopback,
    maxSessions: config.gateway.httpMaxSessions ?? DEFAULT_HTTP_MAX_SESSIONS,
    sessionIdleMs: config.gateway.httpSessionIdleMs,
    maxCallsPerSession: config.gateway.httpMaxCallsPerSession,
    maxStatelessCalls: config.gateway.httpMaxStatelessCalls,
    sessionMaxAgeMs: config.gateway.httpSessionMaxAgeMs,
    maxSessionsPerPrincipal: config.gateway.httpMaxSessionsPerPrincipal,
    maxCallsPerPrincipal: config.gateway.httpMaxCallsPerPrincipal,
    maxListenStreams: config.gateway.httpMaxListenStreams,
    maxListenStreamsPerPrincipal: config.gateway.httpMaxListenStreamsPerPrincipal,
    maxRememberedSessions: config.gateway.httpMaxRememberedSessions,
  };
}

/** `toolfence-mcp pin`: shows hidden tools and their changes, or accepts one as the new pin. */
export async function runPin(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(GATEWAY_HELP);
    return EXIT_CODES.ok;
  }
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
    // The pin command's module: serve does not load it.
    const { acceptPinToken, pinChanges, splitPinToken } = await import('../gateway/pin-changes.js');
    const namespaceOf = new Map(
      Object.entries(loaded.config.mcpServers).map(([name, server]) => [
        name,
        server.namespace as string,
      ]),
    );
    if (parsed.show) {
      const pending = pinChanges(pins, namespaceOf);
      if (pending.length === 0) io.out('No hidden tools.\n');
      for (const { server, kind, token, reasons, changes, flagged } of pending) {
        const what = kind === 'tool' ? '' : `${kind}, `;
        // The token names this exact definition: --accept takes it and nothing else.
        io.out(`${token} (${what}server ${server}): ${reasons.join(', ')}\n`);
        for (const { field, before, after } of changes) {
          io.out(`  ${field}:\n    - ${before}\n    + ${after}\n`);
        }
        if (flagged.length > 0) io.out(`  invisible Unicode in: ${flagged.join(', ')}\n`);
        io.out(`  to accept exactly this definition: toolfence-mcp pin --accept ${token}\n`);
      }
      return EXIT_CODES.ok;
    }
    for (const token of parsed.accept) {
      const { name, digest } = acceptedToken(splitPinToken(token));
      await acceptPinToken(pins, namespaceOf, name, digest);
      io.out(`Accepted ${name}; restart the gateway (or reload) to offer it.\n`);
    }
    await pins.save();
    return EXIT_CODES.ok;
  }
}

/**
 * `SERVER__TOOL@sha256:<hex>` (the token `pin --show` prints) as `splitPinToken` split it. A bare
 * name is refused: it would accept whatever definition is pending when the command runs, not the
 * one reviewed.
 */
function acceptedToken(split: { readonly name: string; readonly digest: string } | undefined): {
  readonly name: string;
  readonly digest: string;
} {
  if (split === undefined) {
    throw usage(
      '--accept takes SERVER__TOOL@DIGEST exactly as pin --show prints it (a bare name is refused: it would accept whatever is pending now, not what you reviewed)',
    );
  }
  return split;
}

/** The help text of `toolfence-mcp audit`. */
export const AUDIT_HELP: string = `Usage:
  toolfence-mcp audit verify --log FILE
  toolfence-mcp audit verify --config FILE

Checks the gateway's audit log as a whole: each line's hash and link in FILE and its rotated
FILE.1, and that both hold what the head FILE.head sealed (how many lines, the last hash). Lines
cut from either end, a deleted file or head, an edited line, and (with the key) a chain recomputed
without the key are found.

  --log FILE      the log to check (a path; no config needed)
  --config FILE   the gateway's config: its gateway.audit (default toolfence-audit.jsonl beside
                  it) and gateway.auditKey

The key of a keyed log: gateway.auditKey with --config, else TOOLFENCE_AUDIT_KEY from the
environment (32 bytes, 64 hex digits or base64). A keyed log does not verify without it.

After a failure the gateway refuses to continue the log. To start a new chain, move FILE,
FILE.1 and FILE.head aside (keep them as evidence) and start the gateway again.

Exit codes: 0 intact, 1 broken or nothing to verify, 2 usage error.
`;

/** `toolfence-mcp audit verify`: checks the audit log, its rotated file and its sealed head. */
export async function runAudit(argv: readonly string[], io: CliIo): Promise<number> {
  const [verb, ...rest] = argv;
  if (
    verb === '-h' ||
    verb === '--help' ||
    verb === 'help' ||
    rest.includes('-h') ||
    rest.includes('--help')
  ) {
    io.out(AUDIT_HELP);
    return EXIT_CODES.ok;
  }
  try {
    if (verb !== 'verify') {
      throw usage('the audit command is "audit verify --log FILE" or "audit verify --config FILE"');
    }
    let log: string | undefined;
    let config: string | undefined;
    for (let index = 0; index < rest.length; index += 1) {
      const flag = rest[index] as string;
      const next = rest[index + 1];
      if (
        (flag === '--log' || flag === '--config') &&
        next !== undefined &&
        !next.startsWith('--')
      ) {
        if (flag === '--log') log = next;
        else config = next;
        index += 1;
      } else if (!flag.startsWith('-') && log === undefined) {
        log = flag;
      } else {
        throw usage(unknownOption(flag));
      }
    }
    if ((log === undefined) === (config === undefined)) {
      throw usage('give exactly one of --log FILE or --config FILE');
    }
    const cwd = io.cwd ?? process.cwd();
    let path: string;
    let key: Uint8Array | undefined;
    if (config !== undefined) {
      const loaded = await loadConfig(
        { config, observe: false, verbose: false, show: false, accept: [] },
        io,
      );
      path = loaded.auditPath;
      key = auditKeyOf(loaded.config.gateway, io.env ?? {});
    } else {
      path = isAbsolute(log as string) ? (log as string) : resolve(cwd, log as string);
      key = auditKeyOf({}, io.env ?? {});
    }
    const report = await verifyAuditChain(path, key === undefined ? {} : { key });
    if (report.fresh) {
      io.out(
        `audit: nothing to verify: no ${path}, no ${path}.1 and no ${path}.head (nothing was recorded there, or all three were deleted)\n`,
      );
      return EXIT_CODES.failure;
    }
    if (!report.ok) {
      io.out(`audit: BROKEN (${report.problem}): ${report.message}\n`);
      io.out(
        `audit: the gateway will not continue this log. To start a new chain, move ${path}, ${path}.1 and ${path}.head aside (keep them as evidence).\n`,
      );
      return EXIT_CODES.failure;
    }
    io.out(`audit: ${report.message}\n`);
    return EXIT_CODES.ok;
  } catch (error) {
    io.err(`toolfence-mcp: ${safeFailureMessage(error)}\n`);
    if ((error as { code?: unknown }).code === 'GATEWAY_USAGE') {
      io.err('Run "toolfence-mcp audit --help" for usage.\n');
      return EXIT_CODES.usage;
    }
    return EXIT_CODES.failure;
  }
}
