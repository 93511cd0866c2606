// Internal barrel of the OAuth area (tests import it; the package surface is src/index.ts).
export { type BearerChallenge, parseBearerChallenge } from './challenge.js';
export {
  type AuthorizeConnectionOptions,
  authorizeConnection,
  type CompleteConnectionOptions,
  type ConnectionAuthorization,
  completeConnection,
  DEFAULT_PENDING_AUTHORIZATION_SECONDS,
  refreshConnection,
} from './connection-oauth.js';
export {
  type ConnectionChange,
  type ConnectionRecord,
  type ConnectionStore,
  MemoryConnectionStore,
  type PendingAuthorization,
} from './connection-store.js';
export {
  AuthorizationRequiredError,
  type AuthorizationRequiredReason,
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthError,
  OAuthIssuerMismatchError,
  OAuthResourceMismatchError,
  OAuthResponseError,
  OAuthStateMismatchError,
  OAuthStepUpLimitError,
  OAuthTransportError,
  type OAuthTransportFailure,
  OAuthUnsupportedServerError,
} from './errors.js';
export {
  type AuthorizationCallback,
  type CompleteOAuthOptions,
  completeOAuth,
  type OAuthClientOptions,
  type OAuthStart,
  type OAuthTokens,
  parseAuthorizationCallback,
  type RefreshOAuthOptions,
  refreshOAuth,
  type StartOAuthOptions,
  startOAuth,
  type TokenAuthMethod,
  verifyState,
} from './flow.js';
export {
  type AllowNonPublic,
  DEFAULT_OAUTH_MAX_RESPONSE_BYTES,
  DEFAULT_OAUTH_TIMEOUT_SECONDS,
  type FetchFunction,
  type OAuthNetworkOptions,
} from './http.js';
export {
  ConnectionNotFoundError,
  StoreDecryptionError,
  StoreKeyError,
  StoreRecordError,
  StoreSchemaError,
} from './store-errors.js';
export {
  DEFAULT_MAX_AUTHORIZATION_ATTEMPTS,
  DEFAULT_REFRESH_SKEW_SECONDS,
  type OAuthConnectionOptions,
  OAuthTokenProvider,
} from './token-provider.js';
