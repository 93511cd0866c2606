import type { IncomingHttpHeaders } from 'node:http';
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { isRecord } from '../is-record.js';
import { isModernEra, isVersionShaped } from '../protocol/versions.js';
import { isPlainMessage } from '../transport/plain-message.js';

/** A header's value as a web `Headers` object reads it: repeated values joined with `, `. */
function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * True when the SDK's entry (`isLegacyRequest`, `createMcpHandler`'s routing) serves this request
 * in the 2025-11-25 era (a session), false when the 2026-07-28 serving answers it. Decided from
 * what that classification reads (the HTTP method, the `MCP-Protocol-Version`, `Mcp-Method` and
 * `Mcp-Name` headers, the parsed body), before any web `Request` is built, so the front builds
 * one per request, with an abort signal only for the serving that reads it.
 *
 * A request the SDK 2025 clients send on every call (a plain JSON-RPC request, no `_meta`, not
 * `initialize`, no modern version header) is legacy without running the SDK's message schemas:
 * the classification would find no envelope claim and no modern header. Everything else is asked
 * of the SDK's own `classifyInboundRequest`, which decides.
 */
export function isLegacyEra(
  method: string,
  headers: IncomingHttpHeaders,
  parsedBody: unknown,
): boolean {
  // Only a POST carries a message; any other method is a session operation (a GET stream, a
  // DELETE), and a POST without a JSON body is answered by the legacy transport, as the SDK does.
  if (method !== 'POST' || parsedBody === undefined) return true;
  const version = headerOf(headers, 'mcp-protocol-version');
  if (isPlainLegacyCall(parsedBody, version)) return true;
  const outcome = classifyInboundRequest({
    httpMethod: method,
    body: parsedBody,
    ...(version === undefined ? {} : { protocolVersionHeader: version }),
    ...optionalHeader('mcpMethodHeader', headerOf(headers, 'mcp-method')),
    ...optionalHeader('mcpNameHeader', headerOf(headers, 'mcp-name')),
  });
  return outcome.kind === 'legacy';
}

function optionalHeader<K extends string>(
  key: K,
  value: string | undefined,
): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}

/**
 * A plain request (exactly `jsonrpc`, `id`, `method`, `params`; see {@link isPlainMessage}) other
 * than `initialize`, whose params carry no `_meta`, under no version header or one naming a
 * revision before 2026-07-28. False only means "ask the SDK's classification".
 */
function isPlainLegacyCall(body: unknown, version: string | undefined): boolean {
  if (version !== undefined && (!isVersionShaped(version) || isModernEra(version))) return false;
  if (!isPlainMessage(body)) return false;
  const message = body as { id?: unknown; method?: unknown; params?: unknown };
  if (typeof message.method !== 'string' || message.method === 'initialize') return false;
  if (message.id === undefined) return false;
  const params = message.params;
  return params === undefined || (isRecord(params) && !Object.hasOwn(params, '_meta'));
}
