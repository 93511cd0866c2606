// The gateway's web console (`@toolfence/mcp-bridge/console`), loaded only when
// `toolfence-mcp serve --console` asks for it (a gateway without a console imports none of this).

// The limits' defaults
export { DEFAULT_CONSOLE_AUDIT_READ_BYTES, DEFAULT_CONSOLE_AUDIT_ROWS } from './console-audit.js';
// The approvals inbox given to McpGateway as `approvalInbox`
export {
  type ConsoleAsk,
  ConsoleInbox,
  type ConsoleInboxOptions,
  DEFAULT_CONSOLE_MAX_PENDING,
  DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL,
  type ShownAsk,
} from './console-inbox.js';
export {
  ConsoleLogin,
  ConsoleLoginBusyError,
  type ConsoleLoginOptions,
  DEFAULT_CONSOLE_LOGIN_TIMEOUT_MS,
  DEFAULT_CONSOLE_MAX_PENDING_LOGINS,
  DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE,
  isConsoleAdmin,
  type LoginResult,
  type StartedLogin,
} from './console-login.js';
export { CONSOLE_BASE } from './console-pages.js';
export {
  DEFAULT_CONSOLE_MAX_SESSIONS,
  DEFAULT_CONSOLE_SESSION_IDLE_MS,
} from './console-sessions.js';
// The console's server: its pages and checks, on its own listener or mounted at /console
export {
  CONSOLE_HEADERS,
  consoleOrigin,
  DEFAULT_CONSOLE_MAX_FORM_BYTES,
  GatewayConsole,
  type GatewayConsoleOptions,
  serveConsole,
} from './gateway-console.js';
