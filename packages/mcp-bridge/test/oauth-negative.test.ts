import { createGuardedFetch } from '@toolfence/tools/net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  completeOAuth,
  OAuthError,
  parseAuthorizationCallback,
  refreshOAuth,
  type StartOAuthOptions,
  startOAuth,
  verifyState,
} from '../src/index.js';
import {
  type ScriptedOAuthServer,
  sendChunkedJson,
  sendGzipJson,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

let server: ScriptedOAuthServer;
beforeEach(async () => {
  server = await startScriptedOAuthServer();
});
afterEach(async () => {
  await server.close();
});

function start(options: Partial<StartOAuthOptions> = {}) {
  return startOAuth({
    url: server.url,
    redirectUri: REDIRECT_URI,
    allowNonPublic: loopback,
    ...options,
  });
}

function clientOptions() {
  return {
    clientId: 'client-1',
    clientSecret: 'secret-1',
    tokenAuthMethod: 'client_secret_basic' as const,
    issuer: server.issuer,
    resource: server.url,
    allowNonPublic: loopback,
  };
}

const PRM = 'GET /.well-known/oauth-protected-resource/mcp';
const ASM = 'GET /.well-known/oauth-authorization-server';

interface Attack {
  readonly name: string;
  readonly setup: (server: ScriptedOAuthServer) => void;
  readonly options?: (server: ScriptedOAuthServer) => Partial<StartOAuthOptions>;
  readonly code: string;
  readonly reason?: string;
  readonly message?: RegExp;
}

const startAttacks: Attack[] = [
  {
    name: 'issuer mix-up: metadata names another issuer',
    setup: (s) => {
      s.metadata.issuer = 'https://attacker.example';
    },
    code: 'OAUTH_ISSUER_MISMATCH',
    message: /another issuer/,
  },
  {
    name: 'issuer differs by a trailing slash',
    setup: (s) => {
      s.metadata.issuer = `${s.issuer}/`;
    },
    code: 'OAUTH_ISSUER_MISMATCH',
  },
  {
    name: 'resource mismatch: metadata names an ancestor of the MCP URL',
    setup: (s) => {
      s.prm.resource = `${s.origin}/`;
    },
    code: 'OAUTH_RESOURCE_MISMATCH',
  },
  {
    name: 'resource mismatch: query differs',
    setup: (s) => {
      s.prm.resource = `${s.url}?tenant=other`;
    },
    code: 'OAUTH_RESOURCE_MISMATCH',
  },
  {
    name: 'resource mismatch: another origin',
    setup: (s) => {
      s.prm.resource = 'https://other.example/mcp';
    },
    code: 'OAUTH_RESOURCE_MISMATCH',
  },
  {
    name: 'resource missing from the metadata',
    setup: (s) => {
      delete s.prm.resource;
    },
    code: 'OAUTH_RESOURCE_MISMATCH',
  },
  {
    name: 'empty authorization_servers',
    setup: (s) => {
      s.prm.authorization_servers = [];
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'missing S256: only plain PKCE advertised',
    setup: (s) => {
      s.metadata.code_challenge_methods_supported = ['plain'];
    },
    code: 'OAUTH_SERVER_UNSUPPORTED',
    message: /S256/,
  },
  {
    name: 'missing S256: no PKCE methods advertised at all',
    setup: (s) => {
      delete s.metadata.code_challenge_methods_supported;
    },
    code: 'OAUTH_SERVER_UNSUPPORTED',
  },
  {
    name: 'several authorization servers and no issuer chosen',
    setup: (s) => {
      s.prm.authorization_servers = [s.issuer, 'https://second.example'];
    },
    code: 'OAUTH_CONFIGURATION_INVALID',
    message: /several authorization servers/,
  },
  {
    name: 'explicit issuer not listed by the resource',
    setup: () => undefined,
    options: () => ({ issuer: 'https://not-listed.example' }),
    code: 'OAUTH_CONFIGURATION_INVALID',
    message: /not listed/,
  },
  {
    name: 'oversized protected-resource metadata (Content-Length)',
    setup: (s) => {
      s.prm.pad = 'x'.repeat(300_000);
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'too-large',
  },
  {
    name: 'oversized authorization-server metadata (chunked, no Content-Length)',
    setup: (s) => {
      s.routes.set(ASM, (_q, response) => sendChunkedJson(response, 400_000));
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'too-large',
  },
  {
    name: 'gzip-compressed authorization-server metadata',
    setup: (s) => {
      s.routes.set(ASM, (_q, response) => sendGzipJson(response, s.metadata));
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'compressed',
  },
  {
    name: 'redirect at protected-resource discovery',
    setup: (s) => {
      s.routes.set(PRM, (_q, response) => {
        response.writeHead(302, { location: 'http://127.0.0.1:1/evil', 'content-length': '0' });
        response.end();
      });
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'redirect',
  },
  {
    name: 'redirect at authorization-server discovery',
    setup: (s) => {
      s.routes.set(ASM, (_q, response) => {
        response.writeHead(307, { location: `${s.origin}/elsewhere`, 'content-length': '0' });
        response.end();
      });
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'redirect',
  },
  {
    name: 'redirect at the MCP probe',
    setup: (s) => {
      s.routes.set('POST /mcp', (_q, response) => {
        response.writeHead(308, { location: 'http://127.0.0.1:1/mcp', 'content-length': '0' });
        response.end();
      });
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'redirect',
  },
  {
    name: 'private-address resource_metadata URL in the challenge',
    setup: (s) => {
      s.routes.set('POST /mcp', (_q, response) => {
        response.writeHead(401, {
          'www-authenticate':
            'Bearer resource_metadata="http://10.0.0.1/.well-known/oauth-protected-resource"',
          'content-length': '0',
        });
        response.end();
      });
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'link-local (cloud metadata) authorization server',
    setup: (s) => {
      s.prm.authorization_servers = ['https://169.254.169.254'];
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'plain-http token endpoint on a public host',
    setup: (s) => {
      s.metadata.token_endpoint = 'http://as.example/token';
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'javascript: authorization endpoint',
    setup: (s) => {
      s.metadata.authorization_endpoint = 'javascript:alert(1)';
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'registration returns a secret for a public client',
    setup: (s) => {
      s.metadata.token_endpoint_auth_methods_supported = ['none'];
      s.registration.keepSecret = true;
    },
    code: 'OAUTH_RESPONSE_INVALID',
    message: /secret for a public client/,
  },
  {
    name: 'registration returns no secret for client_secret_basic',
    setup: (s) => {
      delete s.registration.client_secret;
    },
    code: 'OAUTH_RESPONSE_INVALID',
    message: /no client secret/,
  },
  {
    name: 'registration switches the auth method',
    setup: (s) => {
      s.registration.token_endpoint_auth_method = 'client_secret_post';
    },
    code: 'OAUTH_RESPONSE_INVALID',
    message: /another token endpoint auth method/,
  },
  {
    name: 'registration registers other redirect URIs',
    setup: (s) => {
      s.registration.redirect_uris = ['https://attacker.example/cb'];
    },
    code: 'OAUTH_RESPONSE_INVALID',
    message: /other redirect URIs/,
  },
  {
    name: 'no registration endpoint and no client id',
    setup: (s) => {
      delete s.metadata.registration_endpoint;
    },
    code: 'OAUTH_SERVER_UNSUPPORTED',
  },
  {
    name: 'explicit scope lacks a challenged scope',
    setup: () => undefined,
    options: () => ({ scope: 'other' }),
    code: 'OAUTH_CONFIGURATION_INVALID',
    message: /lacks scopes/,
  },
  {
    name: 'protected-resource metadata is not JSON',
    setup: (s) => {
      s.routes.set(PRM, (_q, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('<html>');
      });
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'protected-resource metadata answers 500',
    setup: (s) => {
      s.routes.set(PRM, (_q, response) => sendJson(response, 500, {}));
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'no protected-resource metadata anywhere',
    setup: (s) => {
      s.routes.delete(PRM);
      s.routes.set('POST /mcp', (_q, response) => {
        response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
        response.end();
      });
    },
    code: 'OAUTH_DISCOVERY_FAILED',
  },
  {
    name: 'a registration error_description never leaks',
    setup: (s) => {
      s.routes.set('POST /register', (_q, response) =>
        sendJson(response, 400, {
          error: 'invalid_client_metadata',
          error_description: 'LEAK-registration-secret',
        }),
      );
    },
    code: 'OAUTH_SERVER_ERROR',
  },
];

describe('startOAuth refuses hostile or broken servers', () => {
  it.each(startAttacks)('$name', async (attack) => {
    attack.setup(server);
    const error = await start(attack.options?.(server) ?? {}).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: attack.code });
    if (attack.reason !== undefined) expect(error).toMatchObject({ reason: attack.reason });
    if (attack.message !== undefined) expect((error as Error).message).toMatch(attack.message);
    expect(
      JSON.stringify({ ...(error as object), message: (error as Error).message }),
    ).not.toContain('LEAK');
  });

  it('refuses an authorization server whose DNS name resolves to a private address (guard)', async () => {
    const resolved: string[] = [];
    const fetch = createGuardedFetch({
      allowNonPublic: (_target, address) => address.address === '127.0.0.1',
      allowHttpLoopback: true,
      resolver: async (hostname) => {
        resolved.push(hostname);
        return [{ address: '10.0.0.5', family: 4 }];
      },
    });
    server.prm.authorization_servers = ['https://internal.example'];
    const error = await start({ fetch }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'OAUTH_TRANSPORT_FAILED', reason: 'blocked' });
    expect(resolved).toEqual(['internal.example']);
  });

  it('refuses a pre-registered client without an issuer before any request', async () => {
    await expect(start({ clientId: 'pre-registered' })).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
    });
    expect(server.requests).toEqual([]);
  });

  it('keeps the server\u2019s own authorize parameters and replaces the OAuth ones', async () => {
    server.metadata.authorization_endpoint = `${server.origin}/authorize?tenant=t1&client_id=evil&scope=all&resource=x&request_uri=urn:evil`;
    const started = await start();
    const url = new URL(started.authorizeUrl);
    expect(url.searchParams.get('tenant')).toBe('t1');
    expect(url.searchParams.getAll('client_id')).toEqual(['client-1']);
    expect(url.searchParams.getAll('scope')).toEqual(['mcp:tools offline_access']);
    expect(url.searchParams.getAll('resource')).toEqual([server.url]);
    expect(url.searchParams.has('request_uri')).toBe(false);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it.each([
    {
      supported: ['none', 'client_secret_post', 'client_secret_basic'],
      chosen: 'client_secret_basic',
    },
    { supported: ['none', 'client_secret_post'], chosen: 'client_secret_post' },
    { supported: ['none', 'private_key_jwt'], chosen: 'none' },
  ])(
    'registers with $chosen when the server supports $supported',
    async ({ supported, chosen }) => {
      server.metadata.token_endpoint_auth_methods_supported = supported;
      const started = await start();
      expect(started.tokenAuthMethod).toBe(chosen);
      expect(started.clientSecret === undefined).toBe(chosen === 'none');
    },
  );

  it('ignores a secret echoed for a public client when the server does not confirm the method', async () => {
    server.metadata.token_endpoint_auth_methods_supported = ['none'];
    let sent: Record<string, unknown> = {};
    server.routes.set('POST /register', (_q, response, body) => {
      sent = JSON.parse(body) as Record<string, unknown>;
      sendJson(response, 201, { client_id: 'public-1', client_secret: 'echoed' });
    });
    const started = await start();
    expect(sent.application_type).toBe('native');
    expect(sent.scope).toBeUndefined();
    expect(started).toMatchObject({ clientId: 'public-1', tokenAuthMethod: 'none' });
    expect(started.clientSecret).toBeUndefined();
  });

  it('falls back from RFC 8414 to the OIDC variants for an issuer with a path', async () => {
    const issuer = `${server.origin}/tenant1`;
    server.prm.authorization_servers = [issuer];
    server.routes.delete(ASM);
    server.routes.set('GET /tenant1/.well-known/openid-configuration', (_q, response) =>
      sendJson(response, 200, { ...server.metadata, issuer }),
    );
    const started = await start();
    expect(started.issuer).toBe(issuer);
    expect(server.requests).toEqual(
      expect.arrayContaining([
        'GET /.well-known/oauth-authorization-server/tenant1',
        'GET /.well-known/openid-configuration/tenant1',
        'GET /tenant1/.well-known/openid-configuration',
      ]),
    );
  });

  it('takes the challenge scope, then scopes_supported, then none (offlineAccess: false)', async () => {
    const off = { offlineAccess: false };
    expect((await start(off)).scope).toBe('mcp:tools');
    server.routes.set('POST /mcp', (_q, response) => {
      response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      response.end();
    });
    server.prm.scopes_supported = ['a', 'b'];
    expect((await start(off)).scope).toBe('a b');
    delete server.prm.scopes_supported;
    const none = await start(off);
    expect(none.scope).toBeUndefined();
    expect(new URL(none.authorizeUrl).searchParams.has('scope')).toBe(false);
    expect(none.authorizeUrl).not.toContain('offline_access');
  });

  it('adds offline_access only when the authorization server lists it (SEP-2207)', async () => {
    expect((await start()).scope).toBe('mcp:tools offline_access');
    server.metadata.scopes_supported = ['mcp:tools'];
    expect((await start()).scope).toBe('mcp:tools');
    // Not even when the resource's challenge names it: the server does not offer it.
    server.routes.set('POST /mcp', (_q, response) => {
      response.writeHead(401, {
        'www-authenticate': 'Bearer scope="mcp:tools offline_access"',
        'content-length': '0',
      });
      response.end();
    });
    expect((await start()).scope).toBe('mcp:tools');
  });

  it('enforces maxResponseBytes as configured', async () => {
    server.prm.pad = 'x'.repeat(2000);
    await expect(start({ maxResponseBytes: 1024 })).rejects.toMatchObject({ reason: 'too-large' });
    server.prm.pad = 'x'.repeat(100);
    await expect(start({ maxResponseBytes: 1024 })).resolves.toMatchObject({
      issuer: server.issuer,
    });
  });

  it.each([
    { option: 'maxResponseBytes', value: true },
    { option: 'maxResponseBytes', value: 0 },
    { option: 'readTimeoutMs', value: '5' },
    { option: 'readTimeoutMs', value: 0 },
    { option: 'connectTimeoutMs', value: -1 },
    { option: 'allowNonPublic', value: 'yes' },
    { option: 'tokenAuthMethod', value: 'private_key_jwt' },
    { option: 'redirectUri', value: 'http://example.com/cb' },
  ])('validates $option = $value', async ({ option, value }) => {
    await expect(start({ [option]: value } as Partial<StartOAuthOptions>)).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
    });
    expect(server.requests).toEqual([]);
  });
});

interface TokenAttack {
  readonly name: string;
  readonly setup: (server: ScriptedOAuthServer) => void;
  readonly iss?: (server: ScriptedOAuthServer) => string | undefined;
  readonly code: string;
  readonly reason?: string;
  readonly error?: string;
}

const tokenAttacks: TokenAttack[] = [
  {
    name: 'RFC 9207 iss from another issuer (mix-up)',
    setup: () => undefined,
    iss: () => 'https://attacker.example',
    code: 'OAUTH_ISSUER_MISMATCH',
  },
  {
    name: 'RFC 9207 iss missing although advertised',
    setup: () => undefined,
    iss: () => undefined,
    code: 'OAUTH_ISSUER_MISMATCH',
  },
  {
    name: 'metadata issuer changed since the flow started',
    setup: (s) => {
      s.metadata.issuer = 'https://moved.example';
    },
    code: 'OAUTH_ISSUER_MISMATCH',
  },
  {
    name: 'token_type is not Bearer',
    setup: (s) => {
      s.token.token_type = 'DPoP';
    },
    code: 'OAUTH_RESPONSE_INVALID',
  },
  {
    name: 'empty access_token',
    setup: (s) => {
      s.token.access_token = '';
    },
    code: 'OAUTH_RESPONSE_INVALID',
  },
  {
    name: 'error_description leakage at the token endpoint',
    setup: (s) => {
      s.routes.set('POST /token', (_q, response) =>
        sendJson(response, 400, {
          error: 'invalid_grant',
          error_description: 'LEAK-description <script>',
          error_uri: 'https://LEAK.example',
        }),
      );
    },
    code: 'OAUTH_SERVER_ERROR',
    error: 'invalid_grant',
  },
  {
    name: 'non-standard error code becomes unrecognized_error',
    setup: (s) => {
      s.routes.set('POST /token', (_q, response) =>
        sendJson(response, 400, { error: 'LEAK-custom-error' }),
      );
    },
    code: 'OAUTH_SERVER_ERROR',
    error: 'unrecognized_error',
  },
  {
    name: 'oversized token response',
    setup: (s) => {
      s.token.pad = 'x'.repeat(300_000);
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'too-large',
  },
  {
    name: 'gzip-compressed token response',
    setup: (s) => {
      s.routes.set('POST /token', (_q, response) => sendGzipJson(response, s.token));
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'compressed',
  },
  {
    name: 'redirect at the token endpoint',
    setup: (s) => {
      s.routes.set('POST /token', (_q, response) => {
        response.writeHead(307, { location: 'http://127.0.0.1:1/token', 'content-length': '0' });
        response.end();
      });
    },
    code: 'OAUTH_TRANSPORT_FAILED',
    reason: 'redirect',
  },
];

describe('completeOAuth refuses hostile or broken token exchanges', () => {
  it.each(tokenAttacks)('$name', async (attack) => {
    attack.setup(server);
    const error = await completeOAuth({
      ...clientOptions(),
      code: 'code-1',
      iss: attack.iss === undefined ? server.issuer : attack.iss(server),
      codeVerifier: 'v'.repeat(43),
      redirectUri: REDIRECT_URI,
    }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: attack.code });
    if (attack.reason !== undefined) expect(error).toMatchObject({ reason: attack.reason });
    if (attack.error !== undefined) expect(error).toMatchObject({ error: attack.error });
    const visible = JSON.stringify({ ...(error as object), message: (error as Error).message });
    expect(visible).not.toContain('LEAK');
    expect(String((error as Error).stack)).not.toContain('LEAK');
    expect((error as Error).cause).toBeUndefined();
  });

  it('sends the resource and the PKCE verifier and computes expiresAt', async () => {
    let sent = new URLSearchParams();
    server.routes.set('POST /token', (_q, response, body) => {
      sent = new URLSearchParams(body);
      sendJson(response, 200, server.token);
    });
    const before = Date.now();
    const tokens = await completeOAuth({
      ...clientOptions(),
      code: 'code-1',
      iss: server.issuer,
      codeVerifier: 'v'.repeat(43),
      redirectUri: REDIRECT_URI,
    });
    expect(sent.get('resource')).toBe(server.url);
    expect(sent.get('code_verifier')).toBe('v'.repeat(43));
    expect(tokens.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(tokens).toMatchObject({
      accessToken: 'access-1',
      tokenType: 'Bearer',
      refreshToken: 'refresh-1',
    });
  });

  it('refuses a refresh answer that widens the granted scope', async () => {
    server.token.scope = 'mcp:tools mcp:admin';
    await expect(
      refreshOAuth({ ...clientOptions(), refreshToken: 'refresh-1', scope: 'mcp:tools' }),
    ).rejects.toMatchObject({ code: 'OAUTH_RESPONSE_INVALID' });
  });

  it('returns no refresh token or scope when the server omits them (the caller keeps its own)', async () => {
    delete server.token.refresh_token;
    delete server.token.scope;
    const tokens = await refreshOAuth({ ...clientOptions(), refreshToken: 'refresh-1' });
    expect(tokens.refreshToken).toBeUndefined();
    expect(tokens.scope).toBeUndefined();
  });
});

describe('the callback route helpers', () => {
  it.each([
    ['a different state', 'other', 'expected'],
    ['an empty state', '', 'expected'],
    ['a prefix of the state', 'expec', 'expected'],
    ['a missing state', undefined, 'expected'],
    ['a non-string', 42, 'expected'],
  ])('verifyState refuses %s', (_name, received, expected) => {
    expect(verifyState(received, expected)).toBe(false);
  });

  it('verifyState accepts the same state', () => {
    expect(verifyState('abc', 'abc')).toBe(true);
  });

  it('refuses a state mismatch', () => {
    expect(() =>
      parseAuthorizationCallback('https://app.example/cb?code=c&state=forged', 'expected'),
    ).toThrow(expect.objectContaining({ code: 'OAUTH_STATE_MISMATCH' }));
  });

  it('reports an authorization error by its standard code only', () => {
    const error = (() => {
      try {
        parseAuthorizationCallback(
          'https://app.example/cb?error=access_denied&error_description=LEAK-user-said-no&state=s',
          's',
        );
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(OAuthError.isInstance(error)).toBe(true);
    expect((error as OAuthError).error).toBe('access_denied');
    expect(JSON.stringify({ ...(error as object), m: (error as Error).message })).not.toContain(
      'LEAK',
    );
  });

  it('refuses a repeated code parameter', () => {
    expect(() =>
      parseAuthorizationCallback('https://app.example/cb?code=a&code=b&state=s', 's'),
    ).toThrow(expect.objectContaining({ code: 'OAUTH_RESPONSE_INVALID' }));
  });
});

describe('acceptOriginResource (conformance auth/metadata-var2)', () => {
  let origin: ScriptedOAuthServer;
  beforeEach(async () => {
    origin = await startScriptedOAuthServer();
    // Only the origin-level document exists, and it names the origin as the resource.
    origin.routes.delete('GET /.well-known/oauth-protected-resource/mcp');
    origin.routes.set('GET /.well-known/oauth-protected-resource', (_q, response) =>
      sendJson(response, 200, { ...origin.prm, resource: origin.origin }),
    );
    origin.routes.set('POST /mcp', (_q, response) => {
      response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      response.end();
    });
  });
  afterEach(async () => {
    await origin.close();
  });
  const begin = (options: Partial<StartOAuthOptions> = {}) =>
    startOAuth({
      url: origin.url,
      redirectUri: 'http://127.0.0.1:9/callback',
      allowNonPublic: loopback,
      ...options,
    });

  it('refuses the origin as the resource by default', async () => {
    await expect(begin()).rejects.toMatchObject({ code: 'OAUTH_RESOURCE_MISMATCH' });
    expect(origin.requests.some((line) => line.startsWith('POST /register'))).toBe(false);
  });

  it('accepts it from the origin-level document when the host opts in; the audience is the origin', async () => {
    const started = await begin({ acceptOriginResource: true });
    expect(started.resource).toBe(origin.origin);
    expect(new URL(started.authorizeUrl).searchParams.get('resource')).toBe(origin.origin);
  });

  it('still refuses it from the document the challenge names, even when opted in', async () => {
    origin.routes.set('POST /mcp', (_q, response) => {
      response.writeHead(401, {
        'www-authenticate': `Bearer resource_metadata="${origin.origin}/.well-known/oauth-protected-resource"`,
        'content-length': '0',
      });
      response.end();
    });
    await expect(begin({ acceptOriginResource: true })).rejects.toMatchObject({
      code: 'OAUTH_RESOURCE_MISMATCH',
    });
  });

  it('still refuses another origin or a sibling path from the origin-level document', async () => {
    for (const resource of ['http://127.0.0.1:1', `${origin.origin}/other`]) {
      origin.routes.set('GET /.well-known/oauth-protected-resource', (_q, response) =>
        sendJson(response, 200, { ...origin.prm, resource }),
      );
      await expect(begin({ acceptOriginResource: true })).rejects.toMatchObject({
        code: 'OAUTH_RESOURCE_MISMATCH',
      });
    }
  });
});
