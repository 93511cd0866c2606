import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/** The kinds of input a server may ask for in the middle of a request. */
export type McpInputKind = 'elicitation' | 'sampling' | 'roots';

/** Why a request that asked for input ended. */
export type InputRequestFailureReason =
  /** The host gave no callback for this kind of input; the request was not repeated. */
  | 'no-handler'
  /** The user declined the elicitation; the request was not repeated. */
  | 'declined'
  /** The user cancelled the elicitation; the request was not repeated. */
  | 'cancelled'
  /** The server kept asking for input beyond `maxInputRounds`. */
  | 'too-many-rounds'
  /** The server asked the host for more input than `maxInputPrompts` allows in one call. */
  | 'too-many-prompts'
  /** The server's `input_required` result was malformed, or a callback answered with a non-object. */
  | 'invalid';

/**
 * A request whose result was `input_required` (MCP 2026-07-28 multi round-trip requests) ended
 * without a complete result. The server's answers so far were confirmed answers: nothing is
 * ambiguous, and the request is not repeated by the library.
 */
export class InputRequestError extends McpBridgeError {
  static override readonly code: string = 'PROTOCOL_INPUT_REQUEST_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/InputRequestError');
  /** Why the request ended. */
  readonly reason: InputRequestFailureReason;
  /** The kind of input involved, when one is known. */
  readonly kind: McpInputKind | undefined;

  /** Creates the error; `reason` and `kind` are also in `details`. */
  constructor(
    reason: InputRequestFailureReason,
    kind: McpInputKind | undefined,
    options: McpBridgeErrorOptions = {},
  ) {
    super(messageFor(reason, kind), {
      ...options,
      details: { reason, ...(kind === undefined ? {} : { kind }), ...options.details },
    });
    this.reason = reason;
    this.kind = kind;
  }
}

function messageFor(reason: InputRequestFailureReason, kind: McpInputKind | undefined): string {
  switch (reason) {
    case 'no-handler':
      return `The MCP server asked for ${kind ?? 'input'} and the client has no callback for it; give McpClient the matching option (elicitation, sampling or roots)`;
    case 'declined':
      return 'The user declined the input the MCP server asked for; the request was not completed';
    case 'cancelled':
      return 'The user cancelled the input the MCP server asked for; the request was not completed';
    case 'too-many-rounds':
      return 'The MCP server asked for input more times than maxInputRounds allows';
    case 'too-many-prompts':
      return 'The MCP server asked for more input in one call than maxInputPrompts allows; the request was not completed';
    default:
      return 'The MCP server asked for input in a malformed way, or a callback gave a malformed answer';
  }
}
