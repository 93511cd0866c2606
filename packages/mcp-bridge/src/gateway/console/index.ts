// The gateway's web console, loaded only when `toolfence-mcp serve --console` asks for it (a
// gateway without a console imports none of this).
export { ConsoleInbox, DEFAULT_CONSOLE_MAX_PENDING } from './console-inbox.js';
export { CONSOLE_BASE } from './console-pages.js';
export { GatewayConsole, type GatewayConsoleOptions, serveConsole } from './gateway-console.js';
