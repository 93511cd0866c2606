import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { TransportProtocolError } from './errors.js';
import { parseBoundedJson } from './json-scan.js';
import { isPlainMessage, markPlainRecord } from './plain-message.js';
import type { RecordLimits } from './record-limits.js';

/**
 * Scans, parses and checks one record; a JSON array is a batch of messages. An empty batch
 * (`[]`) is refused: JSON-RPC 2.0 says an empty array is an invalid request.
 *
 * Each message is checked against the SDK's `JSONRPCMessageSchema`. The plain shapes nearly every
 * record has (a result, an error, a request or a notification with at most a plain `_meta`, no
 * extra key and nothing a copy would change) are recognised by {@link isPlainMessage}
 * (plain-message.ts) without the schema: the schema would accept them and give back an equal
 * value, and the JSON text's own parse is already a fresh object nobody else holds. Everything
 * else goes through the schema, which decides. A plain message is marked ({@link markPlainRecord}),
 * so the transports and the protocol session read the mark instead of checking it again.
 */
export function decodeRecord(text: string, limits: RecordLimits): JSONRPCMessage[] {
  const value = parseBoundedJson(text, limits);
  if (!Array.isArray(value)) return [checkedMessage(value)];
  if (value.length === 0) {
    throw new TransportProtocolError(
      'A record from the MCP server is an empty batch ([]); a batch needs at least one message',
    );
  }
  const messages: JSONRPCMessage[] = [];
  for (const item of value) messages.push(checkedMessage(item));
  return messages;
}

function checkedMessage(item: unknown): JSONRPCMessage {
  if (isPlainMessage(item)) {
    markPlainRecord(item as object);
    return item as JSONRPCMessage;
  }
  const parsed = JSONRPCMessageSchema.safeParse(item);
  if (!parsed.success) {
    throw new TransportProtocolError('A record from the MCP server is not a JSON-RPC message');
  }
  return parsed.data;
}
