import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type CrossAppAccessOAuthOptions,
  crossAppAccessOAuth,
  OAuthConfigurationError,
  OAuthError,
  OAuthIssuerMismatchError,
} from '../src/index.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

let mcp: ScriptedOAuthServer;
let idp: ScriptedOAuthServer;
let exchanges: URLSearchParams[];
let grants: { authorization: string | undefined; body: URLSearchParams }[];
beforeEach(async () => {
  [mcp, idp] = await Promise.all([startScriptedOAuthServer(), startScriptedOAuthServer()]);
  exchanges = [];
  grants = [];
  idp.routes.set('POST /token', (_request, response, body) => {
    exchanges.push(new URLSearchParams(body));
    sendJson(response, 200, {
      access_token: 'id-jag-1',
      issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A',
    });
  });
  mcp.routes.set('POST /token', (request, response, body) => {
    grants.push({ authorization: request.headers.authorization, body: new URLSearchParams(body) });
    sendJson(response, 200, mcp.token);
  });
});
afterEach(async () => {
  await Promise.all([mcp.close(), idp.close()]);
});

function run(options: Partial<CrossAppAccessOAuthOptions> = {}) {
  return crossAppAccessOAuth({
    url: mcp.url,
    idToken: 'id-token-1',
    idpIssuer: idp.issuer,
    idpClientId: 'idp-client',
    clientId: 'xaa-client',
    clientSecret: 'xaa-secret',
    issuer: mcp.issuer,
    allowNonPublic: loopback,
    ...options,
  });
}

describe('crossAppAccessOAuth (SEP-990)', () => {
  it('exchanges the ID token for an ID-JAG, then the ID-JAG for an access token', async () => {
    const tokens = await run();
    expect(tokens).toMatchObject({
      accessToken: 'access-1',
      issuer: mcp.issuer,
      resource: mcp.url,
    });
    expect(Object.fromEntries(exchanges[0] ?? [])).toMatchObject({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'id-token-1',
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      requested_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      audience: mcp.issuer,
      resource: mcp.url,
      client_id: 'idp-client',
    });
    expect(Object.fromEntries(grants[0]?.body ?? [])).toMatchObject({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: 'id-jag-1',
      resource: mcp.url,
    });
    const basic = Buffer.from((grants[0]?.authorization ?? '').slice(6), 'base64').toString('utf8');
    expect(basic).toBe('xaa-client:xaa-secret');
  });

  it('refuses an identity provider whose metadata names another issuer', async () => {
    idp.metadata.issuer = 'https://idp.example.com';
    const error = await run().catch((caught: unknown) => caught);
    expect(OAuthIssuerMismatchError.isInstance(error)).toBe(true);
    expect(exchanges).toHaveLength(0);
  });

  it('refuses an exchange answer that is not an ID-JAG', async () => {
    idp.routes.set('POST /token', (_request, response) =>
      sendJson(response, 200, {
        access_token: 'x',
        token_type: 'N_A',
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      }),
    );
    const error = await run().catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe('OAUTH_RESPONSE_INVALID');
    expect(grants).toHaveLength(0);
  });

  it('reports the identity provider error code only', async () => {
    idp.routes.set('POST /token', (_request, response) =>
      sendJson(response, 400, { error: 'invalid_grant', error_description: 'SECRET-DETAIL' }),
    );
    const error = await run().catch((caught: unknown) => caught);
    expect(OAuthError.isInstance(error)).toBe(true);
    expect((error as OAuthError).error).toBe('invalid_grant');
    expect(String((error as Error).message)).not.toContain('SECRET-DETAIL');
  });

  it('requires the exact issuer of the MCP authorization server', async () => {
    const error = await run({ issuer: undefined as unknown as string }).catch(
      (caught: unknown) => caught,
    );
    expect(OAuthConfigurationError.isInstance(error)).toBe(true);
    expect(exchanges).toHaveLength(0);
  });
});
