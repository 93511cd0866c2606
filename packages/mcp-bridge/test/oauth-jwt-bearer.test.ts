import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type JwtBearerOAuthOptions, jwtBearerOAuth } from '../src/index.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const WORKLOAD_JWT = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl';

let server: ScriptedOAuthServer;
let bodies: URLSearchParams[];
beforeEach(async () => {
  server = await startScriptedOAuthServer();
  bodies = [];
  server.metadata.grant_types_supported = [JWT_BEARER];
  delete server.metadata.registration_endpoint;
  delete server.token.refresh_token;
  server.routes.set('POST /token', (_request, response, body) => {
    bodies.push(new URLSearchParams(body));
    sendJson(response, 200, server.token);
  });
});
afterEach(async () => {
  await server.close();
});

function run(options: Partial<JwtBearerOAuthOptions> = {}) {
  return jwtBearerOAuth({
    url: server.url,
    assertion: WORKLOAD_JWT,
    clientId: 'workload-1',
    issuer: server.issuer,
    allowNonPublic: loopback,
    ...options,
  } as JwtBearerOAuthOptions);
}

describe('jwtBearerOAuth (RFC 7523 workload identity)', () => {
  it('sends the jwt-bearer grant with the assertion and the resource, and registers nothing', async () => {
    const tokens = await run();
    expect(tokens).toMatchObject({
      accessToken: 'access-1',
      tokenType: 'Bearer',
      issuer: server.issuer,
      resource: server.url,
      scope: 'mcp:tools',
    });
    expect(bodies).toHaveLength(1);
    const body = bodies[0] as URLSearchParams;
    expect(body.get('grant_type')).toBe(JWT_BEARER);
    expect(body.get('assertion')).toBe(WORKLOAD_JWT);
    expect(body.get('resource')).toBe(server.url);
    expect(body.get('client_id')).toBe('workload-1');
    expect(server.requests.some((line) => line.includes('/register'))).toBe(false);
  });

  it('calls an assertion function once per grant for a fresh JWT', async () => {
    let calls = 0;
    const assertion = async () => {
      calls += 1;
      return `${WORKLOAD_JWT}${calls}`;
    };
    await run({ assertion });
    await run({ assertion });
    expect(calls).toBe(2);
    expect(bodies.map((body) => body.get('assertion'))).toEqual([
      `${WORKLOAD_JWT}1`,
      `${WORKLOAD_JWT}2`,
    ]);
  });

  it.each(['invalid_grant', 'invalid_scope', 'unauthorized_client'])(
    'surfaces %s without a retry or another grant',
    async (error) => {
      server.routes.set('POST /token', (_request, response, body) => {
        bodies.push(new URLSearchParams(body));
        sendJson(response, 400, { error, error_description: 'SECRET remote text' });
      });
      const failure = await run().catch((caught: unknown) => caught);
      expect(failure).toMatchObject({ code: 'OAUTH_SERVER_ERROR', error });
      expect(String((failure as Error).message)).not.toContain('SECRET');
      expect(bodies).toHaveLength(1);
      expect(bodies[0]?.get('grant_type')).toBe(JWT_BEARER);
    },
  );

  it.each([
    ['no issuer', { issuer: undefined }],
    ['an unlisted issuer', { issuer: 'http://127.0.0.1:1/other' }],
    ['no assertion', { assertion: undefined }],
    ['an assertion that is not a JWT', { assertion: 'not a jwt' }],
    ['an assertion function returning a number', { assertion: () => 42 as unknown as string }],
    ['no clientId', { clientId: undefined }],
    ['an unknown option', { audience: 'x' } as Partial<JwtBearerOAuthOptions>],
  ])('refuses %s before sending the assertion', async (_name, options) => {
    await expect(run(options as Partial<JwtBearerOAuthOptions>)).rejects.toMatchObject({
      code: 'OAUTH_CONFIGURATION_INVALID',
    });
    expect(bodies).toEqual([]);
  });

  it('refuses a server that does not offer the grant, before sending the assertion', async () => {
    server.metadata.grant_types_supported = ['client_credentials'];
    await expect(run()).rejects.toMatchObject({ code: 'OAUTH_SERVER_UNSUPPORTED' });
    expect(bodies).toEqual([]);
  });

  it('refuses protected-resource metadata for another resource', async () => {
    server.prm.resource = `${server.origin}/other`;
    await expect(run()).rejects.toMatchObject({ code: 'OAUTH_RESOURCE_MISMATCH' });
    expect(bodies).toEqual([]);
  });
});
