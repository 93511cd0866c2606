/**
 * Our own snapshot of the IANA special-purpose address registries.
 *
 * Sources: https://www.iana.org/assignments/iana-ipv4-special-registry/ and
 * https://www.iana.org/assignments/iana-ipv6-special-registry/ (RFC 6890 as updated by RFC 8190),
 * as last updated by IANA on {@link ADDRESS_TABLE_DATE}, plus the multicast blocks and the
 * transition forms the registries do not list (IPv4-compatible `::/96`, SIIT `::ffff:0:0:0/96`,
 * site-local `fec0::/10`, everything outside `2000::/3`).
 *
 * To refresh: download the two registries as CSV (`.../iana-ipv4-special-registry-1.csv`,
 * `.../iana-ipv6-special-registry-1.csv`), compare every row (prefix, name, RFC, Globally
 * Reachable, termination date) against the entries below, add or change entries, update
 * {@link ADDRESS_TABLE_DATE} to the registries' "Last Updated" date, and run the tests (one pins
 * the date and entry count so a refresh is a deliberate change with a changeset).
 */

/** The IANA registries' "Last Updated" date this table was compiled from. */
export const ADDRESS_TABLE_DATE = '2025-10-09';

/** What the classifier does with an address inside an entry's prefix. */
export type AddressTableAction =
  /** Refused unless the host approves it. */
  | 'deny'
  /** Allowed (public unicast). */
  | 'allow'
  /** Judged by the IPv4 address carried in its last four bytes. */
  | 'embedded-ipv4';

/** One row of the table. */
export interface AddressTableEntry {
  /** CIDR prefix. */
  readonly prefix: string;
  /** Short kebab-case name, reported as `range`. */
  readonly range: string;
  /** The registry's name of the block (or ours for blocks outside the registry). */
  readonly name: string;
  /** The defining RFC(s). */
  readonly rfc: string;
  /**
   * The registry's "Globally Reachable" column: `null` when the registry gives none (N/A or a
   * terminated entry) or the block is not in the special-purpose registry.
   */
  readonly globallyReachable: boolean | null;
  /** Whether the entry is in the IANA special-purpose registry (false: added by us). */
  readonly inRegistry: boolean;
  /** What the classifier does. Globally reachable anycast and infrastructure blocks are denied too. */
  readonly action: AddressTableAction;
}

function entry(
  prefix: string,
  range: string,
  name: string,
  rfc: string,
  globallyReachable: boolean | null,
  action: AddressTableAction = 'deny',
  inRegistry = true,
): AddressTableEntry {
  return Object.freeze({ prefix, range, name, rfc, globallyReachable, inRegistry, action });
}

/** IPv4 special-purpose registry (26 entries) plus multicast. */
export const IPV4_ADDRESS_TABLE: readonly AddressTableEntry[] = Object.freeze([
  entry('0.0.0.0/8', 'this-network', '"This network"', 'RFC 791 §3.2', false),
  entry('0.0.0.0/32', 'this-host', '"This host on this network"', 'RFC 1122 §3.2.1.3', false),
  entry('10.0.0.0/8', 'private-use', 'Private-Use', 'RFC 1918', false),
  entry('100.64.0.0/10', 'shared-address-space', 'Shared Address Space', 'RFC 6598', false),
  entry('127.0.0.0/8', 'loopback', 'Loopback', 'RFC 1122 §3.2.1.3', false),
  entry('169.254.0.0/16', 'link-local', 'Link Local', 'RFC 3927', false),
  entry('172.16.0.0/12', 'private-use', 'Private-Use', 'RFC 1918', false),
  entry(
    '192.0.0.0/24',
    'ietf-protocol-assignments',
    'IETF Protocol Assignments',
    'RFC 6890 §2.1',
    false,
  ),
  entry(
    '192.0.0.0/29',
    'ipv4-service-continuity',
    'IPv4 Service Continuity Prefix',
    'RFC 7335',
    false,
  ),
  entry('192.0.0.8/32', 'ipv4-dummy', 'IPv4 dummy address', 'RFC 7600', false),
  entry('192.0.0.9/32', 'pcp-anycast', 'Port Control Protocol Anycast', 'RFC 7723', true),
  entry(
    '192.0.0.10/32',
    'turn-anycast',
    'Traversal Using Relays around NAT Anycast',
    'RFC 8155',
    true,
  ),
  entry(
    '192.0.0.170/32',
    'nat64-discovery',
    'NAT64/DNS64 Discovery',
    'RFC 8880, RFC 7050 §2.2',
    false,
  ),
  entry(
    '192.0.0.171/32',
    'nat64-discovery',
    'NAT64/DNS64 Discovery',
    'RFC 8880, RFC 7050 §2.2',
    false,
  ),
  entry('192.0.2.0/24', 'documentation', 'Documentation (TEST-NET-1)', 'RFC 5737', false),
  entry('192.31.196.0/24', 'as112', 'AS112-v4', 'RFC 7535', true),
  entry('192.52.193.0/24', 'amt', 'AMT', 'RFC 7450', true),
  entry(
    '192.88.99.0/24',
    'deprecated-6to4-relay',
    'Deprecated (6to4 Relay Anycast)',
    'RFC 7526',
    null,
  ),
  entry('192.88.99.2/32', '6a44-relay', '6a44-relay anycast address', 'RFC 6751', false),
  entry('192.168.0.0/16', 'private-use', 'Private-Use', 'RFC 1918', false),
  entry('192.175.48.0/24', 'as112', 'Direct Delegation AS112 Service', 'RFC 7534', true),
  entry('198.18.0.0/15', 'benchmarking', 'Benchmarking', 'RFC 2544', false),
  entry('198.51.100.0/24', 'documentation', 'Documentation (TEST-NET-2)', 'RFC 5737', false),
  entry('203.0.113.0/24', 'documentation', 'Documentation (TEST-NET-3)', 'RFC 5737', false),
  entry('240.0.0.0/4', 'reserved', 'Reserved', 'RFC 1112 §4', false),
  entry(
    '255.255.255.255/32',
    'limited-broadcast',
    'Limited Broadcast',
    'RFC 8190, RFC 919 §7',
    false,
  ),
  entry(
    '224.0.0.0/4',
    'multicast',
    'Multicast (IPv4 multicast registry)',
    'RFC 5771',
    null,
    'deny',
    false,
  ),
]);

/** IPv6 special-purpose registry (25 entries) plus the forms the registry does not list. */
export const IPV6_ADDRESS_TABLE: readonly AddressTableEntry[] = Object.freeze([
  entry('::1/128', 'loopback', 'Loopback Address', 'RFC 4291', false),
  entry('::/128', 'unspecified', 'Unspecified Address', 'RFC 4291', false),
  entry('::ffff:0:0/96', 'ipv4-mapped', 'IPv4-mapped Address', 'RFC 4291', false, 'embedded-ipv4'),
  entry('64:ff9b::/96', 'nat64', 'IPv4-IPv6 Translat.', 'RFC 6052', true, 'embedded-ipv4'),
  entry('64:ff9b:1::/48', 'nat64-local', 'IPv4-IPv6 Translat.', 'RFC 8215', false),
  entry('100::/64', 'discard-only', 'Discard-Only Address Block', 'RFC 6666', false),
  entry('100:0:0:1::/64', 'dummy-prefix', 'Dummy IPv6 Prefix', 'RFC 9780', false),
  entry('2001::/23', 'ietf-protocol-assignments', 'IETF Protocol Assignments', 'RFC 2928', false),
  entry('2001::/32', 'teredo', 'TEREDO', 'RFC 4380, RFC 8190', null),
  entry('2001:1::1/128', 'pcp-anycast', 'Port Control Protocol Anycast', 'RFC 7723', true),
  entry(
    '2001:1::2/128',
    'turn-anycast',
    'Traversal Using Relays around NAT Anycast',
    'RFC 8155',
    true,
  ),
  entry(
    '2001:1::3/128',
    'dns-sd-srp-anycast',
    'DNS-SD Service Registration Protocol Anycast',
    'RFC 9665',
    true,
  ),
  entry('2001:2::/48', 'benchmarking', 'Benchmarking', 'RFC 5180, Errata 1752', false),
  entry('2001:3::/32', 'amt', 'AMT', 'RFC 7450', true),
  entry('2001:4:112::/48', 'as112', 'AS112-v6', 'RFC 7535', true),
  entry('2001:10::/28', 'deprecated-orchid', 'Deprecated (previously ORCHID)', 'RFC 4843', null),
  entry('2001:20::/28', 'orchid-v2', 'ORCHIDv2', 'RFC 7343', true),
  entry(
    '2001:30::/28',
    'drone-remote-id',
    'Drone Remote ID Protocol Entity Tags (DETs) Prefix',
    'RFC 9374',
    true,
  ),
  entry('2001:db8::/32', 'documentation', 'Documentation', 'RFC 3849', false),
  entry('2002::/16', '6to4', '6to4', 'RFC 3056', null),
  entry('2620:4f:8000::/48', 'as112', 'Direct Delegation AS112 Service', 'RFC 7534', true),
  entry('3fff::/20', 'documentation', 'Documentation', 'RFC 9637', false),
  entry('5f00::/16', 'segment-routing', 'Segment Routing (SRv6) SIDs', 'RFC 9602', false),
  entry('fc00::/7', 'unique-local', 'Unique-Local', 'RFC 4193, RFC 8190', false),
  entry('fe80::/10', 'link-local', 'Link-Local Unicast', 'RFC 4291', false),
  entry(
    '::/96',
    'ipv4-compatible',
    'IPv4-compatible (deprecated)',
    'RFC 4291 §2.5.5.1',
    null,
    'deny',
    false,
  ),
  entry(
    '::ffff:0:0:0/96',
    'ipv4-translated',
    'IPv4-translated (SIIT)',
    'RFC 6145',
    null,
    'deny',
    false,
  ),
  entry('fec0::/10', 'site-local', 'Site-Local (deprecated)', 'RFC 3879', null, 'deny', false),
  entry(
    'ff00::/8',
    'multicast',
    'Multicast (IPv6 multicast registry)',
    'RFC 4291',
    null,
    'deny',
    false,
  ),
  entry('2000::/3', 'global-unicast', 'Global Unicast', 'RFC 4291', null, 'allow', false),
  entry('::/0', 'reserved', 'Reserved by IETF (outside 2000::/3)', 'RFC 4291', null, 'deny', false),
]);
