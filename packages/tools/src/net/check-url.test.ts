import { describe, expect, it, vi } from 'vitest';
import { type AllowNonPublic, checkUrl, type UrlPolicy } from './check-url.js';
import { NetworkOptionsError } from './network-options-error.js';
import { NetworkPolicyError } from './network-policy-error.js';

const approveAll: AllowNonPublic = () => true;
const loopbackHttp: UrlPolicy = { allowHttpLoopback: true, allowNonPublic: approveAll };

type Denied = readonly [name: string, url: string, reason: string, policy?: UrlPolicy];

const denied: readonly Denied[] = [
  ['plain http to a public host', 'http://example.com/', 'scheme'],
  ['ftp', 'ftp://example.com/', 'scheme'],
  ['file URL', 'file:///etc/passwd', 'scheme'],
  ['javascript URL', 'javascript:alert(1)', 'scheme'],
  ['data URL', 'data:text/plain,hi', 'scheme'],
  ['gopher to redis', 'gopher://127.0.0.1:6379/_INFO', 'scheme'],
  ['ws', 'wss://example.com/', 'scheme'],
  ['scheme-relative', '//example.com/', 'invalid-url'],
  ['path only', '/admin', 'invalid-url'],
  ['empty', '', 'invalid-url'],
  ['over-long', `https://example.com/${'a'.repeat(9000)}`, 'invalid-url'],
  ['https without slashes', 'https:example.com', 'invalid-url'],
  ['port out of range', 'https://example.com:65536/', 'invalid-url'],
  ['space in host', 'https://exa mple.com/', 'invalid-url'],
  ['user and password', 'https://user:pass@example.com/', 'userinfo'],
  ['user only', 'https://user@example.com/', 'userinfo'],
  ['empty userinfo', 'https://@example.com/', 'userinfo'],
  ['host-looking userinfo', 'https://example.com@127.0.0.1/', 'userinfo'],
  ['encoded at in userinfo', 'https://a%40b@example.com/', 'userinfo'],
  ['non-default port', 'https://example.com:8443/', 'port'],
  ['port zero', 'https://example.com:0/', 'port'],
  ['explicit port 80 on https', 'https://example.com:80/', 'port'],
  ['loopback literal', 'https://127.0.0.1/', 'address'],
  ['unspecified literal', 'https://0.0.0.0/', 'address'],
  ['metadata literal', 'https://169.254.169.254/latest/meta-data', 'address'],
  ['private literal', 'https://10.0.0.1/', 'address'],
  ['hex IPv4', 'https://0x7f.1/', 'hostname'],
  ['decimal IPv4', 'https://2130706433/', 'hostname'],
  ['octal IPv4', 'https://0177.0.0.1/', 'hostname'],
  ['short IPv4', 'https://127.1/', 'hostname'],
  ['decimal public IPv4', 'https://134744072/', 'hostname'],
  ['percent-encoded IPv4', 'https://%31%32%37.0.0.1/', 'hostname'],
  ['full-width IPv4', 'https://１２７.０.０.１/', 'hostname'],
  ['IPv6 loopback', 'https://[::1]/', 'address'],
  ['IPv6 loopback long form', 'https://[0:0:0:0:0:0:0:1]/', 'address'],
  ['IPv6 unspecified', 'https://[::]/', 'address'],
  ['mapped loopback', 'https://[::ffff:127.0.0.1]/', 'address'],
  ['mapped loopback hex', 'https://[::ffff:7f00:1]/', 'address'],
  ['compatible loopback', 'https://[::127.0.0.1]/', 'address'],
  ['NAT64 metadata', 'https://[64:ff9b::a9fe:a9fe]/', 'address'],
  ['NAT64 private', 'https://[64:ff9b::10.0.0.1]/', 'address'],
  ['6to4 loopback', 'https://[2002:7f00:1::]/', 'address'],
  ['unique local', 'https://[fd00::1]/', 'address'],
  ['zone id', 'https://[fe80::1%25eth0]/', 'invalid-url'],
  ['trailing dot', 'https://example.com./', 'hostname'],
  ['single label', 'https://intranet/', 'hostname'],
  ['empty label', 'https://a..example.com/', 'hostname'],
  ['http to localhost without opt-in', 'http://localhost:8080/', 'scheme'],
  ['http to loopback without opt-in', 'http://127.0.0.1:8080/', 'scheme'],
  [
    'http to loopback not approved',
    'http://127.0.0.1:8080/',
    'address',
    { allowHttpLoopback: true },
  ],
  ['http to private even if approved', 'http://10.0.0.1/', 'scheme', loopbackHttp],
  ['http to a public host with opt-in', 'http://example.com/', 'scheme', loopbackHttp],
  ['http to a public literal with opt-in', 'http://8.8.8.8/', 'scheme', loopbackHttp],
  ['http to localhost-like name', 'http://localhost.example.com/', 'scheme', loopbackHttp],
  [
    'approval that throws',
    'https://127.0.0.1/',
    'address',
    {
      allowNonPublic: () => {
        throw new Error('boom');
      },
    },
  ],
  [
    'approval that is only truthy',
    'https://127.0.0.1/',
    'address',
    {
      allowNonPublic: (() => 'yes') as unknown as AllowNonPublic,
    },
  ],
];

type Allowed = readonly [name: string, url: string, href: string, policy?: UrlPolicy];

const allowed: readonly Allowed[] = [
  ['plain https', 'https://example.com/', 'https://example.com/'],
  ['explicit 443', 'https://example.com:443/x', 'https://example.com/x'],
  ['upper case is canonicalised', 'HTTPS://EXAMPLE.COM/A', 'https://example.com/A'],
  ['IDNA host', 'https://bücher.example/', 'https://xn--bcher-kva.example/'],
  ['public literal', 'https://8.8.8.8/', 'https://8.8.8.8/'],
  ['NAT64 public', 'https://[64:ff9b::808:808]/', 'https://[64:ff9b::808:808]/'],
  ['underscore label', 'https://_acme.example.com/', 'https://_acme.example.com/'],
  [
    'backslash ends the authority',
    'https://example.com\\@127.0.0.1/',
    'https://example.com/@127.0.0.1/',
  ],
  [
    'allowed extra port',
    'https://example.com:8443/',
    'https://example.com:8443/',
    { allowedPorts: [8443] },
  ],
  ['any port', 'https://example.com:9/', 'https://example.com:9/', { allowedPorts: 'any' }],
  ['approved loopback http', 'http://127.0.0.1:8080/a', 'http://127.0.0.1:8080/a', loopbackHttp],
  ['approved IPv6 loopback http', 'http://[::1]:8080/', 'http://[::1]:8080/', loopbackHttp],
  [
    'localhost http (checked when connecting)',
    'http://localhost:3000/',
    'http://localhost:3000/',
    loopbackHttp,
  ],
];

describe('checkUrl', () => {
  it.for(denied)('refuses %s', ([, url, reason, policy]) => {
    let caught: unknown;
    try {
      checkUrl(url, policy);
    } catch (error) {
      caught = error;
    }
    expect(NetworkPolicyError.isInstance(caught)).toBe(true);
    expect(caught).not.toBeInstanceOf(TypeError);
    expect((caught as NetworkPolicyError).reason).toBe(reason);
    expect((caught as NetworkPolicyError).code).toBe('NET_POLICY_DENIED');
  });

  it.for(allowed)('allows %s', ([, url, href, policy]) => {
    expect(checkUrl(url, policy).href).toBe(href);
  });

  it('returns a fresh URL object', () => {
    const input = new URL('https://example.com/');
    const output = checkUrl(input);
    expect(output).not.toBe(input);
    expect(output.href).toBe(input.href);
  });

  it('asks allowNonPublic only for refused addresses, with frozen copies', () => {
    const spy = vi.fn<AllowNonPublic>((target, address) => {
      expect(Object.isFrozen(target)).toBe(true);
      expect(Object.isFrozen(address)).toBe(true);
      expect(() => {
        (target as { hostname: string }).hostname = 'evil';
      }).toThrow(TypeError);
      return true;
    });
    checkUrl('https://8.8.8.8/', { allowNonPublic: spy });
    expect(spy).not.toHaveBeenCalled();
    checkUrl('https://[::ffff:7f00:1]/', { allowNonPublic: spy });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]?.[0]).toEqual({
      protocol: 'https:',
      hostname: '::ffff:7f00:1',
      port: 443,
    });
    expect(spy.mock.calls[0]?.[1]).toEqual({
      address: '::ffff:7f00:1',
      family: 6,
      range: 'ipv4-mapped',
      embedded: '127.0.0.1',
    });
  });

  it.each([
    ['allowHttpLoopback as a string', { allowHttpLoopback: 'yes' }],
    ['allowedPorts with a boolean', { allowedPorts: [true] }],
    ['allowedPorts with port 0', { allowedPorts: [0] }],
    ['allowedPorts as a number', { allowedPorts: 443 }],
    ['allowNonPublic as a boolean', { allowNonPublic: true }],
  ])('rejects an invalid policy: %s', (_name, policy) => {
    expect(() => checkUrl('https://example.com/', policy as unknown as UrlPolicy)).toThrow(
      NetworkOptionsError,
    );
  });
});

describe('checkUrl on a URL it has seen before', () => {
  it('judges the policy on every call, the address approval included', () => {
    const text = 'http://127.0.0.1:8080/mcp';
    const asked: string[] = [];
    const allowNonPublic = (_target: unknown, address: { readonly range: string }): boolean => {
      asked.push(address.range);
      return asked.length === 1;
    };
    expect(checkUrl(text, { allowHttpLoopback: true, allowNonPublic }).href).toBe(text);
    // Same text, the callback now says no: refused, not served from the cache.
    expect(() => checkUrl(text, { allowHttpLoopback: true, allowNonPublic })).toThrow(
      NetworkPolicyError,
    );
    expect(() => checkUrl(text, { allowNonPublic: () => true })).toThrow(/Only https/);
    expect(asked).toEqual(['loopback', 'loopback']);
    expect(() => checkUrl('https://example.com:8443/', {})).toThrow(/port is not allowed/);
    expect(checkUrl('https://example.com:8443/', { allowedPorts: [8443] }).port).toBe('8443');
  });

  it('returns a fresh URL each time, so a caller changing one changes nothing', () => {
    const first = checkUrl('https://example.com/a');
    first.pathname = '/changed';
    expect(checkUrl('https://example.com/a').href).toBe('https://example.com/a');
  });
});
