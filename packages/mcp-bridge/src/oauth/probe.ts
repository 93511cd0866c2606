// The unauthenticated first request that reads the MCP server's Bearer challenge.

import { parseAuthChallenge } from './challenge.js';
import type { OAuthHttp } from './http.js';

/** What the MCP server's first 401 said. */
export interface ProbeResult {
  readonly resourceMetadata: string | undefined;
  readonly scope: string | undefined;
  /** The challenge used the `DPoP` scheme (and none used `Bearer`): DPoP is required. */
  readonly dpop: boolean;
}

/** Unauthenticated `initialize` POST; on 401 reads the Bearer (or DPoP) challenge. */
export async function probe(http: OAuthHttp, resource: URL): Promise<ProbeResult> {
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
  if (response.status !== 401) {
    return { resourceMetadata: undefined, scope: undefined, dpop: false };
  }
  const challenge = parseAuthChallenge(response.headers.get('www-authenticate'));
  return {
    resourceMetadata: challenge?.resourceMetadata,
    scope: challenge?.scope,
    dpop: challenge?.scheme === 'dpop',
  };
}
