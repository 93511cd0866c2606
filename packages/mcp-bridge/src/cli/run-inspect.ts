import { isAbsolute, resolve } from 'node:path';
import { ClientConfigurationError } from '../client/errors.js';
import { McpClient, type McpClientOptions } from '../client/mcp-client.js';
import {
  defaultInspectPolicy,
  type InspectPolicy,
  loadInspectPolicy,
  warnUnmatchedRules,
} from '../gateway/policy-file.js';
import { PolicyFileError } from '../gateway/policy-file-error.js';
import type { CliIo } from './cli-io.js';
import { EXIT_CODES } from './exit-codes.js';
import { formatInspectReport } from './format-report.js';
import { type InspectArguments, parseInspectArguments } from './inspect-arguments.js';
import { buildInspectReport } from './inspect-report.js';
import { InspectUsageError } from './inspect-usage-error.js';
import { approveLoopback, isLoopbackHost } from './loopback.js';
import { safeFailureMessage } from './safe-failure-message.js';

// Kept here for importers from before they moved (each lives in a module of its own so a command
// loads only what it uses).
export { approveLoopback, EXIT_CODES, isLoopbackHost, safeFailureMessage };

/** Variables a stdio server gets from the environment without `--env`. */
export const PASSED_ENV_NAMES: readonly string[] = Object.freeze([
  'PATH',
  'HOME',
  'TMPDIR',
  'LANG',
  'SYSTEMROOT',
]);

/** The help text of `toolfence-mcp inspect`. */
export const INSPECT_HELP: string = `Usage: toolfence-mcp inspect (--url URL | -- COMMAND ARGS...) [options]

Connects to one MCP server with @toolfence/mcp-bridge's McpClient and prints its name,
version and capabilities, and a table of its tools: declared or heuristic risk and content
trust, what a policy would answer (allow, ask or deny) for a call, and any schema the bridge
would refuse.

Server (exactly one):
  --url URL            Streamable HTTP endpoint. https:// to a public address goes through the
                       network guard (every DNS answer checked). Plain http:// is accepted only
                       to a loopback host (127.0.0.0/8, [::1], localhost); for a URL that names
                       a loopback host, loopback addresses are approved (allowNonPublic).
                       Other private addresses are always refused.
  -- COMMAND ARGS...   Start a stdio server (argv, never a shell string). It gets only
                       PATH, HOME, TMPDIR, LANG, SYSTEMROOT from this environment.

Options:
  --json               Print one JSON document instead of the text report.
  --policy FILE        JSON policy to judge each tool against (default: RiskPolicy defaults):
                         {"kind":"risk","risk":{"allowUpTo":"read-only","askUpTo":"destructive"},
                          "contentTrust":{"allowUpTo":"untrusted","askUpTo":"prompt-injection-prone"},
                          "undeclared":"heuristic"}
                         {"kind":"rules","rules":[{"tool":"delete_*","decision":"deny"}],"default":"ask"}
                       A rule names a tool by the server's own name (any server), by the offered
                       name SERVER__tool, or by "server" plus a name; "when" adds conditions on
                       arguments (a call's arguments are not known here: judged as absent).
                       The same file and matching as "serve --policy". At most 1 MiB.
  --server NAME        The server's name in the gateway config, so rules with "server" and
                       offered names are judged as serve judges them (the report shows each
                       tool's offered name).
  --namespace NS       The server's "namespace" in the gateway config (default the NAME).
  --timeout-ms MS      Handshake and per-answer timeout, in milliseconds. Default 15000.
  --env NAME[=VALUE]   Pass one more variable to a stdio server (repeatable).
  -h, --help           Show this help.

Exit codes: 0 report printed, 1 connection or protocol failure, 2 usage error.
`;

function clientOptions(parsed: InspectArguments, io: CliIo): McpClientOptions {
  const target = parsed.target;
  const timeouts = { openTimeoutMs: parsed.timeoutMs, readTimeoutMs: parsed.timeoutMs };
  if (target?.kind === 'url') {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      throw new InspectUsageError('--url is not a valid URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new InspectUsageError('--url must be an https:// URL (or http:// to a loopback host)');
    }
    const loopback = isLoopbackHost(url.hostname);
    if (url.protocol === 'http:' && !loopback) {
      throw new InspectUsageError('--url may use plain http:// only for a loopback host');
    }
    return {
      url,
      ...timeouts,
      ...(loopback ? { allowNonPublic: approveLoopback } : {}),
    };
  }
  const source = io.env ?? {};
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV_NAMES) {
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  for (const entry of parsed.env) {
    const value = entry.value ?? source[entry.name];
    if (value !== undefined) env[entry.name] = value;
  }
  const command = (target as { command: readonly string[] }).command;
  // The CLI chooses the whole environment itself (from io.env), so nothing else is inherited.
  return {
    command,
    env,
    inheritEnv: [],
    ...(io.cwd === undefined ? {} : { cwd: io.cwd }),
    ...timeouts,
  };
}

/**
 * Runs `toolfence-mcp inspect` with the arguments after `inspect`, writing through `io`.
 * Resolves to the exit code: 0 report printed, 1 connection or protocol failure, 2 usage error.
 */
export async function runInspect(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: InspectArguments;
  let policy: InspectPolicy;
  let client: McpClient;
  try {
    parsed = parseInspectArguments(argv);
    if (parsed.help) {
      io.out(INSPECT_HELP);
      return EXIT_CODES.ok;
    }
    if (parsed.policyFile === undefined) policy = defaultInspectPolicy();
    else {
      const file = isAbsolute(parsed.policyFile)
        ? parsed.policyFile
        : resolve(io.cwd ?? process.cwd(), parsed.policyFile);
      policy = await loadInspectPolicy(file);
    }
    client = new McpClient(clientOptions(parsed, io));
  } catch (error) {
    if (
      error instanceof InspectUsageError ||
      error instanceof ClientConfigurationError ||
      PolicyFileError.isInstance(error)
    ) {
      io.err(`toolfence-mcp: ${safeFailureMessage(error)}\n`);
      io.err('Run "toolfence-mcp inspect --help" for usage.\n');
      return EXIT_CODES.usage;
    }
    io.err(`toolfence-mcp: ${safeFailureMessage(error)}\n`);
    return EXIT_CODES.failure;
  }
  try {
    const naming =
      parsed.server === undefined
        ? undefined
        : { server: parsed.server, namespace: parsed.namespace ?? parsed.server };
    const report = await buildInspectReport(
      client,
      policy,
      parsed.target?.kind === 'url' ? 'streamable-http' : 'stdio',
      naming,
    );
    warnUnmatchedRules(
      policy,
      report.tools.map((tool) => ({
        name: tool.offeredName ?? tool.name,
        origin:
          naming === undefined ? { tool: tool.name } : { server: naming.server, tool: tool.name },
      })),
      (line) => io.err(`toolfence-mcp: ${line}\n`),
    );
    io.out(parsed.json ? `${JSON.stringify(report, null, 2)}\n` : formatInspectReport(report));
    return EXIT_CODES.ok;
  } catch (error) {
    io.err(`toolfence-mcp: cannot inspect the server: ${safeFailureMessage(error)}\n`);
    return EXIT_CODES.failure;
  } finally {
    await client.close().catch(() => undefined);
  }
}
