import { randomUUID } from 'node:crypto';
import type { ApprovalInbox, InboxAnswer, InboxAsk } from '../approval-inbox.js';
import { escapeForPrompt } from '../approval-prompt.js';
import { digestOf } from '../canonical-json.js';

/** Default number of asks the console holds waiting for a person: 100. */
export const DEFAULT_CONSOLE_MAX_PENDING = 100;

/** One ask as the console lists it. */
export interface ConsoleAsk extends InboxAsk {
  /** Random id: the approve and deny buttons name it. */
  readonly id: string;
  /** When it arrived (ms since the epoch). */
  readonly time: number;
  /**
   * `console`: the client cannot ask its user, so a person answers here; `client`: the client is
   * asking its user, listed here read-only.
   */
  readonly channel: 'console' | 'client';
  /** The arguments as shown: pretty-printed JSON, control and invisible characters escaped. */
  readonly argumentsText: string;
  /** `sha256:` digest of the arguments' canonical JSON (the audit log's `argumentsDigest`). */
  readonly argumentsDigest: string;
}

interface Held {
  readonly ask: ConsoleAsk;
  readonly settle?: (answer: 'approved' | 'declined') => void;
}

/**
 * The web console's approvals inbox: asks the client cannot put to its user wait here for a
 * person's answer (each answer covers that one call, once), and asks the client is putting to its
 * user are listed read-only. `version` changes whenever the list does (the page polls it).
 */
export class ConsoleInbox implements ApprovalInbox {
  readonly #held = new Map<string, Held>();
  readonly #maxPending: number;
  #version = 0;

  /** An inbox holding at most `maxPending` asks that wait for an answer here. */
  constructor(maxPending: number = DEFAULT_CONSOLE_MAX_PENDING) {
    this.#maxPending = maxPending;
  }

  /** Changes whenever an ask arrives or leaves. */
  get version(): number {
    return this.#version;
  }

  /** The asks held now, oldest first. */
  list(): ConsoleAsk[] {
    return [...this.#held.values()].map((held) => held.ask).sort((a, b) => a.time - b.time);
  }

  decide(ask: InboxAsk, signal: AbortSignal): Promise<InboxAnswer> {
    if (signal.aborted) return Promise.resolve('declined');
    const waiting = [...this.#held.values()].filter((held) => held.settle !== undefined).length;
    if (waiting >= this.#maxPending) return Promise.resolve('full');
    return new Promise<InboxAnswer>((resolve) => {
      const shown = this.#shown(ask, 'console');
      const finish = (answer: 'approved' | 'declined'): void => {
        if (!this.#held.delete(shown.id)) return;
        signal.removeEventListener('abort', onAbort);
        this.#version += 1;
        resolve(answer);
      };
      const onAbort = (): void => finish('declined');
      signal.addEventListener('abort', onAbort, { once: true });
      this.#held.set(shown.id, { ask: shown, settle: finish });
      this.#version += 1;
    });
  }

  observe(ask: InboxAsk): () => void {
    const shown = this.#shown(ask, 'client');
    this.#held.set(shown.id, { ask: shown });
    this.#version += 1;
    return () => {
      if (this.#held.delete(shown.id)) this.#version += 1;
    };
  }

  /** The ask `id` if it waits for an answer here (not one the client is asking). */
  waiting(id: string): ConsoleAsk | undefined {
    const held = this.#held.get(id);
    return held?.settle === undefined ? undefined : held.ask;
  }

  /** Answers the ask `id`: true when it was waiting here and is answered now. */
  answer(id: string, approved: boolean): boolean {
    const held = this.#held.get(id);
    if (held?.settle === undefined) return false;
    held.settle(approved ? 'approved' : 'declined');
    return true;
  }

  #shown(ask: InboxAsk, channel: ConsoleAsk['channel']): ConsoleAsk {
    return {
      ...ask,
      id: randomUUID(),
      time: Date.now(),
      channel,
      argumentsText: escapeForPrompt(JSON.stringify(ask.arguments, null, 2) ?? 'null'),
      argumentsDigest: digestOf(ask.arguments),
    };
  }
}
