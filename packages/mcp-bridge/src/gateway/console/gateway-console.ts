import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkOptionKeys } from '@toolfence/tools/core';
import { positiveInteger } from '../../transport/record-limits.js';
import type { AuditEntry, AuditLog } from '../audit-log.js';
import { auditText, verifyAuditChain } from '../audit-log.js';
import { digestOf } from '../canonical-json.js';
import { GatewayConfigError, gatewayOptionRefusal, PinChangedError } from '../errors.js';
import type { GatewayConfig } from '../gateway-config.js';
import { isoTime } from '../iso-time.js';
import type { McpGateway } from '../mcp-gateway.js';
import { acceptPinToken, type NamespaceOf, pinChanges, splitPinToken } from '../pin-changes.js';
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from './console-assets.js';
import {
  DEFAULT_CONSOLE_AUDIT_READ_BYTES,
  DEFAULT_CONSOLE_AUDIT_ROWS,
  readAuditRows,
} from './console-audit.js';
import type { ConsoleInbox } from './console-inbox.js';
import { type ConsoleLogin, ConsoleLoginBusyError } from './console-login.js';
import {
  approvalsPage,
  auditPage,
  CONSOLE_BASE,
  loginPage,
  loginRefusedPage,
  type PageContext,
  pinsPage,
  problemPage,
  providerLoginPage,
  upstreamsPage,
} from './console-pages.js';
import {
  type ConsoleSession,
  ConsoleSessions,
  DEFAULT_CONSOLE_MAX_SESSIONS,
  DEFAULT_CONSOLE_SESSION_IDLE_MS,
  sameSecret,
} from './console-sessions.js';

/** Default largest form body the console reads, in bytes: 64 KiB. */
export const DEFAULT_CONSOLE_MAX_FORM_BYTES: number = 64 * 1024;

/** Options of {@link GatewayConsole}. */
export interface GatewayConsoleOptions {
  /** The gateway the console shows and acts on. */
  readonly gateway: McpGateway;
  /** The approvals inbox the gateway was built with (`approvalInbox`). */
  readonly inbox: ConsoleInbox;
  /** The gateway's audit log: every change made in the console is written to it first. */
  readonly audit: AuditLog;
  /** The audit log's key, when it is keyed (for the chain's verification). */
  readonly auditKey?: Uint8Array | undefined;
  /** The config in force (for the servers' namespaces and a reload). */
  readonly config: () => GatewayConfig;
  /**
   * What the reload button (and an accepted pin) runs. Default: `gateway.reload` with the
   * config in force (the CLI passes its own: the config file, the pins and the policy read again).
   */
  readonly reload?: () => Promise<void>;
  /**
   * The sign-in token (at least 16 characters): the gateway's bearer token, or a random one.
   * Exactly one of `token` and `login` is given.
   */
  readonly token?: string | undefined;
  /**
   * The identity-provider sign-in (`gateway.httpAuth`): people sign in at the authorization
   * server, and only the console admins it names get a session. Exclusive with `token`.
   */
  readonly login?: ConsoleLogin | undefined;
  /**
   * Extra `Host` header values accepted (`name:port`), for a console reached under a DNS name.
   * The bound address and port (and `localhost:<port>` on loopback) are always accepted.
   */
  readonly hosts?: readonly string[];
  /**
   * The console's public origins (`--console-origin`), for a console behind a TLS-terminating
   * reverse proxy: `https://NAME[:PORT]` (or `http://`), no path. A request whose `Host` is an
   * origin's `NAME[:PORT]` is accepted, its POSTs must carry exactly that `Origin`, the
   * identity-provider sign-in's `redirect_uri` is built from it, and, for `https`, every cookie is
   * `Secure`. Other requests keep the console's own `http://HOST`. `X-Forwarded-*` is never read.
   */
  readonly origins?: readonly string[];
  /** Audit lines shown, newest first. Default {@link DEFAULT_CONSOLE_AUDIT_ROWS}. */
  readonly auditRows?: number;
  /** Bytes read from the end of the audit log for the table. Default 4 MiB. */
  readonly auditReadBytes?: number;
  /** Signed-in sessions held at once. Default {@link DEFAULT_CONSOLE_MAX_SESSIONS}. */
  readonly maxSessions?: number;
  /** Idle time that ends a session, in ms. Default {@link DEFAULT_CONSOLE_SESSION_IDLE_MS} (12 h). */
  readonly sessionIdleMs?: number;
  /** Largest form body read, in bytes; a larger one is answered 413. Default 64 KiB. */
  readonly maxFormBytes?: number;
}

const OPTION_KEYS: readonly string[] = Object.freeze([
  'gateway',
  'inbox',
  'audit',
  'auditKey',
  'config',
  'reload',
  'token',
  'login',
  'hosts',
  'origins',
  'auditRows',
  'auditReadBytes',
  'maxSessions',
  'sessionIdleMs',
  'maxFormBytes',
]);

/** The outcomes of a change, shown after its redirect (fixed texts: nothing from the request). */
const NOTICES: Readonly<Record<string, string>> = {
  approved: 'Approved: that one call runs now.',
  declined: 'Denied: that call does not run.',
  accepted: 'Accepted: the definition is the new pin and the gateway reloaded.',
  reloaded: 'Reloaded: the config, the pins and the policy were read again.',
};

/**
 * Headers of every console answer: a strict Content-Security-Policy (no inline script or style,
 * nothing from another origin, forms post only here, no framing), no sniffing, a referrer only to
 * itself, no
 * caching, and its own browsing context group.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on a form POST.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
});

function send(
  out: ServerResponse,
  status: number,
  body: string,
  type = 'text/html; charset=utf-8',
  extra: Record<string, string> = {},
): void {
  out.writeHead(status, { ...CONSOLE_HEADERS, 'content-type': type, ...extra });
  out.end(body);
}

function redirect(out: ServerResponse, to: string, extra: Record<string, string> = {}): void {
  out.writeHead(303, { ...CONSOLE_HEADERS, location: to, ...extra });
  out.end();
}

/** A change's page context and the session making it (its principal goes to the audit line). */
type ChangeContext = PageContext & { readonly session: ConsoleSession };

/** The answer to a finished sign-in: the session cookie is set; the script-free link goes on. */
function signedInPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Signed in</title><meta http-equiv="refresh" content="0; url=${CONSOLE_BASE}/approvals"></head><body><p>Signed in. <a href="${CONSOLE_BASE}/approvals">Go to the console</a>.</p></body></html>`;
}

/**
 * The origin `value` as the browser sends it (`scheme://host[:port]`, the default port left out),
 * when it is an `http` or `https` origin with no path, query, fragment or user; else undefined.
 */
export function consoleOrigin(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 300) return undefined;
  const match = /^(https?):\/\/(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?\/?$/.exec(value);
  if (match === null) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.hostname === '' || (url.port !== '' && Number(url.port) > 65_535)) return undefined;
  return url.origin;
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=');
    if (index !== -1 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim();
  }
  return undefined;
}

/** A form body of at most `maxBytes`; undefined when it is larger. */
async function readForm(
  request: IncomingMessage,
  maxBytes: number,
): Promise<URLSearchParams | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * The gateway's web console: server-rendered pages for the approvals inbox, the hidden pins, the
 * audit log and the upstreams, under `/console`. Every request's `Host` must be one the console
 * was bound to (DNS rebinding); a signed-in session (an HttpOnly, SameSite=Strict cookie, given
 * for the sign-in token) is needed for every page; every change is a POST that must come from the
 * console's own origin (`Origin`, `Sec-Fetch-Site`) and carry the session's CSRF token, and is
 * written to the audit log before it is made.
 */
export class GatewayConsole {
  readonly #options: GatewayConsoleOptions;
  readonly #sessions: ConsoleSessions;
  readonly #auditRows: number;
  readonly #auditReadBytes: number;
  readonly #maxFormBytes: number;
  #hosts = new Set<string>();
  /** The declared public origin of each `Host` it is reached under (`origins`). */
  readonly #origins = new Map<string, string>();
  /** Asks whose answer is being written: a second answer to one of them is refused at once. */
  readonly #answering = new Set<string>();
  #cookie = 'toolfence_console';

  constructor(options: GatewayConsoleOptions) {
    checkOptionKeys(
      options,
      OPTION_KEYS,
      'GatewayConsole',
      (message, option) => new GatewayConfigError(message, { details: { option } }),
    );
    const refuse = gatewayOptionRefusal('GatewayConsole');
    if ((options.token === undefined) === (options.login === undefined)) {
      throw new GatewayConfigError(
        'The console needs exactly one sign-in: token (a shared token) or login (the identity provider)',
        { details: { option: 'login' } },
      );
    }
    if (
      options.token !== undefined &&
      (typeof options.token !== 'string' || options.token.length < 16)
    ) {
      throw new GatewayConfigError('The console token must be at least 16 characters', {
        details: { option: 'token' },
      });
    }
    if (options.origins !== undefined && !Array.isArray(options.origins)) {
      throw new GatewayConfigError('The console origins must be a list', {
        details: { option: 'origins' },
      });
    }
    for (const given of options.origins ?? []) {
      const origin = consoleOrigin(given);
      if (origin === undefined) {
        throw new GatewayConfigError(
          'A console origin must be http:// or https:// with a host name and an optional port, and no path, query or user (for example https://console.example.com or https://console.example.com:8443)',
          { details: { option: 'origins' } },
        );
      }
      this.#origins.set(new URL(origin).host.toLowerCase(), origin);
    }
    this.#options = options;
    this.#sessions = new ConsoleSessions(
      options.token,
      positiveInteger('maxSessions', options.maxSessions, DEFAULT_CONSOLE_MAX_SESSIONS, refuse),
      positiveInteger(
        'sessionIdleMs',
        options.sessionIdleMs,
        DEFAULT_CONSOLE_SESSION_IDLE_MS,
        refuse,
      ),
    );
    this.#auditRows = positiveInteger(
      'auditRows',
      options.auditRows,
      DEFAULT_CONSOLE_AUDIT_ROWS,
      refuse,
    );
    this.#auditReadBytes = positiveInteger(
      'auditReadBytes',
      options.auditReadBytes,
      DEFAULT_CONSOLE_AUDIT_READ_BYTES,
      refuse,
    );
    this.#maxFormBytes = positiveInteger(
      'maxFormBytes',
      options.maxFormBytes,
      DEFAULT_CONSOLE_MAX_FORM_BYTES,
      refuse,
    );
  }

  /**
   * Tells the console where it listens: the `Host` values it accepts are `host:port` (and
   * `localhost:port` on loopback) plus the configured `hosts`. Until then it accepts none.
   */
  listening(host: string, port: number, loopback: boolean): void {
    const shown = host.includes(':') ? `[${host}]` : host;
    this.#hosts = new Set(
      [
        `${shown}:${port}`,
        ...(loopback ? [`localhost:${port}`] : []),
        ...(this.#options.hosts ?? []),
        ...this.#origins.keys(),
      ].map((value) => value.toLowerCase()),
    );
    // Cookies ignore ports: a name per port keeps two consoles on one host apart.
    this.#cookie = `toolfence_console_${port}`;
  }

  /** True when `pathname` is the console's. */
  static owns(pathname: string): boolean {
    return pathname === CONSOLE_BASE || pathname.startsWith(`${CONSOLE_BASE}/`);
  }

  /** Answers one request for a console path. Never throws (a failure answers 500). */
  async handle(request: IncomingMessage, out: ServerResponse): Promise<void> {
    try {
      await this.#handle(request, out);
    } catch {
      if (!out.headersSent) send(out, 500, problemPage('Error', 'The console failed to answer.'));
      else out.end();
    }
  }

  async #handle(request: IncomingMessage, out: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://console.invalid');
    const path = url.pathname;
    const method = request.method ?? 'GET';
    // DNS rebinding: a page of another site that resolves its name to this address sends its own
    // name as the Host. Only the names bound are answered, before anything else.
    const host = (request.headers.host ?? '').toLowerCase();
    if (!this.#hosts.has(host)) {
      send(out, 421, 'Invalid Host header', 'text/plain; charset=utf-8');
      return;
    }
    if (method !== 'GET' && method !== 'HEAD' && method !== 'POST') {
      send(out, 405, 'Method not allowed', 'text/plain; charset=utf-8', { allow: 'GET, POST' });
      return;
    }
    // The console's origin under this Host: the declared public one (behind a TLS proxy), else
    // http:// and the Host. Cookies given under an https origin are Secure.
    const origin = this.#origins.get(host) ?? `http://${host}`;
    const secure = origin.startsWith('https:') ? '; Secure' : '';
    let form: URLSearchParams | undefined;
    if (method === 'POST') {
      // A change comes from the console's own pages only: the browser's Origin (and, where the
      // browser sends it, Sec-Fetch-Site) must say so. A request without Origin is refused.
      const fetchSite = request.headers['sec-fetch-site'];
      if (
        request.headers.origin !== origin ||
        (fetchSite !== undefined && fetchSite !== 'same-origin')
      ) {
        // The page of a console behind a TLS proxy whose origin was not declared: say how.
        const undeclared =
          request.headers.origin === `https://${host}` && !this.#origins.has(host)
            ? ` (this console's origin is ${origin}; behind a TLS proxy, start it with --console-origin https://${host})`
            : '';
        send(out, 403, `Cross-origin request refused${undeclared}`, 'text/plain; charset=utf-8');
        return;
      }
      const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
      if (type !== 'application/x-www-form-urlencoded') {
        send(out, 415, 'A form body is expected', 'text/plain; charset=utf-8');
        return;
      }
      form = await readForm(request, this.#maxFormBytes);
      if (form === undefined) {
        send(
          out,
          413,
          `The form is over ${this.#maxFormBytes} bytes (maxFormBytes)`,
          'text/plain; charset=utf-8',
        );
        return;
      }
    }
    if (method !== 'POST' && path.startsWith(`${CONSOLE_BASE}/assets/`)) {
      if (path === `${CONSOLE_BASE}/assets/console.js`) {
        send(out, 200, CONSOLE_SCRIPT, 'text/javascript; charset=utf-8');
      } else if (path === `${CONSOLE_BASE}/assets/console.css`) {
        send(out, 200, CONSOLE_STYLE, 'text/css; charset=utf-8');
      } else {
        send(out, 404, 'Not found', 'text/plain; charset=utf-8');
      }
      return;
    }
    const login = this.#options.login;
    if (login !== undefined && method !== 'POST') {
      if (path === `${CONSOLE_BASE}/login`) {
        send(out, 200, providerLoginPage());
        return;
      }
      if (path === `${CONSOLE_BASE}/login/start`) {
        let started: Awaited<ReturnType<ConsoleLogin['start']>>;
        try {
          started = await login.start(
            `${origin}${CONSOLE_BASE}/callback`,
            Date.now(),
            request.socket.remoteAddress ?? '',
          );
        } catch (error) {
          // Full: refused, never by dropping a sign-in in progress (an admin's).
          if (ConsoleLoginBusyError.isInstance(error)) {
            send(out, 429, loginRefusedPage(error.message), undefined, { 'retry-after': '60' });
            return;
          }
          send(
            out,
            502,
            loginRefusedPage(
              "The identity provider's metadata could not be fetched: the sign-in cannot start.",
            ),
          );
          return;
        }
        // Lax, not Strict: the identity provider's redirect back is a cross-site navigation.
        redirect(out, started.authorizationUrl, {
          'set-cookie': `${this.#cookie}_login=${started.binding}; Path=${CONSOLE_BASE}/callback; HttpOnly; SameSite=Lax; Max-Age=600${secure}`,
        });
        return;
      }
      if (path === `${CONSOLE_BASE}/callback`) {
        const result = await login.finish(
          url.searchParams,
          cookieValue(request.headers.cookie, `${this.#cookie}_login`),
        );
        const clear = `${this.#cookie}_login=; Path=${CONSOLE_BASE}/callback; HttpOnly; SameSite=Lax; Max-Age=0${secure}`;
        if (!result.ok) {
          send(out, result.status, loginRefusedPage(result.reason), undefined, {
            'set-cookie': clear,
          });
          return;
        }
        const session = this.#sessions.open(result.principal);
        // A page, not a redirect: the Strict session cookie set on an answer to a cross-site
        // navigation is kept, and the next same-site request carries it.
        out.writeHead(200, {
          ...CONSOLE_HEADERS,
          'content-type': 'text/html; charset=utf-8',
          'set-cookie': [
            clear,
            `${this.#cookie}=${session.id}; Path=${CONSOLE_BASE}; HttpOnly; SameSite=Strict${secure}`,
          ],
        });
        out.end(signedInPage());
        return;
      }
    }
    if (login === undefined && path === `${CONSOLE_BASE}/login`) {
      const given =
        form?.get('token') ?? (method === 'POST' ? null : url.searchParams.get('token'));
      if (given === null) {
        send(out, 200, loginPage(false));
        return;
      }
      const session = this.#sessions.signIn(given);
      if (session === undefined) {
        send(out, 403, loginPage(true));
        return;
      }
      // The token leaves the address bar at once; the browser keeps only the session's id.
      redirect(out, `${CONSOLE_BASE}/approvals`, {
        'set-cookie': `${this.#cookie}=${session.id}; Path=${CONSOLE_BASE}; HttpOnly; SameSite=Strict${secure}`,
      });
      return;
    }
    const session = this.#sessions.find(cookieValue(request.headers.cookie, this.#cookie));
    if (session === undefined) {
      if (method === 'POST') send(out, 403, 'Sign in first', 'text/plain; charset=utf-8');
      else redirect(out, `${CONSOLE_BASE}/login`);
      return;
    }
    if (form !== undefined && !sameSecret(form.get('csrf') ?? '', session.csrf)) {
      send(out, 403, 'The form carries no valid CSRF token', 'text/plain; charset=utf-8');
      return;
    }
    const notice = NOTICES[url.searchParams.get('notice') ?? ''];
    const context: PageContext = { csrf: session.csrf, notice };
    if (form !== undefined) {
      await this.#change(path, form, session, out, { ...context, session }, secure);
      return;
    }
    await this.#page(path, url, out, context);
  }

  async #page(path: string, url: URL, out: ServerResponse, context: PageContext): Promise<void> {
    const { gateway, inbox } = this.#options;
    switch (path) {
      case CONSOLE_BASE:
      case `${CONSOLE_BASE}/`:
        redirect(out, `${CONSOLE_BASE}/approvals`);
        return;
      case `${CONSOLE_BASE}/approvals`:
        send(out, 200, approvalsPage(inbox.list(), inbox.version, context));
        return;
      case `${CONSOLE_BASE}/api/version`:
        send(out, 200, JSON.stringify({ version: inbox.version }), 'application/json');
        return;
      case `${CONSOLE_BASE}/pins`:
        send(out, 200, pinsPage(pinChanges(gateway.pins, this.#namespaces()), context));
        return;
      case `${CONSOLE_BASE}/audit`: {
        const filters = {
          tool: (url.searchParams.get('tool') ?? '').slice(0, 300),
          decision: (url.searchParams.get('decision') ?? '').slice(0, 10),
        };
        const path = this.#options.audit.path;
        const [read, report] = await Promise.all([
          readAuditRows(path, filters, this.#auditRows, this.#auditReadBytes),
          verifyAuditChain(
            path,
            this.#options.auditKey === undefined ? {} : { key: this.#options.auditKey },
          ),
        ]);
        send(
          out,
          200,
          auditPage(
            read.rows,
            filters,
            report,
            { rows: read.rows.length, matched: read.matched },
            context,
          ),
        );
        return;
      }
      case `${CONSOLE_BASE}/upstreams`:
        send(out, 200, upstreamsPage(gateway.upstreams, true, context));
        return;
      default:
        send(out, 404, problemPage('Not found', 'There is no such console page.', context));
    }
  }

  async #change(
    path: string,
    form: URLSearchParams,
    session: ConsoleSession,
    out: ServerResponse,
    context: ChangeContext,
    secure: string,
  ): Promise<void> {
    switch (path) {
      case `${CONSOLE_BASE}/logout`:
        this.#sessions.signOut(session.id);
        redirect(out, `${CONSOLE_BASE}/login`, {
          'set-cookie': `${this.#cookie}=; Path=${CONSOLE_BASE}; HttpOnly; SameSite=Strict; Max-Age=0${secure}`,
        });
        return;
      case `${CONSOLE_BASE}/approvals/answer`:
        await this.#answer(form, out, context);
        return;
      case `${CONSOLE_BASE}/pins/accept`:
        await this.#accept(form, out, context);
        return;
      case `${CONSOLE_BASE}/upstreams/reload`:
        if (!(await this.#record(out, context, { tool: 'gateway', outcome: 'console-reload' }))) {
          return;
        }
        await this.#reload();
        redirect(out, `${CONSOLE_BASE}/upstreams?notice=reloaded`);
        return;
      default:
        send(out, 404, problemPage('Not found', 'There is no such console action.', context));
    }
  }

  async #answer(form: URLSearchParams, out: ServerResponse, context: ChangeContext): Promise<void> {
    const { inbox } = this.#options;
    const id = form.get('id') ?? '';
    const decision = form.get('decision');
    if (decision !== 'approve' && decision !== 'deny') {
      send(out, 400, problemPage('Refused', 'The answer must be approve or deny.', context));
      return;
    }
    const ask = this.#answering.has(id) ? undefined : inbox.waiting(id);
    if (ask === undefined) {
      send(
        out,
        409,
        problemPage(
          'Not waiting',
          'This approval is no longer waiting: it was answered, it timed out, or the call was cancelled. Nothing was done.',
          context,
        ),
      );
      return;
    }
    const approve = decision === 'approve';
    this.#answering.add(id);
    let recorded: boolean;
    try {
      recorded = await this.#record(out, context, {
        tool: ask.tool,
        pin: ask.pin ?? 'unknown',
        decision: approve ? 'allow' : 'deny',
        outcome: approve ? 'console-approved' : 'console-declined',
        argumentsDigest: ask.argumentsDigest,
        // Whose call was answered (the line's `principal` is the admin who answered it).
        ...(ask.principal === undefined
          ? {}
          : {
              caller: {
                issuer: auditText(ask.principal.issuer),
                subject: auditText(ask.principal.subject),
              },
            }),
      });
    } finally {
      this.#answering.delete(id);
    }
    if (!recorded) return;
    if (!inbox.answer(id, approve)) {
      send(
        out,
        409,
        problemPage(
          'Not waiting',
          'This approval stopped waiting before it was answered.',
          context,
        ),
      );
      return;
    }
    redirect(out, `${CONSOLE_BASE}/approvals?notice=${approve ? 'approved' : 'declined'}`);
  }

  async #accept(form: URLSearchParams, out: ServerResponse, context: ChangeContext): Promise<void> {
    const token = form.get('token') ?? '';
    const split = splitPinToken(token);
    if (split === undefined) {
      send(
        out,
        400,
        problemPage('Refused', 'Accept names SERVER__TOOL@DIGEST, the digest shown.', context),
      );
      return;
    }
    const { gateway } = this.#options;
    const namespaces = this.#namespaces();
    const changes = pinChanges(gateway.pins, namespaces);
    if (!changes.some((change) => change.token === token)) {
      const changed = changes.some((change) => change.token.startsWith(`${split.name}@`));
      send(
        out,
        409,
        problemPage(
          'Not accepted',
          changed
            ? 'The server listed another definition since this page showed it: nothing was accepted. Review the new definition.'
            : 'Nothing is hidden under that name any more: nothing was accepted.',
          context,
        ),
      );
      return;
    }
    if (
      !(await this.#record(out, context, {
        tool: split.name,
        pin: split.digest,
        outcome: 'console-pin-accepted',
      }))
    ) {
      return;
    }
    try {
      await acceptPinToken(gateway.pins, namespaces, split.name, split.digest);
    } catch (error) {
      send(
        out,
        409,
        problemPage(
          'Not accepted',
          PinChangedError.isInstance(error)
            ? 'The server listed another definition since this page showed it: nothing was accepted. Review the new definition.'
            : 'Nothing is hidden under that name any more: nothing was accepted.',
          context,
        ),
      );
      return;
    }
    await gateway.pins.save();
    await this.#reload();
    redirect(out, `${CONSOLE_BASE}/pins?notice=accepted`);
  }

  /** Writes a change's audit line; false (and a refusal answered) when it cannot be written. */
  async #record(
    out: ServerResponse,
    context: ChangeContext,
    entry: Pick<AuditEntry, 'tool' | 'outcome'> & Partial<AuditEntry>,
  ): Promise<boolean> {
    const principal = context.session.principal;
    try {
      await this.#options.audit.append({
        time: isoTime(Date.now()),
        kind: 'console',
        pin: 'none',
        decision: 'allow',
        approvedBy: 'console',
        argumentsDigest: digestOf({}),
        ...entry,
        // Who made the change: the person signed in with the identity provider (issuer, subject).
        ...(principal === undefined
          ? {}
          : { principal: { issuer: principal.issuer, subject: principal.subject } }),
      });
      return true;
    } catch {
      send(
        out,
        503,
        problemPage(
          'Not done',
          'The change could not be written to the audit log, so it was not made. Check the log (toolfence-mcp audit verify).',
          context,
        ),
      );
      return false;
    }
  }

  #namespaces(): NamespaceOf {
    return new Map(
      Object.entries(this.#options.config().mcpServers).map(([name, server]) => [
        name,
        server.namespace as string,
      ]),
    );
  }

  #reload(): Promise<void> {
    const { reload, gateway, config } = this.#options;
    return reload !== undefined ? reload() : gateway.reload({ config: config() });
  }
}

/** Serves `console` alone on `host:port` (a stdio gateway's console). Resolves once listening. */
export async function serveConsole(
  gatewayConsole: GatewayConsole,
  host: string,
  port: number,
  loopback: boolean,
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    const pathname = new URL(request.url ?? '/', 'http://console.invalid').pathname;
    if (!GatewayConsole.owns(pathname)) {
      send(response, 404, 'Not found', 'text/plain; charset=utf-8');
      return;
    }
    void gatewayConsole.handle(request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  gatewayConsole.listening(address.address, address.port, loopback);
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}${CONSOLE_BASE}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
