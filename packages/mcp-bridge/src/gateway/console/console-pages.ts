import type { AuditChainReport } from '../audit-log.js';
import type { GatewayUpstreamStatus } from '../mcp-gateway.js';
import type { PinChange } from '../pin-changes.js';
import type { ConsoleAsk } from './console-inbox.js';
import { html, type SafeHtml } from './html.js';

/** Where the console is served. */
export const CONSOLE_BASE = '/console';

/** What every page of a signed-in session knows. */
export interface PageContext {
  /** The session's CSRF token, put in every form. */
  readonly csrf: string;
  /** A message to show at the top (the outcome of the last change). */
  readonly notice?: string | undefined;
}

const PAGES = [
  ['approvals', 'Approvals'],
  ['pins', 'Pins'],
  ['audit', 'Audit'],
  ['upstreams', 'Upstreams'],
] as const;

/** The page frame: no inline script or style (the CSP forbids both), one script file. */
export function layout(
  title: string,
  current: string,
  body: SafeHtml,
  options: { readonly context?: PageContext; readonly poll?: number } = {},
): string {
  const context = options.context;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · toolfence console</title>
<link rel="stylesheet" href="${CONSOLE_BASE}/assets/console.css">
<script src="${CONSOLE_BASE}/assets/console.js" defer></script>
</head>
<body${options.poll === undefined ? '' : html` data-poll="${CONSOLE_BASE}/api/version" data-version="${options.poll}"`}>
<header>
<strong>toolfence console</strong>
${
  context === undefined
    ? ''
    : html`<nav>${PAGES.map(
        ([page, label]) =>
          html`<a href="${CONSOLE_BASE}/${page}"${page === current ? html` aria-current="page"` : ''}>${label}</a>`,
      )}</nav>
<form method="post" action="${CONSOLE_BASE}/logout" class="inline"><input type="hidden" name="csrf" value="${context.csrf}"><button type="submit">Sign out</button></form>`
}
</header>
<main>
<h1>${title}</h1>
${context?.notice === undefined ? '' : html`<p class="notice" role="status">${context.notice}</p>`}
${body}
</main>
</body>
</html>
`.text;
}

/** The sign-in form (the token travels in a POST body, never in the page). */
export function loginPage(failed: boolean): string {
  return layout(
    'Sign in',
    'login',
    html`${failed ? html`<p class="error" role="alert">That token is not the console's token.</p>` : ''}
<p>Paste the console token: the gateway's bearer token for an HTTP gateway, or the token in the
URL the gateway printed on its stderr at start.</p>
<form method="post" action="${CONSOLE_BASE}/login">
<label>Token <input type="password" name="token" autocomplete="off" required></label>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** The identity-provider sign-in page: one button that starts the authorization code flow. */
export function providerLoginPage(): string {
  return layout(
    'Sign in',
    'login',
    html`<p>This gateway signs people in with its identity provider.</p>
<p><a class="button" href="${CONSOLE_BASE}/login/start">Sign in with the identity provider</a></p>`,
  );
}

/** A refused identity-provider sign-in: the fixed reason and a link to start again. */
export function loginRefusedPage(reason: string): string {
  return layout(
    'Not signed in',
    'login',
    html`<p class="error" role="alert">${reason}</p>
<p><a href="${CONSOLE_BASE}/login">Sign in again</a></p>`,
  );
}

function when(time: number): string {
  return new Date(time).toISOString();
}

function askCard(ask: ConsoleAsk, context: PageContext): SafeHtml {
  // Only the escaped texts (`ask.shown`): names, description, reason, flow and caller are a
  // server's or a client's, and may hide bidi, tag or zero-width characters.
  const shown = ask.shown;
  return html`<article class="ask" id="ask-${ask.id}">
<h2><code>${shown.tool}</code> <small>server ${shown.server}</small></h2>
<p class="caller">Asked by ${
    shown.principal === undefined
      ? html`<strong>the gateway's one user</strong> <small>(no identity: stdio or a shared token)</small>`
      : html`<strong>${shown.principal.subject}</strong> <small>(issuer ${shown.principal.issuer})</small>`
  }</p>
<p class="meta">asked at ${when(ask.time)} · ${
    ask.channel === 'console'
      ? 'the client cannot ask its user: this call waits for your answer here'
      : 'the client is asking its user; shown here for information'
  }</p>
<dl>
<dt>Why asked</dt><dd>${shown.reason}</dd>
${shown.flow === undefined ? '' : html`<dt>Flow</dt><dd><pre class="flow">${shown.flow}</pre></dd>`}
<dt>Description</dt><dd><pre class="description">${shown.description}</pre></dd>
<dt>Arguments <small>(whole; this approval covers exactly these, once)</small></dt>
<dd><pre class="arguments">${ask.argumentsText}</pre></dd>
<dt>Arguments digest</dt><dd><code>${ask.argumentsDigest}</code></dd>
</dl>
${
  ask.channel === 'console'
    ? html`<form method="post" action="${CONSOLE_BASE}/approvals/answer" class="answer">
<input type="hidden" name="csrf" value="${context.csrf}">
<input type="hidden" name="id" value="${ask.id}">
<button type="submit" name="decision" value="approve" class="approve">Approve this call</button>
<button type="submit" name="decision" value="deny" class="deny">Deny</button>
</form>`
    : ''
}
</article>`;
}

/** The approvals inbox. */
export function approvalsPage(
  asks: readonly ConsoleAsk[],
  version: number,
  context: PageContext,
): string {
  return layout(
    'Approvals',
    'approvals',
    asks.length === 0
      ? html`<p class="empty">No approval is waiting. This page updates itself (or reload it).</p>`
      : html`${asks.map((ask) => askCard(ask, context))}`,
    { context, poll: version },
  );
}

/** The hidden definitions with their changes, and an accept button naming each digest. */
export function pinsPage(changes: readonly PinChange[], context: PageContext): string {
  return layout(
    'Pins',
    'pins',
    changes.length === 0
      ? html`<p class="empty">No hidden tools: every listed definition is the accepted pin.</p>`
      : html`${changes.map(
          (change) => html`<article class="pin">
<h2><code>${change.token.slice(0, change.token.lastIndexOf('@'))}</code> <small>${change.kind}, server ${change.server}</small></h2>
<p>Hidden because: ${change.reasons.join(', ')}</p>
<p class="meta">digest <code>${change.digest}</code></p>
<table class="diff"><thead><tr><th>field</th><th>pinned</th><th>now listed</th></tr></thead><tbody>
${change.changes.map(
  (field) =>
    html`<tr><th scope="row">${field.field}</th><td><pre class="before">${field.before}</pre></td><td><pre class="after">${field.after}</pre></td></tr>`,
)}
</tbody></table>
${change.flagged.length > 0 ? html`<p class="error">Invisible Unicode in: ${change.flagged.join(', ')}</p>` : ''}
<form method="post" action="${CONSOLE_BASE}/pins/accept">
<input type="hidden" name="csrf" value="${context.csrf}">
<input type="hidden" name="token" value="${change.token}">
<button type="submit" class="approve">Accept exactly this definition</button>
</form>
</article>`,
        )}`,
    { context },
  );
}

/** One row of the audit table. */
export interface AuditRow {
  readonly time: string;
  readonly principal: string;
  readonly tool: string;
  readonly decision: string;
  readonly approvedBy: string;
  readonly outcome: string;
}

/** The audit log as a table, with filters and the chain's verification. */
export function auditPage(
  rows: readonly AuditRow[],
  filters: { readonly tool: string; readonly decision: string },
  report: AuditChainReport,
  shown: { readonly rows: number; readonly matched: number },
  context: PageContext,
): string {
  return layout(
    'Audit',
    'audit',
    html`<p class="${report.ok ? 'ok' : 'error'}" id="chain">Chain: ${report.ok ? 'intact' : `BROKEN (${report.problem ?? 'unknown'})`}. ${report.message}</p>
<form method="get" action="${CONSOLE_BASE}/audit" class="filters">
<label>Tool <input name="tool" value="${filters.tool}"></label>
<label>Decision <select name="decision">
${['', 'allow', 'ask', 'deny'].map(
  (value) =>
    html`<option value="${value}"${value === filters.decision ? html` selected` : ''}>${value === '' ? 'any' : value}</option>`,
)}
</select></label>
<button type="submit">Filter</button>
</form>
<p class="meta">${shown.rows} of ${shown.matched} matching line(s), newest first.</p>
<table class="audit"><thead><tr><th>time</th><th>principal</th><th>tool</th><th>decision</th><th>approved by</th><th>outcome</th></tr></thead>
<tbody>
${rows.map(
  (row) =>
    html`<tr><td>${row.time}</td><td>${row.principal}</td><td><code>${row.tool}</code></td><td>${row.decision}</td><td>${row.approvedBy}</td><td>${row.outcome}</td></tr>`,
)}
</tbody></table>`,
    { context },
  );
}

/** Each upstream's state, era, tool count and last error, and a reload button. */
export function upstreamsPage(
  upstreams: readonly GatewayUpstreamStatus[],
  canReload: boolean,
  context: PageContext,
): string {
  return layout(
    'Upstreams',
    'upstreams',
    html`${
      canReload
        ? html`<form method="post" action="${CONSOLE_BASE}/upstreams/reload">
<input type="hidden" name="csrf" value="${context.csrf}">
<button type="submit">Reload config, pins and policy</button>
</form>`
        : ''
    }
<table class="upstreams"><thead><tr><th>server</th><th>state</th><th>era</th><th>tools</th><th>hidden</th><th>last error</th></tr></thead>
<tbody>
${upstreams.map(
  (upstream) =>
    html`<tr><th scope="row">${upstream.name}</th><td class="state-${upstream.state}">${upstream.state}</td><td>${upstream.protocolVersion ?? '—'}</td><td>${upstream.tools.length}</td><td>${Object.keys(upstream.hidden).length}</td><td>${
      upstream.failure === undefined
        ? (upstream.error ?? '')
        : html`${upstream.failure.message} [${upstream.failure.code}]${
            upstream.failure.exitCode === undefined
              ? ''
              : html` (exit code ${upstream.failure.exitCode})`
          }${
            upstream.failure.stderrTail === undefined
              ? ''
              : html`<details><summary>stderr tail</summary><pre>${upstream.failure.stderrTail}</pre></details>`
          }`
    }</td></tr>`,
)}
</tbody></table>`,
    { context },
  );
}

/** A page that says what went wrong (a refused or failed change). */
export function problemPage(title: string, message: string, context?: PageContext): string {
  return layout(
    title,
    '',
    html`<p class="error" role="alert">${message}</p><p><a href="${CONSOLE_BASE}/approvals">Back to the console</a></p>`,
    context === undefined ? {} : { context },
  );
}
