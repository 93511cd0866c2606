// A gateway in front of the toolkit test server with the web console on its own loopback port,
// and plain-HTTP helpers that act as a browser would (cookies, Origin, forms).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, InMemoryTransport } from '@modelcontextprotocol/client';
import type { Authorizer } from '@toolfence/tools';
import { AuditLog } from '../../src/gateway/audit-log.js';
import {
  ConsoleInbox,
  type ConsoleLogin,
  GatewayConsole,
  serveConsole,
} from '../../src/gateway/console/index.js';
import { type GatewayConfig, parseGatewayConfig } from '../../src/gateway/gateway-config.js';
import { McpGateway } from '../../src/gateway/mcp-gateway.js';
import { PinStore } from '../../src/gateway/pin-store.js';

export const TOOLKIT: string = fileURLToPath(
  new URL('../fixtures/gateway-toolkit-server.mjs', import.meta.url),
);

/** Asks for every call. */
export const ASK: Authorizer = { authorize: () => ({ verdict: 'ask', reason: 'the test asks' }) };

export interface ConsoleHarness {
  readonly folder: string;
  readonly gateway: McpGateway;
  readonly inbox: ConsoleInbox;
  readonly url: string;
  readonly origin: string;
  readonly host: string;
  readonly token: string;
  readonly config: GatewayConfig;
  serverCalls(): Promise<{ name: string; args: Record<string, unknown> }[]>;
  auditLines(): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** The toolkit config; `env` reaches the server (NOTE_DESCRIPTION changes `note`). */
export function toolkitConfig(folder: string, env: Record<string, string> = {}): GatewayConfig {
  return parseGatewayConfig(
    {
      mcpServers: {
        toolkit: {
          command: process.execPath,
          args: [TOOLKIT],
          env: { CALLS_FILE: join(folder, 'calls.jsonl'), ...env },
          namespace: 'tk',
        },
      },
    },
    {},
  );
}

export async function consoleHarness(
  options: {
    readonly folder?: string;
    readonly env?: Record<string, string>;
    readonly authorizer?: Authorizer;
    readonly approvalTimeoutMs?: number;
    /** The identity-provider sign-in instead of the token. */
    readonly login?: ConsoleLogin;
    /** The console's port. Default 0 (any free one). */
    readonly port?: number;
    /** The audit log of the gateway and the console, made for its file. Default an AuditLog. */
    readonly audit?: (file: string) => AuditLog;
  } = {},
): Promise<ConsoleHarness> {
  const folder = options.folder ?? (await mkdtemp(join(tmpdir(), 'toolfence-console-')));
  const config = toolkitConfig(folder, options.env);
  const inbox = new ConsoleInbox();
  const file = join(folder, 'audit.jsonl');
  const audit = options.audit?.(file) ?? new AuditLog(file, 1024 * 1024);
  const gateway = new McpGateway({
    config,
    authorizer: options.authorizer ?? ASK,
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit,
    approvalInbox: inbox,
    ...(options.approvalTimeoutMs === undefined
      ? {}
      : { approvalTimeoutMs: options.approvalTimeoutMs }),
  });
  await gateway.start();
  const token = randomBytes(24).toString('base64url');
  const web = new GatewayConsole({
    gateway,
    inbox,
    audit,
    config: () => config,
    ...(options.login === undefined ? { token } : { login: options.login }),
  });
  const served = await serveConsole(web, '127.0.0.1', options.port ?? 0, true);
  const origin = served.url.replace(/\/console$/, '');
  return {
    folder,
    gateway,
    inbox,
    url: served.url,
    origin,
    host: origin.replace('http://', ''),
    token,
    config,
    serverCalls: async () =>
      (await readFile(join(folder, 'calls.jsonl'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    auditLines: async () =>
      (await readFile(join(folder, 'audit.jsonl'), 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    close: async () => {
      await served.close();
      await gateway.close();
      if (options.folder === undefined) await rm(folder, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP request with exactly these headers (Host included), as a browser or an attacker sends. */
export function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {} },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** A signed-in browser session: its cookie and the CSRF token its pages carry. */
export interface Session {
  readonly cookie: string;
  readonly csrf: string;
}

export async function signIn(harness: ConsoleHarness): Promise<Session> {
  const login = await rawRequest(`${harness.url}/login?token=${encodeURIComponent(harness.token)}`);
  if (login.status !== 303) throw new Error(`sign-in answered ${login.status}`);
  const cookie = String(login.headers['set-cookie']).split(';')[0] as string;
  const page = await rawRequest(`${harness.url}/approvals`, { headers: { cookie } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
  if (csrf === undefined) throw new Error('no CSRF token on the page');
  return { cookie, csrf };
}

/** A form POST from the console's own origin (what its pages send). */
export function postForm(
  harness: ConsoleHarness,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest(`${harness.origin}${path}`, {
    method: 'POST',
    headers: {
      origin: harness.origin,
      'content-type': 'application/x-www-form-urlencoded',
      ...headers,
    },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Polls `check` until it is true (at most `ms`). */
export async function until(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Things a test opened (harnesses, clients, browser contexts), closed after each test in reverse
 * order, and a harness that is closed with them.
 */
export function tracked(): {
  readonly open: { close(): Promise<void> }[];
  readonly closeAll: () => Promise<void>;
  readonly harness: (options?: Parameters<typeof consoleHarness>[0]) => Promise<ConsoleHarness>;
} {
  const open: { close(): Promise<void> }[] = [];
  return {
    open,
    closeAll: async () => {
      for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
    },
    harness: async (options = {}) => {
      const made = await consoleHarness(options);
      open.push(made);
      return made;
    },
  };
}

/**
 * A 2026-07-28 (SDK v2) client without elicitation connected in memory to the harness's
 * gateway (its asks wait in the inbox); pushed to `open` for closing.
 */
export async function modernClientWithoutElicitation(
  harness: ConsoleHarness,
  open: { close(): Promise<void> }[],
): Promise<ClientV2> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await harness.gateway.connect(serverSide);
  const client = new ClientV2(
    { name: 'modern-no-elicitation', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: 'auto' as const } },
  );
  await client.connect(clientSide);
  open.push(client);
  return client;
}
