import { InspectUsageError } from './inspect-usage-error.js';

/** What `toolfence-mcp inspect` connects to. */
export type InspectTarget =
  | { readonly kind: 'url'; readonly url: string }
  | { readonly kind: 'command'; readonly command: readonly string[] };

/** The parsed arguments of `toolfence-mcp inspect`. */
export interface InspectArguments {
  readonly help: boolean;
  readonly target: InspectTarget | undefined;
  readonly json: boolean;
  readonly policyFile: string | undefined;
  /**
   * `--server NAME`: the server's name in the gateway config, so rules with `server` (and the
   * offered names `NAMESPACE__tool`) are judged as `serve` judges them.
   */
  readonly server?: string;
  /** `--namespace NS`: the config's `namespace` of that server. Default the `--server` name. */
  readonly namespace?: string;
  /** Milliseconds for the handshake and for each answer (`--timeout-ms`). */
  readonly timeoutMs: number;
  /** `--env NAME` (copied from the environment) or `--env NAME=VALUE`, in order. */
  readonly env: readonly { readonly name: string; readonly value?: string }[];
}

/** Default of `--timeout-ms`, in milliseconds. */
export const DEFAULT_INSPECT_TIMEOUT_MS = 15_000;
/** Largest `--timeout-ms`, in milliseconds. */
export const MAX_INSPECT_TIMEOUT_MS = 600_000;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A gateway namespace, as the config accepts it. */
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,23}$/;

function usage(message: string): InspectUsageError {
  return new InspectUsageError(message);
}

/** Parses the arguments after `inspect`. Throws {@link InspectUsageError}. */
export function parseInspectArguments(argv: readonly string[]): InspectArguments {
  let help = false;
  let url: string | undefined;
  let command: string[] | undefined;
  let json = false;
  let policyFile: string | undefined;
  let server: string | undefined;
  let namespace: string | undefined;
  let timeoutMs = DEFAULT_INSPECT_TIMEOUT_MS;
  const env: { name: string; value?: string }[] = [];
  const seen = new Set<string>();

  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index] as string;
    if (argument === '--') {
      command = argv.slice(index + 1);
      if (command.length === 0 || command[0] === '') {
        throw usage('Give the server command after "--"');
      }
      break;
    }
    if (!argument.startsWith('-') || argument === '-') {
      throw usage(
        'Unexpected argument; put the server command after "--" (for example: -- node server.js)',
      );
    }
    const equals = argument.indexOf('=');
    const name = argument.startsWith('--') && equals > 0 ? argument.slice(0, equals) : argument;
    const inline = name === argument ? undefined : argument.slice(equals + 1);
    const value = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[index + 1];
      if (next === undefined || next === '--') throw usage(`${name} needs a value`);
      index++;
      return next;
    };
    const once = (): void => {
      if (seen.has(name)) throw usage(`${name} is given more than once`);
      seen.add(name);
    };
    const flag = (): void => {
      if (inline !== undefined) throw usage(`${name} takes no value`);
    };
    switch (name) {
      case '-h':
      case '--help':
        flag();
        help = true;
        break;
      case '--json':
        flag();
        once();
        json = true;
        break;
      case '--url':
        once();
        url = value();
        if (url === '') throw usage('--url needs a value');
        break;
      case '--policy':
        once();
        policyFile = value();
        if (policyFile === '') throw usage('--policy needs a file name');
        break;
      case '--server':
        once();
        server = value();
        if (server === '') throw usage('--server needs a name');
        break;
      case '--namespace':
        once();
        namespace = value();
        if (!NAMESPACE.test(namespace) || namespace.includes('__')) {
          throw usage('--namespace is 1-24 of letters, digits, "-" and "_" (no "__")');
        }
        break;
      case '--timeout':
        throw usage(
          '--timeout was renamed to --timeout-ms (milliseconds; multiply a value in seconds by 1000)',
        );
      case '--timeout-ms': {
        once();
        const text = value();
        const milliseconds = /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN;
        if (!(milliseconds > 0 && milliseconds <= MAX_INSPECT_TIMEOUT_MS)) {
          throw usage(
            `--timeout-ms must be a whole number of milliseconds above 0, at most ${MAX_INSPECT_TIMEOUT_MS}`,
          );
        }
        timeoutMs = milliseconds;
        break;
      }
      case '--env': {
        const text = value();
        const split = text.indexOf('=');
        const variable = split === -1 ? text : text.slice(0, split);
        if (!ENV_NAME.test(variable)) throw usage('--env needs NAME or NAME=VALUE');
        env.push(
          split === -1 ? { name: variable } : { name: variable, value: text.slice(split + 1) },
        );
        break;
      }
      default:
        throw usage(`Unknown option ${name.length > 40 ? `${name.slice(0, 40)}...` : name}`);
    }
  }

  const naming = {
    ...(server === undefined ? {} : { server }),
    ...(namespace === undefined ? {} : { namespace }),
  };
  if (help) return { help, target: undefined, json, policyFile, ...naming, timeoutMs, env };
  if (namespace !== undefined && server === undefined) {
    throw usage('--namespace goes with --server');
  }
  if (
    server !== undefined &&
    namespace === undefined &&
    (!NAMESPACE.test(server) || server.includes('__'))
  ) {
    throw usage('--server is not a valid namespace: give --namespace as in the gateway config');
  }
  if (url !== undefined && command !== undefined) {
    throw usage('Give either --url or a command after "--", not both');
  }
  if (url === undefined && command === undefined) {
    throw usage('Give the server to inspect: --url URL, or -- COMMAND ARGS...');
  }
  if (url !== undefined && env.length > 0) {
    throw usage('--env applies to a stdio server (a command after "--") only');
  }
  const target: InspectTarget =
    url !== undefined
      ? { kind: 'url', url }
      : { kind: 'command', command: Object.freeze([...(command as string[])]) };
  return { help, target, json, policyFile, ...naming, timeoutMs, env };
}
