import { VERSION } from '../version.js';
import type { CliIo } from './cli-io.js';
import { EXIT_CODES } from './exit-codes.js';

/** The help text of `toolfence-mcp`. */
export const CLI_HELP: string = `Usage: toolfence-mcp <command> [options]

Commands:
  inspect    Connect to an MCP server and report its tools, their risk and content trust,
             a policy's answer for each, and schema problems. See "toolfence-mcp inspect --help".
  serve      Run the policy-enforcing gateway in front of the servers of a config file.
  pin        Show tools hidden because their definition changed, or accept one.
  audit      Verify the gateway's hash-chained audit log. See "toolfence-mcp audit --help".
  wrap       Move a client's servers (claude, cursor, vscode, codex) behind the gateway.
  unwrap     Put the client's original config file back. See "toolfence-mcp wrap --help".

Options:
  -h, --help     Show this help.
  --version      Print the version.
`;

/** Runs `toolfence-mcp` with the process arguments after the script; resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  // Each command loads its own modules when it runs: `serve` answers its client's `initialize`
  // without loading what `inspect` or `wrap` use, and `audit` without the gateway or the SDK.
  if (command === 'inspect') return (await import('./run-inspect.js')).runInspect(rest, io);
  if (command === 'serve') {
    if (rest.includes('-h') || rest.includes('--help')) {
      return (await import('./run-gateway.js')).runServe(rest, io);
    }
    // The config is read and the stdio upstreams spawned before the gateway's modules load:
    // the upstreams start while they load (serve-start.ts).
    const prepared = await (await import('./serve-start.js')).prepareServe(rest, io);
    return (await import('./run-gateway.js')).runServe(rest, io, prepared);
  }
  if (command === 'pin') return (await import('./run-gateway.js')).runPin(rest, io);
  if (command === 'audit') return (await import('./run-gateway.js')).runAudit(rest, io);
  if (command === 'wrap') return (await import('./run-wrap.js')).runWrap(rest, io);
  if (command === 'unwrap') return (await import('./run-wrap.js')).runUnwrap(rest, io);
  if (command === '-h' || command === '--help' || command === 'help') {
    io.out(CLI_HELP);
    return EXIT_CODES.ok;
  }
  if (command === '--version') {
    io.out(`${VERSION}\n`);
    return EXIT_CODES.ok;
  }
  io.err(
    command === undefined ? 'toolfence-mcp: give a command\n' : 'toolfence-mcp: unknown command\n',
  );
  io.err(CLI_HELP);
  return EXIT_CODES.usage;
}
