import { describe, expect, it } from 'vitest';
import * as net from './index.js';

describe('public surface of @toolfence/tools/net', () => {
  it('exports exactly the pinned runtime names', () => {
    expect(Object.keys(net).sort()).toEqual(
      [
        'ADDRESS_TABLE_DATE',
        'IPV4_ADDRESS_TABLE',
        'IPV6_ADDRESS_TABLE',
        'classifyAddress',
        'isLoopbackAddress',
        'checkUrl',
        'MAX_URL_LENGTH',
        'createGuardedDispatcher',
        'DEFAULT_CONNECT_TIMEOUT_MS',
        'isGuardedDispatcher',
        'createGuardedFetch',
        'DEFAULT_FETCH_TIMEOUT_MS',
        'DEFAULT_MAX_REDIRECTS',
        'DEFAULT_MAX_RESPONSE_BYTES',
        'guardedFetch',
        'MAX_TIMER_MS',
        'NetworkLimitError',
        'NetworkOptionsError',
        'NetworkPolicyError',
        'NetworkResolutionError',
      ].sort(),
    );
  });

  it('exports the same error classes as the main entry point', async () => {
    const main = await import('../index.js');
    expect(main.NetworkPolicyError).toBe(net.NetworkPolicyError);
    expect(main.NetworkLimitError).toBe(net.NetworkLimitError);
    expect(main.NetworkResolutionError).toBe(net.NetworkResolutionError);
  });
});
