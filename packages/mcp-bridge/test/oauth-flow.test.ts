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
} from '../src/oauth/index.js';
import { SqliteConnectionStore } from '../src/oauth/sqlite-connection-store.js';
import { type OAuthPeer, startOAuthPeer } from './fixtures/oauth-peer.js';

const loopback = (_url: URL, address: string): boolean => address === '127.0.0.1';

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
    expect(started.scope).toBe('mcp:tools');
    const authorize = new URL(started.authorizeUrl);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('resource')).toBe(peer.mcpUrl);
    expect(authorize.searchParams.get('scope')).toBe('mcp:tools');
    expect(authorize.searchParams.has('offline_access')).toBe(false);

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
});
