import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ClientCredentialsOAuthOptions,
  clientCredentialsOAuth,
  OAuthConfigurationError,
  OAuthError,
  OAuthIssuerMismatchError,
  OAuthResourceMismatchError,
  OAuthUnsupportedServerError,
} from '../src/index.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

interface TokenRequest {
  readonly authorization: string | undefined;
  readonly body: URLSearchParams;
}

let server: ScriptedOAuthServer;
let requests: TokenRequest[];
beforeEach(async () => {
  server = await startScriptedOAuthServer();
  requests = [];
  server.metadata.grant_types_supported = ['client_credentials'];
  server.metadata.token_endpoint_auth_methods_supported = [
    'client_secret_basic',
    'client_secret_post',
    'private_key_jwt',
  ];
  delete server.token.refresh_token;
  server.routes.set('POST /token', (request, response, body) => {
    requests.push({
      authorization: request.headers.authorization,
      body: new URLSearchParams(body),
    });
    sendJson(response, 200, server.token);
  });
});
afterEach(async () => {
  await server.close();
});

function run(options: Partial<ClientCredentialsOAuthOptions> = {}) {
  return clientCredentialsOAuth({
    url: server.url,
    clientId: 'machine-1',
    clientSecret: 's3cret',
    issuer: server.issuer,
    allowNonPublic: loopback,
    ...options,
  });
}

function decodePart(part: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

describe('clientCredentialsOAuth', () => {
  it('gets a token with client_secret_basic, the resource and the challenged scope', async () => {
    const tokens = await run();
    expect(tokens).toMatchObject({
      accessToken: 'access-1',
      tokenType: 'Bearer',
      refreshToken: undefined,
      issuer: server.issuer,
      resource: server.url,
      scope: 'mcp:tools',
    });
    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request?.body.get('grant_type')).toBe('client_credentials');
    expect(request?.body.get('resource')).toBe(server.url);
    expect(request?.body.get('scope')).toBe('mcp:tools');
    expect(request?.body.has('client_secret')).toBe(false);
    const basic = Buffer.from((request?.authorization ?? '').slice(6), 'base64').toString('utf8');
    expect(basic).toBe('machine-1:s3cret');
    expect(server.requests).not.toContain('POST /register');
  });

  it('sends the secret in the body with client_secret_post', async () => {
    await run({ tokenAuthMethod: 'client_secret_post' });
    expect(requests[0]?.authorization).toBeUndefined();
    expect(requests[0]?.body.get('client_secret')).toBe('s3cret');
  });

  it.each([
    { name: 'EC P-256', kty: 'ec' as const, alg: 'ES256' },
    { name: 'Ed25519', kty: 'ed25519' as const, alg: 'Ed25519' },
  ])('signs an RFC 7523 assertion with a $name key (private_key_jwt)', async ({ kty, alg }) => {
    const pair =
      kty === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('ed25519');
    const jwk = pair.privateKey.export({ format: 'jwk' });
    await run({ clientSecret: undefined, privateKeyJwk: jwk, privateKeyId: 'key-1' });
    const body = requests[0]?.body;
    expect(body?.get('client_assertion_type')).toBe(
      'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    );
    const [header, payload, signature] = (body?.get('client_assertion') ?? '').split('.');
    expect(decodePart(header)).toMatchObject({ alg, kid: 'key-1' });
    expect(decodePart(payload)).toMatchObject({
      iss: 'machine-1',
      sub: 'machine-1',
      aud: server.issuer,
    });
    const signed = Buffer.from(`${header}.${payload}`);
    const valid = verify(
      kty === 'ec' ? 'sha256' : null,
      signed,
      { key: createPublicKey(pair.privateKey), dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature ?? '', 'base64url'),
    );
    expect(valid).toBe(true);
    expect(JSON.stringify(body ? Object.fromEntries(body) : {})).not.toContain(String(jwk.d));
  });

  const isConfig = (error: unknown): boolean => OAuthConfigurationError.isInstance(error);
  const isUnsupported = (error: unknown): boolean => OAuthUnsupportedServerError.isInstance(error);
  it.each([
    { name: 'no issuer', options: { issuer: undefined as unknown as string }, check: isConfig },
    {
      name: 'an issuer the resource does not list',
      options: { issuer: 'https://as.example.com' },
      check: isConfig,
    },
    { name: 'neither secret nor key', options: { clientSecret: undefined }, check: isConfig },
    {
      name: 'a secret with private_key_jwt',
      options: { tokenAuthMethod: 'private_key_jwt' as const },
      check: isConfig,
    },
    {
      name: 'a public key as privateKeyJwk',
      options: {
        clientSecret: undefined,
        privateKeyJwk: createPublicKey(
          generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
        ).export({ format: 'jwk' }),
      },
      check: isConfig,
    },
    {
      name: 'an unknown tokenAuthMethod',
      options: { tokenAuthMethod: 'none' as unknown as 'client_secret_basic' },
      check: isConfig,
    },
  ])('refuses $name before any token request', async ({ options, check }) => {
    const error = await run(options).catch((caught: unknown) => caught);
    expect(check(error)).toBe(true);
    expect(requests).toHaveLength(0);
  });

  it.each([
    {
      name: 'a resource mismatch in the protected-resource metadata',
      setup: (s: ScriptedOAuthServer) => {
        s.prm.resource = `${s.origin}/`;
      },
      check: (error: unknown) => OAuthResourceMismatchError.isInstance(error),
    },
    {
      name: 'an issuer mix-up in the authorization-server metadata',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.issuer = 'https://evil.example.com';
      },
      check: (error: unknown) => OAuthIssuerMismatchError.isInstance(error),
    },
    {
      name: 'a server without the client_credentials grant',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.grant_types_supported = ['authorization_code'];
      },
      check: isUnsupported,
    },
    {
      name: 'a server without the auth method',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.token_endpoint_auth_methods_supported = ['private_key_jwt'];
      },
      check: isUnsupported,
    },
  ])('refuses $name', async ({ setup, check }) => {
    setup(server);
    const error = await run().catch((caught: unknown) => caught);
    expect(check(error)).toBe(true);
    expect(requests).toHaveLength(0);
  });

  it('needs no PKCE support (no authorization code flow)', async () => {
    delete server.metadata.code_challenge_methods_supported;
    delete server.metadata.authorization_endpoint;
    await expect(run()).resolves.toMatchObject({ accessToken: 'access-1' });
  });

  it('reports the standard error code only, never the description', async () => {
    server.routes.set('POST /token', (_request, response) =>
      sendJson(response, 401, { error: 'invalid_client', error_description: 'SECRET-DETAIL' }),
    );
    const error = await run().catch((caught: unknown) => caught);
    expect(OAuthError.isInstance(error)).toBe(true);
    expect((error as OAuthError).error).toBe('invalid_client');
    expect(JSON.stringify(error) + String((error as Error).message)).not.toContain('SECRET-DETAIL');
  });

  it('refuses a token that is not Bearer', async () => {
    server.token.token_type = 'DPoP';
    const error = await run().catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe('OAUTH_RESPONSE_INVALID');
  });
});

describe('clientCredentialsOAuth against oidc-provider', () => {
  it('gets a token for the MCP resource that the MCP server accepts for a tool call', async () => {
    const { startOAuthPeer } = await import('./fixtures/oauth-peer.js');
    const { McpClient } = await import('../src/index.js');
    const peer = await startOAuthPeer({
      clients: [
        {
          client_id: 'machine-1',
          client_secret: 'machine-secret-0123456789',
          grant_types: ['client_credentials'],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
    });
    try {
      const tokens = await clientCredentialsOAuth({
        url: peer.mcpUrl,
        clientId: 'machine-1',
        clientSecret: 'machine-secret-0123456789',
        issuer: peer.issuer,
        allowNonPublic: loopback,
      });
      expect(tokens.resource).toBe(peer.mcpUrl);
      expect(tokens.scope).toBe('mcp:tools');
      const client = new McpClient({
        url: peer.mcpUrl,
        token: tokens.accessToken,
        allowNonPublic: (_target, address) => address.range === 'loopback',
      });
      try {
        await client.tools();
        await client.callTool('echo', { text: 'hi' });
      } finally {
        await client.close();
      }
      expect(peer.toolCalls).toEqual(['echo']);
    } finally {
      await peer.close();
    }
  });
});
