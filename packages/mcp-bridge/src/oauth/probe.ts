// The unauthenticated first request that reads the MCP server's Bearer challenge.

import { parseBearerChallenge } from './challenge.js';
import type { OAuthHttp } from './http.js';

/** Unauthenticated `initialize` POST; on 401 reads the Bearer challenge. */
export async function probe(
  http: OAuthHttp,
  resource: URL,
): Promise<{ resourceMetadata: string | undefined; scope: string | undefined }> {
  const response = await http.probe(resource.href, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'toolfence-oauth-probe', version: '0' },
      },
    }),
  });
  if (response.status !== 401) return { resourceMetadata: undefined, scope: undefined };
  const challenge = parseBearerChallenge(response.headers.get('www-authenticate'));
  return { resourceMetadata: challenge?.resourceMetadata, scope: challenge?.scope };
}
