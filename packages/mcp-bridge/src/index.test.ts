import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { VERSION } from './index.js';

describe('public surface of @toolfence/mcp-bridge', () => {
  it('exports exactly the pinned runtime names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'McpBridgeError',
        'VERSION',
        // Client, transports, bridge (issue 7)
        'AmbiguousDeliveryError',
        'ClientConfigurationError',
        'HandshakeError',
        'RequestFailedError',
        'ServerRpcError',
        'McpClient',
        'RecordEncodingError',
        'RequestNotSentError',
        'ResponseTooComplexError',
        'ResponseTooLargeError',
        'SessionExpiredError',
        'TransportConfigurationError',
        'TransportError',
        'TransportHttpError',
        'TransportProtocolError',
        'TransportTimeoutError',
        'TransportUnauthorizedError',
        'REFUSED_HEADER_NAMES',
        'parseBoundedJson',
        'scanJsonStructure',
        'DEFAULT_RECORD_LIMITS',
        'DEFAULT_INHERITED_ENV',
        'StdioTransport',
        'StreamableHttpTransport',
        'bridgeTools',
        'BridgeApprovalError',
        'BridgeConfigurationError',
        'BridgeSchemaError',
        'NO_ARGUMENTS_SCHEMA',
        // OAuth
        'AuthorizationRequiredError',
        'ConnectionNotFoundError',
        'DEFAULT_AUTHORIZATION_WINDOW_SECONDS',
        'DEFAULT_MAX_AUTHORIZATION_ATTEMPTS',
        'DEFAULT_OAUTH_CONNECT_TIMEOUT_SECONDS',
        'DEFAULT_OAUTH_MAX_RESPONSE_BYTES',
        'DEFAULT_OAUTH_READ_TIMEOUT_SECONDS',
        'DEFAULT_OAUTH_TIMEOUT_SECONDS',
        'DEFAULT_PENDING_AUTHORIZATION_SECONDS',
        'DEFAULT_REFRESH_SKEW_SECONDS',
        'MemoryConnectionStore',
        'OAuthConfigurationError',
        'OAuthDiscoveryError',
        'OAuthDpopError',
        'OAuthError',
        'OAuthIssuerMismatchError',
        'OAuthResourceMismatchError',
        'OAuthResponseError',
        'OAuthStateMismatchError',
        'OAuthStepUpLimitError',
        'OAuthTokenProvider',
        'OAuthTransportError',
        'OAuthUnsupportedServerError',
        'STANDARD_OAUTH_ERRORS',
        'StoreDecryptionError',
        'StoreDriverError',
        'StoreKeyError',
        'StoreLeaseTimeoutError',
        'StoreRecordError',
        'StoreSchemaError',
        'authorizeConnection',
        'clientCredentialsOAuth',
        'crossAppAccessOAuth',
        'completeConnection',
        'completeOAuth',
        'findAuthorizationRequired',
        'jwtBearerOAuth',
        'parseAuthorizationCallback',
        'parseBearerChallenge',
        'refreshConnection',
        'refreshOAuth',
        'startOAuth',
        'verifyState',
      ].sort(),
    );
  });

  it('reports the version of its package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(manifest.version);
  });
});
