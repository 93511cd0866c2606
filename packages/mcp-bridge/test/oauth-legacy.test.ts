import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  completeOAuth,
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthIssuerMismatchError,
  type StartOAuthOptions,
  startOAuth,
} from '../src/index.js';
import { type ScriptedOAuthServer, startScriptedOAuthServer } from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const PRM = 'GET /.well-known/oauth-protected-resource/mcp';
const ASM = 'GET /.well-known/oauth-authorization-server';

let server: ScriptedOAuthServer;
beforeEach(async () => {
  server = await startScriptedOAuthServer();
  // A 2025-03-26 server: 401 without resource_metadata, and no RFC 9728 document anywhere.
  server.routes.delete(PRM);
  server.routes.set('POST /mcp', (_request, response) => {
    response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
    response.end();
  });
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

describe('MCP 2025-03-26 fallback (legacyAuthorizationServer)', () => {
  it('refuses a server without protected-resource metadata by default', async () => {
    const error = await start().catch((caught: unknown) => caught);
    expect(OAuthDiscoveryError.isInstance(error)).toBe(true);
    expect(server.requests).not.toContain(ASM);
    expect(server.requests).not.toContain('POST /register');
  });

  it('uses the metadata at the MCP server origin when opted in, and completes', async () => {
    server.metadata.authorization_response_iss_parameter_supported = false;
    const started = await start({ legacyAuthorizationServer: true });
    expect(started.issuer).toBe(server.issuer);
    expect(started.resource).toBe(server.url);
    const authorize = new URL(started.authorizeUrl);
    expect(authorize.origin + authorize.pathname).toBe(`${server.origin}/authorize`);
    expect(authorize.searchParams.get('resource')).toBe(server.url);
    const tokens = await completeOAuth({
      code: 'code-1',
      codeVerifier: started.codeVerifier,
      clientId: started.clientId,
      clientSecret: started.clientSecret,
      tokenAuthMethod: started.tokenAuthMethod,
      issuer: started.issuer,
      resource: started.resource,
      redirectUri: started.redirectUri,
      allowNonPublic: loopback,
      legacyAuthorizationServer: true,
    });
    expect(tokens.accessToken).toBe('access-1');
  });

  it('falls back to the default endpoints when the origin publishes no metadata', async () => {
    server.routes.delete(ASM);
    const started = await start({ legacyAuthorizationServer: true });
    expect(started.issuer).toBe(server.origin);
    expect(new URL(started.authorizeUrl).pathname).toBe('/authorize');
    expect(server.requests).toContain('POST /register');
    const exchange = {
      code: 'code-1',
      codeVerifier: started.codeVerifier,
      clientId: started.clientId,
      clientSecret: started.clientSecret,
      tokenAuthMethod: started.tokenAuthMethod,
      issuer: started.issuer,
      resource: started.resource,
      redirectUri: started.redirectUri,
      allowNonPublic: loopback,
    };
    // Without the opt-in the stored issuer publishes no metadata and the exchange is refused.
    await expect(completeOAuth(exchange)).rejects.toSatisfy((error: unknown) =>
      OAuthDiscoveryError.isInstance(error),
    );
    const tokens = await completeOAuth({ ...exchange, legacyAuthorizationServer: true });
    expect(tokens.accessToken).toBe('access-1');
  });

  it.each([
    {
      name: 'an issuer on another origin in the origin metadata',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.issuer = 'https://evil.example.com';
      },
      check: (error: unknown) => OAuthIssuerMismatchError.isInstance(error),
    },
    {
      name: 'a challenge that names a metadata URL which is missing (no fallback then)',
      setup: (s: ScriptedOAuthServer) => {
        s.routes.set('POST /mcp', (_request, response) => {
          response.writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${s.origin}/.well-known/oauth-protected-resource/mcp"`,
            'content-length': '0',
          });
          response.end();
        });
      },
      check: (error: unknown) => OAuthDiscoveryError.isInstance(error),
    },
    {
      name: 'an authorization endpoint refused by the network policy',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.authorization_endpoint = 'http://10.0.0.1/authorize';
      },
      check: (error: unknown) => OAuthDiscoveryError.isInstance(error),
    },
    {
      name: 'metadata without S256',
      setup: (s: ScriptedOAuthServer) => {
        s.metadata.code_challenge_methods_supported = ['plain'];
      },
      check: (error: unknown) => (error as { code?: string }).code === 'OAUTH_SERVER_UNSUPPORTED',
    },
  ])('still refuses $name when opted in', async ({ setup, check }) => {
    setup(server);
    const error = await start({ legacyAuthorizationServer: true }).catch(
      (caught: unknown) => caught,
    );
    expect(check(error)).toBe(true);
    expect(server.requests).not.toContain('POST /register');
  });

  it('refuses a pinned issuer other than the one the MCP server names', async () => {
    const error = await start({
      legacyAuthorizationServer: true,
      clientId: 'pre',
      issuer: 'https://as.example.com',
    }).catch((caught: unknown) => caught);
    expect(OAuthIssuerMismatchError.isInstance(error)).toBe(true);
  });

  it('validates the option as a boolean', async () => {
    const error = await start({ legacyAuthorizationServer: 'yes' as unknown as boolean }).catch(
      (caught: unknown) => caught,
    );
    expect(OAuthConfigurationError.isInstance(error)).toBe(true);
  });
});
