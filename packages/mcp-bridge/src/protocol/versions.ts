/** The first MCP revision without the `initialize` handshake (stateless, per-request `_meta`). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/**
 * The revisions `McpClient` speaks, newest first: the default of its `protocolVersions` option.
 * Every published MCP revision: `2026-07-28` is modern (no handshake, no session); the others use
 * the same `initialize` handshake (servers still on `2024-11-05` include the GitHub, PostgreSQL
 * and Slack reference servers).
 */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = Object.freeze([
  MODERN_PROTOCOL_VERSION,
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
]);

const MODERN: ReadonlySet<string> = new Set([MODERN_PROTOCOL_VERSION]);
const VERSION_SHAPE = /^\d{4}-\d{2}-\d{2}$/;

/** True for a revision without the `initialize` handshake (2026-07-28 and later ones we know). */
export function isModernVersion(version: string): boolean {
  return MODERN.has(version);
}

/**
 * True for a revision a server may list that belongs to the modern era: 2026-07-28 or any later
 * date (a newer modern revision this client does not know yet).
 */
export function isModernEra(version: string): boolean {
  return isVersionShaped(version) && version >= MODERN_PROTOCOL_VERSION;
}

/** True for a string shaped like an MCP revision (`YYYY-MM-DD`); safe to log. */
export function isVersionShaped(value: unknown): value is string {
  return typeof value === 'string' && VERSION_SHAPE.test(value);
}

/** Checks a `protocolVersions` option; returns a frozen copy, newest preference first. */
export function resolveProtocolVersions(
  value: unknown,
  invalid: (message: string) => Error,
): readonly string[] {
  if (value === undefined) return SUPPORTED_PROTOCOL_VERSIONS;
  if (!Array.isArray(value) || value.length === 0) {
    throw invalid(
      `protocolVersions must be a non-empty array of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
    );
  }
  const seen = new Set<string>();
  for (const version of value) {
    if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      throw invalid(
        `protocolVersions may only name ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}; got an unknown entry`,
      );
    }
    if (seen.has(version)) throw invalid('protocolVersions names a version twice');
    seen.add(version);
  }
  return Object.freeze([...value] as string[]);
}

/** The modern revisions in `versions`, in preference order. */
export function modernVersions(versions: readonly string[]): readonly string[] {
  return versions.filter(isModernVersion);
}

/** The handshake revisions in `versions`, in preference order. */
export function legacyVersions(versions: readonly string[]): readonly string[] {
  return versions.filter((version) => !isModernVersion(version));
}
