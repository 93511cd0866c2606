import { describe, expect, it } from 'vitest';
import {
  authorizationServerMetadataUrls,
  chooseScope,
  protectedResourceMetadataUrls,
} from './discovery.js';
import {
  AuthorizationRequiredError,
  findAuthorizationRequired,
  OAuthError,
  standardOAuthError,
} from './errors.js';

describe('well-known URLs', () => {
  it.each([
    [
      'https://as.example',
      [
        'https://as.example/.well-known/oauth-authorization-server',
        'https://as.example/.well-known/openid-configuration',
      ],
    ],
    [
      'https://as.example/',
      [
        'https://as.example/.well-known/oauth-authorization-server',
        'https://as.example/.well-known/openid-configuration',
      ],
    ],
    [
      'https://as.example/tenant1',
      [
        'https://as.example/.well-known/oauth-authorization-server/tenant1',
        'https://as.example/.well-known/openid-configuration/tenant1',
        'https://as.example/tenant1/.well-known/openid-configuration',
      ],
    ],
  ])(
    'authorization-server metadata of %s: RFC 8414 path-inserted first, then OIDC',
    (issuer, urls) => {
      expect(authorizationServerMetadataUrls(new URL(issuer)).map(String)).toEqual(urls);
    },
  );

  it.each([
    [
      'https://mcp.example/mcp',
      [
        'https://mcp.example/.well-known/oauth-protected-resource/mcp',
        'https://mcp.example/.well-known/oauth-protected-resource',
      ],
    ],
    ['https://mcp.example/', ['https://mcp.example/.well-known/oauth-protected-resource']],
  ])('protected-resource metadata of %s: path-specific first, then the root', (resource, urls) => {
    expect(protectedResourceMetadataUrls(new URL(resource)).map(String)).toEqual(urls);
  });
});

describe('chooseScope', () => {
  it.each([
    ['explicit scope containing the challenge', 'a b c', 'a b', ['x'], 'a b c'],
    ['challenge scope', undefined, 'a b', ['x'], 'a b'],
    ['scopes_supported', undefined, undefined, ['x', 'y'], 'x y'],
    ['nothing', undefined, undefined, undefined, undefined],
    [
      'offline_access only when the server lists it',
      undefined,
      undefined,
      ['x', 'offline_access'],
      'x offline_access',
    ],
  ])('takes the %s', (_name, explicit, challenged, supported, expected) => {
    expect(chooseScope(explicit, challenged, supported)).toBe(expected);
  });

  it('refuses an explicit scope that lacks a challenged scope', () => {
    expect(() => chooseScope('a', 'a b', undefined)).toThrow(
      expect.objectContaining({ code: 'OAUTH_CONFIGURATION_INVALID' }),
    );
  });
});

describe('OAuth errors', () => {
  it('keeps standard codes and replaces anything else', () => {
    expect(standardOAuthError('invalid_grant')).toBe('invalid_grant');
    expect(standardOAuthError('<b>owned</b>')).toBe('unrecognized_error');
    expect(standardOAuthError(42)).toBe('unrecognized_error');
    const error = new OAuthError('refused', { error: 'evil description', status: 400 });
    expect(error.error).toBe('unrecognized_error');
    expect(error.message).not.toContain('evil');
  });

  it('finds AuthorizationRequiredError inside wrapping errors', () => {
    const required = new AuthorizationRequiredError('needed', {
      connectionId: 'c',
      url: 'https://mcp.example/mcp',
      reason: 'no-token',
    });
    const wrapped = new Error('request not sent', {
      cause: new Error('transport', { cause: required }),
    });
    expect(findAuthorizationRequired(wrapped)).toBe(required);
    expect(findAuthorizationRequired(new Error('other'))).toBeUndefined();
    expect(findAuthorizationRequired(undefined)).toBeUndefined();
  });
});
