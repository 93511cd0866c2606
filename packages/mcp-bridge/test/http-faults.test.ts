import { McpLimitError, McpProtocolError } from '@toolfence/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AmbiguousDeliveryError, ClientConfigurationError } from '../src/client/errors.js';
import { McpClient, type McpClientOptions } from '../src/client/mcp-client.js';
import {
  RecordEncodingError,
  RequestNotSentError,
  ResponseTooComplexError,
  ResponseTooLargeError,
  SessionExpiredError,
  TransportHttpError,
  TransportProtocolError,
  TransportTimeoutError,
  TransportUnauthorizedError,
} from '../src/transport/errors.js';
import { ServerOverloadedError } from '../src/transport/server-overloaded-error.js';
import { ServerRateLimitedError } from '../src/transport/server-rate-limited-error.js';
import {
  type FaultHttpServer,
  type FaultState,
  FIXED_TOOL_COUNT,
  startFaultHttpServer,
} from './fault-http-server.js';
import { allowLoopback } from './helpers.js';

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe.each([
  ['SSE replies, legacy', false, false],
  ['JSON replies, legacy', true, false],
  ['SSE replies, modern 2026-07-28', false, true],
  ['JSON replies, modern 2026-07-28', true, true],
])('McpClient against the fault-injecting server (%s)', (_mode, json, modern) => {
  let server: FaultHttpServer;
  const clients: McpClient[] = [];
  const initial: Partial<FaultState> = { json, modern };
  /** Session behaviour (Mcp-Session-Id, 404 expiry, DELETE) exists in legacy mode only. */
  const legacyIt = modern ? () => undefined : it;
  /** The first message of a connection: the probe in modern mode, the handshake in legacy. */
  const opening = modern ? 'server/discover' : 'initialize';

  function client(options: Partial<McpClientOptions> = {}): McpClient {
    const made = new McpClient({ url: server.url, allowNonPublic: allowLoopback, ...options });
    clients.push(made);
    return made;
  }

  beforeAll(async () => {
    server = await startFaultHttpServer(initial);
  });
  afterEach(async () => {
    for (const made of clients.splice(0)) await made.close();
    server.calls.clear();
    Object.assign(server.state, {
      validToken: undefined,
      tokensSeen: [],
      expireNext: 0,
      paging: 'normal',
      toolCount: 0,
      pageSize: 100,
      methods: [],
      httpMethods: [],
      firstByteDelayMs: 0,
      maxInFlight: 0,
      refuse: undefined,
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it('calls a tool exactly once', async () => {
    const result = await client().callTool('echo', { text: 'hi' });
    expect(result.content).toEqual([{ type: 'text', text: 'echo:hi' }]);
    expect(server.calls.get('echo')).toBe(1);
  });

  it('reports a dropped connection after send as ambiguous and never replays it', async () => {
    const mcp = client();
    const error = await caught(mcp.callTool('drop'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as Error).message).toMatch(/verify external state/);
    expect(server.calls.get('drop')).toBe(1);
    // the next operation handshakes again
    await mcp.callTool('echo', { text: 'after' });
    expect(server.calls.get('drop')).toBe(1);
    expect(server.state.methods.filter((method) => method === opening)).toHaveLength(2);
  });

  it('reports a malformed reply as ambiguous (invalid response), once', async () => {
    const error = await caught(client().callTool('malformed'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    expect((error as Error).cause).toBeInstanceOf(TransportProtocolError);
    expect(server.calls.get('malformed')).toBe(1);
  });

  it('stops an oversized record at maxRecordBytes and rejects at once', async () => {
    const mcp = client({ maxRecordBytes: 64 * 1024 });
    const error = await caught(mcp.callTool('huge', { bytes: 200_000 }));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as Error).cause as ResponseTooLargeError;
    expect(cause).toBeInstanceOf(ResponseTooLargeError);
    expect(cause.limit).toBe(64 * 1024);
    expect(json ? ['content-length', 'json'] : ['sse']).toContain(cause.kind);
    expect(server.calls.get('huge')).toBe(1);
    // the session was reset: the next call handshakes again and works
    await mcp.callTool('huge', { bytes: 10 });
    expect(server.state.methods.filter((method) => method === opening)).toHaveLength(2);
  });

  it('refuses a reply that is not valid UTF-8 instead of replacing the byte', async () => {
    const error = await caught(client().callTool('invalid-utf8'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    const cause = (error as Error).cause as RecordEncodingError;
    expect(cause).toBeInstanceOf(RecordEncodingError);
    expect(cause.code).toBe('TRANSPORT_INVALID_UTF8');
    expect(cause.kind).toBe(json ? 'json' : 'sse');
    expect(server.calls.get('invalid-utf8')).toBe(1);
  });

  it(
    json
      ? 'refuses a JSON body that starts with a byte-order mark'
      : 'accepts an SSE stream that starts with a byte-order mark',
    async () => {
      const outcome = client()
        .callTool('bom-first')
        .then(
          (result) => result,
          (error: unknown) => error,
        );
      if (json) {
        const error = await outcome;
        expect(error).toBeInstanceOf(AmbiguousDeliveryError);
        expect((error as Error).cause).toBeInstanceOf(TransportProtocolError);
      } else {
        expect(await outcome).toMatchObject({
          content: [{ type: 'text', text: 'framed:bom-first' }],
        });
      }
      expect(server.calls.get('bom-first')).toBe(1);
    },
  );

  it('refuses an empty batch ([]) as a protocol error', async () => {
    // readTimeoutMs bounds the wait for an answer that an accepted empty batch would never give
    const error = await caught(client({ readTimeoutMs: 3000 }).callTool('empty-batch'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    const cause = (error as Error).cause as TransportProtocolError;
    expect(cause).toBeInstanceOf(TransportProtocolError);
    expect(cause.message).toMatch(/empty batch/);
    expect(server.calls.get('empty-batch')).toBe(1);
  });

  it('never follows a redirect', async () => {
    const error = await caught(client().callTool('redirect'));
    expect(error).toBeInstanceOf(TransportHttpError);
    expect((error as TransportHttpError).status).toBe(307);
    expect(server.calls.get('redirect')).toBe(1);
  });

  it('refuses a declared Content-Length over the limit before reading the body', async () => {
    const error = await caught(client().callTool('declared-huge'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as Error).cause as ResponseTooLargeError;
    expect(cause).toBeInstanceOf(ResponseTooLargeError);
    expect(cause.kind).toBe('content-length');
    expect(cause.limit).toBe(8 * 1024 * 1024);
    expect(server.calls.get('declared-huge')).toBe(1);
  });

  it.each([
    ['too deep', 'complex', 'depth', 64],
    ['too many tokens', 'many-tokens', 'tokens', 20_001],
  ])('stops a record that is %s', async (_name, tool, kind, limit) => {
    const error = await caught(client().callTool(tool));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as Error).cause as ResponseTooComplexError;
    expect(cause).toBeInstanceOf(ResponseTooComplexError);
    expect(cause.kind).toBe(kind);
    expect(cause.limit).toBe(limit);
    expect(server.calls.get(tool)).toBe(1);
  });

  it('negotiates the era the server speaks', async () => {
    const mcp = client();
    await mcp.connect();
    expect(mcp.protocolVersion).toBe(modern ? '2026-07-28' : '2025-11-25');
  });

  legacyIt('re-initializes once after a 404 for an expired session and retries', async () => {
    const mcp = client();
    await mcp.connect();
    server.state.expireNext = 1;
    const result = await mcp.callTool('echo', { text: 'renewed' });
    expect(result.content).toEqual([{ type: 'text', text: 'echo:renewed' }]);
    expect(server.calls.get('echo')).toBe(1);
    expect(server.state.methods.filter((method) => method === 'initialize')).toHaveLength(2);
  });

  legacyIt('raises after a 404 twice in a row', async () => {
    const mcp = client();
    await mcp.connect();
    server.state.expireNext = 2;
    const error = await caught(mcp.callTool('echo'));
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect(server.calls.get('echo')).toBeUndefined();
  });

  it('resolves a token function once more after a 401 and retries once', async () => {
    server.state.validToken = 'fresh';
    const tokens = ['stale', 'fresh'];
    let resolved = 0;
    const mcp = client({ token: () => tokens[Math.min(resolved++, 1)] as string });
    const result = await mcp.callTool('echo', { text: 'rotated' });
    expect(result.content).toEqual([{ type: 'text', text: 'echo:rotated' }]);
    expect(server.state.tokensSeen.slice(0, 2)).toEqual(['stale', 'fresh']);
    expect(server.calls.get('echo')).toBe(1);
  });

  it('lets an authProvider answer a challenge, and passes its own error through unchanged', async () => {
    server.state.validToken = 'fresh';
    let current = 'stale';
    const challenges: number[] = [];
    const mcp = client({
      authProvider: {
        token: () => current,
        onChallenge: (challenge) => {
          challenges.push(challenge.status);
          current = 'fresh';
          return true;
        },
      },
    });
    expect((await mcp.callTool('echo', { text: 'ok' })).content).toEqual([
      { type: 'text', text: 'echo:ok' },
    ]);
    expect(challenges).toEqual([401]);
    const stepUp = new ClientConfigurationError('authorization required (test)');
    const refusing = client({
      authProvider: {
        token: () => 'stale',
        onChallenge: () => {
          throw stepUp;
        },
      },
    });
    expect(await caught(refusing.callTool('echo'))).toBe(stepUp);
    const missing = new ClientConfigurationError('no token yet (test)');
    const tokenless = client({
      authProvider: {
        token: () => {
          throw missing;
        },
      },
    });
    expect(await caught(tokenless.callTool('echo'))).toBe(missing);
    const broken = client({
      authProvider: {
        token: () => {
          throw new Error('vault down');
        },
      },
    });
    expect(await caught(broken.callTool('echo'))).toBeInstanceOf(RequestNotSentError);
    expect(server.calls.get('echo')).toBe(1);
  });

  it("gives the authProvider's challenge the refused request's Authorization, so only a current token is refreshed", async () => {
    server.state.validToken = 'fresh';
    let current = 'stale';
    let refreshes = 0;
    const refused: (string | undefined)[] = [];
    /** While set, token() waits until both calls asked for a token: both send the stale one. */
    let barrier: (() => void)[] | undefined;
    const provider = {
      token: async () => {
        if (barrier !== undefined) {
          const waiting = barrier;
          await new Promise<void>((resolve) => {
            waiting.push(resolve);
            if (waiting.length === 2) for (const release of waiting) release();
          });
          barrier = undefined;
        }
        return current;
      },
      onChallenge: (challenge: { authorization?: string | undefined }) => {
        refused.push(challenge.authorization);
        // Refresh only if the refused request carried the current token.
        if (challenge.authorization === `Bearer ${current}`) {
          refreshes += 1;
          current = 'fresh';
        }
        return true;
      },
    };
    const mcp = client({ authProvider: provider });
    await mcp.connect();
    // The connection refreshed once; now the token goes stale again, under two concurrent calls.
    expect(refused).toEqual(['Bearer stale']);
    current = 'stale';
    barrier = [];
    const results = await Promise.all([
      mcp.callTool('echo', { text: 'one' }),
      mcp.callTool('echo', { text: 'two' }),
    ]);
    expect(results.map((result) => result.content)).toEqual([
      [{ type: 'text', text: 'echo:one' }],
      [{ type: 'text', text: 'echo:two' }],
    ]);
    expect(refused).toEqual(['Bearer stale', 'Bearer stale', 'Bearer stale']);
    expect(refreshes).toBe(2);
    expect(server.calls.get('echo')).toBe(2);
  });

  it('raises on a 401 with a static token without retrying', async () => {
    server.state.validToken = 'right';
    const error = await caught(client({ token: 'wrong' }).callTool('echo'));
    expect(error).toBeInstanceOf(TransportUnauthorizedError);
    expect((error as TransportUnauthorizedError).status).toBe(401);
    expect(server.state.tokensSeen).toEqual(['wrong']);
  });

  it('raises when the token function keeps failing, after exactly one retry', async () => {
    server.state.validToken = 'right';
    const error = await caught(client({ token: async () => 'wrong' }).callTool('echo'));
    expect(error).toBeInstanceOf(TransportUnauthorizedError);
    expect(server.state.tokensSeen).toEqual(['wrong', 'wrong']);
  });

  it('follows pagination once and caches the listing', async () => {
    server.state.toolCount = 250;
    server.state.pageSize = 50;
    const mcp = client();
    const tools = await mcp.tools();
    expect(tools).toHaveLength(250 + FIXED_TOOL_COUNT);
    expect(await mcp.tools()).toBe(tools);
    expect(server.state.methods.filter((method) => method === 'tools/list')).toHaveLength(6);
    const refreshed = await mcp.tools({ refresh: true });
    expect(refreshed).toHaveLength(250 + FIXED_TOOL_COUNT);
  });

  it.each([
    ['a repeating cursor', { paging: 'repeat' }, {}, McpProtocolError],
    ['a malformed page', { paging: 'malformed' }, {}, McpProtocolError],
    ['endless pages', { paging: 'endless' }, { maxToolPages: 5 }, McpLimitError],
    ['too many pages', { toolCount: 500, pageSize: 10 }, { maxToolPages: 20 }, McpLimitError],
    ['too many tools', { toolCount: 500 }, { maxTools: 100 }, McpLimitError],
  ] as const)('refuses %s instead of looping', async (_name, state, options, errorClass) => {
    Object.assign(server.state, state);
    const error = await caught(client(options).tools());
    expect(error).toBeInstanceOf(errorClass);
  });

  it('times out a slow first byte as ambiguous, once', async () => {
    server.state.firstByteDelayMs = 1500;
    const mcp = client({ readTimeoutMs: 400 });
    await mcp.connect();
    const error = await caught(mcp.callTool('slow-first-byte'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('timeout');
    expect(server.calls.get('slow-first-byte')).toBe(1);
  });

  it('takes the per-call timeoutMs in milliseconds', async () => {
    server.state.firstByteDelayMs = 1500;
    const mcp = client();
    await mcp.connect();
    const error = await caught(mcp.callTool('slow-first-byte', {}, { timeoutMs: 300 }));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('timeout');
  });

  it('reports a call aborted in flight as ambiguous and one aborted before sending as not run', async () => {
    const mcp = client();
    await mcp.connect();
    const controller = new AbortController();
    const pending = mcp.callTool('slow', { bytes: 300 }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const error = await caught(pending);
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('aborted');
    expect(
      await caught(mcp.callTool('echo', {}, { signal: controller.signal })),
    ).not.toBeInstanceOf(AmbiguousDeliveryError);
    expect(server.calls.get('echo')).toBeUndefined();
    // let the server finish the aborted handler before the next test counts concurrency
    while (server.state.inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  });

  it('raises a not-sent error when the connection fails before any byte was written', async () => {
    const mcp = new McpClient({ url: 'http://127.0.0.1:9/mcp', allowNonPublic: allowLoopback });
    clients.push(mcp);
    const error = await caught(mcp.callTool('echo'));
    expect(error).toBeInstanceOf(RequestNotSentError);
  });

  legacyIt('sends DELETE for the session on close, unless told not to', async () => {
    const mcp = client();
    await mcp.connect();
    await mcp.close();
    expect(server.state.httpMethods).toContain('DELETE');
    server.state.httpMethods = [];
    const quiet = client({ deleteSessionOnClose: false });
    await quiet.connect();
    await quiet.close();
    expect(server.state.httpMethods).not.toContain('DELETE');
  });

  it.each([
    ['runs at most DEFAULT_MAX_CONCURRENT_REQUESTS (8) at once by default', {}, 12, 8],
    ['serializes requests with maxConcurrentRequests: 1', { maxConcurrentRequests: 1 }, 2, 1],
    ['runs two at once when the host allows it', { maxConcurrentRequests: 2 }, 4, 2],
  ])('%s', async (_name, options, calls, expected) => {
    // A slow call an earlier test abandoned (aborted) may still run on the server: count from zero.
    await vi.waitUntil(() => server.state.inFlight === 0, { timeout: 10_000 });
    server.state.maxInFlight = 0;
    const mcp = client(options);
    await mcp.connect();
    await Promise.all(Array.from({ length: calls }, () => mcp.callTool('slow', { bytes: 100 })));
    expect(server.state.maxInFlight).toBe(expected);
    expect(server.calls.get('slow')).toBe(calls);
  });

  it('sends the protocol headers and asks for identity encoding', async () => {
    const fixed: Record<string, string> = { 'X-Tenant': 'acme' };
    const mcp = client({ headers: fixed, token: 'secret-token' });
    fixed['X-Tenant'] = 'changed later'; // headers are copied at construction
    fixed['x-added'] = 'later';
    await mcp.callTool('echo');
    expect(server.state.callHeaders['x-added']).toBeUndefined();
    const headers = server.state.callHeaders;
    expect(headers['accept-encoding']).toBe('identity');
    expect(headers.accept).toBe('application/json, text/event-stream');
    expect(headers['mcp-protocol-version']).toBe(modern ? '2026-07-28' : '2025-11-25');
    if (modern) {
      expect(headers['mcp-session-id']).toBeUndefined();
      expect(headers['mcp-method']).toBe('tools/call');
      expect(headers['mcp-name']).toBe('echo');
    } else {
      expect(typeof headers['mcp-session-id']).toBe('string');
    }
    expect(headers['x-tenant']).toBe('acme');
    expect(headers.authorization).toBe('Bearer secret-token');
  });

  it('sends a fixed Authorization header from headers when no token is given', async () => {
    server.state.validToken = 'fixed-1';
    const mcp = client({ headers: { Authorization: 'Bearer fixed-1', 'X-Tenant': 'acme' } });
    await mcp.callTool('echo');
    expect(server.state.callHeaders.authorization).toBe('Bearer fixed-1');
    expect(server.state.callHeaders['x-tenant']).toBe('acme');
    expect(new Set(server.state.tokensSeen)).toEqual(new Set(['fixed-1']));
  });

  it('reports HTTP 429 on tools/call as ServerRateLimitedError with Retry-After in ms, never retried', async () => {
    const mcp = client();
    await mcp.connect();
    server.state.refuse = { status: 429, method: 'tools/call', times: 1, retryAfter: '7' };
    const error = await caught(mcp.callTool('echo', { text: 'a' }));
    expect(error).toBeInstanceOf(ServerRateLimitedError);
    expect(error).toBeInstanceOf(TransportHttpError);
    expect(error).toMatchObject({
      code: 'TRANSPORT_RATE_LIMITED',
      status: 429,
      retryAfterMs: 7000,
      details: { status: 429, retryAfterMs: 7000 },
    });
    expect((error as Error).message).toContain('wait at least 7000 ms (Retry-After)');
    expect((error as Error).message).not.toContain('slow down');
    expect(server.calls.get('echo')).toBe(1);
    // Nothing was retried, and the session is kept for the next call.
    const methods = server.state.methods.length;
    const result = await mcp.callTool('echo', { text: 'b' });
    expect(result.content).toEqual([{ type: 'text', text: 'echo:b' }]);
    expect(server.calls.get('echo')).toBe(2);
    expect(server.state.methods.slice(methods)).toEqual(['tools/call']);
  });

  it.each([
    ['an HTTP-date Retry-After', () => new Date(Date.now() + 30_000).toUTCString()],
    ['no Retry-After', () => undefined],
    ['a malformed Retry-After', () => 'soon'],
  ])(
    'reports HTTP 529 on tools/call as ServerOverloadedError (%s), not as ambiguous',
    async (label, retryAfter) => {
      const mcp = client();
      await mcp.connect();
      server.state.refuse = {
        status: 529,
        method: 'tools/call',
        times: 1,
        retryAfter: retryAfter(),
      };
      const error = await caught(mcp.callTool('echo'));
      expect(error).toBeInstanceOf(ServerOverloadedError);
      expect(error).not.toBeInstanceOf(AmbiguousDeliveryError);
      expect(error).toMatchObject({ code: 'TRANSPORT_SERVER_OVERLOADED', status: 529 });
      const wait = (error as ServerOverloadedError).retryAfterMs;
      if (label === 'an HTTP-date Retry-After') {
        expect(wait).toBeGreaterThan(25_000);
        expect(wait).toBeLessThanOrEqual(30_000);
      } else {
        expect(wait).toBeUndefined();
        expect((error as Error).message).toContain('the server gave no Retry-After');
      }
      expect(server.calls.get('echo')).toBe(1);
    },
  );

  it('reports HTTP 429 on the opening request as ServerRateLimitedError, with no fallback or retry', async () => {
    server.state.refuse = { status: 429, method: opening, times: 1, retryAfter: '3' };
    const error = await caught(client().tools());
    expect(error).toBeInstanceOf(ServerRateLimitedError);
    expect((error as ServerRateLimitedError).retryAfterMs).toBe(3000);
    expect(server.state.methods.filter((method) => method === opening)).toHaveLength(1);
    // A rate limit on the probe is not a legacy signal: no fallback to initialize.
    if (modern) expect(server.state.methods).not.toContain('initialize');
  });

  it('does not replay a read refused with HTTP 429', async () => {
    const mcp = client();
    await mcp.connect();
    server.state.refuse = { status: 429, method: 'tools/list', times: 1 };
    const error = await caught(mcp.tools());
    expect(error).toBeInstanceOf(ServerRateLimitedError);
    expect((error as ServerRateLimitedError).retryAfterMs).toBeUndefined();
    expect(server.state.methods.filter((method) => method === 'tools/list')).toHaveLength(1);
  });
});

describe('McpClient SSE resumption', () => {
  it('resumes a closed stream with Last-Event-ID after the server-sent retry delay', async () => {
    const server = await startFaultHttpServer({ resumableRetryMs: 150 });
    const mcp = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      const result = await mcp.callTool('close-stream');
      expect(result.content).toEqual([{ type: 'text', text: 'resumed' }]);
      expect(server.calls.get('close-stream')).toBe(1);
      expect(server.state.lastEventIds.length).toBeGreaterThanOrEqual(1);
      expect(server.state.methods.filter((method) => method === 'tools/call')).toHaveLength(1);
    } finally {
      await mcp.close();
      await server.close();
    }
  });
});

describe('McpClient SSE retry bound', () => {
  it('cuts a huge server retry: to maxSseRetryMs and resumes after it', async () => {
    const server = await startFaultHttpServer({ resumableRetryMs: 2_000_000_000 });
    const delays: unknown[] = [];
    const mcp = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      maxSseRetryMs: 100,
      logger: {
        debug: (message, details) => {
          if (message === 'Resuming the SSE stream') delays.push(details?.delayMs);
        },
      },
    });
    try {
      const result = await mcp.callTool('close-stream');
      expect(result.content).toEqual([{ type: 'text', text: 'resumed' }]);
      expect(delays).toEqual([100]);
      expect(server.calls.get('close-stream')).toBe(1);
    } finally {
      await mcp.close();
      await server.close();
    }
  });

  it('cuts it to 30 s by default and clears the wait on close', async () => {
    const server = await startFaultHttpServer({ resumableRetryMs: 2_000_000_000 });
    let resuming: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => {
      resuming = resolve;
    });
    const delays: unknown[] = [];
    const mcp = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      logger: {
        debug: (message, details) => {
          if (message !== 'Resuming the SSE stream') return;
          delays.push(details?.delayMs);
          resuming();
        },
      },
    });
    try {
      const call = caught(mcp.callTool('close-stream'));
      await waiting;
      expect(delays).toEqual([30_000]);
      await mcp.close();
      // the call ends with the close, not after the 30 s wait
      expect(await call).toBeInstanceOf(AmbiguousDeliveryError);
      expect(server.state.lastEventIds).toEqual([]);
    } finally {
      await mcp.close();
      await server.close();
    }
  });
});

describe('McpClient SSE framing', () => {
  let server: FaultHttpServer;
  beforeAll(async () => {
    server = await startFaultHttpServer({ json: false });
  });
  afterAll(async () => {
    await server.close();
  });

  function client(options: Partial<McpClientOptions> = {}): McpClient {
    return new McpClient({ url: server.url, allowNonPublic: allowLoopback, ...options });
  }

  it('drops a byte-order mark at the start of the stream and keeps the first event', async () => {
    const mcp = client();
    try {
      const result = await mcp.callTool('sse-bom');
      expect(result.content).toEqual([{ type: 'text', text: 'framed:sse-bom' }]);
    } finally {
      await mcp.close();
    }
  });

  it('does not count keep-alive comment lines as a record (no readTimeoutMs while they flow)', async () => {
    const mcp = client({ readTimeoutMs: 400 });
    try {
      await mcp.connect();
      // 1 s of comment lines with no blank line between them, then the answer
      const result = await mcp.callTool('sse-keepalive', { bytes: 1000 }, { timeoutMs: 30_000 });
      expect(result.content).toEqual([{ type: 'text', text: 'framed:sse-keepalive' }]);
    } finally {
      await mcp.close();
    }
  });

  it('drops comment lines instead of adding them to the record', async () => {
    // 200 KiB of comments before a small event, with a 64 KiB record limit
    const mcp = client({ maxRecordBytes: 64 * 1024, maxSseCommentBytes: 256 * 1024 });
    try {
      const result = await mcp.callTool('sse-comment-flood', { bytes: 200 * 1024 });
      expect(result.content).toEqual([{ type: 'text', text: 'framed:sse-comment-flood' }]);
    } finally {
      await mcp.close();
    }
  });

  it.each([
    ['the default bound', {}, 64 * 1024],
    ['a configured bound', { maxSseCommentBytes: 4096 }, 4096],
  ])('stops comment lines with no blank line between them at %s', async (_name, options, limit) => {
    const mcp = client(options);
    try {
      const error = await caught(mcp.callTool('sse-comment-flood', { bytes: 200 * 1024 }));
      expect(error).toBeInstanceOf(AmbiguousDeliveryError);
      const cause = (error as Error).cause as ResponseTooLargeError;
      expect(cause).toBeInstanceOf(ResponseTooLargeError);
      expect(cause.kind).toBe('sse-comment');
      expect(cause.limit).toBe(limit);
    } finally {
      await mcp.close();
    }
  });
});

describe('McpClient streaming faults (SSE)', () => {
  let server: FaultHttpServer;
  beforeAll(async () => {
    server = await startFaultHttpServer({ json: false });
  });
  afterAll(async () => {
    await server.close();
  });

  it('keeps a result that arrived before an invalid trailing record', async () => {
    const mcp = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      const result = await mcp.callTool('trailing', { text: 'kept' });
      expect(result.content).toEqual([{ type: 'text', text: 'echo:kept' }]);
      expect(server.calls.get('trailing')).toBe(1);
    } finally {
      await mcp.close();
    }
  });

  it('bounds a slowly trickled record by readTimeoutMs over the whole record', async () => {
    const mcp = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      readTimeoutMs: 500,
    });
    try {
      await mcp.connect();
      // the call's own timeout is long: only the per-record timer can end it
      const error = await caught(mcp.callTool('trickle', {}, { timeoutMs: 30_000 }));
      expect(error).toBeInstanceOf(AmbiguousDeliveryError);
      expect((error as AmbiguousDeliveryError).reason).toBe('timeout');
      expect((error as Error).cause).toBeInstanceOf(TransportTimeoutError);
      expect(server.calls.get('trickle')).toBe(1);
    } finally {
      await mcp.close();
    }
  });
});
