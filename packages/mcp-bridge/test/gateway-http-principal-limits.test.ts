// `serve --http` with gateway.httpAuth shared by several people: one person (mallory) cannot use up
// the gateway's shared limits. Her legacy sessions, stateless calls in flight and
// `subscriptions/listen` streams are counted per principal (issuer and subject) and refused past
// her share with GATEWAY_HTTP_BUSY naming the limit and its option, while another person (bob) is
// still served; a listen stream ends when its token expires. Tokens are signed with jose and
// checked against a scripted authorization server's JWKS on loopback.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RiskPolicy } from '@toolfence/tools';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type GatewayHttpOptions, serveGatewayHttp } from '../src/cli/gateway-http.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { checkHttpAuthSettings } from '../src/gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../src/gateway/identity/resource-server.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import {
  type ScriptedOAuthServer,
  sendJson,
  startScriptedOAuthServer,
} from './fixtures/oauth-scripted.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const RESOURCE = 'https://gateway.example.com/mcp';
const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'fetch', version: '1.0.0' },
};

let folder: string;
let issuer: ScriptedOAuthServer;
let sign: (subject: string, lifetimeSeconds?: number) => Promise<string>;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-principal-limits-'));
  issuer = await startScriptedOAuthServer();
  open.push(issuer);
  issuer.metadata.jwks_uri = `${issuer.origin}/jwks`;
  const pair = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig' };
  issuer.routes.set('GET /jwks', (_request, response) => sendJson(response, 200, { keys: [jwk] }));
  sign = (subject, lifetimeSeconds = 300) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: issuer.issuer,
      aud: RESOURCE,
      sub: subject,
      iat: now,
      exp: now + lifetimeSeconds,
      scope: 'mcp:tools',
    })
      .setProtectedHeader({ alg: 'RS256', kid: 'key-1', typ: 'at+jwt' })
      .sign(pair.privateKey);
  };
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/** One gateway over the toolkit server, served over HTTP with `options` (and httpAuth unless `auth` is false). */
async function serve(options: Partial<GatewayHttpOptions>, auth = true): Promise<string> {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' },
      },
    }),
    authorizer: new RiskPolicy(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  const http = await serveGatewayHttp(gateway, {
    host: '127.0.0.1',
    port: 0,
    token: undefined,
    loopback: true,
    maxSessions: 64,
    ...(auth
      ? {
          auth: new GatewayResourceServer({
            settings: checkHttpAuthSettings({
              resource: RESOURCE,
              authorizationServers: [issuer.issuer],
            }),
            allowNonPublic: (_target: unknown, address: { address: string }) =>
              address.address === '127.0.0.1',
          }),
        }
      : {}),
    ...options,
  });
  open.push(http);
  return http.url;
}

interface Reply {
  readonly status: number;
  readonly session: string | null;
  readonly message: Record<string, unknown> | undefined;
}

async function post(
  url: string,
  token: string | undefined,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...body }),
  });
  const text = await response.text();
  const data = text.startsWith('{') ? text : /^data: (.*)$/m.exec(text)?.[1];
  return {
    status: response.status,
    session: response.headers.get('mcp-session-id'),
    message: data === undefined ? undefined : (JSON.parse(data) as Record<string, unknown>),
  };
}

const initialize = (url: string, token: string | undefined) =>
  post(url, token, {
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: LEGACY,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    },
  });

/** A stateless (2026-07-28) call of `tk__slow`, running `ms`. */
const statelessSlow = (url: string, token: string, n: number, ms: number) =>
  post(
    url,
    token,
    {
      id: n,
      method: 'tools/call',
      params: { name: 'tk__slow', arguments: { ms, n }, _meta: META },
    },
    { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'tk__slow' },
  );

/** The busy refusal's `data`, or undefined when `reply` is not one. */
const busyOf = (reply: Reply) =>
  (
    reply.message?.error as
      | { data?: { code?: string; limit?: number; option?: string } }
      | undefined
  )?.data;

/** An open `subscriptions/listen` stream: its status, first event, and when it ended. */
interface Listen {
  readonly status: number;
  readonly first: string;
  readonly ended: Promise<void>;
  close(): void;
}

function listen(url: string, token: string): Promise<Listen> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'subscriptions/listen',
    params: { notifications: { toolsListChanged: true }, _meta: META },
  });
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${token}`,
          'mcp-protocol-version': MODERN,
          'mcp-method': 'subscriptions/listen',
        },
      },
      (response: IncomingMessage) => {
        const ended = new Promise<void>((done) => {
          response.once('end', done);
          response.once('close', done);
        });
        response.once('data', (chunk: Buffer) => {
          resolve({
            status: response.statusCode ?? 0,
            first: chunk.toString('utf8'),
            ended,
            close: () => request.destroy(),
          });
        });
        response.resume();
      },
    );
    request.once('error', reject);
    request.end(body);
  });
}

describe('--http with gateway.httpAuth: one principal cannot use up the shared limits', () => {
  it('counts legacy sessions per principal (httpMaxSessionsPerPrincipal): mallory is refused, bob opens one', async () => {
    const url = await serve({ maxSessions: 8, maxSessionsPerPrincipal: 2 });
    const mallory = await sign('mallory');
    for (let n = 0; n < 2; n += 1) expect((await initialize(url, mallory)).session).toBeTruthy();
    const refused = await initialize(url, mallory);
    expect(refused.status).toBe(429);
    expect(refused.session).toBeNull();
    expect(busyOf(refused)).toEqual({
      code: 'GATEWAY_HTTP_BUSY',
      limit: 2,
      option: 'gateway.httpMaxSessionsPerPrincipal',
    });
    expect(JSON.stringify(refused.message)).toMatch(
      /2 legacy session\(s\) of this principal are already open \(gateway\.httpMaxSessionsPerPrincipal\)/,
    );
    const bob = await initialize(url, await sign('bob'));
    expect(bob.status).toBe(200);
    expect(bob.session).toBeTruthy();
  }, 30_000);

  it('counts a resumed sealed session too: over the share its resumption is answered 404, within it the session resumes', async () => {
    const url = await serve({
      maxSessionsPerPrincipal: 1,
      sessionIdleMs: 1_000,
      sealKeys: { current: randomBytes(32) },
    });
    const mallory = await sign('mallory');
    const first = (await initialize(url, mallory)).session as string;
    expect(first).toMatch(/^tfs1\./);
    // Idle past the limit and swept: closed here, resumable by its sealed id.
    await new Promise((resolve) => setTimeout(resolve, 2_600));
    const second = (await initialize(url, mallory)).session as string;
    const list = (session: string) =>
      post(
        url,
        mallory,
        { id: 5, method: 'tools/list', params: {} },
        {
          'mcp-session-id': session,
          'mcp-protocol-version': LEGACY,
        },
      );
    expect((await list(first)).status).toBe(404);
    const ended = await fetch(url, {
      method: 'DELETE',
      headers: {
        authorization: `Bearer ${mallory}`,
        'mcp-session-id': second,
        'mcp-protocol-version': LEGACY,
      },
    });
    expect(ended.status).toBe(200);
    expect((await list(first)).status).toBe(200);
  }, 30_000);

  it('counts stateless calls in flight per principal (httpMaxCallsPerPrincipal): bob’s call runs while mallory’s wait', async () => {
    const url = await serve({ maxStatelessCalls: 4, maxCallsPerPrincipal: 2 });
    const mallory = await sign('mallory');
    const held = Array.from({ length: 3 }, (_, n) => statelessSlow(url, mallory, n + 1, 3_000));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const bob = await statelessSlow(url, await sign('bob'), 9, 1);
    expect(JSON.stringify(bob.message)).toContain('slow 9');
    const answers = await Promise.all(held);
    const busy = answers.map(busyOf).filter((data) => data !== undefined);
    expect(busy).toEqual([
      { code: 'GATEWAY_HTTP_BUSY', limit: 2, option: 'gateway.httpMaxCallsPerPrincipal' },
    ]);
    expect(
      answers.filter((answer) => JSON.stringify(answer.message).includes('"slow ')),
    ).toHaveLength(2);
  }, 30_000);

  it('counts legacy calls in flight per principal across their sessions (httpMaxCallsPerPrincipal): bob’s call runs', async () => {
    const url = await serve({ maxCallsPerSession: 4, maxCallsPerPrincipal: 2 });
    const mallory = await sign('mallory');
    const open = async (token: string) => {
      const session = (await initialize(url, token)).session as string;
      await post(
        url,
        token,
        { method: 'notifications/initialized' },
        {
          'mcp-session-id': session,
          'mcp-protocol-version': LEGACY,
        },
      );
      return session;
    };
    const slow = (token: string, session: string, n: number, ms: number) =>
      post(
        url,
        token,
        { id: n, method: 'tools/call', params: { name: 'tk__slow', arguments: { ms, n } } },
        { 'mcp-session-id': session, 'mcp-protocol-version': LEGACY },
      );
    const sessions = [await open(mallory), await open(mallory)];
    const held = [1, 2, 3].map((n) => slow(mallory, sessions[n % 2] as string, n, 3_000));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const bob = await sign('bob');
    const bobs = await slow(bob, await open(bob), 9, 1);
    expect(JSON.stringify(bobs.message)).toContain('slow 9');
    const answers = await Promise.all(held);
    expect(answers.map(busyOf).filter((data) => data !== undefined)).toEqual([
      { code: 'GATEWAY_HTTP_BUSY', limit: 2, option: 'gateway.httpMaxCallsPerPrincipal' },
    ]);
  }, 30_000);

  it('counts listen streams per principal (httpMaxListenStreamsPerPrincipal) and in all (httpMaxListenStreams)', async () => {
    const url = await serve({ maxListenStreams: 3, maxListenStreamsPerPrincipal: 2 });
    const mallory = await sign('mallory');
    const bob = await sign('bob');
    const streams: Listen[] = [];
    try {
      for (let n = 0; n < 2; n += 1) {
        const stream = await listen(url, mallory);
        streams.push(stream);
        expect(stream.status).toBe(200);
        expect(stream.first).toContain('notifications/subscriptions/acknowledged');
      }
      const third = await listen(url, mallory);
      streams.push(third);
      expect(third.first).toContain('"option":"gateway.httpMaxListenStreamsPerPrincipal"');
      expect(third.first).toContain('GATEWAY_HTTP_BUSY');
      const bobs = await listen(url, bob);
      streams.push(bobs);
      expect(bobs.first).toContain('notifications/subscriptions/acknowledged');
      // Three open in all: the fourth, bob's second, is over the gateway-wide limit.
      const over = await listen(url, bob);
      streams.push(over);
      expect(over.first).toContain('"option":"gateway.httpMaxListenStreams"');
      // A closed stream gives its share back.
      streams[0]?.close();
      await streams[0]?.ended;
      await new Promise((resolve) => setTimeout(resolve, 200));
      const again = await listen(url, bob);
      streams.push(again);
      expect(again.first).toContain('notifications/subscriptions/acknowledged');
    } finally {
      for (const stream of streams) stream.close();
    }
  }, 30_000);

  it('ends a listen stream when its token expires, and gives its share back', async () => {
    const url = await serve({ maxListenStreamsPerPrincipal: 1 });
    const stream = await listen(url, await sign('mallory', 2));
    try {
      expect(stream.first).toContain('notifications/subscriptions/acknowledged');
      // Bounded: the stream ends at the token's exp (2 s), well inside the test's limit.
      await stream.ended;
      const next = await listen(url, await sign('mallory'));
      expect(next.first).toContain('notifications/subscriptions/acknowledged');
      next.close();
    } finally {
      stream.close();
    }
  }, 30_000);

  it('ends a legacy session’s GET stream when the token that opened it expires', async () => {
    const url = await serve({});
    const token = await sign('mallory', 2);
    const session = (await initialize(url, token)).session as string;
    await post(
      url,
      token,
      { method: 'notifications/initialized' },
      {
        'mcp-session-id': session,
        'mcp-protocol-version': LEGACY,
      },
    );
    const target = new URL(url);
    const ended = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'GET',
          headers: {
            accept: 'text/event-stream',
            authorization: `Bearer ${token}`,
            'mcp-session-id': session,
            'mcp-protocol-version': LEGACY,
          },
        },
        (response) => {
          response.resume();
          response.once('end', () => resolve(response.statusCode ?? 0));
        },
      );
      request.once('error', reject);
      request.end();
    });
    expect(ended).toBe(200);
  }, 30_000);

  it('without httpAuth counts nothing per principal (every caller is one): the gateway-wide limits apply', async () => {
    const url = await serve({ maxSessions: 8, maxSessionsPerPrincipal: 1 }, false);
    for (let n = 0; n < 3; n += 1) expect((await initialize(url, undefined)).status).toBe(200);
  }, 30_000);
});

describe('the per-principal options', () => {
  it.each([
    'httpMaxSessionsPerPrincipal',
    'httpMaxCallsPerPrincipal',
    'httpMaxListenStreams',
    'httpMaxListenStreamsPerPrincipal',
    'httpMaxRememberedSessions',
  ])('%s must be a positive integer', (key) => {
    expect(() => parseGatewayConfig({ mcpServers: {}, gateway: { [key]: 0 } })).toThrow(
      expect.objectContaining({ code: 'GATEWAY_CONFIG', details: { at: `gateway.${key}` } }),
    );
    expect(parseGatewayConfig({ mcpServers: {}, gateway: { [key]: 3 } }).gateway).toMatchObject({
      [key]: 3,
    });
  });
});
