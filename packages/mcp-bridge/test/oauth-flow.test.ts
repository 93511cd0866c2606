import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthorizationRequiredError,
  authorizeConnection,
  completeConnection,
  completeOAuth,
  MemoryConnectionStore,
  OAuthError,
  OAuthStepUpLimitError,
  OAuthTokenProvider,
  parseAuthorizationCallback,
  refreshConnection,
  refreshOAuth,
  startOAuth,
  verifyState,
} from '../src/index.js';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import { type OAuthPeer, startOAuthPeer } from './fixtures/oauth-peer.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

async function callTool(
  peer: OAuthPeer,
  token: string,
  name: string,
  args: Record<string, unknown>,
) {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(peer.mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  try {
    return await client.callTool({ name, arguments: args });
  } finally {
    await client.close();
  }
}

describe('OAuth against a real oidc-provider and an SDK MCP server', () => {
  let peer: OAuthPeer;
  beforeAll(async () => {
    peer = await startOAuthPeer();
  });
  afterAll(async () => {
    await peer.close();
  });

  it('runs the full flow: discovery, registration, PKCE, code exchange, tool call, refresh', async () => {
    const started = await startOAuth({
      url: peer.mcpUrl,
      redirectUri: peer.redirectUri,
      clientName: 'toolfence test',
      allowNonPublic: loopback,
    });
    expect(started.issuer).toBe(peer.issuer);
    expect(started.resource).toBe(peer.mcpUrl);
    expect(started.tokenAuthMethod).toBe('client_secret_basic');
    expect(started.clientSecret).toEqual(expect.any(String));
    // SEP-2207: oidc-provider lists offline_access in scopes_supported, so it is asked for.
    expect(started.scope).toBe('mcp:tools offline_access');
    const authorize = new URL(started.authorizeUrl);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('resource')).toBe(peer.mcpUrl);
    expect(authorize.searchParams.get('scope')).toBe('mcp:tools offline_access');

    const callbackUrl = await peer.authorize(started.authorizeUrl);
    const callback = parseAuthorizationCallback(callbackUrl, started.state);
    expect(callback.iss).toBe(peer.issuer);
    expect(verifyState(new URL(callbackUrl).searchParams.get('state'), started.state)).toBe(true);

    const tokens = await completeOAuth({
      ...started,
      code: callback.code,
      iss: callback.iss,
      allowNonPublic: loopback,
    });
    expect(tokens.tokenType).toBe('Bearer');
    expect(tokens.refreshToken).toEqual(expect.any(String));
    expect(tokens.expiresAt).toBeGreaterThan(Date.now());

    const result = await callTool(peer, tokens.accessToken, 'echo', { text: 'hi' });
    expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);

    const refreshed = await refreshOAuth({
      ...started,
      refreshToken: tokens.refreshToken as string,
      allowNonPublic: loopback,
    });
    expect(refreshed.refreshToken).toEqual(expect.any(String));
    expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);
    const again = await callTool(peer, refreshed.accessToken, 'echo', { text: 'after refresh' });
    expect(again.content).toEqual([{ type: 'text', text: 'after refresh' }]);

    // Reuse detection: replaying the rotated-out refresh token fails and revokes the family.
    const replay = await refreshOAuth({
      ...started,
      refreshToken: tokens.refreshToken as string,
      allowNonPublic: loopback,
    }).catch((error: unknown) => error);
    expect(OAuthError.isInstance(replay)).toBe(true);
    expect((replay as OAuthError).error).toBe('invalid_grant');
    const revoked = await refreshOAuth({
      ...started,
      refreshToken: refreshed.refreshToken as string,
      allowNonPublic: loopback,
    }).catch((error: unknown) => error);
    expect((revoked as OAuthError).error).toBe('invalid_grant');
  });

  it('drives a stored connection: authorize, callback, provider tokens, single-flight refresh, step-up', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'oauth-flow-'));
    const key = randomBytes(32);
    let store = new SqliteConnectionStore({ path: join(folder, 'connections.db'), key });
    try {
      const provider = new OAuthTokenProvider({
        store,
        connectionId: 'peer',
        url: peer.mcpUrl,
        allowNonPublic: loopback,
      });
      const missing = await provider.getToken().catch((error: unknown) => error);
      expect(AuthorizationRequiredError.isInstance(missing)).toBe(true);
      expect((missing as AuthorizationRequiredError).reason).toBe('no-token');
      expect((missing as AuthorizationRequiredError).url).toBe(peer.mcpUrl);

      const { authorizeUrl } = await authorizeConnection(store, 'peer', {
        url: peer.mcpUrl,
        redirectUri: peer.redirectUri,
        allowNonPublic: loopback,
      });
      const pending = await store.get('peer');
      expect(pending?.pending?.state).toEqual(expect.any(String));
      const callbackUrl = await peer.authorize(authorizeUrl);
      const wrong = new URL(callbackUrl);
      wrong.searchParams.set('state', 'forged');
      await expect(
        completeConnection(store, 'peer', wrong, { allowNonPublic: loopback }),
      ).rejects.toMatchObject({
        code: 'OAUTH_STATE_MISMATCH',
      });
      const record = await completeConnection(store, 'peer', callbackUrl, {
        allowNonPublic: loopback,
      });
      expect(record.accessToken).toEqual(expect.any(String));
      expect(record.pending).toBeUndefined();
      // The flow is single use.
      await expect(
        completeConnection(store, 'peer', callbackUrl, { allowNonPublic: loopback }),
      ).rejects.toMatchObject({
        code: 'OAUTH_STATE_MISMATCH',
      });

      // Reopening the database keeps everything.
      store.close();
      store = new SqliteConnectionStore({ path: join(folder, 'connections.db'), key });
      const reopened = new OAuthTokenProvider({
        store,
        connectionId: 'peer',
        allowNonPublic: loopback,
      });
      const token = await reopened.getToken();
      expect(token).toBe(record.accessToken);
      const first = await callTool(peer, token, 'echo', { text: 'stored' });
      expect(first.content).toEqual([{ type: 'text', text: 'stored' }]);

      // Concurrent refreshes of one connection run one refresh (a second one would trip reuse detection).
      const before = peer.tokenRequests.refresh_token;
      const tokens = await Promise.all([
        reopened.onUnauthorized('Bearer error="invalid_token"', token),
        reopened.onUnauthorized('Bearer error="invalid_token"', token),
        refreshConnection(store, 'peer', { allowNonPublic: loopback }).then((r) => r.accessToken),
      ]);
      expect(peer.tokenRequests.refresh_token - before).toBe(1);
      expect(new Set(tokens).size).toBe(1);
      const rotated = await store.get('peer');
      expect(rotated?.refreshToken).not.toBe(record.refreshToken);
      expect(rotated?.accessToken).toBe(tokens[0]);
      const second = await callTool(peer, tokens[0] as string, 'echo', { text: 'rotated' });
      expect(second.content).toEqual([{ type: 'text', text: 'rotated' }]);

      // Step-up: 403 insufficient_scope widens the scope; at most 3 authorization attempts.
      const stepUp = await reopened
        .onUnauthorized('Bearer error="insufficient_scope", scope="mcp:tools mcp:admin"')
        .catch((error: unknown) => error);
      expect(AuthorizationRequiredError.isInstance(stepUp)).toBe(true);
      expect((stepUp as AuthorizationRequiredError).reason).toBe('insufficient-scope');
      expect((stepUp as AuthorizationRequiredError).scope).toBe('mcp:tools mcp:admin');
      const widened = await authorizeConnection(store, 'peer', {
        redirectUri: peer.redirectUri,
        scope: (stepUp as AuthorizationRequiredError).scope,
        allowNonPublic: loopback,
      });
      expect(new URL(widened.authorizeUrl).searchParams.get('scope')).toBe(
        'mcp:tools mcp:admin offline_access',
      );
      const admin = await completeConnection(
        store,
        'peer',
        await peer.authorize(widened.authorizeUrl),
        {
          allowNonPublic: loopback,
        },
      );
      expect(admin.scope).toBe('mcp:tools mcp:admin');
      const adminResult = await callTool(peer, admin.accessToken as string, 'admin', {});
      expect(adminResult.content).toEqual([{ type: 'text', text: 'admin ok' }]);
      await reopened.onSuccess();
      expect((await store.get('peer'))?.authorizationAttempts).toBe(0);

      for (let attempt = 1; attempt <= 3; attempt += 1) {
        const error = await reopened
          .onInsufficientScope('mcp:tools mcp:admin')
          .catch((e: unknown) => e);
        expect((error as AuthorizationRequiredError).attempt).toBe(attempt);
        await authorizeConnection(store, 'peer', {
          redirectUri: peer.redirectUri,
          allowNonPublic: loopback,
        });
      }
      await expect(reopened.onInsufficientScope('mcp:tools mcp:admin')).rejects.toBeInstanceOf(
        OAuthStepUpLimitError,
      );
    } finally {
      store.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('refreshes an expired token and keeps the old token when the refresh is refused', async () => {
    const store = new MemoryConnectionStore();
    const { authorizeUrl } = await authorizeConnection(store, 'short', {
      url: peer.mcpUrl,
      redirectUri: peer.redirectUri,
      allowNonPublic: loopback,
    });
    const record = await completeConnection(store, 'short', await peer.authorize(authorizeUrl), {
      allowNonPublic: loopback,
    });
    // Pretend the token expired: getToken refreshes first.
    await store.update('short', (current) => current && { ...current, expiresAt: Date.now() - 1 });
    const provider = new OAuthTokenProvider({
      store,
      connectionId: 'short',
      allowNonPublic: loopback,
    });
    const fresh = await provider.getToken();
    expect(fresh).not.toBe(record.accessToken);
    const rotated = await store.get('short');
    // A refused refresh (the rotated-out token, replayed) never loses the stored token.
    await store.update(
      'short',
      (current) => current && { ...current, refreshToken: record.refreshToken, expiresAt: 0 },
    );
    const refused = await provider.getToken().catch((error: unknown) => error);
    expect(AuthorizationRequiredError.isInstance(refused)).toBe(true);
    expect((refused as AuthorizationRequiredError).reason).toBe('refresh-failed');
    expect((await store.get('short'))?.accessToken).toBe(rotated?.accessToken);
  });
});
