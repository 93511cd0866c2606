// The console's sign-in with the identity provider (issue 40, "the same authentication as the
// gateway"): with gateway.httpAuth, a real oidc-provider (its dev interactions log in any
// username) signs people in through the authorization code flow with PKCE and state; the access
// token is checked by the gateway's resource server; only the configured admins get a session;
// a change made in the page is audited with the admin's subject. Chromium is Debian's, driven by
// playwright-core.
import { createServer, type Server } from 'node:http';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { approveLoopback } from '../src/cli/loopback.js';
import { ConsoleLogin } from '../src/gateway/console/index.js';
import { checkHttpAuthSettings } from '../src/gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../src/gateway/identity/resource-server.js';
import { freePort, listen, teamProviderConfig } from './fixtures/team-gateway.js';
import { gatewayClient } from './helpers.js';
import { type ConsoleHarness, rawRequest, tracked, until } from './support/console-harness.js';

const CLIENT = 'toolfence-console';
/** Each person's groups, as the identity provider puts them in the token. */
const GROUPS: Readonly<Record<string, readonly string[]>> = {
  alice: ['platform'],
  olga: ['console-admins'],
  mallory: ['sales'],
  // The admin group as the 65th value (a principal cut at 64 values turned her away).
  heidi: [...Array.from({ length: 64 }, (_, index) => `team-${index}`), 'console-admins'],
  // Over the default 256 values: refused, saying which limit, never read in part.
  ivan: [...Array.from({ length: 300 }, (_, index) => `team-${index}`), 'console-admins'],
};

let browser: Browser;
const servers: Server[] = [];
const { open, closeAll, harness } = tracked();

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
afterEach(closeAll);

/** A real oidc-provider on loopback whose console client redirects to `callback`. */
async function identityProvider(resource: string, callback: string): Promise<string> {
  const { default: Provider } = (await import('oidc-provider')) as unknown as {
    default: new (issuer: string, config: Record<string, unknown>) => { callback(): never };
  };
  const server = createServer();
  servers.push(server);
  const issuer = `http://127.0.0.1:${await listen(server)}`;
  // The team's provider, with the console's public code-flow client and dev interactions on.
  const base = teamProviderConfig(
    resource,
    [],
    [
      {
        client_id: CLIENT,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [callback],
        token_endpoint_auth_method: 'none',
      },
    ],
  );
  const provider = new Provider(issuer, {
    ...base,
    features: { ...(base.features as object), devInteractions: { enabled: true } },
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string }) => ({
      groups: GROUPS[token.accountId ?? ''] ?? [],
    }),
  });
  server.on('request', provider.callback());
  return issuer;
}

/** A console on a known port whose sign-in is the provider's, admins as given. */
async function consoleWithProvider(
  admins: Record<string, unknown> = { subjects: ['alice'], groups: ['console-admins'] },
  /** The resource the sign-in asks a token for (default: the gateway's). */
  asked?: string,
): Promise<{ h: ConsoleHarness; issuer: string }> {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const issuer = await identityProvider(resource, `http://127.0.0.1:${port}/console/callback`);
  const settings = checkHttpAuthSettings({
    resource,
    authorizationServers: [issuer],
    console: { clientId: CLIENT, scope: ['mcp:tools'], admins },
  });
  const auth = new GatewayResourceServer({ settings, allowNonPublic: approveLoopback });
  const login = new ConsoleLogin({
    issuer,
    resource: asked ?? resource,
    settings: settings.console,
    allowNonPublic: approveLoopback,
    authenticate: (authorization) => auth.authenticate(authorization),
  });
  return { h: await harness({ login, port }), issuer };
}

/** A browser context that reaches loopback only (the provider's page imports a web font). */
async function loopbackContext(): Promise<BrowserContext> {
  const context = await browser.newContext();
  open.push(context);
  await context.route('**/*', (route) =>
    new URL(route.request().url()).hostname === '127.0.0.1' ? route.continue() : route.abort(),
  );
  return context;
}

/** Logs `person` in at the provider's dev interaction from the console's sign-in page. */
async function logIn(context: BrowserContext, h: ConsoleHarness, person: string) {
  const page = await context.newPage();
  await page.goto(`${h.url}/login`);
  await page.getByRole('link', { name: 'Sign in with the identity provider' }).click();
  await page.locator('input[name=login]').fill(person);
  await page.locator('input[name=password]').fill('any-password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL((url) => url.pathname.startsWith('/console/'));
  await page.waitForLoadState('load');
  return page;
}

describe('the console signs people in with the identity provider (gateway.httpAuth)', () => {
  it('an admin (by subject) logs in, sees the approvals page, approves a call; the audit line names her subject', async () => {
    const { h, issuer } = await consoleWithProvider();
    const context = await loopbackContext();
    const page = await logIn(context, h, 'alice');
    await page.waitForURL(`${h.url}/approvals`);
    await page.locator('p.empty').waitFor();
    // The access token never reaches the browser: only the console's session cookie.
    const cookies = await context.cookies(`${h.url}/approvals`);
    expect(
      cookies.map((cookie) => cookie.name).filter((name) => name.startsWith('toolfence')),
    ).toEqual([`toolfence_console_${new URL(h.origin).port}`]);
    expect(cookies.every((cookie) => cookie.value.split('.').length !== 3)).toBe(true);
    const client = await gatewayClient(h.gateway, open);
    const pending = client.callTool({ name: 'tk__note', arguments: { id: 'by-alice' } });
    await until(() => h.inbox.list().length > 0);
    await page.reload();
    await page.getByRole('button', { name: 'Approve this call' }).click();
    await page.waitForURL(/notice=approved/);
    await pending;
    const approved = (await h.auditLines()).find((line) => line.outcome === 'console-approved');
    expect(approved).toMatchObject({
      tool: 'tk__note',
      approvedBy: 'console',
      principal: { issuer, subject: 'alice' },
    });
  }, 120_000);

  it('an admin by group claim gets in; a signed-in person who is not an admin is refused after login', async () => {
    const { h } = await consoleWithProvider();
    const olga = await logIn(await loopbackContext(), h, 'olga');
    await olga.waitForURL(`${h.url}/approvals`);
    const context = await loopbackContext();
    const mallory = await logIn(context, h, 'mallory');
    expect(new URL(mallory.url()).pathname).toBe('/console/callback');
    expect(await mallory.locator('p.error').textContent()).toContain(
      'not one of the console admins',
    );
    await mallory.goto(`${h.url}/approvals`);
    expect(new URL(mallory.url()).pathname).toBe('/console/login');
  }, 120_000);

  it('an admin whose admin group is the 65th value of groups gets in; one over the claim limit is refused, saying which', async () => {
    const { h } = await consoleWithProvider({ groups: ['console-admins'] });
    const heidi = await logIn(await loopbackContext(), h, 'heidi');
    await heidi.waitForURL(`${h.url}/approvals`);
    const ivan = await logIn(await loopbackContext(), h, 'ivan');
    expect(new URL(ivan.url()).pathname).toBe('/console/callback');
    const refusal = await ivan.locator('p.error').textContent();
    expect(refusal).toContain('not accepted by this gateway');
    expect(refusal).toContain('gateway.httpAuth.principalClaimMaxValues');
    await ivan.goto(`${h.url}/approvals`);
    expect(new URL(ivan.url()).pathname).toBe('/console/login');
  }, 120_000);

  it('an access token for another resource (aud) is refused after login, though she is an admin', async () => {
    const { h } = await consoleWithProvider(undefined, 'https://other.example.com/mcp');
    const page = await logIn(await loopbackContext(), h, 'alice');
    expect(await page.locator('p.error').textContent()).toContain('not accepted by this gateway');
    await page.goto(`${h.url}/approvals`);
    expect(new URL(page.url()).pathname).toBe('/console/login');
  }, 120_000);

  it('with no admins configured the console refuses everyone, saying so', async () => {
    const { h } = await consoleWithProvider({});
    const page = await logIn(await loopbackContext(), h, 'alice');
    expect(await page.locator('p.error').textContent()).toContain('admins are not configured');
  }, 120_000);
});

describe('callbacks that are not the end of a sign-in this browser started are refused', () => {
  it.for([
    { name: 'a forged state', state: 'forged-state-0123456789', binding: 'own', status: 400 },
    { name: 'no state (no PKCE verifier held)', state: '', binding: 'own', status: 400 },
    {
      name: 'a real state without the browser binding cookie',
      state: 'real',
      binding: 'none',
      status: 403,
    },
    {
      name: 'a real state with another browser binding',
      state: 'real',
      binding: 'other',
      status: 403,
    },
  ])('$name', { timeout: 60_000 }, async (row) => {
    const { h } = await consoleWithProvider();
    const started = await rawRequest(`${h.url}/login/start`, { headers: { host: h.host } });
    expect(started.status).toBe(303);
    const location = new URL(String(started.headers.location));
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    const cookie = String(started.headers['set-cookie']).split(';')[0] as string;
    const state = row.state === 'real' ? (location.searchParams.get('state') as string) : row.state;
    const binding =
      row.binding === 'own'
        ? cookie
        : row.binding === 'other'
          ? `${cookie.split('=')[0]}=another-browser-0123456789`
          : undefined;
    const callback = await rawRequest(
      `${h.url}/callback?code=stolen-code&state=${encodeURIComponent(state)}`,
      { headers: binding === undefined ? {} : { cookie: binding } },
    );
    expect(callback.status).toBe(row.status);
    expect(String(callback.headers['set-cookie'] ?? '')).not.toMatch(/toolfence_console_\d+=[^;]/);
    // A state is single use: after a refusal the real one is spent too.
    if (row.state === 'real') {
      const again = await rawRequest(
        `${h.url}/callback?code=stolen-code&state=${encodeURIComponent(state)}`,
        { headers: { cookie } },
      );
      expect(again.status).toBe(400);
    }
  });
});

describe("a flood of unauthenticated sign-in starts does not cancel an admin's sign-in", () => {
  it('beyond the limits /console/login/start answers 429; the admin who started first still gets in', async () => {
    const { h } = await consoleWithProvider();
    const context = await loopbackContext();
    const page = await context.newPage();
    await page.goto(`${h.url}/login`);
    await page.getByRole('link', { name: 'Sign in with the identity provider' }).click();
    await page.locator('input[name=login]').waitFor();
    // 70 starts from the same address (127.0.0.1): 7 more fit beside hers (8 per source), the
    // rest are refused; hers is never dropped (64 used to evict the oldest).
    const statuses: number[] = [];
    let refusal: Awaited<ReturnType<typeof rawRequest>> | undefined;
    for (let index = 0; index < 70; index += 1) {
      const answer = await rawRequest(`${h.url}/login/start`, { headers: { host: h.host } });
      statuses.push(answer.status);
      if (answer.status === 429) refusal = answer;
    }
    expect(statuses.filter((status) => status === 303)).toHaveLength(7);
    expect(statuses.filter((status) => status === 429)).toHaveLength(63);
    expect(refusal?.headers['retry-after']).toBe('60');
    expect(refusal?.body).toContain('maxPendingPerSource');
    expect(refusal?.body).toContain('try again in a few minutes');
    await page.locator('input[name=login]').fill('alice');
    await page.locator('input[name=password]').fill('any-password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${h.url}/approvals`);
    await page.locator('p.empty').waitFor();
  }, 120_000);
});
