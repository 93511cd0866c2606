import { basename } from 'node:path';
import jsonc from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { isRecord } from '../is-record.js';
import { GatewayConfigError } from './errors.js';

/** The MCP clients whose config files `toolfence-mcp wrap` reads and rewrites. */
export const CLIENT_KINDS: readonly ['claude', 'cursor', 'vscode', 'codex'] = Object.freeze([
  'claude',
  'cursor',
  'vscode',
  'codex',
] as const);

/** One of {@link CLIENT_KINDS}. */
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** What a client file is read with. */
export interface ClientFileOptions {
  /** Claude Code's `~/.claude.json` only: the project folder whose `mcpServers` are meant. Default: the top-level ones. */
  readonly project?: string;
  /** Replaces `${userHome}` (Cursor, VS Code). Default: the `HOME` of `env`, else the variable is refused. */
  readonly home?: string;
  /** Replaces `${workspaceFolder}` (Cursor, VS Code). Default: the folder holding `.cursor` or `.vscode`. */
  readonly workspace?: string;
}

/** A client's servers in the shape of `toolfence.json`. */
export interface ImportedServers {
  /** The client the file belongs to. */
  readonly client: ClientKind;
  /** Servers moved behind the gateway, in `toolfence.json` shape with their variables kept. */
  readonly mcpServers: Readonly<Record<string, Record<string, unknown>>>;
  /** Names of the environment variables the moved servers read (expanded when the gateway starts). */
  readonly variables: readonly string[];
  /** VS Code: each `${input:ID}` used, by the variable that now carries it (`TOOLFENCE_INPUT_<ID>`). */
  readonly inputs: Readonly<Record<string, string>>;
  /** Servers left in the client file (disabled in Codex), by name. */
  readonly kept: readonly string[];
  /** Keys read but not carried over (client-side timeouts), as `server.key`. */
  readonly dropped: readonly string[];
}

/** The gateway's own entry, written into the client file in place of the moved servers. */
export interface GatewayEntry {
  /** The server name it is listed under. Default `toolfence`. */
  readonly name?: string;
  /** The executable. Default `toolfence-mcp`. */
  readonly command?: string;
  /** Its arguments (`serve --config <absolute path>`). */
  readonly args: readonly string[];
}

/** The result of rewriting a client file. */
export interface WrappedClientFile {
  /** The new file text: the client's other settings untouched, its servers replaced by the gateway. */
  readonly text: string;
  /** What was moved. */
  readonly imported: ImportedServers;
}

const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,23}$/;
const VARIABLE = /\$\{([^}]*)\}/g;

function fail(message: string, at: string): never {
  throw new GatewayConfigError(`${at}: ${message}`, { details: { at } });
}

function shownKey(key: string): string {
  return /^[\w$.-]{1,40}$/.test(key) ? `"${key}"` : 'a key';
}

function onlyKeys(record: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) {
      fail(
        `${shownKey(key)} is not supported behind the gateway (accepted: ${allowed.join(', ')})`,
        at,
      );
    }
  }
}

interface Translation {
  readonly client: ClientKind;
  readonly home: string | undefined;
  readonly workspace: string | undefined;
  readonly variables: Set<string>;
  readonly inputs: Map<string, string>;
}

/** The environment variable that carries VS Code's `${input:ID}` to the gateway. */
export function inputVariable(id: string): string {
  return `TOOLFENCE_INPUT_${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

// Rewrites one string's variables into the gateway's syntax (`${VAR}`, `${VAR:-default}`,
// `${env:VAR}`), resolving the editor-only ones (`${userHome}`, `${workspaceFolder}`) now.
function translate(text: string, at: string, context: Translation): string {
  return text.replace(VARIABLE, (whole, inner: string) => {
    if (context.client === 'codex') {
      return fail(
        `Codex does not expand "\${...}"; the gateway would, so this value is refused`,
        at,
      );
    }
    const plain = /^([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?$/.exec(inner);
    if (context.client === 'claude') {
      if (plain === null) fail(`Claude Code variables are \${VAR} or \${VAR:-default}`, at);
      context.variables.add(plain[1] as string);
      return whole;
    }
    const env = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(inner);
    if (env !== null) {
      context.variables.add(env[1] as string);
      return whole;
    }
    if (inner === 'userHome') {
      return context.home ?? fail(`\${userHome} needs HOME to be set`, at);
    }
    if (inner === 'workspaceFolder') {
      return context.workspace ?? fail(`\${workspaceFolder} needs the workspace folder`, at);
    }
    if (inner === 'workspaceFolderBasename') {
      return context.workspace === undefined
        ? fail(`\${workspaceFolderBasename} needs the workspace folder`, at)
        : basename(context.workspace);
    }
    if (inner === 'pathSeparator' || inner === '/') return '/';
    const input = /^input:([A-Za-z0-9_.-]{1,64})$/.exec(inner);
    if (input !== null && context.client === 'vscode') {
      const variable = inputVariable(input[1] as string);
      context.inputs.set(input[1] as string, variable);
      context.variables.add(variable);
      return `\${${variable}}`;
    }
    const shown = /^[\w:.-]{1,40}$/.test(inner) ? ` \${${inner}}` : '';
    const accepted = `\${env:NAME}, \${userHome}, \${workspaceFolder}${context.client === 'vscode' ? `, \${input:ID}` : ''}`;
    return fail(
      `the variable${shown} cannot be resolved by the gateway (accepted: ${accepted})`,
      at,
    );
  });
}

function strings(value: unknown, at: string, context: Translation): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    fail('must be an array of strings', at);
  }
  return value.map((item, index) => translate(item, `${at}[${index}]`, context));
}

function stringMap(value: unknown, at: string, context: Translation): Record<string, string> {
  if (!isRecord(value)) fail('must be an object of strings', at);
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') fail(`${shownKey(key)} must be a string`, at);
    out[key] = translate(item, `${at}.${key}`, context);
  }
  return out;
}

function checkName(name: string, at: string): void {
  if (!NAME.test(name)) {
    fail(
      'the gateway needs server names of 1-24 letters, digits, "-" and "_" (no "__"); rename it first',
      at,
    );
  }
}

// Claude Code, Cursor and VS Code share one entry shape: command/args/env or url/headers.
function jsonEntry(
  name: string,
  value: unknown,
  at: string,
  context: Translation,
): Record<string, unknown> {
  checkName(name, at);
  if (!isRecord(value)) fail('must be an object with "command" or "url"', at);
  const keys = ['type', 'command', 'args', 'env', 'url', 'headers'];
  onlyKeys(value, keys, at);
  const type = value.type;
  if (type === 'sse') fail('SSE-only servers cannot be put behind the gateway', `${at}.type`);
  if (
    type !== undefined &&
    !['stdio', 'http', 'streamable-http', 'streamableHttp'].includes(type as string)
  ) {
    fail('type must be "stdio" or "http"', `${at}.type`);
  }
  const out: Record<string, unknown> = {};
  if (value.command !== undefined) {
    if (typeof value.command !== 'string') fail('must be a string', `${at}.command`);
    out.command = translate(value.command, `${at}.command`, context);
    if (value.args !== undefined) out.args = strings(value.args, `${at}.args`, context);
    if (value.env !== undefined) out.env = stringMap(value.env, `${at}.env`, context);
  }
  if (value.url !== undefined) {
    if (typeof value.url !== 'string') fail('must be a string', `${at}.url`);
    out.url = translate(value.url, `${at}.url`, context);
    if (value.headers !== undefined)
      out.headers = stringMap(value.headers, `${at}.headers`, context);
  }
  if (type === 'stdio' || type === 'http') out.type = type;
  if (out.command === undefined && out.url === undefined) {
    fail('needs "command" (stdio) or "url" (HTTP)', at);
  }
  return out;
}

const CODEX_KEYS = [
  'command',
  'args',
  'env',
  'env_vars',
  'url',
  'http_headers',
  'env_http_headers',
  'bearer_token_env_var',
  'enabled',
  'enabled_tools',
  'disabled_tools',
  'startup_timeout_sec',
  'startup_timeout_ms',
  'tool_timeout_sec',
];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function envName(value: unknown, at: string): string {
  if (typeof value !== 'string' || !ENV_NAME.test(value)) {
    fail('must be an environment variable name', at);
  }
  return value;
}

function codexEntry(
  name: string,
  value: unknown,
  at: string,
  context: Translation,
  dropped: string[],
): Record<string, unknown> {
  checkName(name, at);
  if (!isRecord(value)) fail('must be a table with "command" or "url"', at);
  onlyKeys(value, CODEX_KEYS, at);
  for (const key of ['startup_timeout_sec', 'startup_timeout_ms', 'tool_timeout_sec']) {
    if (value[key] !== undefined) dropped.push(`${name}.${key}`);
  }
  const out: Record<string, unknown> = {};
  if (value.command !== undefined) {
    if (typeof value.command !== 'string') fail('must be a string', `${at}.command`);
    out.command = translate(value.command, `${at}.command`, context);
    if (value.args !== undefined) out.args = strings(value.args, `${at}.args`, context);
    const env: Record<string, string> =
      value.env === undefined ? {} : stringMap(value.env, `${at}.env`, context);
    if (value.env_vars !== undefined) {
      if (!Array.isArray(value.env_vars)) fail('must be an array of names', `${at}.env_vars`);
      value.env_vars.forEach((item, index) => {
        const variable = envName(item, `${at}.env_vars[${index}]`);
        context.variables.add(variable);
        env[variable] ??= `\${${variable}:-}`;
      });
    }
    if (Object.keys(env).length > 0) out.env = env;
    for (const key of ['url', 'http_headers', 'env_http_headers', 'bearer_token_env_var']) {
      if (value[key] !== undefined) fail(`"${key}" applies to url servers only`, at);
    }
  } else if (value.url !== undefined) {
    if (typeof value.url !== 'string') fail('must be a string', `${at}.url`);
    out.url = translate(value.url, `${at}.url`, context);
    const headers: Record<string, string> =
      value.http_headers === undefined
        ? {}
        : stringMap(value.http_headers, `${at}.http_headers`, context);
    if (value.env_http_headers !== undefined) {
      if (!isRecord(value.env_http_headers)) {
        fail('must be a table of header = "VARIABLE"', `${at}.env_http_headers`);
      }
      for (const [header, variable] of Object.entries(value.env_http_headers)) {
        const checked = envName(variable, `${at}.env_http_headers.${header}`);
        context.variables.add(checked);
        headers[header] = `\${${checked}}`;
      }
    }
    if (value.bearer_token_env_var !== undefined) {
      const variable = envName(value.bearer_token_env_var, `${at}.bearer_token_env_var`);
      context.variables.add(variable);
      headers.Authorization = `Bearer \${${variable}}`;
    }
    if (Object.keys(headers).length > 0) out.headers = headers;
    for (const key of ['args', 'env', 'env_vars']) {
      if (value[key] !== undefined) fail(`"${key}" applies to command servers only`, at);
    }
  } else {
    fail('needs "command" (stdio) or "url" (HTTP)', at);
  }
  for (const [key, target] of [
    ['enabled_tools', 'allow'],
    ['disabled_tools', 'deny'],
  ] as const) {
    if (value[key] === undefined) continue;
    const list = value[key];
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string')) {
      fail('must be an array of tool names', `${at}.${key}`);
    }
    out[target] = [...list];
  }
  return out;
}

interface Located {
  /** The servers object as parsed. */
  readonly servers: Record<string, unknown>;
  /** Where it sits in the JSON document. */
  readonly path: readonly (string | number)[];
  /** How the file is read: what `at` messages start with. */
  readonly at: string;
}

function parseJson(text: string, client: ClientKind, file: string): unknown {
  const errors: jsonc.ParseError[] = [];
  const value: unknown = jsonc.parse(text, errors, {
    allowTrailingComma: true,
    disallowComments: client !== 'vscode' && client !== 'cursor',
  });
  const first = errors[0];
  if (first !== undefined) {
    const line = text.slice(0, first.offset).split('\n').length;
    fail(`is not valid JSON${client === 'vscode' ? ' with comments' : ''} (line ${line})`, file);
  }
  return value;
}

function locate(
  document: unknown,
  client: ClientKind,
  file: string,
  project: string | undefined,
): Located {
  if (!isRecord(document)) fail('must hold a JSON object', file);
  const key = client === 'vscode' ? 'servers' : 'mcpServers';
  if (project !== undefined) {
    if (client !== 'claude') fail("--project applies to Claude Code's ~/.claude.json only", file);
    const projects = document.projects;
    const entry = isRecord(projects) ? projects[project] : undefined;
    if (!isRecord(entry)) fail(`has no project ${JSON.stringify(project)} under "projects"`, file);
    const servers = entry.mcpServers ?? {};
    if (!isRecord(servers))
      fail('must be an object of servers', `${file}: projects.<project>.mcpServers`);
    return {
      servers,
      path: ['projects', project, 'mcpServers'],
      at: `${file}: projects.<project>.mcpServers`,
    };
  }
  const servers = document[key] ?? {};
  if (!isRecord(servers)) fail(`"${key}" must be an object of servers by name`, file);
  return { servers, path: [key], at: `${file}: ${key}` };
}

function context(client: ClientKind, options: ClientFileOptions): Translation {
  return {
    client,
    home: options.home,
    workspace: options.workspace,
    variables: new Set(),
    inputs: new Map(),
  };
}

function finish(
  client: ClientKind,
  mcpServers: Record<string, Record<string, unknown>>,
  translation: Translation,
  kept: string[],
  dropped: string[],
): ImportedServers {
  return Object.freeze({
    client,
    mcpServers,
    variables: Object.freeze([...translation.variables].sort()),
    inputs: Object.freeze(Object.fromEntries(translation.inputs)),
    kept: Object.freeze(kept),
    dropped: Object.freeze(dropped),
  });
}

/**
 * Reads a client's config file as it is: Claude Code (`.mcp.json`, `~/.claude.json`), Cursor
 * (`.cursor/mcp.json`), VS Code (`.vscode/mcp.json`, JSON with comments) or Codex
 * (`~/.codex/config.toml`), and returns its servers in `toolfence.json` shape. Variables are kept
 * in a syntax the gateway expands when it starts (`${VAR}`, `${VAR:-default}`, `${env:VAR}`);
 * editor-only ones (`${userHome}`, `${workspaceFolder}`) are resolved now, VS Code's `${input:ID}`
 * becomes `${TOOLFENCE_INPUT_<ID>}`. Every key that cannot be carried over is refused with a
 * {@link GatewayConfigError} naming the server and the key.
 */
export function importClientServers(
  client: ClientKind,
  text: string,
  file: string,
  options: ClientFileOptions = {},
): ImportedServers {
  const translation = context(client, options);
  const mcpServers: Record<string, Record<string, unknown>> = {};
  const kept: string[] = [];
  const dropped: string[] = [];
  if (client === 'codex') {
    let document: Record<string, unknown>;
    try {
      document = parseToml(text) as Record<string, unknown>;
    } catch (error) {
      const line = (error as { line?: unknown }).line;
      throw new GatewayConfigError(
        `${file}: is not valid TOML${typeof line === 'number' ? ` (line ${line})` : ''}`,
        { cause: error, details: { at: file } },
      );
    }
    const servers = document.mcp_servers ?? {};
    if (!isRecord(servers)) fail('"mcp_servers" must be a table of servers', file);
    for (const [name, value] of Object.entries(servers)) {
      if (isRecord(value) && value.enabled === false) {
        kept.push(name);
        continue;
      }
      mcpServers[name] = codexEntry(
        name,
        value,
        `${file}: mcp_servers.${name}`,
        translation,
        dropped,
      );
    }
    return finish(client, mcpServers, translation, kept, dropped);
  }
  const located = locate(parseJson(text, client, file), client, file, options.project);
  for (const [name, value] of Object.entries(located.servers)) {
    mcpServers[name] = jsonEntry(name, value, `${located.at}.${name}`, translation);
  }
  if (client === 'vscode') {
    const document = jsonc.parse(text, [], { allowTrailingComma: true }) as Record<string, unknown>;
    const inputs = document.inputs ?? [];
    if (!Array.isArray(inputs)) fail('"inputs" must be an array', file);
    const declared = new Set(
      inputs.map((input) => (isRecord(input) && typeof input.id === 'string' ? input.id : '')),
    );
    for (const id of translation.inputs.keys()) {
      if (!declared.has(id)) fail(`\${input:${id}} is used but not declared in "inputs"`, file);
    }
  }
  return finish(client, mcpServers, translation, kept, dropped);
}

function gatewayFields(entry: GatewayEntry): { command: string; args: string[] } {
  return { command: entry.command ?? 'toolfence-mcp', args: [...entry.args] };
}

/**
 * Rewrites a client's config file so it lists only the gateway: the moved servers are replaced by
 * one entry running `toolfence-mcp serve`, and everything else in the file (other settings,
 * comments, VS Code's `inputs`, Codex's other tables) is left as it was. VS Code's inputs reach
 * the gateway as `TOOLFENCE_INPUT_<ID>` variables; Codex passes the variables the servers read
 * through `env_vars`. The result is parsed again and compared with the original before it is
 * returned, so nothing else in the file changes.
 */
export function wrapClientFile(
  client: ClientKind,
  text: string,
  file: string,
  entry: GatewayEntry,
  options: ClientFileOptions = {},
): WrappedClientFile {
  const imported = importClientServers(client, text, file, options);
  const name = entry.name ?? 'toolfence';
  if (imported.kept.includes(name)) fail(`already lists a server named "${name}"`, file);
  if (Object.keys(imported.mcpServers).length === 0) fail('lists no servers to move', file);
  const gateway = gatewayFields(entry);
  if (client === 'codex') return { text: wrapToml(text, file, imported, name, gateway), imported };
  const located = locate(parseJson(text, client, file), client, file, options.project);
  const value: Record<string, unknown> = { ...gateway };
  if (client === 'vscode') {
    value.type = 'stdio';
    if (Object.keys(imported.inputs).length > 0) {
      value.env = Object.fromEntries(
        Object.entries(imported.inputs).map(([id, variable]) => [variable, `\${input:${id}}`]),
      );
    }
  }
  const indent = /\n([ \t]+)"/.exec(text)?.[1] ?? '  ';
  const edits = jsonc.modify(
    text,
    [...located.path],
    { [name]: value },
    {
      formattingOptions: {
        insertSpaces: !indent.includes('\t'),
        tabSize: indent.includes('\t') ? 1 : indent.length,
        eol: text.includes('\r\n') ? '\r\n' : '\n',
      },
    },
  );
  const next = jsonc.applyEdits(text, edits);
  const before = jsonc.parse(text, [], { allowTrailingComma: true }) as Record<string, unknown>;
  const after = jsonc.parse(next, [], { allowTrailingComma: true }) as Record<string, unknown>;
  setPath(before, located.path, { [name]: value });
  if (JSON.stringify(sorted(before)) !== JSON.stringify(sorted(after))) {
    fail('could not be rewritten without changing other settings; edit it by hand', file);
  }
  return { text: next, imported };
}

function setPath(
  target: Record<string, unknown>,
  path: readonly (string | number)[],
  value: unknown,
): void {
  let current: Record<string, unknown> = target;
  for (const key of path.slice(0, -1)) current = current[key as string] as Record<string, unknown>;
  current[path[path.length - 1] as string] = value;
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted(value[key])]),
  );
}

// A TOML header's dotted key, as a list of key parts (bare, "basic" or 'literal').
function headerPath(line: string): string[] | undefined {
  const match = /^\s*\[\[?(.+?)\]\]?\s*(?:#.*)?$/.exec(line);
  if (match === null) return undefined;
  const parts: string[] = [];
  const pattern = /\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|'([^']*)')\s*(\.|$)/y;
  const source = match[1] as string;
  pattern.lastIndex = 0;
  while (pattern.lastIndex < source.length) {
    const part = pattern.exec(source);
    if (part === null) return undefined;
    parts.push(
      part[1] ?? (part[2] !== undefined ? JSON.parse(`"${part[2]}"`) : (part[3] as string)),
    );
    if (part[4] === '') break;
  }
  return parts;
}

function tomlString(value: string): string {
  return JSON.stringify(value);
}

function wrapToml(
  text: string,
  file: string,
  imported: ImportedServers,
  name: string,
  gateway: { command: string; args: string[] },
): string {
  const moved = new Set(Object.keys(imported.mcpServers));
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text.split(/\r?\n/);
  const out: string[] = [];
  let skipping = false;
  for (const line of lines) {
    const path = headerPath(line);
    if (path !== undefined) {
      skipping = path[0] === 'mcp_servers' && path[1] !== undefined && moved.has(path[1]);
    }
    if (!skipping) out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  const table = [
    '',
    `[mcp_servers.${name}]`,
    `command = ${tomlString(gateway.command)}`,
    `args = [${gateway.args.map(tomlString).join(', ')}]`,
    ...(imported.variables.length > 0
      ? [`env_vars = [${imported.variables.map(tomlString).join(', ')}]`]
      : []),
    '',
  ];
  const next = [...out, ...table].join(eol);
  let before: Record<string, unknown>;
  let after: Record<string, unknown>;
  try {
    before = parseToml(text) as Record<string, unknown>;
    after = parseToml(next) as Record<string, unknown>;
  } catch {
    return fail(
      'could not be rewritten as valid TOML; move its servers into [mcp_servers.<name>] tables',
      file,
    );
  }
  const servers = { ...(before.mcp_servers as Record<string, unknown>) };
  for (const key of moved) delete servers[key];
  servers[name] = {
    command: gateway.command,
    args: gateway.args,
    ...(imported.variables.length > 0 ? { env_vars: [...imported.variables] } : {}),
  };
  before.mcp_servers = servers;
  if (JSON.stringify(sorted(before)) !== JSON.stringify(sorted(after))) {
    fail(
      'could not be rewritten without changing other settings (servers written as dotted keys or inline tables?); move them into [mcp_servers.<name>] tables',
      file,
    );
  }
  return next;
}
