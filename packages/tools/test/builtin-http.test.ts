import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HTTP_TOOL_METHOD_RISKS,
  HttpTool,
  type HttpToolMethod,
  type HttpToolOptions,
} from '../src/builtin/http-tool.js';
import { HttpToolOptionsError } from '../src/builtin/http-tool-options-error.js';
import { type AllowNonPublic, createGuardedDispatcher, type Resolver } from '../src/net/index.js';
import { RiskPolicy } from '../src/policy/risk-policy.js';
import { type PolicyRule, RuleBasedPolicy } from '../src/policy/rule-based-policy.js';
import type { AuthorizationRequest } from '../src/registry/authorization.js';
import { resolveEffect } from '../src/registry/effect.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { ToolRegistry } from '../src/registry/tool-registry.js';
import {
  type LoopbackServer,
  makeCertificate,
  startHttpServer,
  startHttpsServer,
} from './net-helpers.js';

const context = createToolContext({ runId: 'http-test' });
const approveLoopback: AllowNonPublic = (_target, address) => address.range === 'loopback';
const resolver: Resolver = async (hostname) => {
  if (hostname === 'svc.test' || hostname === 'localhost')
    return [{ address: '127.0.0.1', family: 4 }];
  if (hostname === 'internal.test') return [{ address: '10.0.0.7', family: 4 }];
  throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
};

let server: LoopbackServer;

beforeAll(async () => {
  server = await startHttpServer((incoming, response) => {
    const url = new URL(incoming.url ?? '/', 'http://x');
    if (url.pathname === '/big') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5000' });
      response.end('b'.repeat(5000));
    } else if (url.pathname === '/redirect') {
      response.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
      response.end();
    } else if (url.pathname === '/loop') {
      response.writeHead(302, { location: '/loop' });
      response.end();
    } else if (url.pathname === '/stall') {
      // never answers
    } else if (url.pathname === '/binary') {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      response.end(Buffer.from([0, 1, 2, 255]));
    } else {
      response.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' });
      response.end(JSON.stringify({ ok: true, method: incoming.method }));
    }
  });
});

afterAll(async () => {
  await server.close();
});

function loopbackTool(options: Partial<HttpToolOptions> = {}): HttpTool {
  return new HttpTool({
    allowedHosts: ['127.0.0.1', 'svc.test', 'internal.test'],
    requireHttps: false,
    dispatcher: createGuardedDispatcher({ allowNonPublic: approveLoopback, resolver }),
    ...options,
  });
}

async function call(tool: HttpTool, args: JsonObject): Promise<ToolResult> {
  return tool.invoke(args, context);
}

function data(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result)).not.toBe(true);
  return result.structuredContent as Record<string, unknown>;
}

describe('HttpTool', () => {
  it('GETs an allowed host through the guard with identity encoding and only allowed headers', async () => {
    const tool = loopbackTool();
    const result = data(
      await call(tool, { url: `${server.origin}/hello`, headers: { Accept: 'application/json' } }),
    );
    expect(result).toMatchObject({ status: 200, encoding: 'utf8', truncated: false });
    expect(JSON.parse(result.body as string)).toEqual({ ok: true, method: 'GET' });
    expect(result.headers).toMatchObject({ 'content-type': 'application/json', etag: '"v1"' });
    const seen = server.seen.at(-1);
    expect(seen?.headers['accept-encoding']).toBe('identity');
    expect(seen?.headers.accept).toBe('application/json');
  });

  it('returns binary bodies as base64', async () => {
    const result = data(await call(loopbackTool(), { url: `${server.origin}/binary` }));
    expect(result.encoding).toBe('base64');
    expect(Buffer.from(result.body as string, 'base64')).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  it('resolves an allowed name and pins its checked address over TLS', async () => {
    const certificate = makeCertificate();
    const tls = await startHttpsServer(certificate, (_incoming, response) =>
      response.end('pinned'),
    );
    try {
      const tool = new HttpTool({
        allowedHosts: ['pinned.test'],
        allowedPorts: 'any',
        dispatcher: createGuardedDispatcher({
          allowNonPublic: approveLoopback,
          resolver: async () => [{ address: '127.0.0.1', family: 4 }],
          ca: certificate.cert,
        }),
      });
      const result = data(await call(tool, { url: `https://pinned.test:${tls.port}/` }));
      expect(result.body).toBe('pinned');
      expect(tls.seen.at(-1)?.servername).toBe('pinned.test');
    } finally {
      await tls.close();
    }
  });

  type Refusal = readonly [
    name: string,
    args: JsonObject,
    code: string,
    options?: Partial<HttpToolOptions>,
  ];
  const refusals: readonly Refusal[] = [
    ['a host that is not allowed', { url: 'https://example.com/' }, 'HTTP_TOOL_HOST_NOT_ALLOWED'],
    [
      'a sub-domain of an allowed host',
      { url: 'https://api.svc.test/' },
      'HTTP_TOOL_HOST_NOT_ALLOWED',
    ],
    [
      'localhost when only 127.0.0.1 is allowed',
      { url: 'http://localhost:9/' },
      'HTTP_TOOL_HOST_NOT_ALLOWED',
    ],
    [
      'a private address behind an allowed name',
      { url: 'https://internal.test/' },
      'HTTP_TOOL_BLOCKED',
      { requireHttps: true },
    ],
    ['metadata literal', { url: 'http://169.254.169.254/' }, 'HTTP_TOOL_BLOCKED'],
    ['a public host over http', { url: 'http://svc.example/' }, 'HTTP_TOOL_BLOCKED'],
    ['userinfo', { url: 'http://user:pw@127.0.0.1:9/' }, 'HTTP_TOOL_BLOCKED'],
    [
      'a host name that does not resolve',
      { url: 'https://gone.test/' },
      'HTTP_TOOL_DNS_FAILED',
      {
        allowedHosts: ['gone.test'],
      },
    ],
    [
      'a POST on a GET-only tool',
      { url: 'https://svc.test/', method: 'POST' },
      'HTTP_TOOL_METHOD_NOT_ALLOWED',
    ],
    [
      'an unknown method',
      { url: 'https://svc.test/', method: 'TRACE' },
      'HTTP_TOOL_METHOD_NOT_ALLOWED',
    ],
    [
      'a header that is not allowed',
      { url: 'https://svc.test/', headers: { authorization: 'x' } },
      'HTTP_TOOL_HEADER_NOT_ALLOWED',
    ],
    [
      'a header with CRLF',
      { url: 'https://svc.test/', headers: { accept: 'a\r\nx-evil: 1' } },
      'HTTP_TOOL_INVALID_ARGUMENTS',
    ],
    ['a body on GET', { url: 'https://svc.test/', body: 'x' }, 'HTTP_TOOL_INVALID_ARGUMENTS'],
    // Red team: OPTIONS is judged read-only, so a body on it passed the flow guard and a
    // read-only access scope. A method judged read-only carries no body.
    [
      'a body on OPTIONS (judged read-only)',
      { url: 'https://svc.test/', method: 'OPTIONS', body: 'x' },
      'HTTP_TOOL_INVALID_ARGUMENTS',
      { allowedMethods: ['OPTIONS'] },
    ],
    [
      'a body on HEAD',
      { url: 'https://svc.test/', method: 'head', body: 'x' },
      'HTTP_TOOL_INVALID_ARGUMENTS',
      { allowedMethods: ['HEAD'] },
    ],
    [
      'a timeout above the maximum',
      { url: 'https://svc.test/', timeoutSeconds: 21 },
      'HTTP_TOOL_INVALID_ARGUMENTS',
    ],
    ['a url that is not a string', { url: 5 }, 'HTTP_TOOL_INVALID_ARGUMENTS'],
    [
      'an over-long body',
      { url: 'https://svc.test/', method: 'POST', body: 'x'.repeat(11) },
      'HTTP_TOOL_REQUEST_TOO_LARGE',
      { allowedMethods: ['POST'], maxRequestBytes: 10 },
    ],
  ];

  it.for(refusals)('refuses %s', async ([, args, code, options]) => {
    const before = server.seen.length;
    const result = await call(loopbackTool(options), args);
    expect(result.isError, JSON.stringify(result)).toBe(true);
    expect(result.metadata?.code).toBe(code);
    expect(server.seen.length).toBe(before);
  });

  it('names the host that did not resolve, apart from policy blocks', async () => {
    const tool = loopbackTool({ allowedHosts: ['gone.test'] });
    const result = await call(tool, { url: 'https://gone.test/' });
    expect(result.metadata).toMatchObject({ code: 'HTTP_TOOL_DNS_FAILED', hostname: 'gone.test' });
    expect(JSON.stringify(result.content)).toContain('gone.test could not be resolved (ENOTFOUND)');
    await tool.close();
  });

  it('refuses plain http by default (requireHttps)', async () => {
    const tool = new HttpTool({ allowedHosts: ['127.0.0.1'] });
    const result = await call(tool, { url: `${server.origin}/` });
    expect(result.metadata).toMatchObject({ code: 'HTTP_TOOL_BLOCKED', reason: 'scheme' });
    await tool.close();
  });

  it('blocks private and loopback addresses with its default dispatcher', async () => {
    const tool = new HttpTool({ allowedHosts: ['127.0.0.1'], allowedPorts: 'any' });
    const result = await call(tool, { url: `https://127.0.0.1:${server.port}/` });
    expect(result.metadata).toMatchObject({ code: 'HTTP_TOOL_BLOCKED', reason: 'address' });
    await tool.close();
  });

  it('refuses a body on every method judged read-only, and sends one on the others', async () => {
    const methods = Object.keys(HTTP_TOOL_METHOD_RISKS) as HttpToolMethod[];
    const tool = loopbackTool({ allowedMethods: methods });
    for (const method of methods) {
      const before = server.seen.length;
      const result = await call(tool, { url: `${server.origin}/`, method, body: 'data' });
      if (HTTP_TOOL_METHOD_RISKS[method] === 'read-only') {
        expect(result.metadata?.code, method).toBe('HTTP_TOOL_INVALID_ARGUMENTS');
        expect(JSON.stringify(result.content), method).toContain('take no body');
        expect(server.seen.length, method).toBe(before);
      } else {
        expect(result.isError, method).not.toBe(true);
        expect(server.seen.at(-1)?.body, method).toBe('data');
      }
    }
    const options = data(await call(tool, { url: `${server.origin}/`, method: 'OPTIONS' }));
    expect(options.status).toBe(200);
  });

  it('sends a POST body within the limit', async () => {
    const tool = loopbackTool({ allowedMethods: ['GET', 'POST'], maxRequestBytes: 10 });
    const result = data(
      await call(tool, {
        url: `${server.origin}/`,
        method: 'post',
        body: 'x'.repeat(10),
        headers: { 'content-type': 'text/plain' },
      }),
    );
    expect(JSON.parse(result.body as string)).toEqual({ ok: true, method: 'POST' });
    expect(server.seen.at(-1)?.body).toBe('x'.repeat(10));
  });

  it('truncates a body over maxResponseBytes and flags it', async () => {
    const result = data(
      await call(loopbackTool({ maxResponseBytes: 100 }), { url: `${server.origin}/big` }),
    );
    expect(result).toMatchObject({ bytes: 100, truncated: true });
  });

  it("refuses a body over maxResponseBytes with oversizedResponse: 'error'", async () => {
    const result = await call(loopbackTool({ maxResponseBytes: 100, oversizedResponse: 'error' }), {
      url: `${server.origin}/big`,
    });
    expect(result.metadata?.code).toBe('HTTP_TOOL_RESPONSE_TOO_LARGE');
  });

  it.each(['error', 'truncate'] as const)(
    "answers HEAD for a resource over maxResponseBytes (oversizedResponse: '%s'): HEAD has no body",
    async (mode) => {
      const tool = loopbackTool({
        allowedMethods: ['GET', 'HEAD'],
        maxResponseBytes: 100,
        oversizedResponse: mode,
      });
      const result = data(await call(tool, { url: `${server.origin}/big`, method: 'HEAD' }));
      expect(result).toMatchObject({ status: 200, bytes: 0 });
      expect(result.truncated).not.toBe(true);
      expect(server.seen.at(-1)?.method).toBe('HEAD');
      // The GET of the same resource is still held to the limit.
      const get = await call(tool, { url: `${server.origin}/big` });
      expect(mode === 'error' ? get.metadata?.code : data(get).truncated).toBe(
        mode === 'error' ? 'HTTP_TOOL_RESPONSE_TOO_LARGE' : true,
      );
    },
  );

  it.each<
    [string, PolicyRule[], { operationArguments?: Record<string, string> }, JsonObject, boolean]
  >([
    // The README's rule: a call without `method` is a GET, so a rule on GET judges it.
    ['allow GET, no method', [{ tool: 'http', operation: 'GET', decision: 'allow' }], {}, {}, true],
    [
      'allow GET, method GET',
      [{ tool: 'http', operation: 'GET', decision: 'allow' }],
      {},
      { method: 'GET' },
      true,
    ],
    [
      'allow GET, method POST',
      [{ tool: 'http', operation: 'GET', decision: 'allow' }],
      {},
      { method: 'POST' },
      false,
    ],
    [
      'deny GET then allow, no method',
      [
        { tool: 'http', operation: 'GET', decision: 'deny' },
        { tool: 'http', decision: 'allow' },
      ],
      {},
      {},
      false,
    ],
    [
      'deny GET then allow, method GET',
      [
        { tool: 'http', operation: 'GET', decision: 'deny' },
        { tool: 'http', decision: 'allow' },
      ],
      {},
      { method: 'GET' },
      false,
    ],
    [
      'deny GET then allow, method POST',
      [
        { tool: 'http', operation: 'GET', decision: 'deny' },
        { tool: 'http', decision: 'allow' },
      ],
      {},
      { method: 'POST' },
      true,
    ],
    // An operation argument named for the tool is read as it is: no argument, no operation.
    [
      'named argument, no method',
      [{ tool: 'http', operation: 'GET', decision: 'allow' }],
      { operationArguments: { http: 'method' } },
      {},
      false,
    ],
    [
      'named argument, method GET',
      [{ tool: 'http', operation: 'GET', decision: 'allow' }],
      { operationArguments: { http: 'method' } },
      { method: 'GET' },
      true,
    ],
  ])(
    'judges operation rules by the method the call performs: %s',
    async (_label, rules, options, extra, runs) => {
      const registry = new ToolRegistry({
        authorizer: new RuleBasedPolicy(rules, { default: 'deny', ...options }),
        tools: [loopbackTool({ allowedMethods: ['GET', 'POST'] })],
      });
      try {
        const before = server.seen.length;
        const invoked = registry.invoke('http', { url: `${server.origin}/`, ...extra }, context);
        if (runs) {
          expect(data(await invoked).status).toBe(200);
          expect(server.seen.length).toBe(before + 1);
        } else {
          await expect(invoked).rejects.toMatchObject({ code: 'POLICY_PERMISSION_DENIED' });
          expect(server.seen.length).toBe(before);
        }
      } finally {
        await registry.close();
      }
    },
  );

  it('takes maxTimeoutMs in milliseconds as the default time limit of a call', async () => {
    const result = await call(loopbackTool({ maxTimeoutMs: 200 }), {
      url: `${server.origin}/stall`,
    });
    expect(result.metadata?.code).toBe('HTTP_TOOL_TIMEOUT');
  });

  it('times out', async () => {
    const result = await call(loopbackTool(), {
      url: `${server.origin}/stall`,
      timeoutSeconds: 0.2,
    });
    expect(result.metadata?.code).toBe('HTTP_TOOL_TIMEOUT');
  });

  it('does not follow redirects by default', async () => {
    const result = data(await call(loopbackTool(), { url: `${server.origin}/redirect?to=/final` }));
    expect(result.status).toBe(302);
    expect(result.headers).toMatchObject({ location: '/final' });
  });

  it('follows redirects within the allowlist when asked', async () => {
    const result = data(
      await call(loopbackTool({ followRedirects: true }), {
        url: `${server.origin}/redirect?to=/final`,
      }),
    );
    expect(result.status).toBe(200);
    expect(result.url).toBe(`${server.origin}/final`);
  });

  it('refuses a redirect to a host outside the allowlist', async () => {
    const to = encodeURIComponent(`http://localhost:${server.port}/`);
    const result = await call(loopbackTool({ followRedirects: true }), {
      url: `${server.origin}/redirect?to=${to}`,
    });
    expect(result.metadata).toMatchObject({ code: 'HTTP_TOOL_BLOCKED', reason: 'redirect' });
  });

  it('stops at maxRedirects', async () => {
    const result = await call(loopbackTool({ followRedirects: true, maxRedirects: 2 }), {
      url: `${server.origin}/loop`,
    });
    expect(result.metadata?.code).toBe('HTTP_TOOL_TOO_MANY_REDIRECTS');
  });

  it('derives the effect from the method', () => {
    const tool = loopbackTool({ allowedMethods: ['GET', 'POST', 'DELETE'] });
    const contracts = tool.spec.operationContracts;
    const select = contracts?.select as (args: JsonObject) => string | undefined;
    expect(select({ url: 'x' })).toBe('GET');
    expect(select({ url: 'x', method: 'get' })).toBe('GET');
    expect(select({ url: 'x', method: 'HEAD' })).toBeUndefined();
    const riskOf = (method: string): string | undefined => contracts?.operations[method]?.risk;
    expect(riskOf('GET')).toBe('read-only');
    expect(riskOf('POST')).toBe('external-publication');
    expect(riskOf('DELETE')).toBe('destructive');
    expect(Object.keys(contracts?.operations ?? {}).sort()).toEqual(['DELETE', 'GET', 'POST']);
    expect(tool.spec.contract?.risk).toBe('destructive');
    expect(resolveEffect(tool.spec, { url: 'x' }, contracts?.operations.GET)).toBe('read');
    expect(resolveEffect(tool.spec, { url: 'x' }, contracts?.operations.POST)).toBe('write');
    expect(loopbackTool({ allowedMethods: ['GET', 'HEAD'] }).spec.annotations?.readOnlyHint).toBe(
      true,
    );
    expect(tool.spec.operationArgument).toBe('method');
  });

  it.each([
    ['GET', 'GET', 'allow', 'read-only'],
    ['an absent method (GET)', 'none', 'allow', 'read-only'],
    ['HEAD', 'HEAD', 'allow', 'read-only'],
    ['POST', 'POST', 'ask', 'external-publication'],
    ['PUT', 'PUT', 'ask', 'external-publication'],
    ['PATCH', 'PATCH', 'ask', 'external-publication'],
    ['DELETE', 'DELETE', 'ask', 'destructive'],
  ])(
    'judges a %s call by its own contract in a registry',
    async (_label, method, verdict, risk) => {
      const seen: AuthorizationRequest[] = [];
      const policy = new RiskPolicy({ contentTrust: { allowUpTo: 'prompt-injection-prone' } });
      const registry = new ToolRegistry({
        authorizer: {
          authorize: (request) => {
            seen.push(request);
            return policy.authorize(request);
          },
        },
        tools: [
          loopbackTool({ allowedMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] }),
        ],
      });
      try {
        const args: JsonObject =
          method === 'none' || method === undefined
            ? { url: 'http://127.0.0.1/' }
            : { url: 'http://127.0.0.1/', method };
        const answer = await registry.authorize('http', args, { runId: 'r' });
        expect(answer.verdict).toBe(verdict);
        expect(seen[0]?.contract?.risk).toBe(risk);
        expect(seen[0]?.contract?.contentTrust).toBe('prompt-injection-prone');
      } finally {
        await registry.close();
      }
    },
  );

  it.each([
    ['no allowedHosts', { allowedHosts: [] }],
    ['a host with a path', { allowedHosts: ['example.com/x'] }],
    ['a host with a port', { allowedHosts: ['example.com:8443'] }],
    ['an unknown method', { allowedMethods: ['TRACE'] }],
    ['requireHttps as a string', { requireHttps: 'no' }],
    ['maxResponseBytes as a boolean', { maxResponseBytes: true }],
    ['maxRequestBytes zero', { maxRequestBytes: 0 }],
    ['maxTimeoutMs negative', { maxTimeoutMs: -1 }],
    ['maxTimeoutMs fractional', { maxTimeoutMs: 0.5 }],
    ['a header name with a space', { allowedHeaders: ['x y'] }],
    ['a foreign dispatcher', { dispatcher: {} }],
    ['oversizedResponse unknown', { oversizedResponse: 'drop' }],
    ['allowedPorts with port 0', { allowedPorts: [0] }],
    ['an unknown option key', { allowedHost: ['example.com'] }],
    ['a bare * wildcard', { allowedHosts: ['*'] }],
    ['a wildcard over a top-level domain', { allowedHosts: ['*.com'] }],
    ['a wildcard inside a label', { allowedHosts: ['*example.com'] }],
    ['a wildcard in the middle', { allowedHosts: ['api.*.example.com'] }],
    ['two wildcards', { allowedHosts: ['*.*.example.com'] }],
    ['a wildcard at the end', { allowedHosts: ['example.*'] }],
    ['a wildcard over an address', { allowedHosts: ['*.0.0.1'] }],
  ])('rejects %s', (_name, options) => {
    expect(() => new HttpTool({ allowedHosts: ['example.com'], ...options } as never)).toThrow(
      HttpToolOptionsError,
    );
  });

  it('canonicalises the host allowlist (case, trailing dot, IDNA), wildcards too', async () => {
    const tool = new HttpTool({
      allowedHosts: ['EXAMPLE.com.', 'bücher.example', '*.Bücher.Example.'],
    });
    expect(tool.spec.description).toContain('example.com');
    expect(tool.spec.description).toContain('xn--bcher-kva.example');
    expect(tool.spec.description).toContain('*.xn--bcher-kva.example');
    await tool.close();
  });

  describe('wildcard hosts', () => {
    const names = ['api.wild.test', 'a.b.wild.test', 'wild.test', 'evilwild.test'];
    let tls: LoopbackServer;
    let certificate: ReturnType<typeof makeCertificate>;
    beforeAll(async () => {
      certificate = makeCertificate([...names, 'wild.test.evil.test']);
      tls = await startHttpsServer(certificate, (incoming, response) => {
        const url = new URL(incoming.url ?? '/', 'https://x');
        if (url.pathname === '/redirect') {
          response.writeHead(302, { location: url.searchParams.get('to') ?? '/' });
          response.end();
        } else response.end('wild');
      });
    });
    afterAll(async () => {
      await tls.close();
    });
    const wildTool = (options: Partial<HttpToolOptions> = {}) =>
      new HttpTool({
        allowedHosts: ['*.Wild.Test.'],
        allowedPorts: 'any',
        dispatcher: createGuardedDispatcher({
          allowNonPublic: approveLoopback,
          resolver: async () => [{ address: '127.0.0.1', family: 4 }],
          ca: certificate.cert,
        }),
        ...options,
      });

    it.each([
      ['a sub-domain', 'api.wild.test', true],
      ['a deeper sub-domain', 'a.b.wild.test', true],
      ['upper case', 'API.WILD.TEST', true],
      ['the apex itself', 'wild.test', false],
      ['a name that only ends in the same letters', 'evilwild.test', false],
      ['the suffix inside another domain', 'wild.test.evil.test', false],
    ])('matches *.wild.test on a label boundary: %s', async (_name, host, allowed) => {
      const tool = wildTool();
      expect(tool.spec.description).toContain('*.wild.test');
      const result = await call(tool, { url: `https://${host}:${tls.port}/` });
      if (allowed) expect(data(result).body).toBe('wild');
      else expect(result.metadata?.code).toBe('HTTP_TOOL_HOST_NOT_ALLOWED');
    });

    it('checks every redirect hop against the wildcard', async () => {
      const tool = wildTool({ followRedirects: true });
      const to = encodeURIComponent(`https://evilwild.test:${tls.port}/`);
      const result = await call(tool, {
        url: `https://api.wild.test:${tls.port}/redirect?to=${to}`,
      });
      expect(result.isError).toBe(true);
      expect(tls.seen.some((request) => request.servername === 'evilwild.test')).toBe(false);
      const inside = encodeURIComponent(`https://a.b.wild.test:${tls.port}/`);
      const followed = await call(tool, {
        url: `https://api.wild.test:${tls.port}/redirect?to=${inside}`,
      });
      expect(data(followed).body).toBe('wild');
    });
  });
});
