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
}
