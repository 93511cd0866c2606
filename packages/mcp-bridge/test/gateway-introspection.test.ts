// Opaque access tokens, checked by RFC 7662 introspection at a real authorization server
// (oidc-provider): active tokens for the gateway's resource become principals; inactive, revoked
// and other-resource tokens are refused; the gateway's own credentials are required.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHttpAuthSettings } from '../src/gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../src/gateway/identity/resource-server.js';

const RESOURCE = 'https://gateway.example.com/mcp';
const OTHER = 'https://other.example.com/mcp';
const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';

let server: Server;
let issuer: string;

const basic = (id: string) =>
  `Basic ${Buffer.from(`${id}:${id}-secret-0123456789`).toString('base64')}`;

beforeAll(async () => {
  server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: ['carol', 'gateway'].map((id) => ({
      client_id: id,
      client_secret: `${id}-secret-0123456789`,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    })),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => RESOURCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string) => ({
          scope: 'mcp:tools',
          audience: indicator,
          accessTokenFormat: 'opaque',
        }),
      },
    },
    scopes: ['mcp:tools'],
    cookies: { keys: ['test-only-cookie-key-0123456789abcdef'] },
  });
  server.on('request', provider.callback());
}, 60_000);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function token(resource = RESOURCE): Promise<string> {
  const answer = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('carol') },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools', resource }),
  });
  return ((await answer.json()) as { access_token: string }).access_token;
}

function resourceServer(
  credentials = { clientId: 'gateway', clientSecret: 'gateway-secret-0123456789' },
) {
  return new GatewayResourceServer({
    settings: checkHttpAuthSettings({
      resource: RESOURCE,
      authorizationServers: [issuer],
      introspection: true,
      requiredScopes: ['mcp:tools'],
    }),
    allowNonPublic: loopback,
    introspectionCredentials: credentials,
  });
}

describe('opaque access tokens by introspection (RFC 7662)', () => {
  it('makes an active token for this resource a principal (a client-credentials token: its client)', async () => {
    const answer = await resourceServer().authenticate(`Bearer ${await token()}`);
    expect(answer).toMatchObject({
      ok: true,
      principal: { issuer, subject: 'carol', claims: { scope: ['mcp:tools'] } },
    });
  }, 30_000);

  it.each<[string, () => Promise<string>, string]>([
    ['a token for another resource', () => token(OTHER), 'its audience (aud) is not this gateway'],
    ['a token the server never issued', async () => 'made-up-token-value-0123456789', 'not active'],
    [
      'a revoked token',
      async () => {
        const value = await token();
        await fetch(`${issuer}/token/revocation`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: basic('carol'),
          },
          body: new URLSearchParams({ token: value }),
        });
        return value;
      },
      'not active',
    ],
  ])(
    'refuses %s',
    async (_name, make, why) => {
      const answer = await resourceServer().authenticate(`Bearer ${await make()}`);
      expect(answer).toMatchObject({ ok: false, status: 401 });
      if (!answer.ok) expect(answer.headers['www-authenticate']).toContain(why);
    },
    30_000,
  );

  it('answers 503 when the gateway cannot introspect (wrong client credentials)', async () => {
    const answer = await resourceServer({
      clientId: 'gateway',
      clientSecret: 'wrong',
    }).authenticate(`Bearer ${await token()}`);
    expect(answer).toMatchObject({ ok: false, status: 503 });
  }, 30_000);

  it('needs the client credentials', () => {
    expect(() => resourceServer({ clientId: '', clientSecret: '' })).toThrow(
      /TOOLFENCE_INTROSPECTION_CLIENT_ID/,
    );
  });
});
