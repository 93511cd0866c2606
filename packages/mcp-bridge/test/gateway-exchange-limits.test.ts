// The limits of upstream credentials per caller, each a named option: the exchanged-token cache
// (count, reuse until shortly before expiry, never past the caller's own token), the exchange's
// time and byte limits (a real token endpoint on loopback), and the per-caller connections (count,
// idle close).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Principal } from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { CallerClients } from '../src/gateway/identity/caller-clients.js';
import { CallerToken } from '../src/gateway/identity/caller-token.js';
import { ExchangedTokens } from '../src/gateway/identity/exchanged-tokens.js';
import type { GatewayServerCredentials } from '../src/gateway/identity/upstream-credentials.js';
import { allowLoopback } from './helpers.js';

type Mode = 'ok' | 'huge' | 'slow' | 'short' | 'refuse';
let mode: Mode = 'ok';
let server: Server;
let tokenEndpoint: string;
const subjects: string[] = [];

beforeAll(async () => {
  server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    subjects.push(form.get('subject_token') ?? '');
    const json = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (mode === 'refuse') return json(400, { error: 'invalid_grant', error_description: 'no' });
    if (mode === 'huge')
      return json(200, { access_token: 'x'.repeat(300_000), token_type: 'Bearer' });
    if (mode === 'slow') return; // never answers
    return json(200, {
      access_token: `exchanged-for-${form.get('subject_token')}-${subjects.length}`,
      issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer',
      expires_in: mode === 'short' ? 20 : 600,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tokenEndpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const ISSUER = 'https://login.example.com';
const person = (subject: string): Principal => ({ issuer: ISSUER, subject, claims: {} });
const callerToken = (subject: string, expiresAt?: number) =>
  new CallerToken(`token-of-${subject}`, expiresAt);

function tokens(extra: Partial<GatewayServerCredentials> = {}) {
  return new ExchangedTokens({
    server: 'tools',
    url: 'https://tools.example.com/mcp',
    credentials: {
      mode: 'token-exchange',
      clientId: 'gateway',
      tokenAuthMethod: 'none',
      tokenEndpoint,
      ...extra,
    },
    allowNonPublic: allowLoopback,
  });
}

describe('exchanged tokens: cache and limits', () => {
  it('reuses one token per caller and keeps at most maxCachedTokens', async () => {
    mode = 'ok';
    const roomy = tokens();
    for (const subject of ['alice', 'bob', 'alice', 'bob']) {
      await roomy.tokenFor(person(subject), callerToken(subject));
    }
    expect(roomy.exchanges).toBe(2);
    const tight = tokens({ maxCachedTokens: 1 });
    for (const subject of ['alice', 'bob', 'alice', 'bob']) {
      await tight.tokenFor(person(subject), callerToken(subject));
    }
    expect({ exchanges: tight.exchanges, size: tight.size }).toEqual({ exchanges: 4, size: 1 });
  });

  it('gives each caller their own token, exchanged for their own subject token', async () => {
    mode = 'ok';
    const cache = tokens();
    const alice = await cache.tokenFor(person('alice'), callerToken('alice'));
    const bob = await cache.tokenFor(person('bob'), callerToken('bob'));
    expect(alice).toMatch(/^exchanged-for-token-of-alice-/);
    expect(bob).toMatch(/^exchanged-for-token-of-bob-/);
  });

  it('does not reuse a token within refreshSkewMs of its expiry', async () => {
    mode = 'short'; // expires_in 20 s, under the default skew of 30 s
    const cache = tokens();
    await cache.tokenFor(person('alice'), callerToken('alice'));
    await cache.tokenFor(person('alice'), callerToken('alice'));
    expect(cache.exchanges).toBe(2);
    const lenient = tokens({ refreshSkewMs: 1_000 });
    await lenient.tokenFor(person('alice'), callerToken('alice'));
    await lenient.tokenFor(person('alice'), callerToken('alice'));
    expect(lenient.exchanges).toBe(1);
  });

  it("does not reuse a token past the caller's own token's expiry", async () => {
    mode = 'ok';
    const cache = tokens();
    const expired = Date.now() - 1;
    await cache.tokenFor(person('alice'), callerToken('alice', expired));
    await cache.tokenFor(person('alice'), callerToken('alice', expired));
    expect(cache.exchanges).toBe(2);
  });

  it.each([
    ['a refusal', 'refuse', {}, 'the authorization server refused it (invalid_grant)'],
    [
      'an answer over fetchMaxBytes',
      'huge',
      { fetchMaxBytes: 4_096 },
      'the authorization server could not be reached or answered out of bounds (too-large)',
    ],
    [
      'no answer within fetchTimeoutMs',
      'slow',
      { fetchTimeoutMs: 300 },
      'the authorization server could not be reached or answered out of bounds (timeout)',
    ],
  ] as const)(
    'fails with GATEWAY_TOKEN_EXCHANGE_FAILED on %s, naming no token',
    async (_name, answer, extra, why) => {
      mode = answer;
      const error = await tokens(extra)
        .tokenFor(person('alice'), callerToken('alice'))
        .then(
          () => undefined,
          (thrown: unknown) => thrown as Error & { code: string },
        );
      expect(error?.code).toBe('GATEWAY_TOKEN_EXCHANGE_FAILED');
      expect(error?.message).toBe(
        `The token exchange for the caller at the upstream tools failed: ${why}`,
      );
      expect(
        JSON.stringify({
          message: error?.message,
          details: (error as { details?: unknown }).details,
        }),
      ).not.toContain('token-of-alice');
    },
    30_000,
  );

  it('prints the caller token as a placeholder', () => {
    const token = callerToken('alice');
    expect(JSON.stringify({ token })).toBe('{"token":"[caller token]"}');
    expect(String(token)).toBe('[caller token]');
  });
});

describe('per-caller connections: count and idle time', () => {
  const opened: string[] = [];
  const clients = (max: number, idleMs = 60_000) =>
    new CallerClients({
      server: 'tools',
      max,
      idleMs,
      create: (_key, token) => {
        opened.push(token());
        return new McpClient({ url: 'https://tools.example.com/mcp', token });
      },
    });

  it('refuses a new caller while maxCallerClients connections are busy, and reuses an idle one', async () => {
    opened.length = 0;
    const pool = clients(1);
    const alice = pool.acquire('alice', 'a1');
    expect(() => pool.acquire('bob', 'b1')).toThrow(
      'Every per-caller connection to the upstream tools is busy (1, credentials.maxCallerClients)',
    );
    const again = pool.acquire('alice', 'a2');
    expect(again.client).toBe(alice.client);
    alice.release();
    again.release();
    const bob = pool.acquire('bob', 'b1');
    expect(bob.client).not.toBe(alice.client);
    expect({ opened, size: pool.size }).toEqual({ opened: ['a1', 'b1'], size: 1 });
    bob.release();
    await pool.close();
  });

  it('closes a connection left unused for callerClientIdleMs', async () => {
    const pool = clients(4, 1_000);
    pool.acquire('alice', 'a1').release();
    expect(pool.size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(pool.size).toBe(0);
    await pool.close();
  });
});
