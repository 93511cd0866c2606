// The gateway's stdio upstreams, spawned as soon as the config is read: their start-up (a process,
// its runtime, its modules) runs while `serve` loads the gateway, the SDK and the upstream client,
// instead of after. Loads only `node:child_process` (through early-stdio-process.ts) and `node:os`.
import { availableParallelism } from 'node:os';
import {
  DEFAULT_INHERITED_ENV,
  EarlyStdioProcess,
  stdioChildEnv,
} from '../transport/early-stdio-process.js';
import type { GatewayConfig, GatewayServerConfig } from './gateway-config.js';

/**
 * How many stdio upstreams spawn before `serve` loads: the cores beyond the one `serve` loads on
 * (`availableParallelism() - 1`; 0 on one core). Fixed for a machine, whatever its load, so the
 * same config starts the same way every time. None on one core: there an early upstream only
 * shares the core `serve` loads on, so its client's `initialize` waits longer while the listing
 * gains little (the same work on the same core).
 */
export function defaultEarlyUpstreams(): number {
  return Math.max(0, availableParallelism() - 1);
}

/** The upstream processes started early for one config object (see {@link EarlyUpstreams}). */
const STARTED = new WeakMap<GatewayConfig, EarlyUpstreams>();

/**
 * The stdio upstreams of a config, each spawned at once exactly as the gateway's client would
 * spawn it (its `command` and `args`, its `env` over the default inherited variables, its own
 * process group). The gateway built with the same config object gives each to its upstream's
 * client on the first start, whose transport takes it if it runs the same command, environment
 * and folder (else ends it and spawns its own). {@link EarlyUpstreams.dispose} ends every process
 * no transport took: call it once the start settled, and on every way out.
 */
export class EarlyUpstreams {
  readonly #processes = new Map<
    string,
    { server: GatewayServerConfig; early: EarlyStdioProcess }
  >();
  /** Every stdio upstream of the config, in order (the ones kept back spawn with startRest). */
  readonly #servers: [string, GatewayServerConfig][] = [];
  /** Upstreams whose client asked for its process: one not spawned by then spawns its own. */
  readonly #asked = new Set<string>();
  #disposed = false;
  /** False when `start` was given 0: early spawning is off, every client spawns its own. */
  #enabled = false;

  private constructor() {}

  /**
   * Spawns the first `now` stdio upstreams of `config` at once, in parallel (a failed spawn is
   * reported by the client that takes it); the client of each other one spawns it when it
   * starts, as without this. Default `now`: {@link defaultEarlyUpstreams}.
   */
  static start(config: GatewayConfig, now: number = defaultEarlyUpstreams()): EarlyUpstreams {
    const started = new EarlyUpstreams();
    started.#enabled = now > 0;
    for (const [name, server] of Object.entries(config.mcpServers)) {
      if (server.command === undefined || server.url !== undefined) continue;
      started.#servers.push([name, server]);
      if (started.#processes.size < now) started.#spawn(name, server);
    }
    STARTED.set(config, started);
    return started;
  }

  #spawn(name: string, server: GatewayServerConfig): void {
    const early = new EarlyStdioProcess(
      [server.command as string, ...(server.args ?? [])],
      stdioChildEnv(server.env ?? {}, DEFAULT_INHERITED_ENV),
      undefined,
    );
    this.#processes.set(name, { server, early });
  }

  /**
   * Spawns the stdio upstreams kept back by {@link EarlyUpstreams.start} whose client has not
   * asked for its process yet. `serve` calls it once its client's `initialize` is answered, so
   * those processes start while it loads the upstream client, instead of after it, without
   * slowing that answer; nothing when `start` was given 0 (early spawning off) or after dispose.
   */
  startRest(): void {
    if (this.#disposed || !this.#enabled) return;
    for (const [name, server] of this.#servers) {
      if (!this.#processes.has(name) && !this.#asked.has(name)) this.#spawn(name, server);
    }
  }

  /** The early process of upstream `name` of `config`, if one was started for this very `server`. */
  static processFor(
    config: GatewayConfig,
    name: string,
    server: GatewayServerConfig,
  ): EarlyStdioProcess | undefined {
    const started = STARTED.get(config);
    if (started === undefined || started.#disposed) return undefined;
    started.#asked.add(name);
    const entry = started.#processes.get(name);
    return entry?.server === server ? entry.early : undefined;
  }

  /** The process ids spawned (for diagnostics and tests). */
  get pids(): readonly number[] {
    return [...this.#processes.values()].flatMap(({ early }) => early.pid ?? []);
  }

  /** Ends every process no transport took (SIGTERM to its group, SIGKILL after `graceMs`). */
  async dispose(graceMs?: number): Promise<void> {
    this.#disposed = true;
    await Promise.all([...this.#processes.values()].map(({ early }) => early.dispose(graceMs)));
  }
}
