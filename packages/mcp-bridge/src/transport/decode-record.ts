import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { TransportProtocolError } from './errors.js';
import { parseBoundedJson } from './json-scan.js';
import type { RecordLimits } from './record-limits.js';

/** Scans, parses and checks one record; a JSON array is a batch of messages. */
export function decodeRecord(text: string, limits: RecordLimits): JSONRPCMessage[] {
  const value = parseBoundedJson(text, limits);
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
