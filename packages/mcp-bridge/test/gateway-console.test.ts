// The gateway's web console over plain HTTP (issue 40): the approvals inbox for a client without
// elicitation, pins, audit and upstreams pages, and the security checks (Host, Origin, CSRF,
// session, headers, escaping), each attack a named row.
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { GatewayConsole, serveConsole } from '../src/gateway/console/index.js';
import { gatewayClient, resultText } from './helpers.js';
import {
  type ConsoleHarness,
  consoleHarness,
  modernClientWithoutElicitation,
  postForm,
  rawRequest,
  type Session,
  signIn,
  tracked,
  until,
} from './support/console-harness.js';

const { open, closeAll, harness } = tracked();
afterEach(closeAll);

/** A client without elicitation calls `tk__note`; resolves with the result when it ends. */
async function callWithoutElicitation(h: ConsoleHarness, args: Record<string, unknown>) {
  const client = await gatewayClient(h.gateway, open);
  return client.callTool({ name: 'tk__note', arguments: args });
}

async function waitingAsk(h: ConsoleHarness) {
  await until(() => h.inbox.list().length > 0);
  return h.inbox.list()[0] as NonNullable<ReturnType<ConsoleHarness['inbox']['list']>[number]>;
}

describe('approvals inbox', () => {
  it('holds an ask of a client without elicitation; approving runs exactly that call, once', async () => {
    const h = await harness();
    const session = await signIn(h);
    const pending = callWithoutElicitation(h, { id: 'from-console' });
    const ask = await waitingAsk(h);
    expect(ask.channel).toBe('console');
    const page = await rawRequest(`${h.url}/approvals`, { headers: { cookie: session.cookie } });
    expect(page.body).toContain('tk__note');
    expect(page.body).toContain('&quot;from-console&quot;');
    expect(page.body).toContain('the test asks');
    const answered = await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask.id, decision: 'approve' },
      { cookie: session.cookie },
    );
    expect(answered.status).toBe(303);
    const result = await pending;
    expect(result.isError).toBeFalsy();
    expect(resultText(result)).toBe('note from-console');
    expect(await h.serverCalls()).toEqual([
      expect.objectContaining({ name: 'note', args: { id: 'from-console' } }),
    ]);
    // The same answer again finds nothing waiting and runs nothing.
    const again = await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask.id, decision: 'approve' },
      { cookie: session.cookie },
    );
    expect(again.status).toBe(409);
    expect(await h.serverCalls()).toHaveLength(1);
    expect(await h.auditLines()).toMatchObject([
      { kind: 'console', tool: 'tk__note', outcome: 'console-approved', approvedBy: 'console' },
      { tool: 'tk__note', decision: 'ask', approvedBy: 'console', outcome: 'started' },
      { tool: 'tk__note', decision: 'ask', approvedBy: 'console', outcome: 'ok' },
    ]);
  }, 60_000);

  it('denying does not run the call and the client is told it was not approved', async () => {
    const h = await harness();
    const session = await signIn(h);
    const pending = callWithoutElicitation(h, { id: 'no' });
    const ask = await waitingAsk(h);
    await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask.id, decision: 'deny' },
      { cookie: session.cookie },
    );
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(resultText(result)).toMatch(/was not approved/);
    expect(await h.serverCalls()).toEqual([]);
    expect((await h.auditLines()).map((line) => line.outcome)).toEqual([
      'console-declined',
      'declined',
    ]);
  }, 60_000);

  it('holds the ask of a 2026-07-28 client without elicitation too, and runs it once approved', async () => {
    const h = await harness();
    const session = await signIn(h);
    const client = await modernClientWithoutElicitation(h, open);
    const pending = client.callTool({ name: 'tk__note', arguments: { id: 'modern' } });
    const ask = await waitingAsk(h);
    await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask.id, decision: 'approve' },
      { cookie: session.cookie },
    );
    const result = (await pending) as Record<string, unknown>;
    expect(resultText(result)).toBe('note modern');
    expect(await h.serverCalls()).toHaveLength(1);
  }, 60_000);

  it('an unanswered ask is refused at the approval timeout and leaves the inbox', async () => {
    const h = await harness({ approvalTimeoutMs: 300 });
    const result = await callWithoutElicitation(h, { id: 'late' });
    expect(result.isError).toBe(true);
    expect(h.inbox.list()).toEqual([]);
    expect(await h.serverCalls()).toEqual([]);
  }, 60_000);

  it('lists an ask the client puts to its user read-only, without buttons', async () => {
    const h = await harness();
    const session = await signIn(h);
    let seen = '';
    const client = await gatewayClient(h.gateway, open, () => {
      seen = h.inbox.list()[0]?.channel ?? 'none';
      return true;
    });
    const result = await client.callTool({ name: 'tk__note', arguments: { id: 'asked' } });
    expect(result.isError).toBeFalsy();
    expect(seen).toBe('client');
    expect(h.inbox.list()).toEqual([]);
    const page = await rawRequest(`${h.url}/approvals`, { headers: { cookie: session.cookie } });
    expect(page.body).not.toContain('Approve this call');
  }, 60_000);

  it('shows arguments whole and escaped: markup and control characters cannot act', async () => {
    const h = await harness();
    const session = await signIn(h);
    const long = 'x'.repeat(5_000);
    const attack = `</pre><script>alert(1)</script><img src=x onerror=alert(2)>\u001b[2J\u202e${long}`;
    const pending = callWithoutElicitation(h, { id: attack });
    const ask = await waitingAsk(h);
    const page = await rawRequest(`${h.url}/approvals`, { headers: { cookie: session.cookie } });
    expect(page.body).not.toContain('<script>alert');
    expect(page.body).not.toContain('<img src=x');
    expect(page.body).toContain('&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toContain('\\u001b[2J\\u{202e}');
    expect(page.body).toContain(long);
    await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask.id, decision: 'deny' },
      { cookie: session.cookie },
    );
    await pending;
  }, 60_000);
});

describe('security checks', () => {
  // Each row: a request an attacker (another site's page, a rebinding name, a forged form) can
  // make. It is refused, and the waiting call neither runs nor is answered.
  it.each<{
    name: string;
    status: number;
    send: (h: ConsoleHarness, session: Session, id: string) => ReturnType<typeof rawRequest>;
  }>([
    {
      name: 'a forged POST without the CSRF token',
      status: 403,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { id, decision: 'approve' },
          { cookie: session.cookie },
        ),
    },
    {
      name: 'a POST with another session’s CSRF token',
      status: 403,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { csrf: `${session.csrf.slice(1)}A`, id, decision: 'approve' },
          { cookie: session.cookie },
        ),
    },
    {
      name: 'a cross-origin POST (Origin of another site)',
      status: 403,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { csrf: session.csrf, id, decision: 'approve' },
          { cookie: session.cookie, origin: 'https://evil.example' },
        ),
    },
    {
      name: 'a POST without Origin',
      status: 403,
      send: (h, session, id) =>
        rawRequest(`${h.origin}/console/approvals/answer`, {
          method: 'POST',
          headers: {
            cookie: session.cookie,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams({ csrf: session.csrf, id, decision: 'approve' }).toString(),
        }),
    },
    {
      name: 'a POST the browser marks cross-site (Sec-Fetch-Site)',
      status: 403,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { csrf: session.csrf, id, decision: 'approve' },
          { cookie: session.cookie, 'sec-fetch-site': 'cross-site' },
        ),
    },
    {
      name: 'a request with a rebinding Host',
      status: 421,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { csrf: session.csrf, id, decision: 'approve' },
          {
            cookie: session.cookie,
            host: `evil.example:${h.host.split(':')[1]}`,
            origin: `http://evil.example:${h.host.split(':')[1]}`,
          },
        ),
    },
    {
      name: 'a GET with a rebinding Host (reading the page)',
      status: 421,
      send: (h, session) =>
        rawRequest(`${h.url}/approvals`, {
          headers: { cookie: session.cookie, host: `attacker.example:${h.host.split(':')[1]}` },
        }),
    },
    {
      name: 'a POST without a session',
      status: 403,
      send: (h, session, id) =>
        postForm(h, '/console/approvals/answer', { csrf: session.csrf, id, decision: 'approve' }),
    },
    {
      name: 'a form over maxFormBytes (64 KiB)',
      status: 413,
      send: (h, session, id) =>
        postForm(
          h,
          '/console/approvals/answer',
          { csrf: session.csrf, id, decision: 'approve', pad: 'x'.repeat(64 * 1024) },
          { cookie: session.cookie },
        ),
    },
    {
      name: 'a POST as JSON instead of a form',
      status: 415,
      send: (h, session, id) =>
        rawRequest(`${h.origin}/console/approvals/answer`, {
          method: 'POST',
          headers: {
            cookie: session.cookie,
            origin: h.origin,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ csrf: session.csrf, id, decision: 'approve' }),
        }),
    },
  ])(
    'refuses $name',
    async ({ send, status }) => {
      const h = await harness({ approvalTimeoutMs: 60_000 });
      const session = await signIn(h);
      const pending = callWithoutElicitation(h, { id: 'target' });
      const ask = await waitingAsk(h);
      const response = await send(h, session, ask.id);
      expect(response.status).toBe(status);
      expect(h.inbox.waiting(ask.id)).toBeDefined();
      expect(await h.serverCalls()).toEqual([]);
      h.inbox.answer(ask.id, false);
      await pending;
    },
    60_000,
  );

  it('refuses a POST from the https origin of its own Host when no --console-origin declares it, saying how to', async () => {
    const h = await harness();
    const session = await signIn(h);
    const answer = await postForm(
      h,
      '/console/upstreams/reload',
      { csrf: session.csrf },
      { cookie: session.cookie, origin: `https://${h.host}` },
    );
    expect(answer.status).toBe(403);
    expect(answer.body).toContain(`start it with --console-origin https://${h.host}`);
  }, 60_000);

  it.each<{ name: string; path: string }>([
    { name: 'the approvals page', path: '/console/approvals' },
    { name: 'the pins page', path: '/console/pins' },
    { name: 'the audit page', path: '/console/audit' },
    { name: 'the upstreams page', path: '/console/upstreams' },
  ])(
    'needs a session for $name (redirects to sign-in)',
    async ({ path }) => {
      const h = await harness();
      const response = await rawRequest(`${h.origin}${path}`);
      expect(response.status).toBe(303);
      expect(response.headers.location).toBe('/console/login');
    },
    60_000,
  );

  it('refuses a wrong sign-in token and never puts the token in a page or cookie', async () => {
    const h = await harness();
    const wrong = await rawRequest(`${h.url}/login?token=not-the-token-at-all`);
    expect(wrong.status).toBe(403);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const login = await rawRequest(`${h.url}/login?token=${encodeURIComponent(h.token)}`);
    const cookie = String(login.headers['set-cookie']);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toContain(h.token);
    for (const path of ['approvals', 'pins', 'audit', 'upstreams']) {
      const page = await rawRequest(`${h.url}/${path}`, {
        headers: { cookie: cookie.split(';')[0] as string },
      });
      expect(page.status).toBe(200);
      expect(page.body).not.toContain(h.token);
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.body).not.toMatch(/<script>|<script [^>]*>[^<]|style="|onclick=/);
    }
  }, 60_000);
});

describe('pins, audit and upstreams pages', () => {
  it('shows a changed tool with its diff and accepts exactly the digest shown', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-console-pins-'));
    open.push({ close: () => rm(folder, { recursive: true, force: true }) });
    const first = await consoleHarness({ folder });
    await first.close();
    const h = await harness({
      folder,
      env: { NOTE_DESCRIPTION: 'Reads a note <b>and mails it</b>.' },
    });
    expect(h.gateway.toolNames()).not.toContain('tk__note');
    const session = await signIn(h);
    const page = await rawRequest(`${h.url}/pins`, { headers: { cookie: session.cookie } });
    expect(page.body).toContain('description');
    expect(page.body).toContain('Reads a note by id.');
    expect(page.body).toContain('Reads a note &lt;b&gt;and mails it&lt;/b&gt;.');
    const token = /name="token" value="([^"]+)"/.exec(page.body)?.[1] as string;
    expect(token).toMatch(/^tk__note@sha256:[0-9a-f]{64}$/);
    // A digest other than the one pending now (the server changed since it was shown).
    const stale = await postForm(
      h,
      '/console/pins/accept',
      { csrf: session.csrf, token: `tk__note@sha256:${'0'.repeat(64)}` },
      { cookie: session.cookie },
    );
    expect(stale.status).toBe(409);
    expect(stale.body).toContain('listed another definition since');
    expect(h.gateway.toolNames()).not.toContain('tk__note');
    const accepted = await postForm(
      h,
      '/console/pins/accept',
      { csrf: session.csrf, token },
      { cookie: session.cookie },
    );
    expect(accepted.status).toBe(303);
    expect(h.gateway.toolNames()).toContain('tk__note');
    expect(await h.auditLines()).toContainEqual(
      expect.objectContaining({
        kind: 'console',
        tool: 'tk__note',
        pin: token.slice(token.indexOf('@') + 1),
        outcome: 'console-pin-accepted',
      }),
    );
  }, 90_000);

  it('shows the audit log as a table with filters and the chain status', async () => {
    const h = await harness({ authorizer: { authorize: () => ({ verdict: 'allow' }) } });
    const session = await signIn(h);
    const client = await gatewayClient(h.gateway, open);
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await client.callTool({ name: 'tk__publish', arguments: { id: 'b' } });
    const page = await rawRequest(`${h.url}/audit`, { headers: { cookie: session.cookie } });
    expect(page.body).toContain('Chain: intact');
    expect(page.body).toContain('<code>tk__note</code>');
    expect(page.body).toContain('<code>tk__publish</code>');
    const filtered = await rawRequest(`${h.url}/audit?tool=tk__publish&decision=allow`, {
      headers: { cookie: session.cookie },
    });
    expect(filtered.body).toContain('<code>tk__publish</code>');
    expect(filtered.body).not.toContain('<code>tk__note</code>');
  }, 60_000);

  it('shows each upstream with its state, era and tools, and reloads (audited)', async () => {
    const h = await harness();
    const session = await signIn(h);
    const page = await rawRequest(`${h.url}/upstreams`, { headers: { cookie: session.cookie } });
    expect(page.body).toContain('toolkit');
    expect(page.body).toContain('ready');
    expect(page.body).toMatch(/<td>\d{4}-\d{2}-\d{2}<\/td><td>4<\/td>/);
    const reloaded = await postForm(
      h,
      '/console/upstreams/reload',
      { csrf: session.csrf },
      { cookie: session.cookie },
    );
    expect(reloaded.status).toBe(303);
    expect(await h.auditLines()).toContainEqual(
      expect.objectContaining({ kind: 'console', outcome: 'console-reload' }),
    );
  }, 60_000);
});

describe('every change needs the CSRF token', () => {
  // Each row: a change other than an approval, forged without the session's CSRF token. It is
  // refused and nothing is written to the audit log (no change was made).
  it.each<{ name: string; path: string; fields: Record<string, string> }>([
    {
      name: 'accepting a pin',
      path: '/console/pins/accept',
      fields: { token: `tk__note@sha256:${'1'.repeat(64)}` },
    },
    { name: 'reloading', path: '/console/upstreams/reload', fields: {} },
    { name: 'signing out', path: '/console/logout', fields: {} },
  ])(
    'refuses $name without it',
    async ({ path, fields }) => {
      const h = await harness();
      const session = await signIn(h);
      const before = (await h.auditLines()).length;
      const response = await postForm(h, path, fields, { cookie: session.cookie });
      expect(response.status).toBe(403);
      expect(await h.auditLines()).toHaveLength(before);
      // The session still works (signing out did not happen).
      const page = await rawRequest(`${h.url}/approvals`, { headers: { cookie: session.cookie } });
      expect(page.status).toBe(200);
    },
    60_000,
  );
});

/**
 * An audit log whose next console line, once `hold()` is called, waits until `release()`: an
 * answer stays "being written" while others arrive.
 */
class HeldAudit extends AuditLog {
  #held: Promise<void> | undefined;
  #release: () => void = () => undefined;
  #entered: () => void = () => undefined;

  /** The next console line waits; resolves once it is waiting. */
  hold(): Promise<void> {
    const entered = new Promise<void>((resolve) => {
      this.#entered = resolve;
    });
    this.#held = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    return entered;
  }

  release(): void {
    this.#release();
  }

  override async append(entry: Parameters<AuditLog['append']>[0]) {
    const held = entry.kind === 'console' ? this.#held : undefined;
    if (held !== undefined) {
      this.#held = undefined;
      this.#entered();
      await held;
    }
    return super.append(entry);
  }
}

describe('one answer per ask', () => {
  it('while an approval is being written, other answers to the ask are refused: the call runs once, as approved', async () => {
    let audit: HeldAudit | undefined;
    const h = await harness({
      audit: (file) => {
        audit = new HeldAudit(file, 1024 * 1024);
        return audit;
      },
    });
    const held = audit as HeldAudit;
    const session = await signIn(h);
    const pending = callWithoutElicitation(h, { id: 'twice' });
    const ask = await waitingAsk(h);
    const answer = (decision: 'approve' | 'deny') =>
      postForm(
        h,
        '/console/approvals/answer',
        { csrf: session.csrf, id: ask.id, decision },
        { cookie: session.cookie },
      );
    // The first approval's audit line is being written...
    const writing = held.hold();
    const first = answer('approve');
    await writing;
    // ...when a denial and a second approval of the same ask arrive: both are refused.
    const others = await Promise.all([answer('deny'), answer('approve')]);
    expect(others.map((response) => response.status)).toEqual([409, 409]);
    held.release();
    expect((await first).status).toBe(303);
    const result = await pending;
    expect(resultText(result)).toBe('note twice');
    expect(await h.serverCalls()).toHaveLength(1);
    // One console line, and it says what happened.
    expect(
      (await h.auditLines()).filter((line) => line.kind === 'console').map((line) => line.outcome),
    ).toEqual(['console-approved']);
  }, 60_000);
});

describe('configured Host names', () => {
  it.each<{ name: string; named: boolean; status: number }>([
    { name: 'answers a Host named in hosts', named: true, status: 303 },
    { name: 'refuses the same Host when it is not named', named: false, status: 421 },
  ])(
    '$name',
    async ({ named, status }) => {
      const h = await harness();
      const port = await freePort();
      const served = await serveConsole(
        new GatewayConsole({
          gateway: h.gateway,
          inbox: h.inbox,
          audit: new AuditLog(join(h.folder, 'other.jsonl'), 1024),
          config: () => h.config,
          token: 'a-token-long-enough-here',
          hosts: named ? [`Gateway.Example:${port}`] : [],
        }),
        '127.0.0.1',
        port,
        true,
      );
      open.push(served);
      const response = await rawRequest(`${served.url}/approvals`, {
        headers: { host: `gateway.example:${port}` },
      });
      expect(response.status).toBe(status);
    },
    60_000,
  );
});

/** A port free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('GatewayConsole options', () => {
  it.each<{ name: string; change: Record<string, unknown>; option: string }>([
    { name: 'a token under 16 characters', change: { token: 'short' }, option: 'token' },
    { name: 'an unknown option', change: { csrfOff: true }, option: 'csrfOff' },
    { name: 'auditRows of 0', change: { auditRows: 0 }, option: 'auditRows' },
    { name: 'maxSessions of 0', change: { maxSessions: 0 }, option: 'maxSessions' },
    { name: 'maxFormBytes of 0', change: { maxFormBytes: 0 }, option: 'maxFormBytes' },
    {
      name: 'an origin with a path',
      change: { origins: ['https://console.example.com/console'] },
      option: 'origins',
    },
    {
      name: 'an origin of another scheme',
      change: { origins: ['ftp://x.test'] },
      option: 'origins',
    },
    {
      name: 'origins that are not a list',
      change: { origins: 'https://x.test' },
      option: 'origins',
    },
    {
      name: 'no sign-in at all (no token, no login)',
      change: { token: undefined },
      option: 'login',
    },
    {
      name: 'both a token and a login',
      change: { login: { start: () => undefined } },
      option: 'login',
    },
  ])(
    'refuses $name',
    async ({ change, option }) => {
      const h = await harness();
      const audit = new AuditLog(join(h.folder, 'other.jsonl'), 1024);
      expect(
        () =>
          new GatewayConsole({
            gateway: h.gateway,
            inbox: h.inbox,
            audit,
            config: () => h.config,
            token: 'a-token-long-enough-here',
            ...change,
          } as never),
      ).toThrow(expect.objectContaining({ code: 'GATEWAY_CONFIG', details: { option } }));
    },
    60_000,
  );
});

describe("the approvals page says who made the call, and the answer's audit line too", () => {
  it('shows the caller on the card; the console-approved line names the caller beside the admin', async () => {
    const h = await harness();
    const session = await signIn(h);
    const caller = { issuer: 'https://id.example.com', subject: 'bob\u202Egnp.exe' };
    const answer = h.inbox.decide(
      {
        tool: 'tk__wipe',
        server: 'toolkit',
        description: 'Wipes.\u200B',
        arguments: { confirm: true },
        reason: 'asked',
        principal: caller,
      },
      new AbortController().signal,
    );
    const [ask] = h.inbox.list();
    const page = await rawRequest(`${h.url}/approvals`, { headers: { cookie: session.cookie } });
    expect(page.body).toContain(
      'Asked by <strong>bob\\u{202e}gnp.exe</strong> <small>(issuer https://id.example.com)</small>',
    );
    expect(page.body).toContain('Wipes.\\u{200b}');
    expect(page.body).not.toMatch(/[\u202E\u200B]/);
    const answered = await postForm(
      h,
      '/console/approvals/answer',
      { csrf: session.csrf, id: ask?.id ?? '', decision: 'approve' },
      { cookie: session.cookie },
    );
    expect(answered.status).toBe(303);
    expect(await answer).toBe('approved');
    expect(await h.auditLines()).toMatchObject([
      { kind: 'console', tool: 'tk__wipe', outcome: 'console-approved', caller },
    ]);
  });
});
