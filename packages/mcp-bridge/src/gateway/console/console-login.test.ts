import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveLoopback } from '../../cli/loopback.js';
import { checkHttpAuthSettings } from '../identity/http-auth-settings.js';
import { DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL } from './console-inbox.js';
import {
  ConsoleLogin,
  ConsoleLoginBusyError,
  type ConsoleLoginOptions,
  DEFAULT_CONSOLE_MAX_PENDING_LOGINS,
  DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE,
  isConsoleAdmin,
} from './console-login.js';

// A loopback authorization server that publishes metadata only (the callbacks below never reach
// its token endpoint: they are refused before).
let server: Server;
let issuer: string;
beforeAll(async () => {
  server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    if (request.method === 'POST' && request.url === '/token') {
      response.end(JSON.stringify({ access_token: 'an-access-token', token_type: 'bearer' }));
      return;
    }
    response.end(
      JSON.stringify({
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        code_challenge_methods_supported: ['S256'],
        response_types_supported: ['code'],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function login(extra: Partial<ConsoleLoginOptions> = {}): ConsoleLogin {
  const settings = checkHttpAuthSettings({
    resource: 'https://mcp.example.com/mcp',
    authorizationServers: [issuer],
  });
  return new ConsoleLogin({
    issuer,
    resource: settings.resource,
    settings: settings.console,
    allowNonPublic: approveLoopback,
    authenticate: async () => {
      throw new Error('not reached');
    },
    ...extra,
  });
}

const REDIRECT = 'http://127.0.0.1:1/console/callback';

async function callback(target: ConsoleLogin, url: string, binding: string, now: number) {
  const state = new URL(url).searchParams.get('state') as string;
  return target.finish(new URLSearchParams({ state, code: 'x' }), `${binding}-not`, now);
}

describe('ConsoleLogin limits', () => {
  it('maxPending: a sign-in started beyond it is refused (busy); the ones held are kept', async () => {
    const target = login({ maxPending: 2, maxPendingPerSource: 2 });
    const first = await target.start(REDIRECT, 1000, 'a');
    const second = await target.start(REDIRECT, 1000, 'b');
    const refused = await target.start(REDIRECT, 1000, 'c').catch((error: unknown) => error);
    expect(ConsoleLoginBusyError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({
      code: 'GATEWAY_CONSOLE_LOGIN_BUSY',
      details: { option: 'maxPending', limit: 2 },
    });
    expect((refused as Error).message).toContain('Try again in a few minutes');
    // A wrong binding is refused 403 when the state is held, 400 when it is not: both are held.
    for (const started of [first, second]) {
      expect(await callback(target, started.authorizationUrl, started.binding, 1000)).toMatchObject(
        {
          status: 403,
        },
      );
    }
  });

  it('a sign-in held past timeoutMs leaves room: a new one starts', async () => {
    const target = login({ maxPending: 1, timeoutMs: 5000 });
    await target.start(REDIRECT, 1000, 'a');
    await expect(target.start(REDIRECT, 2000, 'a')).rejects.toThrow(/sign-ins/);
    await expect(target.start(REDIRECT, 6000, 'a')).resolves.toHaveProperty('binding');
  });

  it('maxPendingPerSource: one source cannot hold more; another still starts', async () => {
    const target = login({ maxPendingPerSource: 3 });
    for (let index = 0; index < 3; index += 1) await target.start(REDIRECT, 1000, '203.0.113.9');
    const refused = await target
      .start(REDIRECT, 1000, '203.0.113.9')
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'GATEWAY_CONSOLE_LOGIN_BUSY',
      details: { option: 'maxPendingPerSource', limit: 3 },
    });
    await expect(target.start(REDIRECT, 1000, '198.51.100.7')).resolves.toHaveProperty('binding');
    // A finished (or refused) callback frees its source's place.
    const other = login({ maxPendingPerSource: 1 });
    const started = await other.start(REDIRECT, 1000, 's');
    await callback(other, started.authorizationUrl, started.binding, 1000);
    await expect(other.start(REDIRECT, 1000, 's')).resolves.toHaveProperty('binding');
    expect(DEFAULT_CONSOLE_MAX_PENDING_LOGINS).toBe(64);
    expect(DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE).toBe(8);
  });

  it('timeoutMs: a callback after it is refused as expired', async () => {
    const target = login({ timeoutMs: 5000 });
    const started = await target.start(REDIRECT, 1000);
    const state = new URL(started.authorizationUrl).searchParams.get('state') as string;
    const late = await target.finish(
      new URLSearchParams({ state, code: 'x' }),
      started.binding,
      6000,
    );
    expect(late).toMatchObject({ ok: false, status: 400 });
  });

  it('fetchMaxBytes: metadata larger than it is refused (the sign-in does not start)', async () => {
    await expect(login({ fetchMaxBytes: 64 }).start(REDIRECT)).rejects.toThrow();
    await expect(login().start(REDIRECT)).resolves.toHaveProperty('binding');
  });

  it.for([
    ['fetchMaxBytes 0', { fetchMaxBytes: 0 }, /fetchMaxBytes/],
    ['fetchTimeoutMs 0', { fetchTimeoutMs: 0 }, /fetchTimeoutMs/],
    ['an unknown option', { maxPendng: 3 }, /maxPendng/],
    ['maxPending 0', { maxPending: 0 }, /maxPending/],
    ['maxPendingPerSource 0', { maxPendingPerSource: 0 }, /maxPendingPerSource/],
    ['timeoutMs -1', { timeoutMs: -1 }, /timeoutMs/],
  ] as const)('refuses %s', ([, extra, message]) => {
    expect(() => login(extra as Partial<ConsoleLoginOptions>)).toThrow(message);
  });
});

describe('gateway.httpAuth.console', () => {
  const base = {
    resource: 'https://mcp.example.com/mcp',
    authorizationServers: [`https://id.example.com`],
  };

  it('defaults: client toolfence-console, the required scopes, nobody is an admin', () => {
    const settings = checkHttpAuthSettings({ ...base, requiredScopes: ['mcp:tools'] });
    expect(settings.console).toEqual({
      clientId: 'toolfence-console',
      scope: ['mcp:tools'],
      admins: { subjects: [], groups: [], groupClaim: 'groups' },
      maxPendingPerPrincipal: DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL,
      maxPendingSignInsPerSource: DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE,
    });
    const anyone = {
      issuer: 'https://id.example.com',
      subject: 'alice',
      claims: { groups: ['x'] },
    };
    expect(isConsoleAdmin(anyone, settings.console.admins)).toBe(false);
  });

  it.for([
    ['an unknown console key', { console: { clients: 'x' } }, /unknown key "clients"/],
    ['an unknown admins key', { console: { admins: { subject: ['a'] } } }, /unknown key "subject"/],
    ['admins not an object', { console: { admins: ['alice'] } }, /must be an object/],
    [
      'a group claim not kept',
      { console: { admins: { groups: ['g'], groupClaim: 'teams' } } },
      /principalClaims/,
    ],
    ['an empty client id', { console: { clientId: '' } }, /clientId/],
    [
      'maxPendingPerPrincipal 0',
      { console: { maxPendingPerPrincipal: 0 } },
      /console\.maxPendingPerPrincipal: must be a whole number from 1 to 10000/,
    ],
    [
      'maxPendingSignInsPerSource over 1,000',
      { console: { maxPendingSignInsPerSource: 1_001 } },
      /console\.maxPendingSignInsPerSource: must be a whole number from 1 to 1000/,
    ],
  ] as const)('refuses %s', ([, extra, message]) => {
    expect(() => checkHttpAuthSettings({ ...base, ...extra })).toThrow(message);
  });

  it('admins match by exact subject or by a value of the group claim', () => {
    const { admins } = checkHttpAuthSettings({
      ...base,
      console: { admins: { subjects: ['alice'], groups: ['ops'] } },
    }).console;
    const who = (subject: string, groups: readonly string[]) => ({
      issuer: 'https://id.example.com',
      subject,
      claims: { groups },
    });
    expect(isConsoleAdmin(who('alice', []), admins)).toBe(true);
    expect(isConsoleAdmin(who('bob', ['ops']), admins)).toBe(true);
    expect(isConsoleAdmin(who('ALICE', ['Ops', 'ops-team']), admins)).toBe(false);
  });
});

describe('who signs in', () => {
  const admins = checkHttpAuthSettings({
    resource: 'https://mcp.example.com/mcp',
    authorizationServers: ['https://id.example.com'],
    console: { admins: { subjects: ['alice'] } },
  }).console;

  it.each([
    ["the console's issuer", (): string => issuer, true],
    ['another trusted issuer', (): string => 'https://other-issuer.example.com', false],
  ] as const)('an admin subject signed by %s (signed in: %s)', async (_name, from, signedIn) => {
    const target = login({
      settings: admins,
      authenticate: async () => ({
        ok: true,
        principal: { issuer: from(), subject: 'alice', claims: {} },
        scopes: [],
        expiresAt: undefined,
        clientId: '',
      }),
    });
    const started = await target.start(REDIRECT, Date.now(), 's');
    const state = new URL(started.authorizationUrl).searchParams.get('state') as string;
    const result = await target.finish(
      new URLSearchParams({ state, code: 'a-code' }),
      started.binding,
    );
    if (signedIn) {
      expect(result).toMatchObject({ ok: true, principal: { subject: 'alice' } });
    } else {
      expect(result).toMatchObject({ ok: false, status: 403 });
      expect(result.ok || result.reason).toContain('not issued by the identity provider');
    }
  });
});
