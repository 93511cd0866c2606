import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizeConnection,
  completeConnection,
  findAuthorizationRequired,
  McpClient,
  OAuthTokenProvider,
} from '../src/index.js';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import { type OAuthPeer, startOAuthPeer } from './fixtures/oauth-peer.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

describe('DPoP against oidc-provider 9 (nonces required) and an SDK MCP server that checks proofs', () => {
  let peer: OAuthPeer;
  let folder: string;
  beforeAll(async () => {
    peer = await startOAuthPeer({ dpop: { rotateEvery: 2 }, accessTokenTtl: 300 });
    folder = await mkdtemp(join(tmpdir(), 'oauth-dpop-'));
  });
  afterAll(async () => {
    await peer.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('authorizes with a DPoP-bound token, follows nonce rotation, refreshes, and keeps the key across reopening', {
    timeout: 60_000,
  }, async () => {
    const path = join(folder, 'connections.db');
    const key = randomBytes(32);
    let store = new SqliteConnectionStore({ path, key });
    const provider = (current: SqliteConnectionStore) =>
      new OAuthTokenProvider({
        store: current,
        connectionId: 'peer',
        url: peer.mcpUrl,
        allowNonPublic: loopback,
      });
    const open = (current: SqliteConnectionStore) =>
      new McpClient({
        url: peer.mcpUrl,
        authProvider: provider(current),
        allowNonPublic: loopback,
      });
    try {
      // No credential yet: the request goes without one; the DPoP challenge asks for authorization.
      const first = open(store);
      const refused = await first.tools().catch((error: unknown) => error);
      await first.close();
      expect(findAuthorizationRequired(refused)?.reason).toBe('no-token');

      // The resource requires DPoP-bound tokens: the flow uses DPoP without being asked to.
      const { authorizeUrl } = await authorizeConnection(store, 'peer', {
        url: peer.mcpUrl,
        redirectUri: peer.redirectUri,
        allowNonPublic: loopback,
      });
      const record = await completeConnection(store, 'peer', await peer.authorize(authorizeUrl), {
        allowNonPublic: loopback,
      });
      expect(record.tokenType).toBe('DPoP');
      // oidc-provider asked for its nonce first (use_dpop_nonce), then issued on the retry.
      expect(peer.tokenRequests.authorization_code).toBe(2);
      expect(record.dpopKey?.privateJwk.crv).toBe('P-256');

      const client = open(store);
      try {
        expect((await client.tools()).map((tool) => tool.name).sort()).toEqual(['admin', 'echo']);
        for (let call = 0; call < 5; call += 1) {
          const echoed = await client.callTool('echo', { text: `hello ${call}` });
          expect(echoed.content).toEqual([{ type: 'text', text: `hello ${call}` }]);
        }
        // The server changes its nonce without announcing it: one use_dpop_nonce, one retry.
        const challengesBefore = peer.dpop.nonceChallenges;
        peer.rotateNonceSilently();
        await client.callTool('echo', { text: 'after rotation' });
        expect(peer.dpop.nonceChallenges).toBe(challengesBefore + 1);
      } finally {
        await client.close();
      }
      expect(peer.dpop.rotations).toBeGreaterThan(0);

      // Expired: the refresh carries a proof too, and the token stays DPoP-bound.
      await store.update('peer', (current) => current && { ...current, expiresAt: Date.now() - 1 });
      const refreshing = open(store);
      try {
        await refreshing.callTool('echo', { text: 'refreshed' });
      } finally {
        await refreshing.close();
      }
      expect(peer.tokenRequests.refresh_token).toBeGreaterThanOrEqual(1);
      const refreshed = await store.get('peer');
      expect(refreshed?.tokenType).toBe('DPoP');
      expect(refreshed?.accessToken).not.toBe(record.accessToken);

      // Reopened: the key comes back from the encrypted payload and still matches cnf.jkt.
      store.close();
      store = new SqliteConnectionStore({ path, key });
      const reopened = open(store);
      try {
        await reopened.callTool('echo', { text: 'reopened' });
      } finally {
        await reopened.close();
      }
      expect(peer.dpop.refusals).toEqual([]);
      expect(peer.dpop.accepted).toBeGreaterThan(8);
      expect(peer.toolCalls.filter((name) => name === 'echo')).toHaveLength(8);
    } finally {
      store.close();
    }
  });
});
