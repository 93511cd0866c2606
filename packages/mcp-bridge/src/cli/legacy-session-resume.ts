import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { LegacySessionState } from '../gateway/session-seal.js';

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
} as const;

async function post(
  transport: WebStandardStreamableHTTPServerTransport,
  host: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
): Promise<number> {
  const response = await transport.handleRequest(
    new Request(`http://${host}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, ...headers },
      body: JSON.stringify(body),
    }),
    { parsedBody: body },
  );
  // The answer goes nowhere: read to its end, so the stream is released.
  await response.text().catch(() => undefined);
  return response.status;
}

/**
 * Brings a fresh transport (and the gateway's downstream server connected to it) to where the
 * session sealed in its id stood after its handshake: the client's `initialize` (its version,
 * capabilities and info, as sealed) and `notifications/initialized` are played into it, their
 * answers dropped. The transport's id generator must return the session's id. True when both
 * were taken.
 */
export async function replayHandshake(
  transport: WebStandardStreamableHTTPServerTransport,
  sessionId: string,
  state: LegacySessionState,
  host: string,
): Promise<boolean> {
  const initialized = await post(
    transport,
    host,
    {},
    {
      jsonrpc: '2.0',
      id: `resume-${sessionId.slice(-8)}`,
      method: 'initialize',
      params: {
        protocolVersion: state.protocolVersion,
        capabilities: state.capabilities,
        clientInfo: state.clientInfo,
      },
    },
  );
  if (initialized !== 200 || transport.sessionId !== sessionId) return false;
  const notified = await post(
    transport,
    host,
    { 'mcp-session-id': sessionId },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  );
  return notified === 202;
}
