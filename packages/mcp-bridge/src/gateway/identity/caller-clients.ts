// One upstream connection per caller, for an upstream that receives a token exchanged for each
// caller: a connection (its session, its `Authorization`) is never shared by two people. Bounded
// in count; an unused connection closes after an idle time.
import type { McpClient } from '../../client/mcp-client.js';
import { GatewayCallerCredentialError } from './upstream-credential-error.js';

/** Options of {@link CallerClients}. */
export interface CallerClientsOptions {
  /** The upstream's name in the config (for messages). */
  readonly server: string;
  /** Connections open at once. */
  readonly max: number;
  /** Milliseconds an unused connection stays open. */
  readonly idleMs: number;
  /** Opens the connection of caller `key`, whose every request carries `token()` as its bearer token. */
  readonly create: (key: string, token: () => string) => McpClient;
}

interface Entry {
  readonly client: McpClient;
  token: string;
  busy: number;
  timer: NodeJS.Timeout | undefined;
}

/** A leased connection: call `release` once the call ended. */
export interface CallerLease {
  readonly client: McpClient;
  release(): void;
}

/** The per-caller connections of one upstream. */
export class CallerClients {
  readonly #options: CallerClientsOptions;
  /** By caller key, least recently used first. */
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  constructor(options: CallerClientsOptions) {
    this.#options = options;
  }

  /** Connections open now. */
  get size(): number {
    return this.#entries.size;
  }

  /** The caller's connection (opened if needed), its requests carrying `token` from now on. */
  acquire(key: string, token: string): CallerLease {
    if (this.#closed) {
      throw new GatewayCallerCredentialError(`The upstream ${this.#options.server} is closing`, {
        details: { server: this.#options.server },
      });
    }
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      if (this.#entries.size >= this.#options.max) this.#evictIdle();
      const created: Entry = { client: undefined as never, token, busy: 0, timer: undefined };
      entry = Object.assign(created, { client: this.#options.create(key, () => created.token) });
    } else {
      this.#entries.delete(key);
    }
    this.#entries.set(key, entry);
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.token = token;
    entry.busy += 1;
    const held = entry;
    let released = false;
    return {
      client: held.client,
      release: () => {
        if (released) return;
        released = true;
        held.busy -= 1;
        if (held.busy > 0 || this.#entries.get(key) !== held) return;
        held.timer = setTimeout(() => {
          if (held.busy === 0 && this.#entries.get(key) === held) {
            this.#entries.delete(key);
            void held.client.close().catch(() => undefined);
          }
        }, this.#options.idleMs);
        held.timer.unref();
      },
    };
  }

  #evictIdle(): void {
    for (const [key, entry] of this.#entries) {
      if (entry.busy > 0) continue;
      clearTimeout(entry.timer);
      this.#entries.delete(key);
      void entry.client.close().catch(() => undefined);
      return;
    }
    throw new GatewayCallerCredentialError(
      `Every per-caller connection to the upstream ${this.#options.server} is busy (${this.#options.max}, credentials.maxCallerClients); call again in a moment`,
      { details: { server: this.#options.server, maxCallerClients: this.#options.max } },
    );
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    this.#closed = true;
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(
      entries.map((entry) => {
        clearTimeout(entry.timer);
        return entry.client.close().catch(() => undefined);
      }),
    );
  }
}
