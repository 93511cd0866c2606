import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './versions.js';

// What the user can do: add a version both sides speak (only ever one the option accepts), or
// nothing on this side when the server speaks only revisions this client does not know.
function advice(offered: readonly string[], supported: readonly string[]): string {
  const addable = supported.filter(
    (version) => SUPPORTED_PROTOCOL_VERSIONS.includes(version) && !offered.includes(version),
  );
  if (addable.length > 0) return `add ${addable.join(' or ')} to protocolVersions`;
  if (supported.length === 0) {
    return `the server named no version; this client speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`;
  }
  return `this client speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}, none of which the server supports; upgrade the server or this package`;
}

/**
 * The server and this client share no protocol revision: a modern server listed only revisions
 * the client does not offer (after one corrective retry), or a legacy server answered
 * `initialize` with a revision outside `protocolVersions`. Nothing but the probe was sent.
 */
export class UnsupportedProtocolVersionError extends McpBridgeError {
  static override readonly code: string = 'PROTOCOL_VERSION_UNSUPPORTED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/UnsupportedProtocolVersionError',
  );
  /** The revisions this client offered, in preference order. */
  readonly offered: readonly string[];
  /** The revisions the server said it supports (only `YYYY-MM-DD`-shaped entries are kept). */
  readonly supported: readonly string[];

  /** Creates the error; both lists are also in `details`. */
  constructor(
    offered: readonly string[],
    supported: readonly string[],
    options: McpBridgeErrorOptions = {},
  ) {
    super(
      `The MCP server supports none of the protocol versions this client offers (offered ${offered.join(', ')}; the server supports ${supported.length === 0 ? 'no listed version' : supported.join(', ')}); ${advice(offered, supported)}`,
      {
        ...options,
        details: { offered: [...offered], supported: [...supported], ...options.details },
      },
    );
    this.offered = Object.freeze([...offered]);
    this.supported = Object.freeze([...supported]);
  }
}
