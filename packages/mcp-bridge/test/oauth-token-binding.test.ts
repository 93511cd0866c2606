// A stored OAuth connection's token goes only to the MCP server it was authorized for (real
// loopback servers): a client pointed at another URL with that connection refuses to send it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { OAuthResourceMismatchError } from '../src/oauth/errors.js';
import { OAuthTokenProvider } from '../src/oauth/token-provider.js';
import { MemoryConnectionStore } from '../src/store/connection-store.js';
import { allowLoopback } from './helpers.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that records each Authorization header and answers 401. */
async function recordingServer(): Promise<{ url: string; origin: string; seen: unknown[] }> {
  const seen: unknown[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: `${origin}/mcp`, origin, seen };
}

async function storeFor(url: string, resource: string | undefined): Promise<MemoryConnectionStore> {
  const store = new MemoryConnectionStore();
  await store.put({
    id: 'conn-A',
    url,
    ...(resource === undefined ? {} : { resource }),
    issuer: 'http://127.0.0.1:2',
    clientId: 'c',
    accessToken: 'SECRET-TOKEN-FOR-A',
    expiresAt: Date.now() + 3_600_000,
  });
  return store;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("a stored connection's token goes only to its own server", () => {
  it.each([
    ['url and resource', true],
    ['url only', false],
  ])(
    'refuses to send the token of server A to server B (record with %s)',
    async (_name, withResource) => {
      const serverA = 'http://127.0.0.1:1/mcp';
      const b = await recordingServer();
      const store = await storeFor(serverA, withResource ? serverA : undefined);
      const client = new McpClient({
        url: b.url,
        allowNonPublic: allowLoopback,
        oauth: { store, connectionId: 'conn-A' },
        openTimeoutMs: 2000,
      });
      const error = await failure(client.tools());
      await client.close();
      expect(b.seen.every((header) => header === undefined)).toBe(true);
      expect(b.seen.length).toBe(0);
      expect(error).toBeInstanceOf(OAuthResourceMismatchError);
      expect((error as OAuthResourceMismatchError).message).toContain('http://127.0.0.1:1/mcp');
      expect((error as OAuthResourceMismatchError).message).toContain(b.url);
      expect((error as OAuthResourceMismatchError).message).not.toContain('SECRET');
      expect((error as OAuthResourceMismatchError).details).toMatchObject({
        connectionId: 'conn-A',
        authorizedFor: serverA,
        url: b.url,
      });
    },
  );

  it('refuses getToken() for a provider whose url is another server', async () => {
    const store = await storeFor('http://127.0.0.1:1/mcp', 'http://127.0.0.1:1/mcp');
    const provider = new OAuthTokenProvider({
      store,
      connectionId: 'conn-A',
      url: 'http://127.0.0.1:3/mcp',
    });
    await expect(provider.getToken()).rejects.toBeInstanceOf(OAuthResourceMismatchError);
    await expect(
      provider.headers({ method: 'POST', url: 'http://127.0.0.1:3/mcp' }),
    ).rejects.toBeInstanceOf(OAuthResourceMismatchError);
  });

  it('sends the token to the server it was authorized for, and to an origin-level resource', async () => {
    const own = await recordingServer();
    const store = await storeFor(own.url, own.url);
    const client = new McpClient({
      url: own.url,
      allowNonPublic: allowLoopback,
      oauth: { store, connectionId: 'conn-A' },
      openTimeoutMs: 2000,
    });
    await failure(client.tools());
    await client.close();
    expect(own.seen[0]).toBe('Bearer SECRET-TOKEN-FOR-A');

    const originWide = await storeFor(`${own.origin}/other`, `${own.origin}/`);
    const provider = new OAuthTokenProvider({
      store: originWide,
      connectionId: 'conn-A',
      url: own.url,
    });
    expect(await provider.getToken()).toBe('SECRET-TOKEN-FOR-A');
  });
});
