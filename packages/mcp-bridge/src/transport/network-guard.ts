import { createRequire } from 'node:module';

type ToolsNet = typeof import('@toolfence/tools/net');

const requireHere = createRequire(import.meta.url);
let toolsNet: ToolsNet | undefined;

/**
 * `@toolfence/tools/net` (the URL check and the guarded dispatcher and fetch), loaded on first
 * use: a client of stdio servers never reaches it, and `serve` in front of stdio upstreams
 * reaches its first listing without its modules, `ipaddr.js` and `node:dns` (issue 41). Loaded
 * synchronously, since `McpClient` checks a URL in its constructor: `require` of an ES module
 * without top-level `await` (Node >= 20.19) gives the instance `import` gives.
 */
export function networkGuard(): ToolsNet {
  toolsNet ??= requireHere('@toolfence/tools/net') as ToolsNet;
  return toolsNet;
}
