import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AuthorizationRequiredError,
  authorizeConnection,
  type ConnectionStore,
  completeConnection,
  MemoryConnectionStore,
  OAuthStepUpLimitError,
  OAuthTokenProvider,
  refreshConnection,
  startOAuth,
} from '../src/index.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

let server: ScriptedOAuthServer;
let store: MemoryConnectionStore;
beforeEach(async () => {
  server = await startScriptedOAuthServer();
  store = new MemoryConnectionStore();
});
afterEach(async () => {
  await server.close();
});

async function authorized(id = 'c'): Promise<void> {
  const { authorizeUrl } = await authorizeConnection(store, id, {
    url: server.url,
    redirectUri: REDIRECT_URI,
    allowNonPublic: loopback,
  });
  const state = new URL(authorizeUrl).searchParams.get('state') as string;
  await completeConnection(
    store,
    id,
    `${REDIRECT_URI}?code=code-1&state=${state}&iss=${encodeURIComponent(server.issuer)}`,
    { allowNonPublic: loopback },
  );
}

function countTokenRequests(): () => number {
  let count = 0;
  server.routes.set('POST /token', (_q, response) => {
    count += 1;
    sendJson(response, 200, { ...server.token, access_token: `access-${count + 1}` });
  });
  return () => count;
}

describe('stored connections on a scripted authorization server', () => {
  it('re-registers at the new authorization server when the resource moved (SEP-2352)', async () => {
    await authorized();
    expect((await store.get('c'))?.issuer).toBe(server.issuer);
    const second = await startScriptedOAuthServer();
    try {
      server.prm.authorization_servers = [second.issuer];
      second.registration.client_id = 'client-at-second';
      await authorizeConnection(store, 'c', {
        redirectUri: REDIRECT_URI,
        allowNonPublic: loopback,
      });
      const record = await store.get('c');
      expect(record?.issuer).toBe(second.issuer);
      expect(record?.clientId).toBe('client-at-second');
      expect(second.requests).toContain('POST /register');
      // The old server's tokens are gone: no refresh can send them to the new one.
      expect(record?.accessToken).toBeUndefined();
      expect(record?.refreshToken).toBeUndefined();
      const bodies: string[] = [];
      second.routes.set('POST /token', (_q, response, body) => {
        bodies.push(body);
        sendJson(response, 200, second.token);
      });
      await expect(
        refreshConnection(store, 'c', { allowNonPublic: loopback }),
      ).rejects.toMatchObject({ code: 'OAUTH_AUTHORIZATION_REQUIRED', reason: 'no-token' });
      expect(bodies).toEqual([]);
      // The new flow completes at the new server only, with the new client.
      const state = new URL(
        (
          await authorizeConnection(store, 'c', {
            redirectUri: REDIRECT_URI,
            allowNonPublic: loopback,
          })
        ).authorizeUrl,
      ).searchParams.get('state') as string;
      await completeConnection(
        store,
        'c',
        `${REDIRECT_URI}?code=code-2&state=${state}&iss=${encodeURIComponent(second.issuer)}`,
        { allowNonPublic: loopback },
      );
      expect(bodies).toHaveLength(1);
      expect(bodies.join('')).not.toContain('refresh-1');
      expect(bodies.join('')).not.toContain('secret-1');
      expect(bodies.join('')).toContain('code=code-2');
    } finally {
      await second.close();
    }
  });

  it('drops a registration the server answers invalid_client for, keeping the tokens', async () => {
    await authorized();
    server.routes.set('POST /token', (_q, response) =>
      sendJson(response, 401, { error: 'invalid_client', error_description: 'unknown client' }),
    );
    const error = await refreshConnection(store, 'c', { allowNonPublic: loopback }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'OAUTH_AUTHORIZATION_REQUIRED', reason: 'refresh-failed' });
    const record = await store.get('c');
    expect(record?.clientId).toBeUndefined();
    expect(record?.accessToken).toBe('access-1');
    const registrations = server.requests.filter((line) => line === 'POST /register').length;
    await authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, allowNonPublic: loopback });
    expect(server.requests.filter((line) => line === 'POST /register').length).toBe(
      registrations + 1,
    );
  });

  it('reuses the registered client for the next flow at the same issuer', async () => {
    await authorized();
    const registrations = server.requests.filter((line) => line === 'POST /register').length;
    await authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, allowNonPublic: loopback });
    expect(server.requests.filter((line) => line === 'POST /register').length).toBe(registrations);
  });

  it('refuses an expired pending authorization (pendingAuthorizationMs) and validates it', async () => {
    const { authorizeUrl } = await authorizeConnection(store, 'c', {
      url: server.url,
      redirectUri: REDIRECT_URI,
      allowNonPublic: loopback,
    });
    const state = new URL(authorizeUrl).searchParams.get('state') as string;
    const callback = `${REDIRECT_URI}?code=code-1&state=${state}&iss=${encodeURIComponent(server.issuer)}`;
    await expect(
      completeConnection(store, 'c', callback, { pendingAuthorizationMs: 0 }),
    ).rejects.toMatchObject({ code: 'OAUTH_CONFIGURATION_INVALID' });
    await store.update('c', (current) =>
      current?.pending
        ? { ...current, pending: { ...current.pending, createdAt: Date.now() - 61_000 } }
        : undefined,
    );
    await expect(
      completeConnection(store, 'c', callback, {
        allowNonPublic: loopback,
        pendingAuthorizationMs: 60_000,
      }),
    ).rejects.toMatchObject({ code: 'OAUTH_STATE_MISMATCH' });
    expect(server.requests).not.toContain('POST /token');
  });

  it('keeps the pending flow when a forged callback arrives', async () => {
    const { authorizeUrl } = await authorizeConnection(store, 'c', {
      url: server.url,
      redirectUri: REDIRECT_URI,
      allowNonPublic: loopback,
    });
    await expect(
      completeConnection(store, 'c', `${REDIRECT_URI}?code=evil&state=forged`, {
        allowNonPublic: loopback,
      }),
    ).rejects.toMatchObject({ code: 'OAUTH_STATE_MISMATCH' });
    const state = new URL(authorizeUrl).searchParams.get('state') as string;
    const record = await completeConnection(
      store,
      'c',
      `${REDIRECT_URI}?code=code-1&state=${state}&iss=${encodeURIComponent(server.issuer)}`,
      { allowNonPublic: loopback },
    );
    expect(record.accessToken).toBe('access-1');
  });

  it.each([['readTimeoutMs', { readTimeoutMs: 300, connectTimeoutMs: 300 }]])(
    'enforces %s on a server that never answers',
    async (_name, limits) => {
      server.routes.set(
        'GET /.well-known/oauth-authorization-server',
        () => new Promise<void>(() => undefined),
      );
      const started = Date.now();
      await expect(
        startOAuth({
          url: server.url,
          redirectUri: REDIRECT_URI,
          allowNonPublic: loopback,
          ...limits,
        }),
      ).rejects.toMatchObject({
        code: 'OAUTH_TRANSPORT_FAILED',
        reason: 'timeout',
        details: expect.objectContaining({ phase: 'read' }),
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    },
  );

  it('enforces connectTimeoutMs on a server that accepts TCP but never finishes TLS', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      await expect(
        startOAuth({
          url: `https://127.0.0.1:${port}/mcp`,
          redirectUri: REDIRECT_URI,
          allowNonPublic: true,
          connectTimeoutMs: 300,
          readTimeoutMs: 20_000,
        }),
      ).rejects.toMatchObject({
        code: 'OAUTH_TRANSPORT_FAILED',
        reason: 'timeout',
        details: expect.objectContaining({ phase: 'connect' }),
      });
    } finally {
      silent.close();
    }
  });

  it.each([
    ['connectTimeoutSeconds', 'connectTimeoutMs'],
    ['readTimeoutSeconds', 'readTimeoutMs'],
    ['timeoutSeconds', 'readTimeoutMs'],
  ])('refuses the old seconds option %s before any request, naming %s', async (oldKey, newKey) => {
    await expect(
      startOAuth({
        url: server.url,
        redirectUri: REDIRECT_URI,
        allowNonPublic: loopback,
        [oldKey]: 5,
      } as never),
    ).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
      details: { option: oldKey },
      message: expect.stringContaining(`"${oldKey}" was renamed to "${newKey}" (milliseconds`),
    });
    expect(server.requests).toEqual([]);
  });

  it.each([
    [
      'OAuthTokenProvider refreshSkewSeconds',
      () => new OAuthTokenProvider({ store, connectionId: 'c', refreshSkewSeconds: 60 } as never),
      'refreshSkewSeconds',
      'refreshSkewMs',
    ],
    [
      'OAuthTokenProvider authorizationWindowSeconds',
      () =>
        new OAuthTokenProvider({
          store,
          connectionId: 'c',
          authorizationWindowSeconds: 600,
        } as never),
      'authorizationWindowSeconds',
      'authorizationWindowMs',
    ],
    [
      'OAuthTokenProvider connectTimeoutSeconds',
      () => new OAuthTokenProvider({ store, connectionId: 'c', connectTimeoutSeconds: 5 } as never),
      'connectTimeoutSeconds',
      'connectTimeoutMs',
    ],
  ])('refuses %s with its new name', (_label, construct, oldKey, newKey) => {
    expect(construct).toThrow(
      expect.objectContaining({
        code: 'OAUTH_CONFIGURATION_INVALID',
        details: { option: oldKey },
        message: expect.stringContaining(`"${oldKey}" was renamed to "${newKey}" (milliseconds`),
      }),
    );
  });

  it.each([
    [
      'authorizeConnection authorizationWindowSeconds',
      () =>
        authorizeConnection(store, 'c', {
          redirectUri: REDIRECT_URI,
          authorizationWindowSeconds: 600,
        } as never),
      'authorizationWindowSeconds',
      'authorizationWindowMs',
    ],
    [
      'completeConnection pendingAuthorizationSeconds',
      () => completeConnection(store, 'c', 'x', { pendingAuthorizationSeconds: 60 } as never),
      'pendingAuthorizationSeconds',
      'pendingAuthorizationMs',
    ],
    [
      'refreshConnection readTimeoutSeconds',
      () => refreshConnection(store, 'c', { readTimeoutSeconds: 5 } as never),
      'readTimeoutSeconds',
      'readTimeoutMs',
    ],
  ])('%s is refused before any request', async (_label, run, oldKey, newKey) => {
    await expect(run()).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
      details: { option: oldKey },
      message: expect.stringContaining(`"${oldKey}" was renamed to "${newKey}" (milliseconds`),
    });
    expect(server.requests).toEqual([]);
  });

  it('refuses loopback and plain http by default, before any request', async () => {
    await expect(startOAuth({ url: server.url, redirectUri: REDIRECT_URI })).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
    });
    expect(server.requests).toEqual([]);
  });

  it('accepts allowNonPublic: true for every non-public address', async () => {
    await expect(
      startOAuth({ url: server.url, redirectUri: REDIRECT_URI, allowNonPublic: true }),
    ).resolves.toMatchObject({ issuer: server.issuer });
  });
});

describe('OAuthTokenProvider limits', () => {
  it('refreshes within refreshSkewMs of expiry, not before', async () => {
    await authorized();
    const tokens = countTokenRequests();
    await store.update('c', (current) => current && { ...current, expiresAt: Date.now() + 90_000 });
    // Pretend the token was issued long ago, so the skew is not capped at half its lifetime.
    const aged: ConnectionStore = {
      get: async (id) => {
        const record = await store.get(id);
        return record && { ...record, updatedAt: 0 };
      },
      put: (record) => store.put(record),
      update: (id, change) => store.update(id, change),
      delete: (id) => store.delete(id),
      list: () => store.list(),
      singleFlight: (key, task) => store.singleFlight(key, task),
    };
    const relaxed = new OAuthTokenProvider({
      store: aged,
      connectionId: 'c',
      allowNonPublic: loopback,
      refreshSkewMs: 60_000,
    });
    expect(await relaxed.getToken()).toBe('access-1');
    expect(tokens()).toBe(0);
    const eager = new OAuthTokenProvider({
      store: aged,
      connectionId: 'c',
      allowNonPublic: loopback,
      refreshSkewMs: 120_000,
    });
    expect(await eager.getToken()).toBe('access-2');
    expect(tokens()).toBe(1);
  });

  it('caps the skew at half the token lifetime, so a short-lived token is not refreshed every call', async () => {
    await authorized();
    const tokens = countTokenRequests();
    // expires_in 60 with the default 60 s skew.
    const provider = new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
    expect(await provider.getToken()).toBe('access-1');
    expect(tokens()).toBe(0);
  });

  it('stops after maxAuthorizationAttempts', async () => {
    await authorized();
    const provider = new OAuthTokenProvider({
      store,
      connectionId: 'c',
      allowNonPublic: loopback,
      maxAuthorizationAttempts: 1,
    });
    await expect(provider.onInsufficientScope('mcp:admin')).rejects.toBeInstanceOf(
      OAuthStepUpLimitError,
    );
    await provider.onSuccess();
    const error = await provider
      .onInsufficientScope('mcp:admin')
      .catch((caught: unknown) => caught);
    expect(AuthorizationRequiredError.isInstance(error)).toBe(true);
    expect((error as AuthorizationRequiredError).scope).toBe('mcp:tools mcp:admin');
  });

  it('counts authorization attempts within authorizationWindowMs only', async () => {
    await authorized();
    await authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, allowNonPublic: loopback });
    await authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, allowNonPublic: loopback });
    expect((await store.get('c'))?.authorizationAttempts).toBe(3);
    const provider = new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
    await expect(provider.onInsufficientScope('mcp:admin')).rejects.toBeInstanceOf(
      OAuthStepUpLimitError,
    );
    // A quiet window later (weeks of successful use), a step-up starts a new series.
    await store.update(
      'c',
      (current) => current && { ...current, lastAuthorizationAt: Date.now() - 601_000 },
    );
    const error = await provider
      .onInsufficientScope('mcp:admin')
      .catch((caught: unknown) => caught);
    expect((error as AuthorizationRequiredError).attempt).toBe(1);
    await authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, allowNonPublic: loopback });
    expect((await store.get('c'))?.authorizationAttempts).toBe(1);
    await expect(
      authorizeConnection(store, 'c', { redirectUri: REDIRECT_URI, authorizationWindowMs: 0 }),
    ).rejects.toMatchObject({ code: 'OAUTH_CONFIGURATION_INVALID' });
  });

  it('answers McpClient challenges: refresh on the first 401, authorization required on the second', async () => {
    await authorized();
    countTokenRequests();
    const provider = new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
    expect(await provider.token()).toBe('access-1');
    const challenge = {
      status: 401,
      wwwAuthenticate: 'Bearer error="invalid_token"',
      url: server.url,
    };
    await expect(provider.onChallenge({ ...challenge, attempt: 1 })).resolves.toBe(true);
    expect(await provider.token()).toBe('access-2');
    await expect(provider.onChallenge({ ...challenge, attempt: 2 })).rejects.toMatchObject({
      code: 'OAUTH_AUTHORIZATION_REQUIRED',
      reason: 'unauthorized',
    });
    await expect(
      provider.onChallenge({
        status: 403,
        wwwAuthenticate: 'Bearer error="invalid_token"',
        url: server.url,
        attempt: 1,
      }),
    ).resolves.toBe(false);
  });

  it('refreshes once when two requests were refused with the same token (the later 401 retries with the fresh one)', async () => {
    await authorized();
    const tokens = countTokenRequests();
    // Two replicas (providers) on one store, each with a request in flight with access-1.
    const first = new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
    const second = new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
    const request = { method: 'POST', url: server.url };
    const sentFirst = await first.headers(request);
    const sentSecond = await second.headers(request);
    const sentAgain = await first.headers(request);
    expect([sentFirst, sentSecond, sentAgain]).toEqual(
      Array(3).fill({ authorization: 'Bearer access-1' }),
    );
    const refused = (authorization: string | undefined) => ({
      status: 401,
      wwwAuthenticate: 'Bearer error="invalid_token"',
      url: server.url,
      attempt: 1,
      authorization,
    });
    // The server refuses all three; their challenges arrive one after the other.
    await expect(first.onChallenge(refused(sentFirst?.authorization))).resolves.toBe(true);
    expect(tokens()).toBe(1);
    // The first provider already handed out access-2 for a later request before the next 401.
    expect(await first.headers(request)).toEqual({ authorization: 'Bearer access-2' });
    await expect(first.onChallenge(refused(sentAgain?.authorization))).resolves.toBe(true);
    await expect(second.onChallenge(refused(sentSecond?.authorization))).resolves.toBe(true);
    expect(tokens()).toBe(1);
    expect(await second.headers(request)).toEqual({ authorization: 'Bearer access-2' });
    // Concurrent challenges with the same refused token share one refresh as well.
    await Promise.all([
      first.onChallenge(refused('Bearer access-2')),
      second.onChallenge(refused('Bearer access-2')),
      first.onChallenge(refused('Bearer access-2')),
    ]);
    expect(tokens()).toBe(2);
    expect((await store.get('c'))?.accessToken).toBe('access-3');
    // The fresh token refused in turn: that one is refreshed, once.
    await expect(second.onChallenge(refused('Bearer access-3'))).resolves.toBe(true);
    expect(tokens()).toBe(3);
  });

  it.each([
    { refreshSkewMs: -1 },
    { refreshSkewMs: '60' },
    { maxAuthorizationAttempts: 0 },
    { maxAuthorizationAttempts: 1.5 },
    { maxAuthorizationAttempts: true },
    { connectionId: '' },
    { authorizationWindowMs: 0 },
  ])('validates %o', (options) => {
    expect(
      () => new OAuthTokenProvider({ store, connectionId: 'c', ...(options as object) }),
    ).toThrow(expect.objectContaining({ code: 'OAUTH_CONFIGURATION_INVALID' }));
  });
});
