// The gateway as an OAuth protected resource, attacked: every row is a token (or a key server)
// an attacker or a broken authorization server could present. A scripted authorization server on
// loopback publishes RFC 8414 metadata and a JWKS; tokens are signed with jose.

import { compilePrincipalMatcher } from '@toolfence/tools';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import {
  checkHttpAuthSettings,
  type GatewayHttpAuthSettings,
} from '../src/gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../src/gateway/identity/resource-server.js';
import {
  type ScriptedOAuthServer,
  sendChunkedJson,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const RESOURCE = 'https://gateway.example.com/mcp';
const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
let server: ScriptedOAuthServer;
let signing: KeyPair;
let published: JWK[];
let jwksFetches: number;

async function publicJwk(pair: KeyPair, kid: string): Promise<JWK> {
  return { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' };
}

beforeEach(async () => {
  server = await startScriptedOAuthServer();
  server.metadata.jwks_uri = `${server.origin}/jwks`;
  signing = await generateKeyPair('RS256', { extractable: true });
  published = [await publicJwk(signing, 'key-1')];
  jwksFetches = 0;
  server.routes.set('GET /jwks', (_request, response) => {
    jwksFetches += 1;
    sendJson(response, 200, { keys: published });
  });
});
afterEach(async () => {
  await server.close();
});

function resourceServer(settings: Partial<GatewayHttpAuthSettings> = {}, now?: () => number) {
  return new GatewayResourceServer({
    ...(now === undefined ? {} : { now }),
    settings: checkHttpAuthSettings({
      resource: RESOURCE,
      authorizationServers: [server.issuer],
      ...settings,
    }),
    allowNonPublic: loopback,
  });
}

const now = () => Math.floor(Date.now() / 1000);

function claims(overrides: Record<string, unknown> = {}): JWTPayload {
  const payload: Record<string, unknown> = {
    iss: server.issuer,
    aud: RESOURCE,
    sub: 'alice',
    exp: now() + 300,
    iat: now(),
    scope: 'mcp:tools',
    groups: ['engineering'],
    ...overrides,
  };
  // An override to undefined leaves the claim out.
  for (const [name, value] of Object.entries(payload))
    if (value === undefined) delete payload[name];
  return payload as JWTPayload;
}

async function sign(
  payload: JWTPayload = claims(),
  key: KeyPair = signing,
  kid = 'key-1',
): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
    .sign(key.privateKey);
}

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Row {
  readonly name: string;
  readonly header: () => Promise<string | undefined>;
  readonly settings?: Partial<GatewayHttpAuthSettings>;
  readonly status: 401 | 403 | 503;
  readonly error: string | undefined;
  readonly reason?: string;
}

describe('the gateway as a protected resource refuses', () => {
  it.each<Row>([
    { name: 'a missing token', header: async () => undefined, status: 401, error: undefined },
    {
      name: 'another scheme (Basic)',
      header: async () => 'Basic YWxpY2U6c2VjcmV0',
      status: 401,
      error: undefined,
    },
    {
      name: 'a malformed header (two tokens)',
      header: async () => `Bearer ${await sign()} extra`,
      status: 401,
      error: 'invalid_token',
      reason: 'malformed',
    },
    {
      name: 'a token that is not a JWT',
      header: async () => 'Bearer opaque-token-value',
      status: 401,
      error: 'invalid_token',
      reason: 'malformed',
    },
    {
      name: 'a wrong issuer',
      header: async () => `Bearer ${await sign(claims({ iss: 'https://evil.example.com' }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'issuer',
    },
    {
      name: 'an issuer that differs by a trailing slash',
      header: async () => `Bearer ${await sign(claims({ iss: `${server.issuer}/` }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'issuer',
    },
    {
      name: 'a wrong audience',
      header: async () => `Bearer ${await sign(claims({ aud: 'https://other.example.com/mcp' }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'audience',
    },
    {
      name: 'no audience',
      header: async () => `Bearer ${await sign(claims({ aud: undefined }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'audience',
    },
    {
      name: 'alg none',
      header: async () => `Bearer ${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims())}.`,
      status: 401,
      error: 'invalid_token',
      reason: 'algorithm',
    },
    {
      name: 'an HMAC token signed with the public key as the secret',
      header: async () => {
        const pem = await exportSPKI(signing.publicKey);
        const token = await new SignJWT(claims())
          .setProtectedHeader({ alg: 'HS256', kid: 'key-1' })
          .sign(new TextEncoder().encode(pem));
        return `Bearer ${token}`;
      },
      status: 401,
      error: 'invalid_token',
      reason: 'algorithm',
    },
    {
      name: 'an expired token (past the clock skew)',
      header: async () => `Bearer ${await sign(claims({ exp: now() - 120 }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'expired',
    },
    {
      name: 'a token not yet valid (nbf past the clock skew)',
      header: async () => `Bearer ${await sign(claims({ nbf: now() + 120 }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'not-yet-valid',
    },
    {
      name: 'a token without exp',
      header: async () => `Bearer ${await sign(claims({ exp: undefined }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'malformed',
    },
    {
      name: 'a token signed by an unknown key',
      header: async () => `Bearer ${await sign(claims(), await generateKeyPair('RS256'), 'key-1')}`,
      status: 401,
      error: 'invalid_token',
      reason: 'signature',
    },
    {
      name: 'a token naming an unknown key id',
      header: async () =>
        `Bearer ${await sign(claims(), await generateKeyPair('RS256'), 'stranger')}`,
      status: 401,
      error: 'invalid_token',
      reason: 'unknown-key',
    },
    {
      name: 'a tampered payload',
      header: async () => {
        const [head, , signature] = (await sign()).split('.');
        return `Bearer ${head}.${encode(claims({ sub: 'admin' }))}.${signature}`;
      },
      status: 401,
      error: 'invalid_token',
      reason: 'signature',
    },
    {
      name: 'a token without a subject',
      header: async () => `Bearer ${await sign(claims({ sub: undefined }))}`,
      status: 401,
      error: 'invalid_token',
      reason: 'no-subject',
    },
    {
      name: 'an insufficient scope',
      header: async () => `Bearer ${await sign(claims({ scope: 'mcp:read' }))}`,
      settings: { requiredScopes: ['mcp:tools'] },
      status: 403,
      error: 'insufficient_scope',
      reason: 'insufficient-scope',
    },
    {
      name: 'a JWKS endpoint that is slow (fetchTimeoutMs)',
      header: async () => {
        server.routes.set('GET /jwks', async (_request, response) => {
          await new Promise((resolve) => setTimeout(resolve, 3_000));
          sendJson(response, 200, { keys: published });
        });
        return `Bearer ${await sign()}`;
      },
      settings: { fetchTimeoutMs: 300 },
      status: 503,
      error: 'temporarily_unavailable',
    },
    {
      name: 'a JWKS endpoint that is huge (fetchMaxBytes)',
      header: async () => {
        server.routes.set('GET /jwks', (_request, response) =>
          sendChunkedJson(response, 1_048_576),
        );
        return `Bearer ${await sign()}`;
      },
      settings: { fetchMaxBytes: 4_096 },
      status: 503,
      error: 'temporarily_unavailable',
    },
    {
      name: 'a JWKS that only holds a symmetric key',
      header: async () => {
        published = [{ kty: 'oct', k: Buffer.from('secret').toString('base64url'), kid: 'key-1' }];
        return `Bearer ${await sign()}`;
      },
      status: 401,
      error: 'invalid_token',
      reason: 'unknown-key',
    },
  ])(
    '$name',
    async ({ header, settings, status, error, reason }) => {
      const value = await header();
      const answer = await resourceServer(settings).authenticate(value);
      expect(answer.ok).toBe(false);
      if (answer.ok) return;
      expect(answer.status).toBe(status);
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      expect(body.error).toBe(error);
      if (status !== 503) {
        const challenge = answer.headers['www-authenticate'] ?? '';
        expect(challenge).toMatch(/^Bearer /);
        expect(challenge).toContain(
          'resource_metadata="https://gateway.example.com/.well-known/oauth-protected-resource/mcp"',
        );
        if (error === undefined) expect(challenge).not.toContain('error=');
        else expect(challenge).toContain(`error="${error}"`);
      }
      if (reason !== undefined) expect(body.error_description).toBeTypeOf('string');
      // Never the token in what the caller is told.
      const token = value?.split(' ')[1];
      if (token !== undefined && token.length > 20) {
        expect(JSON.stringify(answer)).not.toContain(token);
      }
    },
    20_000,
  );
});

describe('the gateway as a protected resource', () => {
  it('accepts a valid token and makes the caller a principal with the selected claims', async () => {
    const answer = await resourceServer().authenticate(
      `Bearer ${await sign(claims({ roles: 'reviewer', email: 'alice@example.com' }))}`,
    );
    expect(answer).toMatchObject({
      ok: true,
      principal: {
        issuer: server.issuer,
        subject: 'alice',
        claims: { groups: ['engineering'], roles: 'reviewer', scope: ['mcp:tools'] },
      },
      scopes: ['mcp:tools'],
    });
    if (answer.ok) expect(answer.principal.claims).not.toHaveProperty('email');
  });

  it('tolerates an expiry within the clock skew', async () => {
    const token = await sign(claims({ exp: now() - 5 }));
    expect((await resourceServer().authenticate(`Bearer ${token}`)).ok).toBe(true);
    expect((await resourceServer({ clockSkewMs: 0 }).authenticate(`Bearer ${token}`)).ok).toBe(
      false,
    );
  });

  it('accepts a rotated key after fetching the JWKS again, at most once per jwksMinRefetchMs', async () => {
    let clock = Date.now();
    const gateway = resourceServer({ jwksMinRefetchMs: 60_000 }, () => clock);
    expect((await gateway.authenticate(`Bearer ${await sign()}`)).ok).toBe(true);
    expect(jwksFetches).toBe(1);
    // Within jwksMinRefetchMs of that fetch, an unknown kid is refused without a fetch.
    const early = await generateKeyPair('RS256');
    expect((await gateway.authenticate(`Bearer ${await sign(claims(), early, 'key-0')}`)).ok).toBe(
      false,
    );
    expect(jwksFetches).toBe(1);
    clock += 61_000;
    // The issuer rotates: a new key, published beside the old one.
    const next = await generateKeyPair('RS256', { extractable: true });
    published = [await publicJwk(next, 'key-2'), ...published];
    expect((await gateway.authenticate(`Bearer ${await sign(claims(), next, 'key-2')}`)).ok).toBe(
      true,
    );
    expect(jwksFetches).toBe(2);
    // Another unknown kid right after: refused without a fetch (a flood of made-up kids does not
    // become a flood of fetches).
    const stranger = await generateKeyPair('RS256');
    const refused = await gateway.authenticate(`Bearer ${await sign(claims(), stranger, 'key-3')}`);
    expect(refused.ok).toBe(false);
    expect(jwksFetches).toBe(2);
    // Cached keys serve the next valid token without a fetch.
    expect((await gateway.authenticate(`Bearer ${await sign()}`)).ok).toBe(true);
    expect(jwksFetches).toBe(2);
  });

  it('fetches the keys through the network guard: a public-only gateway does not reach loopback', async () => {
    const gateway = new GatewayResourceServer({
      settings: checkHttpAuthSettings({
        resource: RESOURCE,
        authorizationServers: [server.issuer],
      }),
    });
    const answer = await gateway.authenticate(`Bearer ${await sign()}`);
    expect(answer).toMatchObject({ ok: false, status: 503 });
    expect(server.requests).toEqual([]);
  });

  it('serves RFC 9728 metadata at the path-suffixed and root well-known paths', () => {
    const gateway = resourceServer({ requiredScopes: ['mcp:tools'] });
    expect(gateway.isMetadataPath('/.well-known/oauth-protected-resource/mcp')).toBe(true);
    expect(gateway.isMetadataPath('/.well-known/oauth-protected-resource')).toBe(true);
    expect(gateway.metadata()).toMatchObject({
      resource: RESOURCE,
      authorization_servers: [server.issuer],
      scopes_supported: ['mcp:tools'],
      bearer_methods_supported: ['header'],
    });
  });

  it.each<[string, Record<string, unknown>]>([
    ['an unknown key', { audience: RESOURCE }],
    ['no resource', { resource: undefined }],
    ['no authorization server', { authorizationServers: [] }],
    ['alg none', { algorithms: ['none'] }],
    ['an HMAC algorithm', { algorithms: ['RS256', 'HS256'] }],
    ['a clock skew over five minutes', { clockSkewMs: 600_000 }],
    ['a resource with a fragment', { resource: `${RESOURCE}#x` }],
    ['principalClaimMaxValues 0', { principalClaimMaxValues: 0 }],
    ['principalClaimMaxValues over 10,000', { principalClaimMaxValues: 10_001 }],
    ['principalClaimMaxChars not a whole number', { principalClaimMaxChars: 2.5 }],
    ['principalClaimMaxChars over 8,192', { principalClaimMaxChars: 8_193 }],
  ])('refuses a config with %s', (_name, change) => {
    expect(() =>
      checkHttpAuthSettings({
        resource: RESOURCE,
        authorizationServers: ['https://as.example.com'],
        ...change,
      }),
    ).toThrow(/gateway\.httpAuth/);
  });

  it('checks resolved settings again to the same settings (the CLI checks the parsed config)', () => {
    const once = checkHttpAuthSettings({
      resource: RESOURCE,
      authorizationServers: ['https://as.example.com'],
    });
    expect(checkHttpAuthSettings(once)).toEqual(once);
  });

  it('is read from the gateway config, and refused beside httpToken or with an unknown key', () => {
    const servers = { a: { command: 'node' } };
    const httpAuth = { resource: RESOURCE, authorizationServers: ['https://as.example.com'] };
    expect(
      parseGatewayConfig({ mcpServers: servers, gateway: { httpAuth } }).gateway.httpAuth,
    ).toMatchObject({
      ...httpAuth,
      clockSkewMs: 30_000,
      jwksMinRefetchMs: 30_000,
      principalClaimMaxValues: 256,
      principalClaimMaxChars: 256,
    });
    expect(() =>
      parseGatewayConfig({
        mcpServers: servers,
        gateway: { httpAuth, httpToken: 'a-test-token-of-32-characters-xx' },
      }),
    ).toThrow(/not both/);
    expect(() =>
      parseGatewayConfig({
        mcpServers: servers,
        gateway: { httpAuth: { ...httpAuth, issuer: 'https://as.example.com' } },
      }),
    ).toThrow(/unknown key "issuer"/);
  });
});

describe('the scopes a rule reads are the scopes requiredScopes reads', () => {
  // A deny rule on { claims: { scope: 'readonly' } } must hold whether the token says `scope`
  // (RFC 9068) or `scp` (a list, as Entra ID and Okta put it, or a string).
  const readOnly = compilePrincipalMatcher({ claims: { scope: 'readonly' } }, 'rule');
  const readOnlyScp = compilePrincipalMatcher({ claims: { scp: 'readonly' } }, 'rule');

  it.each<[string, Record<string, unknown>]>([
    ['scope as a string', { scope: 'mcp:tools readonly' }],
    ['scp as a list', { scope: undefined, scp: ['mcp:tools', 'readonly'] }],
    ['scp as a string', { scope: undefined, scp: 'mcp:tools readonly' }],
  ])(
    "%s: the principal's scope is the normalised list, and the deny matches",
    async (_name, given) => {
      const answer = await resourceServer({
        requiredScopes: ['mcp:tools'],
        principalClaims: ['groups', 'scope', 'scp'],
      }).authenticate(`Bearer ${await sign(claims(given))}`);
      expect(answer.ok).toBe(true);
      if (!answer.ok) return;
      expect(answer.scopes).toEqual(['mcp:tools', 'readonly']);
      expect(answer.principal.claims.scope).toEqual(['mcp:tools', 'readonly']);
      // A rule on scp sees the same list (never a raw scp the scope rule would miss).
      expect(answer.principal.claims.scp).toEqual(['mcp:tools', 'readonly']);
      expect(readOnly(answer.principal)).toBe(true);
      expect(readOnlyScp(answer.principal)).toBe(true);
    },
  );

  it('with scope and scp both present, both rules read scope, as requiredScopes does', async () => {
    const answer = await resourceServer({ principalClaims: ['scope', 'scp'] }).authenticate(
      `Bearer ${await sign(claims({ scope: 'mcp:tools', scp: ['readonly'] }))}`,
    );
    expect(answer).toMatchObject({
      ok: true,
      scopes: ['mcp:tools'],
      principal: { claims: { scope: ['mcp:tools'], scp: ['mcp:tools'] } },
    });
  });

  it('a token with neither has no scope claim (a rule on scope does not match it)', async () => {
    const answer = await resourceServer().authenticate(
      `Bearer ${await sign(claims({ scope: undefined }))}`,
    );
    expect(answer.ok && answer.principal.claims).not.toHaveProperty('scope');
  });
});

/** A token like {@link sign}'s with the header's typ `typ` (undefined: none). */
async function signTyped(typ: string | undefined, payload: JWTPayload = claims()): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid: 'key-1', ...(typ === undefined ? {} : { typ }) })
    .sign(signing.privateKey);
}

describe('token kind (typ) and issue time (iat)', () => {
  it.each(['id+jwt', 'dpop+jwt', 'logout+jwt', 'secevent+jwt', 'application/id+jwt', 'JOSE+JSON'])(
    'refuses a token whose typ is %s (another kind of token), naming typ',
    async (typ) => {
      const answer = await resourceServer().authenticate(`Bearer ${await signTyped(typ)}`);
      expect(answer).toMatchObject({ ok: false, status: 401, code: 'GATEWAY_TOKEN_REFUSED' });
      if (answer.ok) return;
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'invalid_token' });
      expect(answer.description).toContain('(typ)');
    },
  );

  it.each([undefined, 'JWT', 'jwt', 'at+jwt', 'AT+JWT', 'application/at+jwt'])(
    'accepts typ %s by default',
    async (typ) => {
      expect((await resourceServer().authenticate(`Bearer ${await signTyped(typ)}`)).ok).toBe(true);
    },
  );

  it('with requireAccessTokenType, accepts only at+jwt (RFC 9068)', async () => {
    const strict = resourceServer({ requireAccessTokenType: true });
    for (const typ of ['at+jwt', 'application/at+jwt']) {
      expect((await strict.authenticate(`Bearer ${await signTyped(typ)}`)).ok).toBe(true);
    }
    for (const typ of [undefined, 'JWT']) {
      const answer = await strict.authenticate(`Bearer ${await signTyped(typ)}`);
      expect(answer).toMatchObject({ ok: false, status: 401 });
      expect(answer.ok || answer.description).toContain('requireAccessTokenType');
    }
    expect(() =>
      checkHttpAuthSettings({
        resource: RESOURCE,
        authorizationServers: ['https://as.example.com'],
        requireAccessTokenType: 'yes',
      }),
    ).toThrow(/gateway\.httpAuth\.requireAccessTokenType: must be true or false/);
  });

  it.each([
    ['an hour ahead', 3_600],
    ['ten years ahead', 10 * 365 * 86_400],
    ['past the clock skew', 45],
  ])('refuses a token issued %s (iat in the future)', async (_name, ahead) => {
    const answer = await resourceServer().authenticate(
      `Bearer ${await sign(claims({ iat: now() + ahead }))}`,
    );
    expect(answer).toMatchObject({ ok: false, status: 401 });
    expect(answer.ok || answer.description).toContain('(iat)');
  });

  it('accepts an iat ahead within clockSkewMs, and refuses it with clockSkewMs 0', async () => {
    const token = await sign(claims({ iat: now() + 10 }));
    expect((await resourceServer().authenticate(`Bearer ${token}`)).ok).toBe(true);
    expect((await resourceServer({ clockSkewMs: 0 }).authenticate(`Bearer ${token}`)).ok).toBe(
      false,
    );
  });
});

describe('key fetches after the cache expires (jwksMinRefetchMs, jwksMaxStaleMs)', () => {
  /** The JWKS answers 500 from now on (still counted). */
  const failJwks = () =>
    server.routes.set('GET /jwks', (_request, response) => {
      jwksFetches += 1;
      sendJson(response, 500, { error: 'down' });
    });

  it('a failing refetch is tried at most once per jwksMinRefetchMs, and the last keys serve meanwhile', async () => {
    let clock = Date.now();
    const gateway = resourceServer(
      { jwksCacheMs: 1_000, jwksMinRefetchMs: 30_000, jwksMaxStaleMs: 120_000 },
      () => clock,
    );
    expect((await gateway.authenticate(`Bearer ${await sign()}`)).ok).toBe(true);
    expect(jwksFetches).toBe(1);
    failJwks();
    // Past jwksCacheMs and jwksMinRefetchMs since that fetch.
    clock += 31_000;
    // Twenty requests after the cache expired, the key server down: one fetch, and the keys held
    // still check the tokens (a forged one is still refused).
    const token = await sign();
    for (let index = 0; index < 20; index += 1) {
      expect((await gateway.authenticate(`Bearer ${token}`)).ok).toBe(true);
    }
    const forged = await sign(claims(), await generateKeyPair('RS256'), 'key-1');
    expect((await gateway.authenticate(`Bearer ${forged}`)).ok).toBe(false);
    expect(jwksFetches).toBe(2);
    clock += 31_000;
    expect((await gateway.authenticate(`Bearer ${token}`)).ok).toBe(true);
    expect(jwksFetches).toBe(3);
    // Past jwksCacheMs + jwksMaxStaleMs the held keys are not used any more: 503, still not a
    // fetch per request.
    clock += 120_000;
    for (let index = 0; index < 5; index += 1) {
      expect(await gateway.authenticate(`Bearer ${token}`)).toMatchObject({
        ok: false,
        status: 503,
      });
    }
    expect(jwksFetches).toBe(4);
    // The key server is back: the next fetch after the interval serves again.
    server.routes.set('GET /jwks', (_request, response) => {
      jwksFetches += 1;
      sendJson(response, 200, { keys: published });
    });
    clock += 31_000;
    expect((await gateway.authenticate(`Bearer ${token}`)).ok).toBe(true);
    expect(jwksFetches).toBe(5);
  });

  it('with jwksMaxStaleMs 0, expired keys are never used: 503, one fetch per jwksMinRefetchMs', async () => {
    let clock = Date.now();
    const gateway = resourceServer(
      { jwksCacheMs: 1_000, jwksMinRefetchMs: 30_000, jwksMaxStaleMs: 0 },
      () => clock,
    );
    expect((await gateway.authenticate(`Bearer ${await sign()}`)).ok).toBe(true);
    failJwks();
    clock += 31_000;
    const token = await sign();
    for (let index = 0; index < 10; index += 1) {
      expect(await gateway.authenticate(`Bearer ${token}`)).toMatchObject({
        ok: false,
        status: 503,
      });
    }
    expect(jwksFetches).toBe(2);
  });

  it('keys never fetched: a failed fetch is not retried within jwksMinRefetchMs', async () => {
    let clock = Date.now();
    failJwks();
    const gateway = resourceServer({ jwksMinRefetchMs: 30_000 }, () => clock);
    const token = await sign();
    for (let index = 0; index < 10; index += 1) {
      expect(await gateway.authenticate(`Bearer ${token}`)).toMatchObject({
        ok: false,
        status: 503,
      });
    }
    expect(jwksFetches).toBe(1);
    clock += 31_000;
    await gateway.authenticate(`Bearer ${token}`);
    expect(jwksFetches).toBe(2);
  });

  it('jwksMaxStaleMs defaults to 3,600,000 and is bounded', () => {
    const settings = checkHttpAuthSettings({
      resource: RESOURCE,
      authorizationServers: ['https://as.example.com'],
    });
    expect(settings.jwksMaxStaleMs).toBe(3_600_000);
    expect(() =>
      checkHttpAuthSettings({
        resource: RESOURCE,
        authorizationServers: ['https://as.example.com'],
        jwksMaxStaleMs: 86_400_001,
      }),
    ).toThrow(/gateway\.httpAuth\.jwksMaxStaleMs/);
  });
});

describe('a critical header parameter the gateway does not understand', () => {
  it('is refused as such (crit), not as an algorithm that is not accepted', async () => {
    // Signed by hand: jose refuses to sign a crit it does not know either.
    const input = `${encode({ alg: 'RS256', kid: 'key-1', crit: ['x-unknown'], 'x-unknown': 1 })}.${encode(claims())}`;
    const signature = await crypto.subtle.sign(
      'RSASSA-PKCS1-v1_5',
      signing.privateKey as Parameters<typeof crypto.subtle.sign>[1],
      new TextEncoder().encode(input),
    );
    const token = `${input}.${Buffer.from(signature).toString('base64url')}`;
    const answer = await resourceServer().authenticate(`Bearer ${token}`);
    expect(answer).toMatchObject({ ok: false, status: 401 });
    expect(answer.ok || answer.description).toContain('(crit)');
    expect(answer.ok || answer.description).not.toContain('algorithm');
  });
});
