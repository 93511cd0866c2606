import { AttachmentOptionError } from './errors.js';
import { MAX_TOTAL_BYTES } from './hook-script.js';

/**
 * The MCP TypeScript SDK 1.x `StdioServerTransport`'s default read buffer (its
 * `STDIO_DEFAULT_MAX_BUFFER_SIZE`): 10 MiB. A message larger than that closes the connection, and
 * the model sees only "MCP error -32000: Connection closed".
 */
export const SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE: number = 10 * 1024 * 1024;

/**
 * The MCP TypeScript SDK 1.x Streamable HTTP server transport's default request body limit (its
 * `DEFAULT_MAX_REQUEST_BODY_SIZE`, option `maxRequestBodySize`): 4 MiB. The SSE transport's
 * fixed limit is the same size.
 */
export const SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE: number = 4 * 1024 * 1024;

/**
 * Default allowance for everything in a `tools/call` message that is not attachment bytes: the
 * JSON-RPC envelope, the tool name, the other arguments, `_meta`: 64 KiB.
 */
export const DEFAULT_OTHER_ARGUMENT_BYTES: number = 64 * 1024;

/**
 * Allowance per attachment for its JSON around the base64: keys, the `data:<mime>;base64,`
 * prefix, `filename` and `mime_type` (255 characters each, JSON-escaped), base64 padding: 4 KiB.
 */
export const ATTACHMENT_ITEM_OVERHEAD_BYTES: number = 4096;

/** Default number of attachments one call may carry, for the per-item allowance: 10. */
export const DEFAULT_MAX_ATTACHMENTS: number = 10;

/**
 * Slack a stdio read buffer needs beyond one message: the SDK appends whole pipe chunks (64 KiB)
 * before it looks for the newline, so the start of the next message can sit in the buffer too.
 */
export const STDIO_READ_CHUNK_BYTES: number = 64 * 1024;

/** Options of {@link attachmentTransportLimits} and {@link attachmentBudgetForTransport}. */
export interface AttachmentTransportOptions {
  /** Attachments one call may carry. Default {@link DEFAULT_MAX_ATTACHMENTS} (10). */
  readonly maxAttachments?: number;
  /** Bytes of the message that are not attachments. Default {@link DEFAULT_OTHER_ARGUMENT_BYTES}. */
  readonly otherArgumentBytes?: number;
}

/** Options of {@link attachmentTransportLimits}. */
export interface AttachmentTransportLimitsOptions extends AttachmentTransportOptions {
  /**
   * Attachment bytes one call may carry, all files together (the toolkit's budget, the value to
   * give the hook). Default {@link MAX_TOTAL_BYTES} (25 MiB, the hook's default per-call budget).
   */
  readonly attachmentBytes?: number;
}

/** What a toolkit server's transport must accept for a given attachment budget. */
export interface AttachmentTransportLimits {
  /** The attachment budget these limits are for, in bytes of file content. */
  readonly attachmentBytes: number;
  /** Those bytes as base64 text: `4 * ceil(attachmentBytes / 3)`. */
  readonly base64Bytes: number;
  /** The largest `tools/call` JSON-RPC message such a call produces, in bytes. */
  readonly messageBytes: number;
  /**
   * `maxBufferSize` for SDK 1.x `new StdioServerTransport(stdin, stdout, { maxBufferSize })`:
   * the message, its newline and one read chunk of slack.
   */
  readonly stdioMaxBufferSize: number;
  /**
   * `maxRequestBodySize` for SDK 1.x `new StreamableHTTPServerTransport({ maxRequestBodySize })`,
   * or the body limit of whatever HTTP server sits in front: the whole message.
   */
  readonly httpMaxRequestBodySize: number;
}

const LIMITS_KEYS = new Set(['attachmentBytes', 'maxAttachments', 'otherArgumentBytes']);
const BUDGET_KEYS = new Set(['maxAttachments', 'otherArgumentBytes']);

function wholeNumber(value: unknown, option: string, minimum: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw new AttachmentOptionError(`${option} must be a whole number of at least ${minimum}`, {
      details: { option },
    });
  }
  return value;
}

function readOptions(
  options: unknown,
  allowed: ReadonlySet<string>,
): { maxAttachments: number; otherArgumentBytes: number; record: Record<string, unknown> } {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new AttachmentOptionError('options must be an object', {
      details: { option: 'options' },
    });
  }
  const record = options as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!allowed.has(key)) {
      throw new AttachmentOptionError(
        `unknown option "${key.slice(0, 40)}"; accepted: ${[...allowed].join(', ')}`,
        { details: { option: key.slice(0, 40) } },
      );
    }
  }
  return {
    maxAttachments: wholeNumber(
      record.maxAttachments ?? DEFAULT_MAX_ATTACHMENTS,
      'maxAttachments',
      1,
    ),
    otherArgumentBytes: wholeNumber(
      record.otherArgumentBytes ?? DEFAULT_OTHER_ARGUMENT_BYTES,
      'otherArgumentBytes',
      0,
    ),
    record,
  };
}

/**
 * The transport limits a toolkit server needs so that a call carrying `attachmentBytes` of files
 * reaches it: base64 (4 bytes per 3) plus the JSON around it. Give `stdioMaxBufferSize` to the
 * SDK's stdio transport and `httpMaxRequestBodySize` to its HTTP transport, and the same
 * `attachmentBytes` to the hook as the toolkit's budget (`install --budget <server>=<bytes>`),
 * so a file over the budget is denied in the client with a reason instead of dropping the
 * connection.
 *
 * @throws {AttachmentOptionError} `ATTACHMENT_OPTION_INVALID` for a bad or unknown option.
 */
export function attachmentTransportLimits(
  options: AttachmentTransportLimitsOptions = {},
): AttachmentTransportLimits {
  const { maxAttachments, otherArgumentBytes, record } = readOptions(options, LIMITS_KEYS);
  const attachmentBytes = wholeNumber(
    record.attachmentBytes ?? MAX_TOTAL_BYTES,
    'attachmentBytes',
    0,
  );
  const base64Bytes = 4 * Math.ceil(attachmentBytes / 3);
  const messageBytes =
    base64Bytes + maxAttachments * ATTACHMENT_ITEM_OVERHEAD_BYTES + otherArgumentBytes;
  return Object.freeze({
    attachmentBytes,
    base64Bytes,
    messageBytes,
    stdioMaxBufferSize: messageBytes + 1 + STDIO_READ_CHUNK_BYTES,
    httpMaxRequestBodySize: messageBytes,
  });
}

/**
 * The reverse: the largest attachment budget a transport limit admits. With the SDK defaults it
 * is 7.38 MiB over stdio ({@link SDK_STDIO_DEFAULT_MAX_BUFFER_SIZE}) and 2.92 MiB over HTTP
 * ({@link SDK_HTTP_DEFAULT_MAX_REQUEST_BODY_SIZE}); 0 when the limit is too small for any file.
 *
 * @param limitBytes the transport's limit: a stdio `maxBufferSize` or an HTTP body limit.
 * @param transport which kind of limit `limitBytes` is (stdio needs a read chunk of slack).
 * @throws {AttachmentOptionError} `ATTACHMENT_OPTION_INVALID` for a bad or unknown option.
 */
export function attachmentBudgetForTransport(
  limitBytes: number,
  transport: 'stdio' | 'http',
  options: AttachmentTransportOptions = {},
): number {
  const limit = wholeNumber(limitBytes, 'limitBytes', 1);
  if (transport !== 'stdio' && transport !== 'http') {
    throw new AttachmentOptionError('transport must be "stdio" or "http"', {
      details: { option: 'transport' },
    });
  }
  const { maxAttachments, otherArgumentBytes } = readOptions(options, BUDGET_KEYS);
  const slack = transport === 'stdio' ? 1 + STDIO_READ_CHUNK_BYTES : 0;
  const base64 =
    limit - slack - otherArgumentBytes - maxAttachments * ATTACHMENT_ITEM_OVERHEAD_BYTES;
  return base64 <= 0 ? 0 : Math.floor(base64 / 4) * 3;
}
