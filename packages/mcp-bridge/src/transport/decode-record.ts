import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { TransportProtocolError } from './errors.js';
import { parseBoundedJson } from './json-scan.js';
import type { RecordLimits } from './record-limits.js';

/**
 * Scans, parses and checks one record; a JSON array is a batch of messages. An empty batch
 * (`[]`) is refused: JSON-RPC 2.0 says an empty array is an invalid request.
 */
export function decodeRecord(text: string, limits: RecordLimits): JSONRPCMessage[] {
  const value = parseBoundedJson(text, limits);
  if (Array.isArray(value) && value.length === 0) {
    throw new TransportProtocolError(
      'A record from the MCP server is an empty batch ([]); a batch needs at least one message',
    );
  }
  const items = Array.isArray(value) ? value : [value];
  const messages: JSONRPCMessage[] = [];
  for (const item of items) {
    const parsed = JSONRPCMessageSchema.safeParse(item);
    if (!parsed.success) {
      throw new TransportProtocolError('A record from the MCP server is not a JSON-RPC message');
    }
    messages.push(parsed.data);
  }
  return messages;
}
