/**
 * The SDK's `ErrorCode.RequestTimeout`. The SDK's McpError is recognised by its name and this
 * code rather than by importing its class: this module is on `serve`'s path to answering
 * `initialize`, and the SDK 1.x types module builds hundreds of zod schemas when it loads.
 */
const REQUEST_TIMEOUT = -32001;

/** The message of an error and of its causes, as far as they are toolfence errors (safe text). */
export function safeFailureMessage(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== undefined; depth++) {
    const code = (current as { code?: unknown } | null)?.code;
    const branded =
      current instanceof Error &&
      typeof code === 'string' &&
      /^[A-Z][A-Z0-9_]+$/.test(code) &&
      typeof (current.constructor as { brand?: unknown }).brand === 'symbol';
    if (branded) {
      parts.push(`${(current as Error).message} (${code})`);
    } else if (
      current instanceof Error &&
      current.name === 'McpError' &&
      code === REQUEST_TIMEOUT
    ) {
      parts.push('no answer within --timeout-ms');
      break;
    } else if (typeof code === 'string' && /^E[A-Z0-9_]+$/.test(code)) {
      // A Node system error: its code is safe, its message may carry paths or addresses.
      parts.push(code);
      break;
    } else {
      break;
    }
    current = (current as Error).cause;
  }
  return parts.length === 0 ? 'unexpected failure' : parts.join(': ');
}
