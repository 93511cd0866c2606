import { createHash, createPublicKey, verify } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ConnectionRecord,
  McpClient,
  MemoryConnectionStore,
  OAuthTokenProvider,
  refreshConnection,
  refreshOAuth,
} from '../src/index.js';
import { DpopKey } from '../src/oauth/dpop.js';
import { OAuthResourceMismatchError } from '../src/oauth/errors.js';
import type { DpopKeyRecord } from '../src/store/connection-store.js';
import type { McpAuthHeaders } from '../src/transport/auth-provider.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const MCP = 'https://mcp.example/mcp';

function decode(proof: string): {
  header: Record<string, unknown> & { jwk: Record<string, string> };
  payload: Record<string, unknown>;
} {
  const [h, p] = proof.split('.');
  return {
    header: JSON.parse(Buffer.from(h as string, 'base64url').toString('utf8')),
    payload: JSON.parse(Buffer.from(p as string, 'base64url').toString('utf8')),
  };
}

let server: ScriptedOAuthServer;
let store: MemoryConnectionStore;
let keyRecord: DpopKeyRecord;
let tokenRequests: { dpop: string | undefined }[];
beforeEach(async () => {
  server = await startScriptedOAuthServer();
  store = new MemoryConnectionStore();
  keyRecord = (await DpopKey.generate()).record;
  tokenRequests = [];
  server.metadata.dpop_signing_alg_values_supported = ['ES256'];
  server.token.token_type = 'DPoP';
  server.routes.set('POST /token', (request, response) => {
    tokenRequests.push({ dpop: request.headers.dpop as string | undefined });
    sendJson(response, 200, server.token);
  });
});
afterEach(async () => {
  await server.close();
});

async function seed(overrides: Partial<ConnectionRecord> = {}): Promise<OAuthTokenProvider> {
  await store.put({
    id: 'c',
    // The MCP server the provider's requests go to (the token is sent nowhere else).
    url: MCP,
    issuer: server.issuer,
    resource: server.url,
    clientId: 'client-1',
    tokenAuthMethod: 'none',
    accessToken: 'dpop-access',
    refreshToken: 'dpop-refresh',
    tokenType: 'DPoP',
    dpopKey: keyRecord,
    expiresAt: Date.now() + 3_600_000,
    ...overrides,
  });
  return new OAuthTokenProvider({ store, connectionId: 'c', allowNonPublic: loopback });
}

function refresh(overrides: Record<string, unknown> = {}) {
  return refreshOAuth({
    refreshToken: 'r',
    clientId: 'client-1',
    tokenAuthMethod: 'none',
    issuer: server.issuer,
    resource: server.url,
    allowNonPublic: loopback,
    dpopKey: keyRecord,
    ...overrides,
  });
}

const nonceChallenge = (nonce?: string) => ({
  status: 401,
  url: MCP,
  attempt: 1,
  wwwAuthenticate: 'DPoP error="use_dpop_nonce"',
  dpopNonce: nonce,
});

/** The provider's headers for a request that has a credential. */
async function auth(
  provider: OAuthTokenProvider,
  method: string,
  url: string,
): Promise<McpAuthHeaders> {
  return (await provider.headers({ method, url })) as McpAuthHeaders;
}

interface Row {
  readonly name: string;
  readonly run: () => Promise<void>;
}

const rows: Row[] = [
  {
    name: 'proof reuse: every request gets a fresh jti and a current iat',
    run: async () => {
      const provider = await seed();
      const a = decode((await auth(provider, 'POST', MCP)).dpop as string);
      const b = decode((await auth(provider, 'POST', MCP)).dpop as string);
      expect(a.payload.jti).not.toBe(b.payload.jti);
      expect(String(a.payload.jti).length).toBeGreaterThanOrEqual(22);
      expect(Math.abs((a.payload.iat as number) - Date.now() / 1000)).toBeLessThan(5);
    },
  },
  {
    name: 'wrong htu: the query and fragment never reach htu',
    run: async () => {
      const provider = await seed();
      const { dpop } = await auth(provider, 'POST', `${MCP}?tenant=a#frag`);
      expect(decode(dpop as string).payload.htu).toBe(MCP);
    },
  },
  {
    name: 'wrong htm: GET and DELETE proofs name their method',
    run: async () => {
      const provider = await seed();
      for (const method of ['GET', 'DELETE']) {
        const { dpop } = await auth(provider, method, MCP);
        expect(decode(dpop as string).payload.htm).toBe(method);
      }
    },
  },
  {
    name: 'missing ath: a resource proof binds the SHA-256 of the presented token',
    run: async () => {
      const provider = await seed();
      const headers = await auth(provider, 'POST', MCP);
      expect(headers.authorization).toBe('DPoP dpop-access');
      expect(decode(headers.dpop as string).payload.ath).toBe(
        createHash('sha256').update('dpop-access').digest('base64url'),
      );
    },
  },
  {
    name: 'the proof carries the public key only and verifies with it (ES256)',
    run: async () => {
      const provider = await seed();
      const proof = (await auth(provider, 'POST', MCP)).dpop as string;
      const { header } = decode(proof);
      expect(header).toMatchObject({ typ: 'dpop+jwt', alg: 'ES256' });
      expect(header.jwk.d).toBeUndefined();
      const [h, p, signature] = proof.split('.');
      const key = createPublicKey({ key: header.jwk, format: 'jwk' });
      expect(
        verify(
          'sha256',
          Buffer.from(`${h}.${p}`),
          { key, dsaEncoding: 'ieee-p1363' },
          Buffer.from(signature as string, 'base64url'),
        ),
      ).toBe(true);
      expect(proof).not.toContain(keyRecord.privateJwk.d as string);
    },
  },
  {
    name: 'a DPoP token offered as Bearer: getToken() refuses',
    run: async () => {
      const provider = await seed();
      await expect(provider.getToken()).rejects.toMatchObject({
        code: 'OAUTH_DPOP_FAILED',
        reason: 'bearer-refused',
      });
    },
  },
  {
    name: 'a DPoP token offered as Bearer: token() refuses',
    run: async () => {
      const provider = await seed();
      await expect(provider.token()).rejects.toMatchObject({ reason: 'bearer-refused' });
    },
  },
  {
    name: 'a Bearer token is sent as Bearer without a proof',
    run: async () => {
      const provider = await seed({ tokenType: 'Bearer' });
      expect(await auth(provider, 'POST', MCP)).toEqual({
        authorization: 'Bearer dpop-access',
      });
    },
  },
  {
    name: 'a Bearer token is never upgraded when the server starts demanding DPoP',
    run: async () => {
      const provider = await seed({ tokenType: 'Bearer' });
      await auth(provider, 'POST', MCP);
      await expect(
        provider.onChallenge({
          status: 401,
          url: MCP,
          attempt: 1,
          wwwAuthenticate: 'DPoP error="invalid_token"',
        }),
      ).rejects.toMatchObject({ code: 'OAUTH_AUTHORIZATION_REQUIRED', reason: 'dpop-required' });
      expect(tokenRequests).toEqual([]);
    },
  },
  {
    name: 'a DPoP nonce challenge to a Bearer request asks for a new authorization, not an upgrade',
    run: async () => {
      const provider = await seed({ tokenType: 'Bearer' });
      await auth(provider, 'POST', MCP);
      await expect(provider.onChallenge(nonceChallenge('n-1'))).rejects.toMatchObject({
        code: 'OAUTH_AUTHORIZATION_REQUIRED',
        reason: 'dpop-required',
      });
    },
  },
  {
    name: 'key missing after reopen: a DPoP token without its key is never sent',
    run: async () => {
      const provider = await seed({ dpopKey: undefined });
      await expect(auth(provider, 'POST', MCP)).rejects.toMatchObject({
        code: 'OAUTH_AUTHORIZATION_REQUIRED',
        reason: 'dpop-key-missing',
      });
    },
  },
  {
    name: 'key missing after reopen: the refresh token is not sent either',
    run: async () => {
      await seed({ dpopKey: undefined });
      await expect(
        refreshConnection(store, 'c', { allowNonPublic: loopback }),
      ).rejects.toMatchObject({
        reason: 'dpop-key-missing',
      });
      expect(tokenRequests).toEqual([]);
    },
  },
  {
    name: 'a corrupted key (wrong curve) is refused without echoing it',
    run: async () => {
      const provider = await seed({
        dpopKey: { privateJwk: { ...keyRecord.privateJwk, crv: 'P-384' } },
      });
      const failure = await auth(provider, 'POST', MCP).catch((e: unknown) => e);
      expect(failure).toMatchObject({ code: 'OAUTH_DPOP_FAILED', reason: 'invalid-key' });
      expect(JSON.stringify(failure)).not.toContain(keyRecord.privateJwk.d as string);
    },
  },
  {
    name: 'MCP server nonce loop: a second use_dpop_nonce in a row is an error',
    run: async () => {
      const provider = await seed();
      await auth(provider, 'POST', MCP);
      expect(await provider.onChallenge(nonceChallenge('n-1'))).toBe(true);
      await expect(
        provider.onChallenge({
          ...nonceChallenge('n-2'),
          attempt: 2,
          previous: { status: 401, wwwAuthenticate: 'DPoP error="use_dpop_nonce"' },
        }),
      ).rejects.toMatchObject({ code: 'OAUTH_DPOP_FAILED', reason: 'nonce-loop' });
    },
  },
  {
    name: 'MCP server nonce challenge without a DPoP-Nonce header is an error',
    run: async () => {
      const provider = await seed();
      await auth(provider, 'POST', MCP);
      await expect(provider.onChallenge(nonceChallenge(undefined))).rejects.toMatchObject({
        reason: 'nonce-missing',
      });
    },
  },
  {
    name: 'a nonce with characters RFC 9449 forbids (quote, space) is not used',
    run: async () => {
      const provider = await seed();
      await auth(provider, 'POST', MCP);
      await expect(provider.onChallenge(nonceChallenge('a "b'))).rejects.toMatchObject({
        reason: 'nonce-missing',
      });
    },
  },
  {
    name: 'the latest nonce per origin is used, and only for that origin',
    run: async () => {
      // An origin-level resource: the token serves every path of mcp.example.
      const provider = await seed({ resource: 'https://mcp.example/' });
      await auth(provider, 'POST', MCP);
      provider.onResponse({ url: MCP, status: 200, dpopNonce: 'first' });
      provider.onResponse({ url: MCP, status: 200, dpopNonce: 'second' });
      const same = await auth(provider, 'POST', `${MCP}/other`);
      expect(decode(same.dpop as string).payload.nonce).toBe('second');
      // Another origin never gets the token (nor a proof, nor the nonce).
      await expect(auth(provider, 'POST', 'https://elsewhere.example/mcp')).rejects.toBeInstanceOf(
        OAuthResourceMismatchError,
      );
    },
  },
  {
    name: 'authorization server nonce loop: two token requests, then an error',
    run: async () => {
      server.routes.set('POST /token', (request, response) => {
        tokenRequests.push({ dpop: request.headers.dpop as string | undefined });
        sendJson(
          response,
          400,
          { error: 'use_dpop_nonce' },
          { 'dpop-nonce': `n${tokenRequests.length}` },
        );
      });
      await expect(refresh()).rejects.toMatchObject({
        code: 'OAUTH_DPOP_FAILED',
        reason: 'nonce-loop',
      });
      expect(tokenRequests).toHaveLength(2);
      expect(decode(tokenRequests[1]?.dpop as string).payload.nonce).toBe('n1');
    },
  },
  {
    name: 'authorization server downgrade: a Bearer answer to a DPoP request is refused',
    run: async () => {
      server.token.token_type = 'Bearer';
      await expect(refresh()).rejects.toMatchObject({
        code: 'OAUTH_DPOP_FAILED',
        reason: 'not-bound',
      });
    },
  },
  {
    name: 'a DPoP answer to a request without a proof is refused',
    run: async () => {
      await expect(refresh({ dpopKey: undefined })).rejects.toMatchObject({
        code: 'OAUTH_RESPONSE_INVALID',
      });
      expect(tokenRequests[0]?.dpop).toBeUndefined();
    },
  },
  {
    name: 'an authorization server without ES256 proofs is refused before the refresh token is sent',
    run: async () => {
      server.metadata.dpop_signing_alg_values_supported = ['RS256'];
      await expect(refresh()).rejects.toMatchObject({ reason: 'unsupported-algorithm' });
      expect(tokenRequests).toEqual([]);
    },
  },
  {
    name: 'token request proofs carry no ath and the token endpoint as htu',
    run: async () => {
      await refresh();
      const { payload } = decode(tokenRequests[0]?.dpop as string);
      expect(payload).toMatchObject({ htm: 'POST', htu: `${server.origin}/token` });
      expect(payload.ath).toBeUndefined();
    },
  },
  {
    name: 'a fixed DPoP header from the host is refused',
    run: async () => {
      expect(() => new McpClient({ url: MCP, headers: { DPoP: 'forged' } })).toThrow(
        expect.objectContaining({ code: expect.stringMatching(/CONFIGURATION/) }),
      );
    },
  },
];

describe('DPoP adversarial table', () => {
  it.each(rows)('$name', async ({ run }) => {
    await run();
  });
});
