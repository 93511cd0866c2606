import type { bridgeTools } from '../bridge/bridge-tools.js';
import type { TracedClient } from './traced-client.js';

/** The class the gateway makes its upstream clients with. */
export type TracedClientClass = typeof TracedClient;

/** What the gateway needs to start upstreams, and only then. */
export interface UpstreamModules {
  readonly TracedClient: TracedClientClass;
  readonly bridgeTools: typeof bridgeTools;
}

let loading: Promise<UpstreamModules> | undefined;

/**
 * Loads the upstream client (the SDK 1.x protocol, the stdio transport, the network guard) and
 * the bridge on first use, once; the client loads the HTTP transport with its first connection to
 * a `url`, and the OAuth flows when a token is refreshed or a DPoP proof signed. The gateway's downstream server answers `initialize` without
 * them, so `toolfence-mcp serve` does not make its client wait for modules only upstreams use.
 */
export function upstreamModules(): Promise<UpstreamModules> {
  loading ??= Promise.all([import('./traced-client.js'), import('../bridge/bridge-tools.js')]).then(
    ([traced, bridge]) => ({ TracedClient: traced.TracedClient, bridgeTools: bridge.bridgeTools }),
  );
  return loading;
}
