/**
 * Where the `toolfence-mcp` command writes and what it reads from its process. `main.ts` wires
 * the real process; tests pass their own, so nothing in the CLI touches the console directly.
 */
export interface CliIo {
  /** Writes to standard output. */
  readonly out: (text: string) => void;
  /** Writes to standard error. */
  readonly err: (text: string) => void;
  /** The environment a stdio server's passed-through variables come from. Default: none. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Directory a relative `--policy` path is resolved against. Default: the process's. */
  readonly cwd?: string;
  /** The process's standard streams, for `serve` (the downstream MCP connection). */
  readonly stdio?: {
    /** Where the downstream client's requests arrive. */
    readonly stdin: NodeJS.ReadableStream;
    /** Where the gateway's answers go. */
    readonly stdout: NodeJS.WritableStream;
  };
  /** Resolves when `serve` should stop (the process got SIGINT or SIGTERM). Default: never. */
  readonly stopped?: Promise<void>;
  /**
   * Subscribes `serve` to reload requests (the process got SIGHUP); returns the unsubscribe
   * function. Default: none (the config file is still watched).
   */
  readonly reloads?: (listener: () => void) => () => void;
}

/**
 * The value of the flag at `argv[index]`: the word after it. When there is none, or it is another
 * flag (`--...`), throws `usage("<flag> needs a value")`. `serve`, `pin`, `audit`, `wrap` and
 * `unwrap` read their flags' values with it.
 */
export function flagValue(
  argv: readonly string[],
  index: number,
  usage: (message: string) => Error,
): string {
  const next = argv[index + 1];
  if (next === undefined || next.startsWith('--')) throw usage(`${argv[index]} needs a value`);
  return next;
}

/** The message for an unknown flag: the flag itself only when it looks like one (no echo of text). */
export function unknownOption(flag: string): string {
  return `unknown option ${/^[\w-]{1,40}$/.test(flag) ? flag : ''}`.trim();
}
