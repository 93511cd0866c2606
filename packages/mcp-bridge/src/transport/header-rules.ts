import { TransportConfigurationError } from './errors.js';

/** A `Set` that refuses `add`, `delete` and `clear` once built (an exported table stays as shipped). */
class ReadOnlySet<T> extends Set<T> {
  constructor(values: Iterable<T>) {
    super(values);
    Object.freeze(this);
  }

  override add(value: T): this {
    if (Object.isFrozen(this)) throw new TypeError('This set is read-only.');
    return super.add(value);
  }

  override delete(_value: T): boolean {
    throw new TypeError('This set is read-only.');
  }

  override clear(): void {
    throw new TypeError('This set is read-only.');
  }
}

/** Header names a caller may not set: framing, hop-by-hop, and the ones the transport owns. */
export const REFUSED_HEADER_NAMES: ReadonlySet<string> = new ReadOnlySet([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'upgrade',
  'host',
  'expect',
  'accept',
  'content-type',
  'accept-encoding',
  'content-encoding',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'authorization',
  'dpop',
  'cookie',
  'mcp-method',
  'mcp-name',
]);

/** Header names starting with this belong to the protocol layer (`x-mcp-header` mirroring). */
export const PARAM_HEADER_PREFIX = 'mcp-param-';

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** True when a header value contains a control character (CR, LF, NUL, ...). */
export function hasControlCharacter(value: string): boolean {
  return CONTROL.test(value);
}

/** Copies and validates fixed headers; names are lower-cased. */
export function copyFixedHeaders(
  headers: Readonly<Record<string, string>> | undefined,
): Readonly<Record<string, string>> {
  const copy: Record<string, string> = Object.create(null);
  if (headers === undefined) return Object.freeze(copy);
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw new TransportConfigurationError('headers must be an object of strings');
  }
  for (const [rawName, value] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    if (!TOKEN.test(name)) {
      throw new TransportConfigurationError('A header name is not a valid HTTP token');
    }
    if (REFUSED_HEADER_NAMES.has(name) || name.startsWith(PARAM_HEADER_PREFIX)) {
      throw new TransportConfigurationError(`The header ${name} is owned by the transport`, {
        details: { header: name },
      });
    }
    if (typeof value !== 'string' || hasControlCharacter(value)) {
      throw new TransportConfigurationError(`The value of header ${name} is not a safe string`, {
        details: { header: name },
      });
    }
    copy[name] = value;
  }
  return Object.freeze(copy);
}

/**
 * Checks the protocol layer's per-message headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`):
 * token names outside the transport-owned set, values without control characters. Returns a
 * lower-cased copy.
 * @throws {TransportConfigurationError} for a name or value that breaks the rules.
 */
export function checkMessageHeaders(
  headers: Readonly<Record<string, string>>,
): Record<string, string> {
  const copy: Record<string, string> = Object.create(null);
  for (const [rawName, value] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    const owned =
      name === 'mcp-method' || name === 'mcp-name' || name.startsWith(PARAM_HEADER_PREFIX);
    if (!TOKEN.test(name) || !owned) {
      throw new TransportConfigurationError('A per-message header name is not an MCP header', {
        details: { header: TOKEN.test(name) ? name : '(not a token)' },
      });
    }
    if (typeof value !== 'string' || hasControlCharacter(value)) {
      throw new TransportConfigurationError(`The value of header ${name} is not a safe string`, {
        details: { header: name },
      });
    }
    copy[name] = value;
  }
  return copy;
}
