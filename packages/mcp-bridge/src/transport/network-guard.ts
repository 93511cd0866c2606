import { lazyRequire } from '../lazy-require.js';

type ToolsNet = typeof import('@toolfence/tools/net');

/**
 * `@toolfence/tools/net` (the URL check and the guarded dispatcher and fetch), loaded on first
 * use: a client of stdio servers never reaches it, and `serve` in front of stdio upstreams
 * reaches its first listing without its modules, `ipaddr.js` and `node:dns` (issue 41). Loaded
 * synchronously, since `McpClient` checks a URL in its constructor: `require` of an ES module
 * without top-level `await` (Node >= 20.19) gives the instance `import` gives.
 */
export const networkGuard: () => ToolsNet = lazyRequire<ToolsNet>('@toolfence/tools/net');
