import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { getGlobalDispatcher, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AllowNonPublic,
  createGuardedDispatcher,
  createGuardedFetch,
  guardedFetch,
  NetworkLimitError,
  NetworkOptionsError,
  NetworkPolicyError,
  NetworkResolutionError,
  type ResolvedAddress,
  type Resolver,
} from '../src/net/index.js';
import {
  type LoopbackServer,
  makeCertificate,
  startHttpServer,
  startHttpsServer,
  type TestCertificate,
} from './net-helpers.js';

const approveLoopback: AllowNonPublic = (_target, address) =>
  address.range === 'loopback' || address.embedded?.startsWith('127.') === true;

function fixedResolver(table: Record<string, readonly string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string): Promise<readonly ResolvedAddress[]> => {
    calls.push(hostname);
    const answers = table[hostname];
    if (answers === undefined) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { calls });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

let server: LoopbackServer;
let other: LoopbackServer;
let tlsServer: LoopbackServer;
let certificate: TestCertificate;

beforeAll(async () => {
  certificate = makeCertificate();
  server = await startHttpServer((incoming, response) => {
    const url = new URL(incoming.url ?? '/', 'http://x');
    if (url.pathname === '/redirect') {
      response.writeHead(Number(url.searchParams.get('status') ?? 302), {
        location: url.searchParams.get('to') ?? '/',
      });
      response.end();
      return;
    }
    if (url.pathname === '/loop') {
      response.writeHead(302, { location: '/loop' });
      response.end();
      return;
    }
    if (url.pathname === '/big') {
      response.writeHead(200, { 'content-length': '5000' });
      response.end('x'.repeat(5000));
      return;
    }
    if (url.pathname === '/stream') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('y'.repeat(3000));
      setTimeout(() => response.end('y'.repeat(3000)), 10);
      return;
    }
    if (url.pathname === '/burst') {
      // Chunked (no Content-Length), all of it in one write: fully in before fetch resolves.
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('z'.repeat(5000));
      return;
    }
    if (url.pathname === '/stall-headers') return;
    if (url.pathname === '/stall-body') {
      response.writeHead(200);
      response.write('partial');
      return;
    }
    if (url.pathname === '/large-sized') {
      response.writeHead(200, { 'content-length': '2000000' });
      response.end(Buffer.alloc(2_000_000, 1));
      return;
    }
    if (url.pathname === '/stall-sized-body') {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
      return;
    }
    if (url.pathname === '/gzip-bomb') {
      const packed = gzipSync(Buffer.alloc(200_000));
      response.writeHead(200, {
        'content-encoding': 'gzip',
        'content-length': String(packed.length),
      });
      response.end(packed);
      return;
    }
    if (url.pathname === '/jitter') {
      // Headers and body at a random moment, sometimes apart, to race the time limit.
      const delay = Number(url.searchParams.get('ms') ?? 0);
      setTimeout(() => {
        response.writeHead(200, { 'content-length': '10' });
        if (delay % 2 === 0) response.end('0123456789');
        else {
          response.write('01234');
          setTimeout(() => response.end('56789'), 1);
        }
      }, delay);
      return;
    }
    if (url.pathname === '/close') {
      response.writeHead(200, { connection: 'close' });
      response.end('closing');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('hello');
  });
  other = await startHttpServer((_incoming, response) => {
    response.end('other');
  });
  tlsServer = await startHttpsServer(certificate, (_incoming, response) => {
    response.end('secure');
  });
});

afterAll(async () => {
  await Promise.all([server.close(), other.close(), tlsServer.close()]);
});

describe('createGuardedDispatcher: DNS answers', () => {
  const cases: readonly (readonly [string, readonly string[], string])[] = [
    ['public answer mixed with loopback', ['8.8.8.8', '127.0.0.1'], 'address'],
    ['loopback first, then public', ['127.0.0.1', '8.8.8.8'], 'address'],
    ['private 10/8', ['10.0.0.1'], 'address'],
    ['cloud metadata', ['169.254.169.254'], 'address'],
    ['IPv4-mapped loopback', ['::ffff:127.0.0.1'], 'address'],
    ['IPv4-compatible loopback as Node prints it', ['::127.0.0.1'], 'address'],
    ['NAT64 loopback', ['64:ff9b::7f00:1'], 'address'],
    ['unspecified IPv4', ['0.0.0.0'], 'address'],
    ['unspecified IPv6', ['::'], 'address'],
    ['documentation next to public', ['2001:db8::1', '8.8.8.8'], 'address'],
    ['scoped link-local', ['fe80::1%lo'], 'resolution'],
    ['a non-address answer', ['not-an-ip'], 'resolution'],
  ];

  it.for(cases)('refuses %s before connecting', async ([, answers, reason]) => {
    const before = server.connections;
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': answers }),
    });
    const error = await rejection(request(`http://svc.test:${server.port}/`, { dispatcher }));
    expect(NetworkPolicyError.isInstance(error)).toBe(true);
    expect((error as NetworkPolicyError).reason).toBe(reason);
    expect(server.connections).toBe(before);
    await dispatcher.close();
  });

  it.for([
    ['ENOTFOUND', 'ENOTFOUND', /could not be resolved \(ENOTFOUND\)/],
    ['EAI_AGAIN (a temporary failure)', 'EAI_AGAIN', /could not be resolved \(EAI_AGAIN\)/],
    ['an error without a code', undefined, /did not resolve to any address/],
    ['a code that is not a system error code', 'not a code\r\n', /did not resolve/],
  ] as const)(
    'reports a failed lookup (%s) as NET_DNS_FAILED naming the host, not as a policy block',
    async ([, code, message]) => {
      const before = server.connections;
      const dispatcher = createGuardedDispatcher({
        resolver: async () => {
          throw Object.assign(new Error('lookup failed'), code === undefined ? {} : { code });
        },
      });
      const error = await rejection(request(`http://nowhere.test:${server.port}/`, { dispatcher }));
      expect(NetworkResolutionError.isInstance(error)).toBe(true);
      expect(NetworkPolicyError.isInstance(error)).toBe(false);
      const failure = error as NetworkResolutionError;
      expect(failure.code).toBe('NET_DNS_FAILED');
      expect(failure.hostname).toBe('nowhere.test');
      expect(failure.message).toContain('nowhere.test');
      expect(failure.message).toMatch(message);
      expect(failure.dnsCode).toBe(code === 'not a code\r\n' ? undefined : code);
      expect(failure.details).toEqual({ hostname: 'nowhere.test', dnsCode: failure.dnsCode });
      expect(server.connections).toBe(before);
      await dispatcher.close();
    },
  );

  it('reports an empty answer as NET_DNS_FAILED naming the host', async () => {
    const dispatcher = createGuardedDispatcher({ resolver: fixedResolver({ 'svc.test': [] }) });
    const error = await rejection(request(`http://svc.test:${server.port}/`, { dispatcher }));
    expect(NetworkResolutionError.isInstance(error)).toBe(true);
    expect((error as NetworkResolutionError).hostname).toBe('svc.test');
    expect((error as NetworkResolutionError).dnsCode).toBeUndefined();
    await dispatcher.close();
  });

  it('gives guardedFetch the same NET_DNS_FAILED error', async () => {
    const fetch = createGuardedFetch({ resolver: fixedResolver({}) });
    const error = await rejection(fetch('https://missing.test/'));
    expect(NetworkResolutionError.isInstance(error), String(error)).toBe(true);
    expect((error as NetworkResolutionError).hostname).toBe('missing.test');
  });

  it('refuses an approved loopback answer mixed with an unapproved private one', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['127.0.0.1', '10.0.0.1'] }),
      allowNonPublic: approveLoopback,
    });
    const error = await rejection(request(`http://svc.test:${server.port}/`, { dispatcher }));
    expect((error as NetworkPolicyError).reason).toBe('address');
    await dispatcher.close();
  });

  it('refuses plain http to an approved address that is not loopback', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['10.0.0.1'] }),
      allowNonPublic: () => true,
    });
    const error = await rejection(request(`http://svc.test:${server.port}/`, { dispatcher }));
    expect((error as NetworkPolicyError).reason).toBe('scheme');
    await dispatcher.close();
  });
});

describe('createGuardedDispatcher: connections', () => {
  it('pins the approved address and keeps the Host header', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['127.0.0.1'] }),
      allowNonPublic: approveLoopback,
    });
    const response = await request(`http://svc.test:${server.port}/host`, { dispatcher });
    expect(await response.body.text()).toBe('hello');
    expect(server.seen.at(-1)?.headers.host).toBe(`svc.test:${server.port}`);
    await dispatcher.close();
  });

  it('checks IP-literal URLs too (a lookup hook alone would miss them)', async () => {
    const dispatcher = createGuardedDispatcher();
    const before = server.connections;
    const error = await rejection(request(`${server.origin}/`, { dispatcher }));
    expect((error as NetworkPolicyError).reason).toBe('address');
    expect(server.connections).toBe(before);
    await dispatcher.close();
  });

  it('connects to an approved loopback literal', async () => {
    const dispatcher = createGuardedDispatcher({ allowNonPublic: approveLoopback });
    const response = await request(`${server.origin}/`, { dispatcher });
    expect(await response.body.text()).toBe('hello');
    await dispatcher.close();
  });

  it('gives allowNonPublic frozen copies', async () => {
    const seen: unknown[] = [];
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['127.0.0.1'] }),
      allowNonPublic: (target, address) => {
        seen.push(Object.isFrozen(target), Object.isFrozen(address), target, address);
        return true;
      },
    });
    await (await request(`http://svc.test:${server.port}/`, { dispatcher })).body.text();
    expect(seen.slice(0, 2)).toEqual([true, true]);
    expect(seen[2]).toEqual({ protocol: 'http:', hostname: 'svc.test', port: server.port });
    expect(seen[3]).toEqual({ address: '127.0.0.1', family: 4, range: 'loopback' });
    await dispatcher.close();
  });

  it('resolves and checks again on every new connection (DNS rebinding)', async () => {
    let round = 0;
    const resolver: Resolver = async () => {
      round += 1;
      return [{ address: round === 1 ? '127.0.0.1' : '10.0.0.1', family: 4 }];
    };
    const dispatcher = createGuardedDispatcher({ resolver, allowNonPublic: approveLoopback });
    const first = await request(`http://svc.test:${server.port}/close`, { dispatcher });
    expect(await first.body.text()).toBe('closing');
    const error = await rejection(request(`http://svc.test:${server.port}/`, { dispatcher }));
    expect((error as NetworkPolicyError).reason).toBe('address');
    expect(round).toBe(2);
    await dispatcher.close();
  });

  it('tries the next approved address when a connection is refused', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['127.0.0.2', '127.0.0.1'] }),
      allowNonPublic: approveLoopback,
    });
    const response = await request(`http://svc.test:${server.port}/`, { dispatcher });
    expect(await response.body.text()).toBe('hello');
    await dispatcher.close();
  });

  it('keeps SNI and the certificate check on the host name while pinning the address', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'pinned.test': ['127.0.0.1'] }),
      allowNonPublic: approveLoopback,
      ca: certificate.cert,
    });
    const response = await request(`https://pinned.test:${tlsServer.port}/`, { dispatcher });
    expect(await response.body.text()).toBe('secure');
    expect(tlsServer.seen.at(-1)?.servername).toBe('pinned.test');
    expect(tlsServer.seen.at(-1)?.headers.host).toBe(`pinned.test:${tlsServer.port}`);
    const literal = await rejection(request(`${tlsServer.origin}/`, { dispatcher }));
    expect((literal as { code?: string }).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    await dispatcher.close();
  });

  it('refuses a certificate the trust store does not know', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'pinned.test': ['127.0.0.1'] }),
      allowNonPublic: approveLoopback,
    });
    const error = await rejection(
      request(`https://pinned.test:${tlsServer.port}/`, { dispatcher }),
    );
    expect(String((error as { code?: string }).code)).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY/);
    await dispatcher.close();
  });

  it('gives up a connection attempt after connectTimeoutMs', async () => {
    // Accepts TCP but never answers the TLS handshake.
    const sockets: Socket[] = [];
    const silent = createNetServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as AddressInfo).port;
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'pinned.test': ['127.0.0.1'] }),
      allowNonPublic: approveLoopback,
      connectTimeoutMs: 150,
    });
    try {
      const error = await rejection(request(`https://pinned.test:${silentPort}/`, { dispatcher }));
      expect((error as { code?: string }).code).toBe('UND_ERR_CONNECT_TIMEOUT');
    } finally {
      await dispatcher.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('considers only the first maxAddresses answers', async () => {
    const dispatcher = createGuardedDispatcher({
      resolver: fixedResolver({ 'svc.test': ['127.0.0.1', '10.0.0.1'] }),
      allowNonPublic: approveLoopback,
      maxAddresses: 1,
    });
    const response = await request(`http://svc.test:${server.port}/`, { dispatcher });
    expect(await response.body.text()).toBe('hello');
    await dispatcher.close();
  });

  it.each([
    ['connectTimeoutMs as a string', { connectTimeoutMs: '5' }],
    ['connectTimeoutMs zero', { connectTimeoutMs: 0 }],
    ['resolver as an object', { resolver: {} }],
    ['allowNonPublic as true', { allowNonPublic: true }],
    ['maxAddresses as a boolean', { maxAddresses: true }],
    ['ca as a number', { ca: 1 }],
  ])('rejects invalid options: %s', (_name, options) => {
    expect(() => createGuardedDispatcher(options as never)).toThrow(NetworkOptionsError);
  });
});

describe('guardedFetch', () => {
  const loopback = () => ({
    dispatcher: createGuardedDispatcher({ allowNonPublic: approveLoopback }),
    allowHttpLoopback: true,
  });

  it('throws NetworkPolicyError, not TypeError, for a refused address', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/`, { guard: { allowHttpLoopback: true } }),
    );
    expect(error).toBeInstanceOf(NetworkPolicyError);
    expect(error).not.toBeInstanceOf(TypeError);
  });

  it('unwraps a refusal made while connecting from undici TypeError', async () => {
    const guard = {
      dispatcher: createGuardedDispatcher({
        resolver: fixedResolver({ 'pinned.test': ['10.1.2.3'] }),
        allowNonPublic: approveLoopback,
      }),
      allowedPorts: 'any' as const,
    };
    const error = await rejection(
      guardedFetch(`https://pinned.test:${tlsServer.port}/`, { guard }),
    );
    expect(error).toBeInstanceOf(NetworkPolicyError);
    expect((error as NetworkPolicyError).reason).toBe('address');
  });

  it('fetches over a pinned TLS connection and sends Accept-Encoding identity', async () => {
    const fetchGuarded = createGuardedFetch({
      resolver: fixedResolver({ 'pinned.test': ['127.0.0.1'] }),
      allowNonPublic: approveLoopback,
      ca: certificate.cert,
      allowedPorts: 'any',
    });
    const response = await fetchGuarded(`https://pinned.test:${tlsServer.port}/`, {
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(await response.text()).toBe('secure');
    expect(tlsServer.seen.at(-1)?.headers['accept-encoding']).toBe('identity');
    expect(response.url).toBe(`https://pinned.test:${tlsServer.port}/`);
  });

  it('never uses proxy environment variables or the global dispatcher', async () => {
    const proxy = await startHttpServer((_incoming, response) => response.end('proxied'));
    const saved = { ...process.env };
    const global = getGlobalDispatcher();
    process.env.HTTP_PROXY = proxy.origin;
    process.env.HTTPS_PROXY = proxy.origin;
    process.env.http_proxy = proxy.origin;
    process.env.NO_PROXY = '';
    try {
      const response = await guardedFetch(`${server.origin}/`, { guard: loopback() });
      expect(await response.text()).toBe('hello');
      expect(proxy.connections).toBe(0);
      expect(getGlobalDispatcher()).toBe(global);
    } finally {
      for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'NO_PROXY']) {
        if (saved[key] === undefined) delete process.env[key];
        else process.env[key] = saved[key];
      }
      await proxy.close();
    }
  });

  it('returns a redirect without following it by default', async () => {
    const response = await guardedFetch(`${server.origin}/redirect?to=/`, { guard: loopback() });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
  });

  it("throws on a redirect with redirect: 'error'", async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/redirect?to=/`, { redirect: 'error', guard: loopback() }),
    );
    expect((error as NetworkPolicyError).reason).toBe('redirect');
  });

  it('follows a same-origin redirect and keeps credentials', async () => {
    const response = await guardedFetch(`${server.origin}/redirect?to=/final`, {
      redirect: 'follow',
      headers: { authorization: 'Bearer same-origin', cookie: 'a=1' },
      guard: loopback(),
    });
    expect(await response.text()).toBe('hello');
    expect(response.redirected).toBe(true);
    expect(server.seen.at(-1)?.headers.authorization).toBe('Bearer same-origin');
  });

  it('drops Authorization and Cookie on a cross-origin redirect', async () => {
    const to = encodeURIComponent(`${other.origin}/`);
    const response = await guardedFetch(`${server.origin}/redirect?to=${to}`, {
      redirect: 'follow',
      headers: { authorization: 'Bearer secret', cookie: 'session=1', 'x-keep': 'yes' },
      guard: loopback(),
    });
    expect(await response.text()).toBe('other');
    const seen = other.seen.at(-1);
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers.cookie).toBeUndefined();
    expect(seen?.headers['x-keep']).toBe('yes');
  });

  const badLocations: readonly (readonly [string, string])[] = [
    ['metadata literal', 'http://169.254.169.254/latest/meta-data'],
    ['mapped metadata', 'http://[::ffff:a9fe:a9fe]/'],
    ['hex loopback', `http://0x7f.1:${0}/`],
    ['file URL', 'file:///etc/passwd'],
    ['credentials', 'https://user:pw@example.com/'],
    ['gopher', 'gopher://127.0.0.1:6379/_'],
    ['downgrade to http on a public host', 'http://example.com/'],
    ['private literal over https', 'https://10.0.0.1/'],
    ['NAT64 private', 'https://[64:ff9b::a00:1]/'],
    ['trailing-dot host', 'https://example.com./'],
  ];

  it.for(badLocations)('refuses a redirect to %s', async ([, location]) => {
    const guard = {
      dispatcher: createGuardedDispatcher({ allowNonPublic: (_t, a) => a.address === '127.0.0.1' }),
      allowHttpLoopback: true,
    };
    const error = await rejection(
      guardedFetch(`${server.origin}/redirect?to=${encodeURIComponent(location)}`, {
        redirect: 'follow',
        guard,
      }),
    );
    expect(NetworkPolicyError.isInstance(error)).toBe(true);
    expect((error as NetworkPolicyError).reason).toBe('redirect');
  });

  it('refuses a redirect to a name that resolves to a private address', async () => {
    const guard = {
      dispatcher: createGuardedDispatcher({
        resolver: fixedResolver({ 'internal.test': ['10.0.0.5'] }),
        allowNonPublic: approveLoopback,
      }),
      allowHttpLoopback: true,
    };
    const error = await rejection(
      guardedFetch(`${server.origin}/redirect?to=${encodeURIComponent('https://internal.test/')}`, {
        redirect: 'follow',
        guard,
      }),
    );
    expect((error as NetworkPolicyError).reason).toBe('address');
  });

  it('stops after maxRedirects', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/loop`, {
        redirect: 'follow',
        guard: { ...loopback(), maxRedirects: 3 },
      }),
    );
    expect(NetworkLimitError.isInstance(error)).toBe(true);
    expect((error as NetworkLimitError).limit).toBe('redirects');
  });

  it('turns a 303 after POST into a GET without a body', async () => {
    await guardedFetch(`${server.origin}/redirect?status=303&to=/after`, {
      method: 'POST',
      body: 'payload',
      headers: { 'content-type': 'text/plain' },
      redirect: 'follow',
      guard: loopback(),
    });
    const last = server.seen.at(-1);
    expect(last?.method).toBe('GET');
    expect(last?.body).toBe('');
    expect(last?.headers['content-type']).toBeUndefined();
  });

  it('keeps method and body on a 307', async () => {
    await guardedFetch(`${server.origin}/redirect?status=307&to=/after`, {
      method: 'POST',
      body: 'payload',
      redirect: 'follow',
      guard: loopback(),
    });
    const last = server.seen.at(-1);
    expect(last?.method).toBe('POST');
    expect(last?.body).toBe('payload');
  });

  it('refuses a response whose Content-Length is over the limit', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/big`, { guard: { ...loopback(), maxResponseBytes: 4999 } }),
    );
    expect((error as NetworkLimitError).limit).toBe('response-bytes');
  });

  it('accepts a response exactly at the limit', async () => {
    const response = await guardedFetch(`${server.origin}/big`, {
      guard: { ...loopback(), maxResponseBytes: 5000 },
    });
    expect((await response.text()).length).toBe(5000);
  });

  it('errors the body stream once a chunked response passes the limit', async () => {
    const response = await guardedFetch(`${server.origin}/stream`, {
      guard: { ...loopback(), maxResponseBytes: 4000 },
    });
    const error = await rejection(response.text());
    expect(NetworkLimitError.isInstance(error)).toBe(true);
    expect((error as NetworkLimitError).limit).toBe('response-bytes');
  });

  it.each([
    ['over the limit', 4999, 'error'],
    ['exactly at the limit', 5000, 'ok'],
  ])(
    'counts a chunked body that arrived whole before the response was returned: %s',
    async (_name, maxResponseBytes, outcome) => {
      const response = await guardedFetch(`${server.origin}/burst`, {
        guard: { ...loopback(), maxResponseBytes },
      });
      expect(response.headers.get('content-length')).toBeNull();
      if (outcome === 'ok') {
        expect((await response.text()).length).toBe(5000);
      } else {
        const error = await rejection(response.text());
        expect(NetworkLimitError.isInstance(error)).toBe(true);
        expect((error as NetworkLimitError).limit).toBe('response-bytes');
      }
    },
  );

  it('enforces the total time limit while waiting for headers', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/stall-headers`, { guard: { ...loopback(), timeoutMs: 150 } }),
    );
    expect((error as NetworkLimitError).limit).toBe('timeout');
  });

  it('enforces the total time limit while reading the body', async () => {
    const response = await guardedFetch(`${server.origin}/stall-body`, {
      guard: { ...loopback(), timeoutMs: 200 },
    });
    const error = await rejection(response.text());
    expect((error as NetworkLimitError).limit).toBe('timeout');
  });

  it('enforces the total time limit while reading a body with Content-Length', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/stall-sized-body`, {
        guard: { ...loopback(), timeoutMs: 200 },
      }).then((response) => response.text()),
    );
    expect(NetworkLimitError.isInstance(error)).toBe(true);
    expect((error as NetworkLimitError).limit).toBe('timeout');
  });

  it('enforces the total time limit while the connection is still being made, and never sends the request', async () => {
    let answer: (() => void) | undefined;
    const resolver: Resolver = (hostname) =>
      new Promise((resolve) => {
        answer = () => resolve([{ address: '127.0.0.1', family: 4 }]);
        expect(hostname).toBe('localhost');
      });
    const dispatcher = createGuardedDispatcher({ resolver, allowNonPublic: approveLoopback });
    const before = server.seen.length;
    try {
      const started = Date.now();
      const error = await rejection(
        guardedFetch(`http://localhost:${server.port}/late`, {
          guard: { dispatcher, allowHttpLoopback: true, timeoutMs: 100 },
        }),
      );
      expect(NetworkLimitError.isInstance(error)).toBe(true);
      expect((error as NetworkLimitError).limit).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2000);
      // The lookup answers after the limit: the connection opens, the request is not written.
      answer?.();
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(server.seen.slice(before).map((seen) => seen.url)).not.toContain('/late');
    } finally {
      await dispatcher.close();
    }
  });

  it('asks allowNonPublic again on every call to a repeated IP-literal URL', async () => {
    // The literal's classification is cached with the URL text; the host's answer never is,
    // and a pooled (already approved) connection does not stand in for it.
    let approve = true;
    const asked: unknown[] = [];
    const dispatcher = createGuardedDispatcher({
      allowNonPublic: (target, address) => {
        asked.push([target, address]);
        return approve && address.range === 'loopback';
      },
    });
    try {
      const guard = { dispatcher, allowHttpLoopback: true };
      expect(await (await guardedFetch(`${server.origin}/repeat`, { guard })).text()).toBe('hello');
      const calls = asked.length;
      approve = false;
      const error = await rejection(guardedFetch(`${server.origin}/repeat`, { guard }));
      expect((error as NetworkPolicyError).reason).toBe('address');
      expect(asked.length).toBe(calls + 1);
      expect(Object.isFrozen((asked.at(-1) as unknown[])[0])).toBe(true);
      expect(Object.isFrozen((asked.at(-1) as unknown[])[1])).toBe(true);
    } finally {
      await dispatcher.close();
    }
  });

  it('races the time limit against the response: a full body or NetworkLimitError, nothing else (200 calls)', async () => {
    const dispatcher = createGuardedDispatcher({ allowNonPublic: approveLoopback });
    const outcomes = { ok: 0, timeout: 0 };
    try {
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(
          Array.from({ length: 10 }, async (_, index) => {
            const ms = (round * 7 + index * 3) % 40;
            try {
              const response = await guardedFetch(`${server.origin}/jitter?ms=${ms}`, {
                guard: { dispatcher, allowHttpLoopback: true, timeoutMs: 5 + ((index * 13) % 70) },
              });
              expect(await response.text()).toBe('0123456789');
              outcomes.ok += 1;
            } catch (error) {
              expect(NetworkLimitError.isInstance(error)).toBe(true);
              expect((error as NetworkLimitError).limit).toBe('timeout');
              outcomes.timeout += 1;
            }
          }),
        );
      }
    } finally {
      await dispatcher.close();
    }
    expect(outcomes.ok + outcomes.timeout).toBe(200);
  });

  it('keeps no time limit on a body that has fully arrived', async () => {
    // The limit bounds the network exchange: once the last byte is in, reading it later is fine.
    const response = await guardedFetch(`${server.origin}/`, {
      guard: { ...loopback(), timeoutMs: 100 },
    });
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await response.text()).toBe('hello');
  });

  it('still enforces the limit on a sized body that is only partly in when returned', async () => {
    const response = await guardedFetch(`${server.origin}/stall-sized-body`, {
      guard: { ...loopback(), timeoutMs: 200 },
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('partial');
    const error = await rejection(reader.read());
    expect(NetworkLimitError.isInstance(error)).toBe(true);
    expect((error as NetworkLimitError).limit).toBe('timeout');
  });

  it('gives the caller its own abort reason while the body arrives', async () => {
    const controller = new AbortController();
    const response = await guardedFetch(`${server.origin}/stall-body`, {
      signal: controller.signal,
      guard: loopback(),
    });
    setTimeout(() => controller.abort(), 50);
    const error = await rejection(response.text());
    expect((error as Error).name).toBe('AbortError');
  });

  it('streams a large body with Content-Length and still enforces the limit', async () => {
    const response = await guardedFetch(`${server.origin}/large-sized`, {
      guard: { ...loopback(), maxResponseBytes: 3_000_000 },
    });
    expect((await response.arrayBuffer()).byteLength).toBe(2_000_000);
  });

  it('counts decoded bytes when a server compresses despite Accept-Encoding identity', async () => {
    const response = await guardedFetch(`${server.origin}/gzip-bomb`, {
      guard: { ...loopback(), maxResponseBytes: 10_000 },
    });
    const error = await rejection(response.arrayBuffer());
    expect((error as NetworkLimitError).limit).toBe('response-bytes');
  });

  it('accepts the global Headers, AbortSignal and string bodies a library passes to fetch', async () => {
    // Type-level too: a drop-in for the MCP SDK's `fetch` option.
    const fetchGuarded: FetchLike = createGuardedFetch({
      allowNonPublic: approveLoopback,
      allowHttpLoopback: true,
    });
    const headers = new globalThis.Headers({ 'content-type': 'application/json', 'x-trace': '1' });
    const response = await fetchGuarded(new URL(`${server.origin}/json`), {
      method: 'POST',
      headers,
      body: '{"a":1}',
      signal: new AbortController().signal,
    });
    expect(response.status).toBe(200);
    const seen = server.seen.at(-1);
    expect(seen?.headers['x-trace']).toBe('1');
    expect(seen?.body).toBe('{"a":1}');
  });

  it('lets the caller abort', async () => {
    const controller = new AbortController();
    const pending = guardedFetch(`${server.origin}/stall-headers`, {
      signal: controller.signal,
      guard: loopback(),
    });
    setTimeout(() => controller.abort(), 50);
    const error = await rejection(pending);
    expect((error as Error).name).toBe('AbortError');
  });

  it('refuses a caller-supplied dispatcher', async () => {
    const error = await rejection(
      guardedFetch(`${server.origin}/`, { dispatcher: getGlobalDispatcher() } as never),
    );
    expect(error).toBeInstanceOf(NetworkOptionsError);
    const foreign = await rejection(
      guardedFetch(`${server.origin}/`, { guard: { dispatcher: getGlobalDispatcher() } }),
    );
    expect(foreign).toBeInstanceOf(NetworkOptionsError);
  });

  it.each([
    ['maxResponseBytes as a boolean', { maxResponseBytes: true }],
    ['timeoutMs as a string', { timeoutMs: '100' }],
    ['maxRedirects negative', { maxRedirects: -1 }],
    ['maxResponseBytes fractional', { maxResponseBytes: 1.5 }],
    ['timeoutMs zero', { timeoutMs: 0 }],
    ['timeoutMs beyond a timer', { timeoutMs: 2 ** 31 }],
    ['allowRedirect as a boolean', { allowRedirect: true }],
  ])('rejects invalid guard options: %s', async (_name, guard) => {
    const error = await rejection(guardedFetch('https://example.com/', { guard: guard as never }));
    expect(error).toBeInstanceOf(NetworkOptionsError);
  });
});
