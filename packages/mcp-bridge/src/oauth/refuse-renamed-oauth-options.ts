// Apart from http.ts, so the token provider (which McpClient loads) checks its options without
// loading the OAuth HTTP client and the network guard (issue 41).
import { renamedOptionMessage } from '@toolfence/tools/core';
import { OAuthConfigurationError } from './errors.js';

/**
 * OAuth options that counted seconds (now milliseconds, named `…Ms`): given under the old name,
 * an option is refused with a message that names the new one.
 */
const RENAMED_OAUTH_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  connectTimeoutSeconds: 'connectTimeoutMs',
  readTimeoutSeconds: 'readTimeoutMs',
  timeoutSeconds: 'readTimeoutMs',
  refreshSkewSeconds: 'refreshSkewMs',
  authorizationWindowSeconds: 'authorizationWindowMs',
  pendingAuthorizationSeconds: 'pendingAuthorizationMs',
});

/**
 * Refuses an OAuth option under its old seconds name with {@link OAuthConfigurationError}
 * (`details.option` the old name), naming the new `…Ms` key.
 */
export function refuseRenamedOAuthOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [key, renamedTo] of Object.entries(RENAMED_OAUTH_OPTIONS)) {
    if (Object.hasOwn(options, key)) {
      throw new OAuthConfigurationError(renamedOptionMessage('OAuth', key, renamedTo), {
        details: { option: key },
      });
    }
  }
}
