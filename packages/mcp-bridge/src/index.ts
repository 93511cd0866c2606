// Package metadata

// Bridging server tools into a registry (src/bridge) — issue 7
export {
  type BridgeApprovalRequest,
  type BridgeCallOptions,
  type BridgeClient,
  type BridgedTool,
  type BridgeSkippedTool,
  type BridgeToolDefinition,
  type BridgeToolsOptions,
  bridgeTools,
} from './bridge/bridge-tools.js';
export {
  BridgeApprovalError,
  BridgeConfigurationError,
  BridgeSchemaError,
} from './bridge/errors.js';
export {
  type BridgeSchemaReason,
  NO_ARGUMENTS_SCHEMA,
  type SchemaDialectMode,
} from './bridge/schema-authority.js';
export {
  type AmbiguityReason,
  AmbiguousDeliveryError,
  ClientConfigurationError,
  HandshakeError,
  RequestFailedError,
  ResourceNotFoundError,
  ServerRpcError,
} from './client/errors.js';
export {
  DEFAULT_MAX_CONCURRENT_REQUESTS,
  type McpCallOptions,
  type McpCallToolResult,
  McpClient,
  type McpClientOptions,
  type McpElicitationOptions,
  type McpSamplingOptions,
} from './client/mcp-client.js';
// The Tasks extension (SEP-2663): task handles polled by callTool — issue 13
export { TaskError, type TaskFailureReason } from './client/task-error.js';
export type { McpTaskOptions } from './client/task-polling.js';
export type { McpToolInfo, McpToolListing } from './client/tool-listing.js';
// Errors
export {
  McpBridgeError,
  type McpBridgeErrorClass,
  type McpBridgeErrorOptions,
} from './mcp-bridge-error.js';
export {
  type AuthorizationCallback,
  type CompleteOAuthOptions,
  completeOAuth,
  type OAuthStart,
  parseAuthorizationCallback,
  type StartOAuthOptions,
  startOAuth,
  verifyState,
} from './oauth/authorization-code.js';
// OAuth: flow (startOAuth / completeOAuth / refreshOAuth), callback helpers, connection stores,
// token provider for McpClient, and their errors. SqliteConnectionStore: `./sqlite-store` subpath;
// PostgresConnectionStore: `./postgres-store` subpath.
export { type BearerChallenge, parseBearerChallenge } from './oauth/challenge.js';
export {
  type ClientCredentialsAuthMethod,
  type ClientCredentialsOAuthOptions,
  type ClientCredentialsTokens,
  clientCredentialsOAuth,
} from './oauth/client-credentials.js';
export {
  type AuthorizeConnectionOptions,
  authorizeConnection,
  type CompleteConnectionOptions,
  type ConnectionAuthorization,
  completeConnection,
  DEFAULT_PENDING_AUTHORIZATION_MS,
  DEFAULT_PENDING_AUTHORIZATION_SECONDS,
  type RefreshConnectionOptions,
  refreshConnection,
} from './oauth/connection-oauth.js';
export {
  type CrossAppAccessOAuthOptions,
  type CrossAppAccessTokens,
  crossAppAccessOAuth,
} from './oauth/cross-app-access.js';
export {
  AuthorizationRequiredError,
  type AuthorizationRequiredErrorOptions,
  type AuthorizationRequiredReason,
  findAuthorizationRequired,
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthDpopError,
  type OAuthDpopFailure,
  OAuthError,
  type OAuthErrorOptions,
  OAuthIssuerMismatchError,
  OAuthResourceMismatchError,
  OAuthResponseError,
  OAuthStateMismatchError,
  OAuthStepUpLimitError,
  OAuthTransportError,
  type OAuthTransportFailure,
  OAuthUnsupportedServerError,
  STANDARD_OAUTH_ERRORS,
} from './oauth/errors.js';
export {
  type AllowNonPublic as OAuthAllowNonPublic,
  DEFAULT_OAUTH_CONNECT_TIMEOUT_MS,
  DEFAULT_OAUTH_CONNECT_TIMEOUT_SECONDS,
  DEFAULT_OAUTH_MAX_RESPONSE_BYTES,
  DEFAULT_OAUTH_READ_TIMEOUT_MS,
  DEFAULT_OAUTH_READ_TIMEOUT_SECONDS,
  DEFAULT_OAUTH_TIMEOUT_SECONDS,
  type FetchFunction as OAuthFetchFunction,
  type OAuthNetworkOptions,
} from './oauth/http.js';
export {
  type JwtBearerOAuthOptions,
  type JwtBearerTokens,
  jwtBearerOAuth,
} from './oauth/jwt-bearer.js';
export { type RefreshOAuthOptions, refreshOAuth } from './oauth/refresh-token.js';
export type { OAuthClientOptions, OAuthTokens } from './oauth/token-endpoint.js';
export {
  DEFAULT_MAX_AUTHORIZATION_ATTEMPTS,
  DEFAULT_REFRESH_SKEW_MS,
  DEFAULT_REFRESH_SKEW_SECONDS,
  type OAuthConnectionOptions,
  OAuthTokenProvider,
} from './oauth/token-provider.js';
// Protocol revisions: negotiation, modern headers, multi round-trip requests (src/protocol) — issue 13
export {
  InputRequestError,
  type InputRequestFailureReason,
  type McpInputKind,
} from './protocol/input-request-error.js';
export type { ParamHeaderDeclaration, ParamHeaderScan } from './protocol/mcp-headers.js';
export { encodeHeaderValue, scanParamHeaders } from './protocol/mcp-headers.js';
export { ParameterHeaderError } from './protocol/parameter-header-error.js';
export type { McpServerDescription, ProtocolEra } from './protocol/protocol-session.js';
export { TASKS_EXTENSION_ID } from './protocol/tasks-extension.js';
export { UnsupportedProtocolVersionError } from './protocol/unsupported-protocol-version-error.js';
export {
  type NegotiationFailureReason,
  VersionNegotiationError,
} from './protocol/version-negotiation-error.js';
export { MODERN_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from './protocol/versions.js';
export {
  type AccessTokenType,
  type ConnectionChange,
  type ConnectionRecord,
  type ConnectionStore,
  DEFAULT_AUTHORIZATION_WINDOW_MS,
  DEFAULT_AUTHORIZATION_WINDOW_SECONDS,
  type DpopKeyRecord,
  MemoryConnectionStore,
  type PendingAuthorization,
  type TokenAuthMethod,
} from './store/connection-store.js';
export {
  type ConnectionStoreUrlOptions,
  connectionStoreFromUrl,
  type PersistentConnectionStore,
} from './store/connection-store-from-url.js';
export {
  ConnectionNotFoundError,
  StoreDecryptionError,
  StoreDriverError,
  StoreKeyError,
  StoreLeaseTimeoutError,
  StoreRecordError,
  StoreSchemaError,
  StoreUnavailableError,
} from './store/store-errors.js';
// Hardened MCP client (src/client) — issue 7
export type {
  McpAuthChallenge,
  McpAuthHeaders,
  McpAuthProvider,
  McpAuthRequest,
  McpAuthResponse,
  McpPreviousChallenge,
  McpTokenSource,
} from './transport/auth-provider.js';
// Bounded transports, record limits, structural scan (src/transport) — issue 7
export {
  type RecordComplexityKind,
  RecordEncodingError,
  type RecordEncodingKind,
  type RecordSizeKind,
  RequestNotSentError,
  ResponseTooComplexError,
  ResponseTooLargeError,
  SessionExpiredError,
  TransportConfigurationError,
  TransportError,
  TransportHttpError,
  TransportProtocolError,
  TransportTimeoutError,
  TransportUnauthorizedError,
} from './transport/errors.js';
export { REFUSED_HEADER_NAMES } from './transport/header-rules.js';
export { parseBoundedJson, scanJsonStructure } from './transport/json-scan.js';
export type { McpBridgeLogger } from './transport/logger.js';
export { DEFAULT_RECORD_LIMITS, type RecordLimits } from './transport/record-limits.js';
export { MAX_RETRY_AFTER_MS } from './transport/retry-after.js';
export { ServerOverloadedError } from './transport/server-overloaded-error.js';
export { ServerRateLimitedError } from './transport/server-rate-limited-error.js';
export {
  DEFAULT_INHERITED_ENV,
  StdioTransport,
  type StdioTransportOptions,
} from './transport/stdio-transport.js';
export {
  type HttpTransportEra,
  type ListenStreamEnd,
  type MessageHeaders,
  StreamableHttpTransport,
  type StreamableHttpTransportOptions,
} from './transport/streamable-http-transport.js';
export { VERSION } from './version.js';

// Skills over MCP, SEP-2640 host side (src/skills)

export {
  McpSkillConfigurationError,
  McpSkillNotListedError,
  McpSkillNotLoadedError,
  McpSkillVerificationError,
} from './skills/errors.js';
export {
  type McpSkillDirectoryEntry,
  type McpSkillFile,
  type McpSkillListing,
  McpSkillSource,
  type McpSkillSourceOptions,
} from './skills/mcp-skill-source.js';
export {
  type McpSkillEntry,
  type McpSkillResource,
  SKILLS_EXTENSION_ID,
} from './skills/skill-entry.js';

// The gateway behind `toolfence-mcp serve` (src/gateway)

export {
  type ApprovalRefusal,
  DEFAULT_MAX_PENDING_APPROVALS,
} from './gateway/approval-grants.js';
// Where an ask waits when the client cannot put it to its user (the web console's inbox)
export type { ApprovalInbox, InboxAnswer, InboxAsk } from './gateway/approval-inbox.js';
export { DEFAULT_APPROVAL_MAX_ARGUMENT_CHARS } from './gateway/approval-prompt.js';
export {
  type ApprovalSpentStore,
  DEFAULT_MAX_SPENT_APPROVALS,
  MemorySpentApprovals,
  SPENT_APPROVAL_MARGIN_MS,
} from './gateway/approval-spent-store.js';
export {
  AUDIT_TEXT_MAX_CHARS,
  type AuditChainReport,
  type AuditEntry,
  type AuditFlow,
  type AuditLine,
  AuditLog,
  type AuditLogOptions,
  type AuditVerification,
  auditText,
  DEFAULT_AUDIT_MAX_BATCH_LINES,
  verifyAuditChain,
  verifyAuditLog,
} from './gateway/audit-log.js';
export { AuditLogError, type AuditProblem } from './gateway/audit-log-error.js';
export {
  CLIENT_KINDS,
  type ClientFileOptions,
  type ClientKind,
  type GatewayEntry,
  type ImportedServers,
  importClientServers,
  inputVariable,
  type UnwrapPlan,
  unwrapClientFile,
  type WrappedClientFile,
  wrapClientFile,
} from './gateway/client-formats.js';
export {
  GatewayConfigError,
  GatewayStateError,
  PinChangedError,
  UpstreamStartTimeoutError,
} from './gateway/errors.js';
export type {
  GatewayFlowPermit,
  GatewayFlowSelector,
  GatewayFlowSettings,
} from './gateway/flow-config.js';
export {
  DEFAULT_GATEWAY_BUDGET_KEY_PREFIX,
  type GatewayBudget,
  gatewayBudget,
} from './gateway/gateway-budget.js';
export {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  DEFAULT_AUDIT_MAX_BYTES,
  DEFAULT_HTTP_MAX_CALLS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_CALLS_PER_SESSION,
  DEFAULT_HTTP_MAX_LISTEN_STREAMS,
  DEFAULT_HTTP_MAX_LISTEN_STREAMS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_REMEMBERED_SESSIONS,
  DEFAULT_HTTP_MAX_SESSIONS,
  DEFAULT_HTTP_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_STATELESS_CALLS,
  DEFAULT_HTTP_SESSION_IDLE_MS,
  DEFAULT_LIST_WAIT_MS,
  DEFAULT_MAX_CONCURRENT_CALLS,
  DEFAULT_START_TIMEOUT_MS,
  decodeStoreKey,
  expandVariables,
  type GatewayBudgetLimits,
  type GatewayBudgetSettings,
  type GatewayConfig,
  type GatewayConfigParseOptions,
  type GatewayServerConfig,
  type GatewayServerOAuth,
  type GatewaySettings,
  parseGatewayConfig,
  sealKeysOf,
} from './gateway/gateway-config.js';
export {
  DEFAULT_PASSTHROUGH_LIMITS,
  type GatewayPassthroughOptions,
} from './gateway/gateway-passthrough.js';
export { GATEWAY_SINGLE_PRINCIPAL } from './gateway/identity/gateway-principal.js';
export {
  type ConsoleAdminsSettings,
  type ConsoleLoginSettings,
  checkHttpAuthSettings,
  DEFAULT_CONSOLE_CLIENT_ID,
  DEFAULT_HTTP_AUTH_ALGORITHMS,
  DEFAULT_HTTP_AUTH_CLOCK_SKEW_MS,
  DEFAULT_HTTP_AUTH_FETCH_MAX_BYTES,
  DEFAULT_HTTP_AUTH_FETCH_TIMEOUT_MS,
  DEFAULT_HTTP_AUTH_JWKS_CACHE_MS,
  DEFAULT_HTTP_AUTH_JWKS_MAX_STALE_MS,
  DEFAULT_HTTP_AUTH_JWKS_MIN_REFETCH_MS,
  DEFAULT_HTTP_AUTH_PRINCIPAL_CLAIMS,
  type GatewayHttpAuthSettings,
  HTTP_AUTH_KEYS,
  type ResolvedConsoleLoginSettings,
  type ResolvedHttpAuthSettings,
} from './gateway/identity/http-auth-settings.js';
export {
  type AuthenticatedCaller,
  GatewayResourceServer,
  type GatewayResourceServerOptions,
  type RefusedCaller,
} from './gateway/identity/resource-server.js';
export {
  GatewayAuthUnavailableError,
  GatewayTokenError,
  type GatewayTokenRefusal,
} from './gateway/identity/token-error.js';
export type { IntrospectionCredentials } from './gateway/identity/token-introspection.js';
// Upstream credentials per caller: RFC 8693 token exchange (issue 39)
export {
  GatewayCallerCredentialError,
  GatewayTokenExchangeError,
} from './gateway/identity/upstream-credential-error.js';
export {
  DEFAULT_EXCHANGE_CALLER_CLIENT_IDLE_MS,
  DEFAULT_EXCHANGE_FETCH_MAX_BYTES,
  DEFAULT_EXCHANGE_FETCH_TIMEOUT_MS,
  DEFAULT_EXCHANGE_MAX_CACHED_TOKENS,
  DEFAULT_EXCHANGE_MAX_CALLER_CLIENTS,
  DEFAULT_EXCHANGE_REFRESH_SKEW_MS,
  type GatewayServerCredentials,
} from './gateway/identity/upstream-credentials.js';
export { GATEWAY_NOT_INITIALIZED } from './gateway/initialize-gate.js';
export {
  DEFAULT_MAX_TOOL_NAME_CHARS,
  type GatewayConnectOptions,
  type GatewayEra,
  type GatewayReload,
  type GatewayUpstreamStatus,
  McpGateway,
  type McpGatewayOptions,
  serverIdentity,
} from './gateway/mcp-gateway.js';
export {
  type AcceptOutcome,
  acceptPending,
  DEFAULT_PIN_LIMITS,
  definitionDigest,
  escapeInvisible,
  type GatewayPinStore,
  hasInvisibleUnicode,
  type PendingPin,
  type PendingTool,
  type PinKeyParts,
  type PinKind,
  type PinReason,
  type PinRecord,
  type PinReview,
  PinStore,
  type PinStoreLimits,
  pinKey,
  pinnedDefinition,
  reviewServer,
  type ServerPins,
  type ServerReview,
  splitPinKey,
} from './gateway/pin-store.js';
export { PolicyFileError } from './gateway/policy-file-error.js';
export {
  DEFAULT_PIN_TABLE,
  PostgresPinStore,
  type PostgresPinStoreOptions,
} from './gateway/postgres-pin-store.js';
export {
  DEFAULT_SPENT_APPROVALS_TABLE,
  PostgresSpentApprovals,
  type PostgresSpentApprovalsOptions,
} from './gateway/postgres-spent-approvals.js';
export {
  type RedisSetClient,
  RedisSpentApprovals,
  type RedisSpentApprovalsOptions,
} from './gateway/redis-spent-approvals.js';
export {
  type ApprovalBinding,
  ApprovalSeal,
  type ApprovalSealKeys,
  type ApprovalSealOptions,
  DEFAULT_MAX_REQUEST_STATE_CHARS,
  type OpenedApproval,
  SEALED_APPROVAL_VERSION,
} from './gateway/sealed-approval.js';
export {
  describeUpstreamFailure,
  formatUpstreamFailure,
  type UpstreamFailure,
} from './gateway/upstream-failure.js';
