import { describe, expect, it } from 'vitest';
import { RequestNotSentError, TransportConfigurationError } from '../transport/errors.js';
import { StdioTransport } from '../transport/stdio-transport.js';
import { StreamableHttpTransport } from '../transport/streamable-http-transport.js';
import { ClientConfigurationError } from './errors.js';
import { McpClient, type McpClientOptions } from './mcp-client.js';

const loopback = (_target: unknown, address: { readonly range: string }): boolean =>
  address.range === 'loopback';
const URL_OK = 'http://127.0.0.1:1/mcp';

describe('McpClient options', () => {
  it.each([
    ['neither url nor command', {}],
    ['both url and command', { url: URL_OK, command: ['node'] }],
    ['token and authProvider', { url: URL_OK, token: 't', authProvider: { token: () => 't' } }],
    ['an empty token', { url: URL_OK, token: '' }],
    ['a token for stdio', { command: ['node'], token: 't' }],
    ['a bearer token to a non-loopback plain-HTTP URL', { url: 'http://10.0.0.1/mcp', token: 't' }],
    ['a URL with credentials', { url: 'https://user:pass@example.com/mcp' }],
    ['a non-http URL', { url: 'file:///etc/passwd' }],
    ['plain HTTP to a public host', { url: 'http://example.com/mcp' }],
    ['a boolean maxConcurrentRequests', { url: URL_OK, maxConcurrentRequests: true }],
    ['zero maxConcurrentRequests', { url: URL_OK, maxConcurrentRequests: 0 }],
    ['roots that are not file URLs', { command: ['node'], roots: [{ uri: 'https://x.test' }] }],
    ['roots that are neither a list nor a function', { command: ['node'], roots: 'file:///x' }],
    ['an onListChanged that is not a function', { command: ['node'], onListChanged: true }],
    ['extensions that are a list', { command: ['node'], extensions: [] }],
    ['an extension id without a vendor', { command: ['node'], extensions: { skills: {} } }],
    ['extension settings that are not an object', { command: ['node'], extensions: { 'a/b': 1 } }],
    [
      'extension settings over 64 KiB',
      { command: ['node'], extensions: { 'a/b': { x: 'y'.repeat(70_000) } } },
    ],
  ])('refuses %s', (_name, options) => {
    expect(
      () => new McpClient({ allowNonPublic: loopback, ...options } as McpClientOptions),
    ).toThrow(ClientConfigurationError);
  });

  it.each([
    ['a fragment', 'http://127.0.0.1:1/mcp#x'],
    ['an empty fragment', 'http://127.0.0.1:1/mcp#'],
    ['a fragment after a query', 'http://127.0.0.1:1/mcp?a=1#x'],
    ['a fragment on a host name', 'https://mcp.example.com/mcp#section'],
    ['a fragment in a URL object', new URL('http://127.0.0.1:1/mcp#x')],
    ['a fragment that looks like a path', 'http://127.0.0.1:1/#/mcp'],
  ])('refuses a url with %s, saying what was wrong and what is accepted', (_name, url) => {
    for (const allowNonPublic of [loopback, true] as const) {
      const error = (() => {
        try {
          new McpClient({ url, allowNonPublic });
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(ClientConfigurationError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'CLIENT_CONFIGURATION',
        details: { option: 'url', reason: 'fragment' },
      });
      expect((error as Error).message).toMatch(/url must not have a fragment/);
      expect((error as Error).message).toMatch(/Accepted: an absolute https:\/\/ URL/);
    }
  });

  it('accepts a query and an escaped # in the path or query', () => {
    for (const url of ['http://127.0.0.1:1/mcp?a=1', 'http://127.0.0.1:1/m%23cp?q=%23']) {
      expect(() => new McpClient({ url, allowNonPublic: loopback })).not.toThrow();
    }
  });

  it('refuses credentials in the url with a message that says where they go', () => {
    expect(
      () => new McpClient({ url: 'https://user:pass@example.com/mcp', allowNonPublic: true }),
    ).toThrow(
      /url must not carry credentials \(user:password@\): pass token, authProvider or oauth/,
    );
  });

  it.each([
    ['a fragment', 'http://127.0.0.1:1/mcp#x'],
    ['an empty fragment', 'http://127.0.0.1:1/mcp#'],
  ])('refuses a StreamableHttpTransport url with %s', (_name, url) => {
    expect(() => new StreamableHttpTransport({ url, dispatcher: {} } as never)).toThrow(
      expect.objectContaining({
        code: 'TRANSPORT_CONFIGURATION',
        message: expect.stringMatching(/url must not have a fragment/),
      }),
    );
  });

  it('accepts roots as a function, asked at each roots/list', () => {
    expect(
      () => new McpClient({ command: ['node'], roots: () => [{ uri: 'file:///tmp' }] }),
    ).not.toThrow();
  });

  it('refuses a loopback literal the host did not approve, and says how to approve it', () => {
    expect(() => new McpClient({ url: URL_OK })).toThrow(/pass allowNonPublic \(true/);
  });

  it('accepts allowNonPublic: true (every non-public address), as the OAuth functions do', () => {
    expect(() => new McpClient({ url: URL_OK, allowNonPublic: true })).not.toThrow();
    expect(() => new McpClient({ url: URL_OK, allowNonPublic: false })).toThrow(
      ClientConfigurationError,
    );
    expect(() => new McpClient({ url: URL_OK, allowNonPublic: 'yes' } as never)).toThrow(
      'allowNonPublic must be true, false, or a function',
    );
  });

  it.each([
    ['readTimoutMs', 'readTimeoutMs'],
    ['opentimeoutms', 'openTimeoutMs'],
    ['allowNonPublc', 'allowNonPublic'],
  ])('refuses the misspelled option %s and suggests %s', (key, near) => {
    let caught: unknown;
    try {
      new McpClient({ command: ['node'], [key]: 5 } as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ClientConfigurationError);
    expect((caught as Error).message).toContain(`did you mean "${near}"`);
    expect((caught as ClientConfigurationError).details).toMatchObject({ option: key });
  });

  it.each([
    ['openTimeout', 'openTimeoutMs'],
    ['readTimeout', 'readTimeoutMs'],
    ['maxListingTtl', 'maxListingTtlMs'],
    ['killGrace', 'killGraceMs'],
    ['maxSseRetry', 'maxSseRetryMs'],
  ])('refuses the old seconds option %s, naming %s and its unit', (oldKey, newKey) => {
    let caught: unknown;
    try {
      new McpClient({ command: ['node'], [oldKey]: 15 } as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ClientConfigurationError);
    expect((caught as Error).message).toBe(
      `McpClient option "${oldKey}" was renamed to "${newKey}" (milliseconds; multiply a value in seconds by 1000)`,
    );
    expect((caught as ClientConfigurationError).details).toMatchObject({ option: oldKey });
  });

  it('refuses the per-call timeout (seconds), naming timeoutMs', async () => {
    const client = new McpClient({ command: ['node'] });
    await expect(client.callTool('x', {}, { timeout: 5 } as never)).rejects.toThrow(
      'callTool option "timeout" was renamed to "timeoutMs" (milliseconds',
    );
    await expect(client.request('x/list', {}, { timeout: 5 } as never)).rejects.toThrow(
      'request option "timeout" was renamed to "timeoutMs" (milliseconds',
    );
  });

  it.each([
    [
      'StdioTransport readTimeout',
      () => new StdioTransport({ command: ['node'], readTimeout: 5 } as never),
      'readTimeout',
      'readTimeoutMs',
    ],
    [
      'StdioTransport killGrace',
      () => new StdioTransport({ command: ['node'], killGrace: 5 } as never),
      'killGrace',
      'killGraceMs',
    ],
    [
      'StreamableHttpTransport defaultSseRetry',
      () =>
        new StreamableHttpTransport({ url: URL_OK, dispatcher: {}, defaultSseRetry: 5 } as never),
      'defaultSseRetry',
      'defaultSseRetryMs',
    ],
  ])('%s is refused with its new name', (_label, construct, oldKey, newKey) => {
    expect(construct).toThrow(
      expect.objectContaining({
        code: 'TRANSPORT_CONFIGURATION',
        details: { option: oldKey },
        message: expect.stringContaining(`"${oldKey}" was renamed to "${newKey}" (milliseconds`),
      }),
    );
  });

  it('accepts a fixed Authorization header in headers when nothing else owns it', () => {
    expect(
      () =>
        new McpClient({
          url: URL_OK,
          allowNonPublic: loopback,
          headers: { Authorization: 'Basic dXNlcjpwYXNz' },
        }),
    ).not.toThrow();
  });

  it.each([
    ['token', { token: 't' }],
    ['authProvider', { authProvider: { token: () => 't' } }],
    ['oauth', { oauth: { store: {}, connectionId: 'c' } }],
  ])('refuses a fixed Authorization header together with %s, and says why', (_label, extra) => {
    let caught: unknown;
    try {
      new McpClient({
        url: URL_OK,
        allowNonPublic: loopback,
        headers: { authorization: 'Bearer fixed' },
        ...extra,
      } as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ClientConfigurationError);
    expect((caught as Error).message).toBe(
      'headers.Authorization cannot be combined with token, authProvider or oauth, which set the Authorization header themselves; give a fixed Authorization header only when none of them is given',
    );
    expect((caught as ClientConfigurationError).details).toMatchObject({ option: 'headers' });
  });

  it.each([
    [
      'twice in different case',
      { headers: { Authorization: 'Bearer a', authorization: 'Bearer b' } },
      'more than once',
    ],
    ['empty', { headers: { Authorization: ' ' } }, 'non-empty string'],
    ['with a CRLF', { headers: { Authorization: 'Bearer a\r\nx-evil: 1' } }, 'control characters'],
    [
      'on a stdio server',
      { url: undefined, command: ['node'], headers: { Authorization: 'Bearer a' } },
      'url connections only',
    ],
  ])('refuses a fixed Authorization header %s', (_label, options, message) => {
    expect(
      () => new McpClient({ url: URL_OK, allowNonPublic: loopback, ...options } as never),
    ).toThrow(message);
  });

  it('refuses at connect time, as not sent, a host name that resolves to a non-public address', async () => {
    const client = new McpClient({ url: 'https://localhost:1/mcp' });
    try {
      await expect(client.tools()).rejects.toBeInstanceOf(RequestNotSentError);
    } finally {
      await client.close();
    }
  });

  it.each([
    ['a string readTimeoutMs', { readTimeoutMs: '10' }],
    ['a boolean openTimeoutMs', { openTimeoutMs: true }],
    ['a negative maxRecordBytes', { maxRecordBytes: -1 }],
    ['a fractional maxRecordTokens', { maxRecordTokens: 1.5 }],
    ['a boolean maxToolPages', { maxToolPages: false }],
    ['zero maxTools', { maxTools: 0 }],
    ['zero maxSseRetryMs', { maxSseRetryMs: 0 }],
    ['a string maxSseRetryMs', { maxSseRetryMs: '30000' }],
    ['a fractional maxSseCommentBytes', { maxSseCommentBytes: 1.5 }],
    ['a boolean maxSseCommentBytes', { maxSseCommentBytes: true }],
    ['the session header', { headers: { 'Mcp-Session-Id': 'x' } }],
    ['the protocol-version header', { headers: { 'mcp-protocol-version': '1' } }],
    ['a framing header', { headers: { 'Transfer-Encoding': 'chunked' } }],
    ['a hop-by-hop header', { headers: { Connection: 'close' } }],
    ['accept-encoding', { headers: { 'accept-encoding': 'gzip' } }],
    ['a CRLF in a value', { headers: { 'x-a': 'b\r\nx-evil: 1' } }],
    ['a NUL in a value', { headers: { 'x-a': 'b\u0000' } }],
    ['an invalid header name', { headers: { 'x a': 'b' } }],
  ])('refuses %s', (_name, options) => {
    expect(
      () =>
        new McpClient({ url: URL_OK, allowNonPublic: loopback, ...options } as McpClientOptions),
    ).toThrow(TransportConfigurationError);
  });

  it('accepts a bearer token to loopback plain HTTP and ordinary extra headers', () => {
    expect(
      () =>
        new McpClient({
          url: URL_OK,
          allowNonPublic: loopback,
          token: async () => 'secret',
          headers: { 'x-tenant': 'acme' },
        }),
    ).not.toThrow();
  });
});

describe('McpClient extensions and request()', () => {
  it('keeps a frozen copy of the declared extensions', () => {
    const settings = { directoryRead: false };
    const client = new McpClient({ command: ['node'], extensions: { 'io.example/x': settings } });
    settings.directoryRead = true;
    expect(client.extensions).toEqual({ 'io.example/x': { directoryRead: false } });
    expect(Object.isFrozen(client.extensions)).toBe(true);
  });

  it.each([
    ['tools/call (it has side effects; use callTool)', 'tools/call'],
    ['initialize', 'initialize'],
    ['a notification', 'notifications/initialized'],
    ['an empty method', ''],
    ['a method with spaces', 'skills list'],
  ])('request() refuses %s without sending', async (_name, method) => {
    const client = new McpClient({ command: ['node'] });
    await expect(client.request(method)).rejects.toBeInstanceOf(ClientConfigurationError);
  });
});
