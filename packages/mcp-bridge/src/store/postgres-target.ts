import { BlockList, isIP } from 'node:net';

/**
 * Where `pg` will connect for a `postgres://` URL, read the way `pg` reads it
 * (pg-connection-string 2.x, then `pg`'s defaults and `PGHOST`/`PGPORT`), so that the TLS
 * decision and the connection use one answer: the stores hand `pg` these fields, never the URL.
 */
export interface PostgresTarget {
  /** A host name, an IP address, or a Unix socket folder (starting with `/`). */
  readonly host: string;
  /** The port (also the Unix socket's `.s.PGSQL.<port>`). */
  readonly port: number;
  /** Absent: `pg` uses `PGUSER`, then the login name. */
  readonly user: string | undefined;
  /** Absent: `pg` uses `PGPASSWORD` (or `.pgpass`). */
  readonly password: string | undefined;
  /** Absent: `pg` uses `PGDATABASE`, then the user name. */
  readonly database: string | undefined;
  /** The other accepted query parameters (`application_name`, `options`, `client_encoding`). */
  readonly parameters: Readonly<Record<string, string>>;
  /** True when `host` is loopback by its literal form, or a Unix socket: TLS may be off. */
  readonly local: boolean;
}

/** Why a URL was refused: the query parameter (or `connectionString`) and a safe message. */
export interface PostgresTargetProblem {
  readonly parameter: string;
  readonly message: string;
}

/** TLS modes of the PostgreSQL stores. */
export type PostgresTlsMode = 'disable' | 'require' | 'verify-full';

/** Query parameters passed on to `pg` as they are. */
const PASSED_ON = ['application_name', 'fallback_application_name', 'options', 'client_encoding'];
/** Every accepted query parameter. */
export const POSTGRES_URL_PARAMETERS: readonly string[] = [
  'host',
  'port',
  'user',
  'password',
  ...PASSED_ON,
];

const LOOPBACK_V6 = new BlockList();
LOOPBACK_V6.addAddress('::1', 'ipv6');

/**
 * True for `localhost`, a literal IPv4 address in 127.0.0.0/8, the IPv6 address `::1` (in any
 * spelling, brackets allowed) and a Unix socket path (`/…`). Anything else, including names
 * that merely resolve to loopback (`127.1`, `::ffff:127.0.0.1`), is not.
 */
export function isLocalPostgresHost(host: string): boolean {
  if (host.startsWith('/')) return true;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  if (family === 4) return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
  return family === 6 && LOOPBACK_V6.check(bare, 'ipv6');
}

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Reads a `postgres://` or `postgresql://` URL as `pg` 8 does: the `host` and `port` query
 * parameters win over the URL's, an empty host falls back to `PGHOST`, then `localhost`, and a
 * percent-encoded host (`%2Fvar%2Frun%2Fpostgresql`) is a Unix socket. Refused: another scheme,
 * a malformed URL, `ssl*` parameters (TLS is an option of the store), `hostaddr`, host lists,
 * unknown parameters and a bad port. The URL is never put in a message.
 */
export function postgresTargetOf(
  connectionString: unknown,
  env: Readonly<Record<string, string | undefined>> = process.env,
): PostgresTarget | PostgresTargetProblem {
  const malformed = {
    parameter: 'connectionString',
    message: 'must be a postgres:// or postgresql:// URL (user:password@host:port/database)',
  };
  if (typeof connectionString !== 'string' || !/^postgres(ql)?:\/\//i.test(connectionString)) {
    return malformed;
  }
  // pg-connection-string's own steps: encode stray spaces and percent signs, then parse with a
  // placeholder host when the URL has credentials but no host (`u:pw@/db?host=/socket`).
  let text = connectionString;
  if (/ |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text)) {
    try {
      text = encodeURI(text).replace(/%25(\d\d)/g, '%$1');
    } catch {
      return malformed;
    }
  }
  let url: URL;
  let placeholder = false;
  try {
    url = new URL(text, 'postgres://base');
  } catch {
    try {
      url = new URL(text.replace('@/', '@___DUMMY___/'), 'postgres://base');
      placeholder = true;
    } catch {
      return malformed;
    }
  }
  const query = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (/^ssl/i.test(name)) {
      return {
        parameter: name,
        message: `may not carry "${name}": TLS is set by the sslMode (and sslCa) option`,
      };
    }
    if (name === 'hostaddr') {
      return {
        parameter: name,
        message: 'may not carry "hostaddr" (pg ignores it): give the address as the host',
      };
    }
    if (!POSTGRES_URL_PARAMETERS.includes(name)) {
      const shown = /^[\w-]{1,40}$/.test(name) ? `"${name}"` : 'a parameter';
      return {
        parameter: shown === 'a parameter' ? 'query' : name,
        message: `may not carry ${shown} (accepted: ${POSTGRES_URL_PARAMETERS.join(', ')})`,
      };
    }
    query.set(name, value);
  }
  const hostname = (placeholder ? '' : url.hostname).replace(/^\[(.+)\]$/, '$1');
  let pathname = url.pathname;
  let host = query.get('host') ?? '';
  if (host === '') {
    const name = decoded(hostname);
    if (name === undefined) return malformed;
    host = name;
  } else if (hostname !== '' && /^%2f/i.test(hostname)) {
    pathname = hostname + pathname;
  }
  if (host === '') host = env.PGHOST ?? '';
  if (host === '') host = 'localhost';
  if (host.includes(',')) {
    return {
      parameter: 'host',
      message: 'names a list of hosts; pg connects to one host: give exactly one',
    };
  }
  const portText = query.get('port') || url.port || env.PGPORT || '5432';
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 1 && port <= 65_535)) {
    return { parameter: 'port', message: 'has a port that is not an integer from 1 to 65535' };
  }
  const user = query.get('user') || decoded(url.username);
  const password = query.get('password') || decoded(url.password);
  if (user === undefined || password === undefined) return malformed;
  let database: string | undefined;
  const path = pathname.slice(1);
  if (path !== '') {
    try {
      database = decodeURI(path);
    } catch {
      return malformed;
    }
  }
  const parameters: Record<string, string> = {};
  for (const name of PASSED_ON) {
    const value = query.get(name);
    if (value !== undefined) parameters[name] = value;
  }
  return {
    host,
    port,
    user: user === '' ? undefined : user,
    password: password === '' ? undefined : password,
    database,
    parameters,
    local: isLocalPostgresHost(host),
  };
}

/** True when {@link postgresTargetOf} refused the URL. */
export function isPostgresTargetProblem(
  value: PostgresTarget | PostgresTargetProblem,
): value is PostgresTargetProblem {
  return 'message' in value;
}

/**
 * The TLS mode to use: the one configured, else `disable` for a local target (loopback or a
 * Unix socket) and `verify-full` for every other.
 */
export function postgresTlsModeOf(
  target: PostgresTarget,
  configured: PostgresTlsMode | undefined,
): PostgresTlsMode {
  return configured ?? (target.local ? 'disable' : 'verify-full');
}

/**
 * The connection fields for `pg` (`Pool` or `Client`): the target's host, port, user, password,
 * database and passed-on parameters, and `ssl` for `mode`. No `connectionString`, so `pg` cannot
 * read the URL another way than the TLS decision did.
 */
export function postgresConnectionConfig(
  target: PostgresTarget,
  mode: PostgresTlsMode,
  ca: string | undefined,
): Record<string, unknown> {
  return {
    ...target.parameters,
    host: target.host,
    port: target.port,
    ...(target.user === undefined ? {} : { user: target.user }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.database === undefined ? {} : { database: target.database }),
    ssl:
      mode === 'disable'
        ? false
        : { rejectUnauthorized: mode === 'verify-full', ...(ca === undefined ? {} : { ca }) },
  };
}

/**
 * Loads the optional peer `pg` (a computed specifier: it is optional and ships no types of its
 * own); `missing` builds the error thrown when it is not installed.
 */
export async function importPg<T>(missing: (cause: unknown) => Error): Promise<T> {
  const name = 'pg';
  let module: Record<string, unknown>;
  try {
    module = (await import(name)) as Record<string, unknown>;
  } catch (error) {
    throw missing(error);
  }
  return (module.default ?? module) as T;
}
