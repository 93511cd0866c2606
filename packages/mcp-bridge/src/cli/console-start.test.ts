// The console `serve --console` builds with gateway.httpAuth takes the console limits of the
// config: one caller's share of the approvals inbox (console.maxPendingPerPrincipal) and the
// sign-ins one address may have in progress (console.maxPendingSignInsPerSource).
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboxAsk } from '../gateway/approval-inbox.js';
import { checkHttpAuthSettings } from '../gateway/identity/http-auth-settings.js';
import { GatewayResourceServer } from '../gateway/identity/resource-server.js';
import { prepareConsole } from './console-start.js';

const ask = (subject: string): InboxAsk => ({
  tool: 'tk__note',
  server: 'toolkit',
  description: 'Reads a note.',
  arguments: {},
  reason: 'asked',
  principal: { issuer: 'https://id.example.com', subject },
});

async function inboxWith(console: Record<string, unknown>) {
  const settings = {
    resource: 'https://mcp.example.com/mcp',
    authorizationServers: ['https://id.example.com'],
    console,
  };
  const prepared = await prepareConsole(
    { address: '127.0.0.1:0', hosts: [], origins: [], allowRemote: false },
    undefined,
    {
      settings: settings as never,
      auth: new GatewayResourceServer({ settings: checkHttpAuthSettings(settings) }),
      clientSecret: undefined,
    },
  );
  return prepared.inbox;
}

describe('serve --console with gateway.httpAuth', () => {
  it('one caller holds at most console.maxPendingPerPrincipal asks; another caller still waits', async () => {
    const inbox = await inboxWith({ maxPendingPerPrincipal: 2 });
    const abort = new AbortController();
    const held = [
      inbox.decide(ask('mallory'), abort.signal),
      inbox.decide(ask('mallory'), abort.signal),
    ];
    expect(await inbox.decide(ask('mallory'), abort.signal)).toBe('principal-full');
    const bob = inbox.decide(ask('bob'), abort.signal);
    abort.abort();
    expect(await Promise.all([...held, bob])).toEqual(['declined', 'declined', 'declined']);
  });

  it('by default 10 per caller', async () => {
    const inbox = await inboxWith({});
    const abort = new AbortController();
    const held = Array.from({ length: 10 }, () => inbox.decide(ask('mallory'), abort.signal));
    expect(await inbox.decide(ask('mallory'), abort.signal)).toBe('principal-full');
    abort.abort();
    await Promise.all(held);
  });
});

// A loopback authorization server publishing its metadata (the sign-in's first step reads it).
let server: Server;
let issuer: string;
beforeAll(async () => {
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        code_challenge_methods_supported: ['S256'],
        response_types_supported: ['code'],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('serve --console sign-ins with gateway.httpAuth', () => {
  it('one address holds at most console.maxPendingSignInsPerSource sign-ins in progress (429 beyond)', async () => {
    const settings = {
      resource: 'https://mcp.example.com/mcp',
      authorizationServers: [issuer],
      console: { maxPendingSignInsPerSource: 2, admins: { subjects: ['alice'] } },
    };
    const prepared = await prepareConsole(
      { address: '127.0.0.1:0', hosts: [], origins: [], allowRemote: false },
      undefined,
      {
        settings: settings as never,
        auth: new GatewayResourceServer({ settings: checkHttpAuthSettings(settings) }),
        clientSecret: undefined,
      },
    );
    // The sign-in pages touch neither the gateway nor the audit log.
    const served = await prepared.listen({
      gateway: {} as never,
      audit: {} as never,
      auditKey: undefined,
      config: () => ({}) as never,
      reload: async () => undefined,
    });
    try {
      const statuses: number[] = [];
      for (let index = 0; index < 3; index += 1)
        statuses.push(await get(`${served.url}/login/start`));
      expect(statuses).toEqual([303, 303, 429]);
    } finally {
      await served.close();
    }
  });
});
