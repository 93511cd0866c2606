import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OAuthConfigurationError, type StartOAuthOptions, startOAuth } from '../src/index.js';
import { type ScriptedOAuthServer, startScriptedOAuthServer } from './fixtures/oauth-scripted.js';

const loopback = (_target: unknown, address: { address: string }): boolean =>
  address.address === '127.0.0.1';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const CIMD = 'https://client.example.com/oauth/client.json';

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
    clientMetadataUrl: CIMD,
    ...options,
  });
}

describe('client ID metadata documents (clientMetadataUrl)', () => {
  it('uses the URL as a public client id when the server advertises support', async () => {
    server.metadata.client_id_metadata_document_supported = true;
    const started = await start();
    expect(started).toMatchObject({
      clientId: CIMD,
      clientSecret: undefined,
      tokenAuthMethod: 'none',
    });
    expect(new URL(started.authorizeUrl).searchParams.get('client_id')).toBe(CIMD);
    expect(server.requests).not.toContain('POST /register');
  });

  it('registers dynamically when the server does not advertise support', async () => {
    const started = await start();
    expect(started.clientId).toBe('client-1');
    expect(server.requests).toContain('POST /register');
  });

  it.each([
    { name: 'plain http', clientMetadataUrl: 'http://client.example.com/client.json' },
    { name: 'no path', clientMetadataUrl: 'https://client.example.com/' },
    { name: 'a fragment', clientMetadataUrl: 'https://client.example.com/c.json#x' },
    { name: 'credentials', clientMetadataUrl: 'https://u:p@client.example.com/c.json' },
    { name: 'a dot segment', clientMetadataUrl: 'https://client.example.com/a/%2e%2e/c.json' },
    { name: 'not a URL', clientMetadataUrl: 'client.json' },
  ])('refuses a clientMetadataUrl with $name', async ({ clientMetadataUrl }) => {
    server.metadata.client_id_metadata_document_supported = true;
    const error = await start({ clientMetadataUrl }).catch((caught: unknown) => caught);
    expect(OAuthConfigurationError.isInstance(error)).toBe(true);
    expect(server.requests).toEqual([]);
  });

  it('refuses clientMetadataUrl together with clientId', async () => {
    const error = await start({ clientId: 'pre', issuer: server.issuer }).catch(
      (caught: unknown) => caught,
    );
    expect(OAuthConfigurationError.isInstance(error)).toBe(true);
  });
});
