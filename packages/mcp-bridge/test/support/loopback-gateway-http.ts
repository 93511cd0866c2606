// A gateway served in-process over Streamable HTTP on a free 127.0.0.1 port, as `serve --http`
// serves it on loopback without a token (at most 4 legacy sessions), closed with the test's others.
import { type GatewayHttpOptions, serveGatewayHttp } from '../../src/cli/gateway-http.js';
import type { McpGateway } from '../../src/gateway/mcp-gateway.js';

/**
 * Serves `gateway` over HTTP on loopback; the server is pushed on `open` to be closed after.
 * `more` adds options (an `auth` resource server, say) to the loopback ones.
 */
export async function serveLoopbackHttp(
  gateway: McpGateway,
  open: { close(): Promise<void> }[],
  more: Partial<GatewayHttpOptions> = {},
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  const http = await serveGatewayHttp(gateway, {
    host: '127.0.0.1',
    port: 0,
    token: undefined,
    loopback: true,
    maxSessions: 4,
    ...more,
  });
  open.push(http);
  return http;
}
