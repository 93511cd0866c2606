import { randomUUID } from 'node:crypto';
import { checkOptionKeys } from '@toolfence/tools/core';
import { positiveInteger } from '../../transport/record-limits.js';
import type { ApprovalInbox, InboxAnswer, InboxAsk } from '../approval-inbox.js';
import { escapeForPrompt } from '../approval-prompt.js';
import { digestOf } from '../canonical-json.js';
import { GatewayConfigError, gatewayOptionRefusal } from '../errors.js';
import { approvalPrincipal } from '../identity/gateway-principal.js';

/** Default number of asks the console holds waiting for a person: 100. */
export const DEFAULT_CONSOLE_MAX_PENDING = 100;
/**
 * Default number of asks of one caller (issuer and subject) the console holds waiting: 10. Asks of
 * a gateway without identity count against {@link DEFAULT_CONSOLE_MAX_PENDING} only.
 */
export const DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL = 10;

/** Options of {@link ConsoleInbox}. */
export interface ConsoleInboxOptions {
  /** Asks waiting for an answer here at once. Default {@link DEFAULT_CONSOLE_MAX_PENDING}. */
  readonly maxPending?: number;
  /**
   * Asks of one caller (issuer and subject) waiting here at once; one more of that caller's is
   * answered `principal-full` at once, while others' still wait. Default
   * {@link DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL}.
   */
  readonly maxPendingPerPrincipal?: number;
}

const OPTION_KEYS: readonly string[] = Object.freeze(['maxPending', 'maxPendingPerPrincipal']);

/**
 * An ask's texts as the console shows them: every one a server or a client controls (names,
 * description, reason, flow, the caller) with control and invisible characters as `\u{…}`
 * (`escapeForPrompt`); the one-line ones with newlines escaped too.
 */
export interface ShownAsk {
  /** The offered tool name. */
  readonly tool: string;
  /** The server's name, or `unknown`. */
  readonly server: string;
  /** The tool's description (line breaks kept). */
  readonly description: string;
  /** The policy's reason, or its fixed default. */
  readonly reason: string;
  /** The flow text (line breaks kept), when the request carries one. */
  readonly flow?: string;
  /** Who made the call, when the gateway knows (`gateway.httpAuth`). */
  readonly principal?: {
    /** The caller's issuer, escaped. */
    readonly issuer: string;
    /** The caller's subject, escaped. */
    readonly subject: string;
  };
}

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
  /** The texts the page shows, escaped ({@link ShownAsk}); the fields above stay as given. */
  readonly shown: ShownAsk;
}

interface Held {
  readonly ask: ConsoleAsk;
  /** The caller's key (`approvalPrincipal`), for an ask of a caller with identity. */
  readonly principal?: string;
  readonly settle?: (answer: 'approved' | 'declined') => void;
}

/** One line: control (newlines too) and invisible characters as `\u{…}`. */
const oneLine = (text: string): string => escapeForPrompt(text, false);

/**
 * The web console's approvals inbox: asks the client cannot put to its user wait here for a
 * person's answer (each answer covers that one call, once), and asks the client is putting to its
 * user are listed read-only. `version` changes whenever the list does (the page polls it).
 */
export class ConsoleInbox implements ApprovalInbox {
  readonly #held = new Map<string, Held>();
  readonly #maxPending: number;
  readonly #maxPendingPerPrincipal: number;
  #version = 0;

  /**
   * An inbox holding at most `maxPending` asks that wait for an answer here, at most
   * `maxPendingPerPrincipal` of one caller. A number is `maxPending` (the earlier form). Unknown
   * options and values that are not whole numbers of at least 1 are refused (`GATEWAY_CONFIG`).
   */
  constructor(options: number | ConsoleInboxOptions = {}) {
    const given: ConsoleInboxOptions =
      typeof options === 'number' ? { maxPending: options } : options;
    checkOptionKeys(
      given,
      OPTION_KEYS,
      'ConsoleInbox',
      (message, option) => new GatewayConfigError(message, { details: { option } }),
    );
    const refuse = gatewayOptionRefusal('ConsoleInbox');
    this.#maxPending = positiveInteger(
      'maxPending',
      given.maxPending,
      DEFAULT_CONSOLE_MAX_PENDING,
      refuse,
    );
    this.#maxPendingPerPrincipal = positiveInteger(
      'maxPendingPerPrincipal',
      given.maxPendingPerPrincipal,
      DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL,
      refuse,
    );
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
    const waiting = [...this.#held.values()].filter((held) => held.settle !== undefined);
    if (waiting.length >= this.#maxPending) return Promise.resolve('full');
    // One caller's share: a person who fills the inbox cannot keep the others' asks out of it.
    const principal = ask.principal === undefined ? undefined : approvalPrincipal(ask.principal);
    if (
      principal !== undefined &&
      waiting.filter((held) => held.principal === principal).length >= this.#maxPendingPerPrincipal
    ) {
      return Promise.resolve('principal-full');
    }
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
      this.#held.set(shown.id, {
        ask: shown,
        settle: finish,
        ...(principal === undefined ? {} : { principal }),
      });
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
      // The one place the console escapes what it shows: every page reads `shown`.
      shown: {
        tool: oneLine(ask.tool),
        server: oneLine(ask.server ?? 'unknown'),
        description: escapeForPrompt(ask.description),
        reason: oneLine(ask.reason ?? 'the policy asks for this tool'),
        ...(ask.flow === undefined ? {} : { flow: escapeForPrompt(ask.flow) }),
        ...(ask.principal === undefined
          ? {}
          : {
              principal: {
                issuer: oneLine(ask.principal.issuer),
                subject: oneLine(ask.principal.subject),
              },
            }),
      },
    };
  }
}
