import ipaddr from 'ipaddr.js';
import {
  type AddressTableAction,
  type AddressTableEntry,
  IPV4_ADDRESS_TABLE,
  IPV6_ADDRESS_TABLE,
} from './address-table.js';

/** The verdict on one IP address. */
export interface AddressClassification {
  /** Whether the address may be connected to without the host's approval. */
  readonly allowed: boolean;
  /** The table entry that matched (kebab-case), or `invalid` / `zone-id` for unusable input. */
  readonly range?: string;
  /** For IPv4-mapped and NAT64 addresses: the embedded IPv4 address that was judged. */
  readonly embedded?: string;
}

interface CompiledEntry {
  readonly bytes: readonly number[];
  readonly bits: number;
  readonly range: string;
  readonly action: AddressTableAction;
}

function compile(table: readonly AddressTableEntry[]): readonly CompiledEntry[] {
  return table
    .map((row) => {
      const [address, bits] = ipaddr.parseCIDR(row.prefix);
      return { bytes: address.toByteArray(), bits, range: row.range, action: row.action };
    })
    .sort((left, right) => right.bits - left.bits);
}

/**
 * The two tables, parsed on the first classification rather than when the module loads: a
 * program that imports the guard and never checks an address (`toolfence-mcp serve` with only
 * stdio upstreams) does not pay for parsing every prefix.
 */
interface CompiledTables {
  readonly ipv4: readonly CompiledEntry[];
  readonly ipv6: readonly CompiledEntry[];
}
let compiled: CompiledTables | undefined;
function tables(): CompiledTables {
  compiled ??= { ipv4: compile(IPV4_ADDRESS_TABLE), ipv6: compile(IPV6_ADDRESS_TABLE) };
  return compiled;
}

function matches(bytes: readonly number[], candidate: CompiledEntry): boolean {
  let remaining = candidate.bits;
  for (let index = 0; remaining > 0; index += 1) {
    const mask = remaining >= 8 ? 0xff : (0xff << (8 - remaining)) & 0xff;
    if (((bytes[index] ?? 0) & mask) !== ((candidate.bytes[index] ?? 0) & mask)) return false;
    remaining -= 8;
  }
  return true;
}

function lookup(
  bytes: readonly number[],
  table: readonly CompiledEntry[],
): CompiledEntry | undefined {
  for (const candidate of table) if (matches(bytes, candidate)) return candidate;
  return undefined;
}

const INVALID: AddressClassification = Object.freeze({ allowed: false, range: 'invalid' });

/**
 * Parses an IP literal the way the WHATWG URL host parser (and so `fetch`) reads it and returns
 * its bytes: 4 for IPv4, 16 for IPv6. Legacy IPv4 forms (`0x7f.1`, `2130706433`, `0177.0.0.1`)
 * are accepted and canonicalised, because the URL parser and `inet_aton` accept them too.
 * Returns `undefined` for anything that is not an IP literal, and `'zone-id'` for a scoped one.
 */
export function parseAddressBytes(address: string): readonly number[] | 'zone-id' | undefined {
  if (typeof address !== 'string' || address.length === 0 || address.length > 100) {
    return undefined;
  }
  let text = address;
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (text.includes(':')) {
    if (text.includes('%')) return 'zone-id';
    let canonical: string;
    try {
      // The URL host parser is the reference: ipaddr.js reads `::127.0.0.1` as IPv4-mapped
      // while URL (and the kernel) mean IPv4-compatible `::7f00:1`.
      canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
    } catch {
      return undefined;
    }
    if (!ipaddr.IPv6.isValid(canonical)) return undefined;
    return ipaddr.IPv6.parse(canonical).toByteArray();
  }
  if (DOTTED_QUAD.test(text)) return dottedQuadBytes(text);
  if (!/^[0-9a-fA-FxX.]+$/.test(text)) return undefined;
  let hostname: string;
  try {
    hostname = new URL(`http://${text}/`).hostname;
  } catch {
    return undefined;
  }
  return DOTTED_QUAD.test(hostname) ? dottedQuadBytes(hostname) : undefined;
}

/** Canonical dotted-decimal IPv4 (what the URL parser serialises): 0-255, no leading zeros. */
export const DOTTED_QUAD: RegExp =
  /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function dottedQuadBytes(text: string): readonly number[] {
  return text.split('.').map(Number);
}

function classifyIpv4(bytes: readonly number[]): AddressClassification {
  const hit = lookup(bytes, tables().ipv4);
  if (hit === undefined) return { allowed: true };
  return { allowed: hit.action === 'allow', range: hit.range };
}

/**
 * Classifies an IPv4 or IPv6 literal against our dated snapshot of the IANA special-purpose
 * registries (longest prefix first). Public unicast is allowed; every special-purpose block
 * is refused, including the globally reachable anycast and infrastructure blocks. IPv4-mapped
 * (`::ffff:0:0/96`) and NAT64 (`64:ff9b::/96`) addresses are judged by their embedded IPv4;
 * IPv4-compatible, `64:ff9b:1::/48`, 6to4, Teredo, multicast, reserved and everything outside
 * `2000::/3` are refused. IPv6 text is canonicalised through the WHATWG URL host parser first;
 * zone ids and non-literals are refused (`range` `zone-id` / `invalid`).
 */
export function classifyAddress(address: string): AddressClassification {
  const bytes = parseAddressBytes(address);
  if (bytes === undefined) return INVALID;
  if (bytes === 'zone-id') return { allowed: false, range: 'zone-id' };
  if (bytes.length === 4) return classifyIpv4(bytes);
  const hit = lookup(bytes, tables().ipv6);
  if (hit === undefined) return INVALID;
  if (hit.action === 'embedded-ipv4') {
    const carried = bytes.slice(12, 16);
    const embedded = carried.join('.');
    const inner = classifyIpv4(carried);
    return { allowed: inner.allowed, range: hit.range, embedded };
  }
  return { allowed: hit.action === 'allow', range: hit.range };
}

/** True when the address is loopback (`127.0.0.0/8`, `::1`, or IPv4-mapped loopback). */
export function isLoopbackAddress(address: string): boolean {
  const bytes = parseAddressBytes(address);
  if (bytes === undefined || bytes === 'zone-id') return false;
  if (bytes.length === 4) return bytes[0] === 127;
  const hit = lookup(bytes, tables().ipv6);
  if (hit?.range === 'loopback') return true;
  return hit?.range === 'ipv4-mapped' && bytes[12] === 127;
}
