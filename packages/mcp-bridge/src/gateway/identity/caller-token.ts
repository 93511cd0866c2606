/** The key of `AuthInfo.extra` the HTTP front carries the caller's validated token under. */
export const AUTH_INFO_CALLER_TOKEN_KEY = 'toolfenceCallerToken';

/**
 * The caller's validated access token, held for one use only: the subject of an RFC 8693 token
 * exchange. It prints, logs and serializes as `[caller token]`; nothing sends it to an upstream.
 */
export class CallerToken {
  readonly #value: string;
  /** The token's `exp`, in milliseconds since the epoch, if it has one. */
  readonly expiresAt: number | undefined;

  constructor(value: string, expiresAt: number | undefined) {
    this.#value = value;
    this.expiresAt = expiresAt;
    // util.inspect (console, loggers) shows the placeholder too.
    Object.defineProperty(this, Symbol.for('nodejs.util.inspect.custom'), {
      value: () => '[caller token]',
    });
    Object.freeze(this);
  }

  /** The token itself, for the exchange request's `subject_token`. */
  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[caller token]';
  }

  toString(): string {
    return '[caller token]';
  }
}

/** The caller's token the HTTP front put on a request (`ctx.http.authInfo.extra`), if any. */
export function callerTokenOfRequest(context: unknown): CallerToken | undefined {
  const extra = (context as { http?: { authInfo?: { extra?: Record<string, unknown> } } } | null)
    ?.http?.authInfo?.extra;
  const token = extra?.[AUTH_INFO_CALLER_TOKEN_KEY];
  return token instanceof CallerToken ? token : undefined;
}
