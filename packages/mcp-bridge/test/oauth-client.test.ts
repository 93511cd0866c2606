import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthorizationRequiredError,
  authorizeConnection,
  completeConnection,
  findAuthorizationRequired,
  McpClient,
  MemoryConnectionStore,
  OAuthTokenProvider,
} from '../src/index.js';
import type { McpAuthProvider } from '../src/transport/auth-provider.js';
import { type OAuthPeer, startOAuthPeer } from './fixtures/oauth-peer.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

describe('McpClient with the OAuth token provider against oidc-provider', () => {
  let peer: OAuthPeer;
  beforeAll(async () => {
    peer = await startOAuthPeer();
  });
  afterAll(async () => {
    await peer.close();
  });

  it('asks for authorization, then calls tools, refreshes on expiry and after a 401, and steps up on 403', async () => {
    const store = new MemoryConnectionStore();
    const provider: McpAuthProvider = new OAuthTokenProvider({
      store,
      connectionId: 'peer',
      url: peer.mcpUrl,
      allowNonPublic: loopback,
    });
    const open = () =>
      new McpClient({ url: peer.mcpUrl, authProvider: provider, allowNonPublic: loopback });

    const first = open();
    const refused = await first.tools().catch((error: unknown) => error);
    await first.close();
    const required = findAuthorizationRequired(refused);
    // The provider's error reaches the host as is, not wrapped by the transport.
    expect(AuthorizationRequiredError.isInstance(refused)).toBe(true);
    expect(required?.reason).toBe('no-token');
    expect(required?.url).toBe(peer.mcpUrl);

    const { authorizeUrl } = await authorizeConnection(store, 'peer', {
      url: required?.url,
      redirectUri: peer.redirectUri,
      allowNonPublic: loopback,
    });
    await completeConnection(store, 'peer', await peer.authorize(authorizeUrl), {
      allowNonPublic: loopback,
    });

    const client = open();
    try {
      const tools = await client.tools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['admin', 'echo']);
      const echoed = await client.callTool('echo', { text: 'hello' });
      expect(echoed.content).toEqual([{ type: 'text', text: 'hello' }]);

      // Expiry: the provider refreshes before sending.
      const before = peer.tokenRequests.refresh_token;
      await store.update('peer', (current) => current && { ...current, expiresAt: Date.now() });
      await client.callTool('echo', { text: 'after expiry' });
      expect(peer.tokenRequests.refresh_token - before).toBe(1);

      // A refused token (401): refresh once, retry, succeed.
      await store.update(
        'peer',
        (current) => current && { ...current, accessToken: 'revoked-token' },
      );
      const retried = await client.callTool('echo', { text: 'after 401' });
      expect(retried.content).toEqual([{ type: 'text', text: 'after 401' }]);
      expect(peer.tokenRequests.refresh_token - before).toBe(2);

      // 403 insufficient_scope: authorization required with the widened scope.
      const stepUp = await client.callTool('admin', {}).catch((error: unknown) => error);
      const widened = findAuthorizationRequired(stepUp);
      expect(widened?.reason).toBe('insufficient-scope');
      expect(widened?.scope).toBe('mcp:tools mcp:admin');
      expect(peer.toolCalls).not.toContain('admin');
    } finally {
      await client.close();
    }
  });

  it('takes oauth: { store, connectionId } directly', async () => {
    const store = new MemoryConnectionStore();
    const { authorizeUrl } = await authorizeConnection(store, 'direct', {
      url: peer.mcpUrl,
      redirectUri: peer.redirectUri,
      allowNonPublic: loopback,
    });
    await completeConnection(store, 'direct', await peer.authorize(authorizeUrl), {
      allowNonPublic: loopback,
    });
    const client = new McpClient({
      url: peer.mcpUrl,
      oauth: { store, connectionId: 'direct' },
      allowNonPublic: loopback,
    });
    try {
      const echoed = await client.callTool('echo', { text: 'direct' });
      expect(echoed.content).toEqual([{ type: 'text', text: 'direct' }]);
      const stepUp = await client.callTool('admin', {}).catch((error: unknown) => error);
      expect(findAuthorizationRequired(stepUp)?.reason).toBe('insufficient-scope');
    } finally {
      await client.close();
    }
  });

  it.each([
    ['oauth with token', { url: 'https://mcp.example/mcp', token: 't' }],
    [
      'oauth with authProvider',
      { url: 'https://mcp.example/mcp', authProvider: { token: () => 't' } },
    ],
    ['oauth for a stdio server', { command: ['node', '-e', '0'] }],
  ])('refuses %s', (_name, options) => {
    expect(
      () =>
        new McpClient({
          ...(options as object),
          oauth: { store: new MemoryConnectionStore(), connectionId: 'c' },
        }),
    ).toThrow(expect.objectContaining({ code: expect.stringMatching(/CONFIGURATION/) }));
  });
});
