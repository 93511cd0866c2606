import type { IncomingHttpHeaders } from 'node:http';
import { isLegacyRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { isLegacyEra } from './request-era.js';

const MODERN = '2026-07-28';
const call = { name: 'tk__note', arguments: { id: 'a' } };
const claim = {
  [PROTOCOL_VERSION_META_KEY]: MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
};
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'c', version: '1' },
  },
};
const request = (extra: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: call,
  ...extra,
});

/** What the SDK's own predicate says of the same request (the web Request it would be given). */
async function sdkSays(method: string, headers: IncomingHttpHeaders, body: unknown) {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') pairs.push([name, value]);
    else if (Array.isArray(value)) pairs.push([name, value.join(', ')]);
  }
  return isLegacyRequest(new Request('http://127.0.0.1/mcp', { method, headers: pairs }), body);
}

// Each row: the HTTP method, the MCP headers, the parsed body. The front's classification must
// give the SDK's answer for every one (it routes on it: a wrong "legacy" would serve a modern
// request, or a malformed one the modern serving must refuse, through a session).
describe('isLegacyEra decides as the SDK classification does', () => {
  it.for<[string, string, IncomingHttpHeaders, unknown]>([
    ['plain tools/call, no version header', 'POST', {}, request()],
    [
      'plain tools/call under 2025-11-25',
      'POST',
      { 'mcp-protocol-version': '2025-11-25' },
      request(),
    ],
    ['plain call under 2024-11-05', 'POST', { 'mcp-protocol-version': '2024-11-05' }, request()],
    ['string id', 'POST', {}, request({ id: 'abc' })],
    ['no params', 'POST', {}, { jsonrpc: '2.0', id: 2, method: 'ping' }],
    ['modern header without the envelope', 'POST', { 'mcp-protocol-version': MODERN }, request()],
    [
      'a later modern header without the envelope',
      'POST',
      { 'mcp-protocol-version': '2027-01-01' },
      request(),
    ],
    [
      'modern header padded with spaces',
      'POST',
      { 'mcp-protocol-version': ` ${MODERN} ` },
      request(),
    ],
    [
      'modern header after a legacy one (repeated header)',
      'POST',
      { 'mcp-protocol-version': `2025-11-25, ${MODERN}` },
      request(),
    ],
    ['version header that is not a date', 'POST', { 'mcp-protocol-version': 'latest' }, request()],
    ['envelope claim, no header', 'POST', {}, request({ params: { ...call, _meta: claim } })],
    [
      'envelope claim with the modern header',
      'POST',
      { 'mcp-protocol-version': MODERN },
      request({ params: { ...call, _meta: claim } }),
    ],
    [
      'envelope claim, header naming another version',
      'POST',
      { 'mcp-protocol-version': '2025-11-25' },
      request({ params: { ...call, _meta: claim } }),
    ],
    [
      'envelope claim, Mcp-Method header naming another method',
      'POST',
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
      request({ params: { ...call, _meta: claim } }),
    ],
    [
      'envelope claim that is not a string',
      'POST',
      {},
      request({ params: { ...call, _meta: { [PROTOCOL_VERSION_META_KEY]: 7 } } }),
    ],
    [
      'plain _meta without a claim',
      'POST',
      {},
      request({ params: { ...call, _meta: { progressToken: 3 } } }),
    ],
    [
      '_meta with a malformed progress token',
      'POST',
      {},
      request({ params: { ...call, _meta: { progressToken: { a: 1 } } } }),
    ],
    ['initialize', 'POST', {}, initialize],
    ['initialize under a modern header', 'POST', { 'mcp-protocol-version': MODERN }, initialize],
    ['a request that also carries a result', 'POST', {}, request({ result: {} })],
    [
      'a request that also carries an error',
      'POST',
      {},
      request({ error: { code: 1, message: 'x' } }),
    ],
    ['a posted result', 'POST', {}, { jsonrpc: '2.0', id: 1, result: {} }],
    ['a posted error', 'POST', {}, { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'no' } }],
    ['an extra key', 'POST', {}, request({ extra: true })],
    ['jsonrpc 1.0', 'POST', {}, request({ jsonrpc: '1.0' })],
    ['a fractional id', 'POST', {}, request({ id: 1.5 })],
    ['a null id', 'POST', {}, request({ id: null })],
    ['an object id', 'POST', {}, request({ id: { a: 1 } })],
    ['params an array', 'POST', {}, request({ params: [1, 2] })],
    ['params null', 'POST', {}, request({ params: null })],
    ['params a string', 'POST', {}, request({ params: 'x' })],
    [
      'an own __proto__ key in params',
      'POST',
      {},
      JSON.parse(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"__proto__":{"_meta":{"x":1}},"name":"a"}}',
      ),
    ],
    ['a method that is not a string', 'POST', {}, request({ method: 5 })],
    ['a notification', 'POST', {}, { jsonrpc: '2.0', method: 'notifications/initialized' }],
    [
      'a notification under a modern header',
      'POST',
      { 'mcp-protocol-version': MODERN },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ],
    [
      'a notification with the claim',
      'POST',
      {},
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: claim } },
    ],
    ['a legacy batch', 'POST', {}, [request(), request({ id: 2 })]],
    [
      'a batch with a modern element',
      'POST',
      {},
      [request(), request({ id: 2, params: { ...call, _meta: claim } })],
    ],
    ['an empty batch', 'POST', {}, []],
    ['a JSON null body', 'POST', {}, null],
    ['a JSON number body', 'POST', {}, 7],
    ['a GET (the session stream)', 'GET', {}, undefined],
    ['a GET under a modern header', 'GET', { 'mcp-protocol-version': MODERN }, undefined],
    ['a DELETE (the session end)', 'DELETE', {}, undefined],
  ])('%s', async ([, method, headers, body]) => {
    expect(isLegacyEra(method, headers, body)).toBe(await sdkSays(method, headers, body));
  });

  it('names the common SDK 2025 call legacy and the enveloped call modern', () => {
    expect(isLegacyEra('POST', { 'mcp-protocol-version': '2025-11-25' }, request())).toBe(true);
    expect(
      isLegacyEra(
        'POST',
        { 'mcp-protocol-version': MODERN },
        request({ params: { ...call, _meta: claim } }),
      ),
    ).toBe(false);
  });
});
