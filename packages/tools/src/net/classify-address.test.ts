import ipaddr from 'ipaddr.js';
import { describe, expect, it, vi } from 'vitest';
import { ADDRESS_TABLE_DATE, IPV4_ADDRESS_TABLE, IPV6_ADDRESS_TABLE } from './address-table.js';
import { classifyAddress, isLoopbackAddress } from './classify-address.js';

type Row = readonly [
  name: string,
  address: string,
  allowed: boolean,
  range?: string,
  embedded?: string,
];

const rows: readonly Row[] = [
  // public unicast
  ['public IPv4', '8.8.8.8', true],
  ['public IPv4 (one.one)', '1.1.1.1', true],
  ['public IPv6', '2606:4700:4700::1111', true, 'global-unicast'],
  ['public IPv6 upper case', '2001:4860:4860::8888'.toUpperCase(), true, 'global-unicast'],
  ['NAT64 with a public embedded IPv4', '64:ff9b::808:808', true, 'nat64', '8.8.8.8'],
  ['NAT64 dotted with a public embedded IPv4', '64:ff9b::8.8.8.8', true, 'nat64', '8.8.8.8'],
  ['IPv4-mapped public address', '::ffff:8.8.8.8', true, 'ipv4-mapped', '8.8.8.8'],
  // boundaries just outside private blocks
  ['just below 10/8', '9.255.255.255', true],
  ['just above 10/8', '11.0.0.0', true],
  ['just below 172.16/12', '172.15.255.255', true],
  ['just above 172.16/12', '172.32.0.0', true],
  ['just below 100.64/10', '100.63.255.255', true],
  ['just above 100.64/10', '100.128.0.0', true],
  ['just above 198.18/15', '198.20.0.0', true],
  ['just below 224/4', '223.255.255.255', true],
  // IPv4 special-purpose
  ['loopback', '127.0.0.1', false, 'loopback'],
  ['loopback end of block', '127.255.255.254', false, 'loopback'],
  ['this host', '0.0.0.0', false, 'this-host'],
  ['this network', '0.1.2.3', false, 'this-network'],
  ['private 10/8', '10.0.0.1', false, 'private-use'],
  ['private 172.16/12 start', '172.16.0.1', false, 'private-use'],
  ['private 172.16/12 end', '172.31.255.255', false, 'private-use'],
  ['private 192.168/16', '192.168.1.1', false, 'private-use'],
  ['carrier-grade NAT', '100.64.0.1', false, 'shared-address-space'],
  ['Alibaba metadata', '100.100.100.200', false, 'shared-address-space'],
  ['cloud metadata', '169.254.169.254', false, 'link-local'],
  ['IETF protocol assignments', '192.0.0.100', false, 'ietf-protocol-assignments'],
  ['service continuity', '192.0.0.1', false, 'ipv4-service-continuity'],
  ['PCP anycast (globally reachable, denied by choice)', '192.0.0.9', false, 'pcp-anycast'],
  ['TURN anycast', '192.0.0.10', false, 'turn-anycast'],
  ['NAT64 discovery', '192.0.0.170', false, 'nat64-discovery'],
  ['TEST-NET-1', '192.0.2.1', false, 'documentation'],
  ['TEST-NET-2', '198.51.100.7', false, 'documentation'],
  ['TEST-NET-3', '203.0.113.9', false, 'documentation'],
  ['AS112', '192.31.196.1', false, 'as112'],
  ['AMT', '192.52.193.1', false, 'amt'],
  ['deprecated 6to4 relay', '192.88.99.1', false, 'deprecated-6to4-relay'],
  ['6a44 relay (longest prefix wins)', '192.88.99.2', false, '6a44-relay'],
  ['benchmarking', '198.18.0.1', false, 'benchmarking'],
  ['multicast', '224.0.0.1', false, 'multicast'],
  ['SSDP multicast', '239.255.255.250', false, 'multicast'],
  ['reserved 240/4', '240.0.0.1', false, 'reserved'],
  ['limited broadcast', '255.255.255.255', false, 'limited-broadcast'],
  // legacy IPv4 spellings are read as the URL parser reads them
  ['hex short form', '0x7f.1', false, 'loopback'],
  ['decimal integer', '2130706433', false, 'loopback'],
  ['octal first part', '0177.0.0.1', false, 'loopback'],
  ['short form', '127.1', false, 'loopback'],
  ['octal integer', '017700000001', false, 'loopback'],
  ['hex integer', '0x7f000001', false, 'loopback'],
  ['hex metadata', '0xa9.0xfe.0xa9.0xfe', false, 'link-local'],
  // IPv6 special-purpose and transition forms
  ['IPv6 loopback', '::1', false, 'loopback'],
  ['IPv6 loopback long form', '0:0:0:0:0:0:0:1', false, 'loopback'],
  ['IPv6 loopback zero-padded', '0000::1', false, 'loopback'],
  ['IPv6 loopback in brackets', '[::1]', false, 'loopback'],
  ['IPv6 unspecified', '::', false, 'unspecified'],
  ['mapped loopback dotted', '::ffff:127.0.0.1', false, 'ipv4-mapped', '127.0.0.1'],
  ['mapped loopback hex', '::ffff:7f00:1', false, 'ipv4-mapped', '127.0.0.1'],
  ['mapped loopback upper case', '::FFFF:127.0.0.1', false, 'ipv4-mapped', '127.0.0.1'],
  ['mapped loopback long form', '0:0:0:0:0:ffff:127.0.0.1', false, 'ipv4-mapped', '127.0.0.1'],
  ['mapped metadata', '::ffff:a9fe:a9fe', false, 'ipv4-mapped', '169.254.169.254'],
  ['mapped private', '::ffff:10.0.0.1', false, 'ipv4-mapped', '10.0.0.1'],
  ['compatible loopback (parser differential)', '::127.0.0.1', false, 'ipv4-compatible'],
  ['compatible loopback hex', '::7f00:1', false, 'ipv4-compatible'],
  ['compatible public is still refused', '::8.8.8.8', false, 'ipv4-compatible'],
  ['compatible metadata', '::a9fe:a9fe', false, 'ipv4-compatible'],
  ['NAT64 loopback', '64:ff9b::7f00:1', false, 'nat64', '127.0.0.1'],
  ['NAT64 metadata', '64:ff9b::a9fe:a9fe', false, 'nat64', '169.254.169.254'],
  ['NAT64 private dotted', '64:ff9b::10.0.0.1', false, 'nat64', '10.0.0.1'],
  ['NAT64 local-use prefix', '64:ff9b:1::808:808', false, 'nat64-local'],
  ['SIIT translated', '::ffff:0:7f00:1', false, 'ipv4-translated'],
  ['6to4 of loopback', '2002:7f00:1::', false, '6to4'],
  ['6to4 of a public address', '2002:808:808::1', false, '6to4'],
  ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2', false, 'teredo'],
  ['IETF protocol assignments v6', '2001:5::1', false, 'ietf-protocol-assignments'],
  ['PCP anycast v6', '2001:1::1', false, 'pcp-anycast'],
  ['DNS-SD SRP anycast', '2001:1::3', false, 'dns-sd-srp-anycast'],
  ['benchmarking v6', '2001:2::1', false, 'benchmarking'],
  ['ORCHIDv2', '2001:20::1', false, 'orchid-v2'],
  ['deprecated ORCHID', '2001:10::1', false, 'deprecated-orchid'],
  ['documentation 2001:db8', '2001:db8::1', false, 'documentation'],
  ['documentation 3fff', '3fff::1', false, 'documentation'],
  ['AS112 direct delegation v6', '2620:4f:8000::1', false, 'as112'],
  ['SRv6 SIDs', '5f00::1', false, 'segment-routing'],
  ['unique local', 'fc00::1', false, 'unique-local'],
  ['AWS IPv6 metadata', 'fd00:ec2::254', false, 'unique-local'],
  ['link-local v6', 'fe80::1', false, 'link-local'],
  ['site-local (deprecated)', 'fec0::1', false, 'site-local'],
  ['multicast v6', 'ff02::1', false, 'multicast'],
  ['discard-only', '100::1', false, 'discard-only'],
  ['dummy prefix (ipaddr.js calls it unicast)', '100:0:0:1::1', false, 'dummy-prefix'],
  ['outside 2000::/3 (low)', '1::1', false, 'reserved'],
  ['outside 2000::/3 (4000::/3)', '4000::1', false, 'reserved'],
  ['outside 2000::/3 (e000::)', 'e000::1', false, 'reserved'],
  // unusable input
  ['zone id', 'fe80::1%eth0', false, 'zone-id'],
  ['zone id on loopback', '::1%lo', false, 'zone-id'],
  ['host name', 'localhost', false, 'invalid'],
  ['empty', '', false, 'invalid'],
  ['five parts', '1.2.3.4.5', false, 'invalid'],
  ['octet over 255', '256.0.0.1', false, 'invalid'],
  ['domain name', 'example.com', false, 'invalid'],
  ['malformed IPv6', '1:::2', false, 'invalid'],
  ['trailing dot IPv4', '127.0.0.1.', false, 'loopback'],
];

describe('classifyAddress', () => {
  it.for(rows)('%s: %s', ([, address, allowed, range, embedded]) => {
    const verdict = classifyAddress(address);
    expect(verdict.allowed).toBe(allowed);
    expect(verdict.range).toBe(range);
    expect(verdict.embedded).toBe(embedded);
  });

  it('refuses what ipaddr.js range() calls unicast but the registry does not', () => {
    for (const address of ['100:0:0:1::1', '::7f00:1', '4000::1']) {
      expect(ipaddr.parse(address).range()).toBe('unicast');
      expect(classifyAddress(address).allowed).toBe(false);
    }
  });

  it('never throws on hostile input', () => {
    for (const value of [undefined, null, 42, {}, 'x'.repeat(10_000), '[', ']', '[]', '::%']) {
      expect(classifyAddress(value as string).allowed).toBe(false);
    }
  });

  it('classifies the first and last address of every denied table entry as denied', () => {
    for (const row of [...IPV4_ADDRESS_TABLE, ...IPV6_ADDRESS_TABLE]) {
      if (row.action !== 'deny') continue;
      const [first, bits] = ipaddr.parseCIDR(row.prefix);
      expect(classifyAddress(first.toString()).allowed, row.prefix).toBe(false);
      const bytes = first.toByteArray();
      for (let bit = bits; bit < bytes.length * 8; bit += 1) {
        const index = Math.floor(bit / 8);
        bytes[index] = (bytes[index] ?? 0) | (0x80 >> (bit % 8));
      }
      const last = ipaddr.fromByteArray(bytes).toString();
      expect(classifyAddress(last).allowed, `${row.prefix} last ${last}`).toBe(false);
    }
  });

  it('pins the snapshot date and size, so a refresh is a deliberate change', () => {
    expect(ADDRESS_TABLE_DATE).toBe('2025-10-09');
    expect(IPV4_ADDRESS_TABLE.filter((row) => row.inRegistry)).toHaveLength(26);
    expect(IPV6_ADDRESS_TABLE.filter((row) => row.inRegistry)).toHaveLength(25);
    expect(Object.isFrozen(IPV4_ADDRESS_TABLE)).toBe(true);
    expect(Object.isFrozen(IPV6_ADDRESS_TABLE[0])).toBe(true);
  });

  it.each([
    ['127.0.0.1', true],
    ['127.9.9.9', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['::127.0.0.1', false],
    ['10.0.0.1', false],
    ['localhost', false],
  ] as const)('isLoopbackAddress(%s) is %s', (address, expected) => {
    expect(isLoopbackAddress(address)).toBe(expected);
  });
});

describe('the address table', () => {
  // Issue 41: `toolfence-mcp serve` loads the guard with its upstream client and, with only stdio
  // upstreams, never checks an address; the table is parsed by the first classification.
  it('is parsed on the first classification, not when the module loads', async () => {
    const parse = ipaddr.parseCIDR;
    let parsed = 0;
    ipaddr.parseCIDR = ((...parameters: Parameters<typeof parse>) => {
      parsed += 1;
      return parse(...parameters);
    }) as typeof parse;
    try {
      vi.resetModules();
      const fresh = await import('./classify-address.js');
      expect(parsed).toBe(0);
      expect(fresh.classifyAddress('10.0.0.1')).toEqual({ allowed: false, range: 'private-use' });
      expect(parsed).toBe(IPV4_ADDRESS_TABLE.length + IPV6_ADDRESS_TABLE.length);
      expect(fresh.classifyAddress('::1').allowed).toBe(false);
      expect(parsed).toBe(IPV4_ADDRESS_TABLE.length + IPV6_ADDRESS_TABLE.length);
    } finally {
      ipaddr.parseCIDR = parse;
    }
  });
});
