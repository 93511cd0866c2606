import { describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../gateway-config.js';

const HTTP_AUTH = {
  resource: 'https://gateway.example.com/mcp',
  authorizationServers: ['https://login.example.com'],
};
const ENV = { EXCHANGE_SECRET: 'from-the-environment-0123456789' };

function parse(server: Record<string, unknown>, gateway: Record<string, unknown> = {}) {
  return parseGatewayConfig(
    { mcpServers: { remote: server }, gateway: { httpAuth: HTTP_AUTH, ...gateway } },
    ENV,
  );
}

const URL_SERVER = { url: 'https://tools.example.com/mcp' };
const EXCHANGE = { mode: 'token-exchange', clientId: 'gateway' };

describe('gateway config: per-server credentials (token exchange)', () => {
  it('keeps the keys, expands variables and states the method default', () => {
    const config = parse({
      ...URL_SERVER,
      credentials: {
        ...EXCHANGE,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a config variable the parser expands
        clientSecret: '${EXCHANGE_SECRET}',
        audience: 'tools',
        scope: 'tools:read tools:write',
        maxCachedTokens: 10,
        maxCallerClients: 2,
      },
    });
    expect(config.mcpServers.remote?.credentials).toEqual({
      mode: 'token-exchange',
      clientId: 'gateway',
      clientSecret: ENV.EXCHANGE_SECRET,
      tokenAuthMethod: 'client_secret_basic',
      audience: 'tools',
      scope: 'tools:read tools:write',
      maxCachedTokens: 10,
      maxCallerClients: 2,
    });
    expect(parse({ ...URL_SERVER, credentials: EXCHANGE }).mcpServers.remote?.credentials).toEqual({
      mode: 'token-exchange',
      clientId: 'gateway',
      tokenAuthMethod: 'none',
    });
  });

  it.each([
    [
      'a stdio server (one process shared by every caller)',
      { command: 'node', args: ['server.mjs'], credentials: EXCHANGE },
      {},
      'mcpServers.remote.credentials: applies to url servers only: a stdio server is one process shared by every caller',
    ],
    [
      'an unknown key',
      { ...URL_SERVER, credentials: { ...EXCHANGE, passthrough: true } },
      {},
      'mcpServers.remote.credentials: unknown key "passthrough"',
    ],
    [
      'another mode',
      { ...URL_SERVER, credentials: { ...EXCHANGE, mode: 'passthrough' } },
      {},
      'mcpServers.remote.credentials.mode: must be "token-exchange"',
    ],
    [
      'no client id',
      { ...URL_SERVER, credentials: { mode: 'token-exchange' } },
      {},
      'mcpServers.remote.credentials.clientId: must be a non-empty string',
    ],
    [
      'a secret method without a secret',
      { ...URL_SERVER, credentials: { ...EXCHANGE, tokenAuthMethod: 'client_secret_post' } },
      {},
      '"client_secret_post" needs a clientSecret',
    ],
    [
      'a token endpoint that is not a URL',
      { ...URL_SERVER, credentials: { ...EXCHANGE, tokenEndpoint: 'login/token' } },
      {},
      'mcpServers.remote.credentials.tokenEndpoint: must be an absolute URL',
    ],
    [
      'a cache of no tokens',
      { ...URL_SERVER, credentials: { ...EXCHANGE, maxCachedTokens: 0 } },
      {},
      'mcpServers.remote.credentials.maxCachedTokens: must be a whole number from 1',
    ],
    [
      'no gateway.httpAuth (no caller to exchange for)',
      { ...URL_SERVER, credentials: EXCHANGE },
      { httpAuth: undefined },
      'a token exchanged for the caller needs a caller: set gateway.httpAuth',
    ],
  ])('refuses %s', (_name, server, gateway, message) => {
    expect(() => parse(server, gateway)).toThrow(message);
  });

  it('names an unset variable in the secret', () => {
    expect(() =>
      parse({
        ...URL_SERVER,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a config variable the parser expands
        credentials: { ...EXCHANGE, clientSecret: '${MISSING_SECRET}' },
      }),
    ).toThrow('variable MISSING_SECRET is not set');
  });
});
