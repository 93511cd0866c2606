// A stdio server process spawned before its client exists, so its start-up (a second node, its
// modules) overlaps whatever the host still loads. Only `node:child_process` is loaded here: the
// gateway spawns its upstreams with this before it loads the client, the SDK or the bridge.
import { type ChildProcess, spawn } from 'node:child_process';

/** The variables a stdio server inherits by default (the MCP SDK's choice). */
export const DEFAULT_INHERITED_ENV: readonly string[] = Object.freeze([
  'HOME',
  'LOGNAME',
  'PATH',
  'SHELL',
  'TERM',
  'USER',
]);

/**
 * The environment a stdio server gets: the `inherit` variables of this process that are set (a
 * value that starts with `()`, a shell function, is skipped), then `env` on top.
 */
export function stdioChildEnv(
  env: Readonly<Record<string, string>>,
  inherit: readonly string[],
): Readonly<Record<string, string>> {
  const inherited: Record<string, string> = {};
  for (const name of inherit) {
    const value = process.env[name];
    if (value !== undefined && !value.startsWith('()')) inherited[name] = value;
  }
  return Object.freeze({ ...inherited, ...env });
}

/** Spawns a stdio server the one way this package does: argv (no shell), its own process group, piped stdio. */
export function spawnStdioChild(
  command: readonly string[],
  env: Readonly<Record<string, string>>,
  cwd: string | undefined,
): ChildProcess {
  const [executable, ...args] = command as [string, ...string[]];
  return spawn(executable, args, {
    env: { ...env },
    ...(cwd === undefined ? {} : { cwd }),
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    shell: false,
    windowsHide: true,
  });
}

/** Resolves when `child` spawned; rejects with the spawn error (ENOENT, EACCES). */
export function spawnOutcome(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onSpawn = (): void => {
      child.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      child.off('spawn', onSpawn);
      reject(error);
    };
    child.once('spawn', onSpawn);
    child.once('error', onError);
  });
}

/** Sends `signal` to the child's process group (it is the group's leader), else to the child. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  const pid = child.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

/** Where a transport that takes an early process gets its events. */
export interface EarlyStdioSink {
  readonly stdout: (chunk: Buffer) => void;
  readonly stdoutEnd: () => void;
  readonly stderr: (chunk: Buffer) => void;
  /** The process's `error` after it spawned. */
  readonly error: (error: Error) => void;
  /** Its stdin's `error`. */
  readonly stdinError: (error: Error) => void;
  /** Its `close` (it exited and every stream ended). */
  readonly close: (code: number | null, signal: NodeJS.Signals | null) => void;
}

/**
 * How a transport took an early process: `live` (it still runs: the transport reads its streams
 * and listens to its events itself; only the errors that came before are passed to the sink) or
 * `forwarded` (it exited before: everything it left and everything after comes through the sink).
 */
export type EarlyTake = 'live' | 'forwarded';

type EarlyEvent =
  | { readonly kind: 'stdout' | 'stderr'; readonly chunk: Buffer }
  | { readonly kind: 'stdoutEnd' }
  | { readonly kind: 'error' | 'stdinError'; readonly error: Error }
  | {
      readonly kind: 'close';
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
    };

/**
 * Bytes an exited early process's output may hold in memory before a transport takes it; beyond
 * it, its streams are paused (what is left stays in the pipes).
 */
const MAX_EARLY_BUFFER_BYTES = 8 * 1024 * 1024;

/**
 * A stdio server spawned early, exactly as {@link spawnStdioChild} spawns (the same argv, the
 * environment of {@link stdioChildEnv}, its own process group), waiting for the transport that
 * takes it. While it runs nothing is read from it: its stdout and stderr stay in the pipes and
 * the streams' buffers (the child blocks once they are full), so the transport that takes it
 * reads every byte, in order. Once it exits, what it left is read into memory at once (Node
 * discards a dead child's unread output), bounded by 8 MiB, and replayed in order to the
 * transport. Its `error`, stdin `error` and `close` are recorded (an unheard `error` would end
 * this process). Either a transport takes it ({@link EarlyStdioProcess.take}) or
 * {@link EarlyStdioProcess.dispose} ends its process group.
 */
export class EarlyStdioProcess {
  readonly command: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string | undefined;
  readonly child: ChildProcess;
  /** Settles as the spawn did (the transport awaits it; a rejection is observed here too). */
  readonly spawned: Promise<void>;
  /** Resolves on the child's `close`. */
  readonly exited: Promise<void>;
  #state: 'waiting' | 'live' | 'forwarded' | 'disposed' = 'waiting';
  #reading = false;
  #closed = false;
  #buffered = 0;
  readonly #events: EarlyEvent[] = [];
  #sink: EarlyStdioSink | undefined;
  #delivered: Promise<void> = Promise.resolve();

  /**
   * Resolves once a `forwarded` take delivered what the process left before it was taken (its
   * output, and its exit if the streams had ended): a transport awaits it in `start()`, so the
   * exit is reported before anything is written to a process that is gone.
   */
  get delivered(): Promise<void> {
    return this.#delivered;
  }

  /** Spawns `command` now. */
  constructor(
    command: readonly string[],
    env: Readonly<Record<string, string>>,
    cwd: string | undefined,
  ) {
    this.command = Object.freeze([...command]);
    this.env = env;
    this.cwd = cwd;
    const child = spawnStdioChild(this.command, env, cwd);
    this.child = child;
    this.spawned = spawnOutcome(child);
    this.spawned.catch(() => undefined);
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.#closed = true;
        this.#record({ kind: 'close', code, signal });
        resolve();
      });
    });
    // Node resumes a dead child's untouched streams on the next tick, dropping what they hold:
    // an early process that exits is read now (unless a transport reads it already).
    child.once('exit', () => {
      if (this.#state === 'waiting' || this.#state === 'disposed') this.#read();
    });
    void this.spawned.then(
      () => {
        child.on('error', (error) => this.#record({ kind: 'error', error }));
      },
      () => undefined,
    );
    child.stdin?.on('error', (error) => this.#record({ kind: 'stdinError', error }));
  }

  /** The process id, once spawned. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True when it runs `command` with `env` in `cwd` (what a transport would spawn itself). */
  matches(
    command: readonly string[],
    env: Readonly<Record<string, string>>,
    cwd: string | undefined,
  ): boolean {
    if (cwd !== this.cwd || command.length !== this.command.length) return false;
    if (!command.every((part, index) => part === this.command[index])) return false;
    const mine = Object.keys(this.env);
    const theirs = Object.keys(env);
    return mine.length === theirs.length && theirs.every((key) => this.env[key] === env[key]);
  }

  /**
   * Hands the process to a transport, once; undefined when it was taken or disposed already.
   * What came before is delivered to `sink` on a later turn (after the caller returned).
   */
  take(sink: EarlyStdioSink): EarlyTake | undefined {
    if (this.#state !== 'waiting') return undefined;
    if (this.#reading) {
      this.#state = 'forwarded';
      this.#delivered = new Promise((resolve) => {
        setImmediate(() => {
          // Everything recorded until now, in order; then each event as it comes.
          for (const event of this.#events.splice(0)) deliver(sink, event);
          this.#sink = sink;
          this.child.stdout?.resume();
          this.child.stderr?.resume();
          resolve();
        });
      });
      return 'forwarded';
    }
    this.#state = 'live';
    const events = this.#events.splice(0);
    setImmediate(() => {
      for (const event of events) {
        if (event.kind === 'error' || event.kind === 'stdinError') deliver(sink, event);
      }
    });
    return 'live';
  }

  #record(event: EarlyEvent): void {
    if (this.#state === 'live' || this.#state === 'disposed') return;
    if (this.#sink !== undefined) {
      deliver(this.#sink, event);
      return;
    }
    this.#events.push(event);
  }

  #read(): void {
    if (this.#reading) return;
    this.#reading = true;
    const keep = (kind: 'stdout' | 'stderr') => (chunk: Buffer) => {
      this.#record({ kind, chunk });
      if (this.#sink !== undefined || this.#state === 'disposed') return;
      this.#buffered += chunk.length;
      if (this.#buffered > MAX_EARLY_BUFFER_BYTES) {
        this.child.stdout?.pause();
        this.child.stderr?.pause();
      }
    };
    this.child.stdout?.on('data', keep('stdout'));
    this.child.stdout?.once('end', () => this.#record({ kind: 'stdoutEnd' }));
    this.child.stderr?.on('data', keep('stderr'));
  }

  /**
   * Ends the process group unless a transport took it: SIGTERM, then SIGKILL after `graceMs`
   * (and SIGKILL to the group once the leader exited, as the transport does).
   */
  async dispose(graceMs = 2000): Promise<void> {
    if (this.#state !== 'waiting') return;
    this.#state = 'disposed';
    this.#events.length = 0;
    const child = this.child;
    const started = await this.spawned.then(
      () => true,
      () => false,
    );
    if (!started) return;
    child.stdin?.end();
    // Nobody reads its output any more: it must not block on a full pipe while it stops.
    child.stdout?.resume();
    child.stderr?.resume();
    if (!this.#closed && child.exitCode === null && child.signalCode === null) {
      signalGroup(child, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = await Promise.race([
        this.exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (late) {
        signalGroup(child, 'SIGKILL');
        await this.exited;
        return;
      }
    }
    signalGroup(child, 'SIGKILL');
  }
}

function deliver(sink: EarlyStdioSink, event: EarlyEvent): void {
  if (event.kind === 'stdout') sink.stdout(event.chunk);
  else if (event.kind === 'stderr') sink.stderr(event.chunk);
  else if (event.kind === 'stdoutEnd') sink.stdoutEnd();
  else if (event.kind === 'error') sink.error(event.error);
  else if (event.kind === 'stdinError') sink.stdinError(event.error);
  else if (event.kind === 'close') sink.close(event.code, event.signal);
}

const GIVEN = new WeakMap<object, EarlyStdioProcess>();

/** Gives `owner` (a client) the early process its first stdio transport takes. */
export function giveEarlyProcess(owner: object, early: EarlyStdioProcess): void {
  GIVEN.set(owner, early);
}

/** The early process given to `owner`, once (the next transports spawn their own). */
export function takeGivenProcess(owner: object): EarlyStdioProcess | undefined {
  const early = GIVEN.get(owner);
  GIVEN.delete(owner);
  return early;
}
