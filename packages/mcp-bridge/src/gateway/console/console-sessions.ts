import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '@toolfence/tools';

/** Default number of signed-in browser sessions held at once: 16 (the oldest is dropped). */
export const DEFAULT_CONSOLE_MAX_SESSIONS = 16;
/** Default time a console session may stay unused before it ends: 12 hours. */
export const DEFAULT_CONSOLE_SESSION_IDLE_MS: number = 12 * 60 * 60 * 1000;

/** One signed-in browser. */
export interface ConsoleSession {
  /** The cookie's value: 32 random bytes, never the sign-in token. */
  readonly id: string;
  /** The CSRF token every change of this session must carry. */
  readonly csrf: string;
  /** Who signed in with the identity provider (`gateway.httpAuth`); absent for a token sign-in. */
  readonly principal?: Principal | undefined;
  lastUsed: number;
}

/** Compares two secrets in constant time (for their length). */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The console's sign-in: the sign-in token (the gateway's bearer token, or a random one printed
 * at start) is exchanged for a session whose random id is the cookie; the token itself is never
 * stored in the browser. Sessions end after `idleMs` unused; at most `max` are held.
 */
export class ConsoleSessions {
  readonly #token: string | undefined;
  readonly #max: number;
  readonly #idleMs: number;
  readonly #sessions = new Map<string, ConsoleSession>();

  constructor(token: string | undefined, max: number, idleMs: number) {
    this.#token = token;
    this.#max = max;
    this.#idleMs = idleMs;
  }

  /** A new session when `given` is the sign-in token; undefined otherwise. */
  signIn(given: string, now: number = Date.now()): ConsoleSession | undefined {
    if (this.#token === undefined || !sameSecret(given, this.#token)) return undefined;
    return this.open(undefined, now);
  }

  /** A new session for `principal`, signed in with the identity provider (or a checked token). */
  open(principal: Principal | undefined, now: number = Date.now()): ConsoleSession {
    this.#sweep(now);
    while (this.#sessions.size >= this.#max) {
      const oldest = this.#sessions.keys().next().value as string;
      this.#sessions.delete(oldest);
    }
    const session: ConsoleSession = {
      id: randomBytes(32).toString('base64url'),
      csrf: randomBytes(32).toString('base64url'),
      ...(principal === undefined ? {} : { principal }),
      lastUsed: now,
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The live session with this cookie value, if any (its use is noted). */
  find(id: string | undefined, now: number = Date.now()): ConsoleSession | undefined {
    if (id === undefined) return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    if (now - session.lastUsed >= this.#idleMs) {
      this.#sessions.delete(id);
      return undefined;
    }
    session.lastUsed = now;
    // Most recently used last: the oldest is dropped first.
    this.#sessions.delete(id);
    this.#sessions.set(id, session);
    return session;
  }

  /** Ends a session. */
  signOut(id: string): void {
    this.#sessions.delete(id);
  }

  #sweep(now: number): void {
    for (const [id, session] of this.#sessions) {
      if (now - session.lastUsed >= this.#idleMs) this.#sessions.delete(id);
    }
  }
}
