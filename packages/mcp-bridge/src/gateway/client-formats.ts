import { basename } from 'node:path';
import jsonc from 'jsonc-parser';
import { isRecord } from '../is-record.js';
import { lazyRequire } from '../lazy-require.js';
import { GatewayConfigError } from './errors.js';
import { shownName } from './shown-name.js';

/**
 * smol-toml, loaded on the first Codex config read (its CommonJS build): importing the package,
 * or a gateway that reads no Codex file, never loads it.
 */
const smolToml = lazyRequire<typeof import('smol-toml')>('smol-toml');
function parseToml(text: string): unknown {
  return smolToml().parse(text);
}

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
  /**
   * VS Code: each `${input:ID}` used, by the variable that now carries it (`TOOLFENCE_INPUT_<ID>`).
   * Two inputs that would share a variable (`api-key`, `api_key`), or an input whose variable a
   * value also reads from the environment, are refused (`WRAP_INPUT_COLLISION`).
   */
  readonly inputs: Readonly<Record<string, string>>;
  /** Servers left in the client file (disabled in Codex), by name. */
  readonly kept: readonly string[];
  /** Keys read but not carried over (client-side timeouts, auto-approval lists, descriptions), as `server.key`. */
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
  /** Where the servers sit in the file (`["mcpServers"]`, `["servers"]`, `["mcp_servers"]`, a project's). */
  readonly serversPath: readonly string[];
}

/** What `unwrap` puts back: the servers `wrap` moved, in place of the gateway's entry. */
export interface UnwrapPlan {
  /** The gateway entry's name (`toolfence`), removed. */
  readonly name: string;
  /** The servers `wrap` moved, restored from the backup as they were. */
  readonly servers: readonly string[];
  /** Where the servers sit in the file. */
  readonly serversPath: readonly string[];
}

// The server names `serve` accepts (gateway-config.ts): no "__", no "_" at the end.
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_|$)){0,23}$/;
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
  /** Variables read from the environment as written (not carrying an input). */
  readonly plain: Set<string>;
  readonly inputs: Map<string, string>;
}

/** The environment variable that carries VS Code's `${input:ID}` to the gateway. */
export function inputVariable(id: string): string {
  return `TOOLFENCE_INPUT_${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

function inputCollision(at: string, message: string): never {
  throw new GatewayConfigError(`${at}: ${message}`, {
    code: 'WRAP_INPUT_COLLISION',
    details: { at },
  });
}

// Two names that would reach the gateway as one variable would give one server another's secret,
// so every input's variable must be its own: not another input's, not a variable read as written.
function addInput(context: Translation, id: string, at: string): void {
  const variable = inputVariable(id);
  for (const [other, taken] of context.inputs) {
    if (other !== id && taken === variable) {
      inputCollision(
        at,
        `the inputs ${JSON.stringify(other)} and ${JSON.stringify(id)} would both reach the gateway as ${variable}; rename one of them`,
      );
    }
  }
  if (context.plain.has(variable)) {
    inputCollision(
      at,
      `\${input:${id}} would reach the gateway as ${variable}, a variable another value reads from the environment; rename the input`,
    );
  }
  context.inputs.set(id, variable);
  context.variables.add(variable);
}

function addPlain(context: Translation, variable: string, at: string): void {
  if ([...context.inputs.values()].includes(variable)) {
    inputCollision(
      at,
      `${variable} is also the variable that carries an input; rename the input or the variable`,
    );
  }
  context.plain.add(variable);
  context.variables.add(variable);
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
      addPlain(context, plain[1] as string, at);
      return whole;
    }
    const env = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(inner);
    if (env !== null) {
      addPlain(context, env[1] as string, at);
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
      addInput(context, input[1] as string, at);
      return `\${${inputVariable(input[1] as string)}}`;
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

/** An empty map without a prototype: a key named `__proto__` is a key like any other. */
function emptyMap<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

function stringMap(value: unknown, at: string, context: Translation): Record<string, string> {
  if (!isRecord(value)) fail('must be an object of strings', at);
  const out = emptyMap<string>();
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== 'string') fail(`${shownKey(key)} must be a string`, at);
    out[key] = translate(item, `${at}.${key}`, context);
  }
  return out;
}

function checkName(name: string, at: string): void {
  if (!NAME.test(name)) {
    fail(
      'the gateway needs server names of 1-24 letters, digits, "-" and "_", starting with a letter or digit, with no "__" and no "_" at the end; rename it first',
      at,
    );
  }
}

/**
 * Keys clients write in a server entry that the gateway reads and does not apply (client-side
 * timeouts, auto-approval lists, descriptions): left out of `toolfence.json` and reported.
 */
const CLIENT_ONLY_KEYS = [
  'timeout',
  'autoApprove',
  'alwaysAllow',
  'description',
  'trust',
  'dev',
  'gallery',
  'version',
];

// Claude Code, Cursor and VS Code share one entry shape: command/args/env or url/headers.
function jsonEntry(
  name: string,
  value: unknown,
  at: string,
  context: Translation,
  dropped: string[],
): Record<string, unknown> {
  checkName(name, at);
  if (!isRecord(value)) fail('must be an object with "command" or "url"', at);
  const keys = [
    'type',
    'command',
    'args',
    'env',
    'url',
    'headers',
    'disabled',
    ...CLIENT_ONLY_KEYS,
  ];
  onlyKeys(value, keys, at);
  for (const key of CLIENT_ONLY_KEYS) {
    if (value[key] !== undefined) dropped.push(`${name}.${key}`);
  }
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
  if (value.disabled !== undefined) {
    if (typeof value.disabled !== 'boolean') fail('must be true or false', `${at}.disabled`);
    out.disabled = value.disabled;
  }
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
      value.env === undefined ? emptyMap() : stringMap(value.env, `${at}.env`, context);
    if (value.env_vars !== undefined) {
      if (!Array.isArray(value.env_vars)) fail('must be an array of names', `${at}.env_vars`);
      value.env_vars.forEach((item, index) => {
        const variable = envName(item, `${at}.env_vars[${index}]`);
        addPlain(context, variable, `${at}.env_vars[${index}]`);
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
        ? emptyMap()
        : stringMap(value.http_headers, `${at}.http_headers`, context);
    if (value.env_http_headers !== undefined) {
      if (!isRecord(value.env_http_headers)) {
        fail('must be a table of header = "VARIABLE"', `${at}.env_http_headers`);
      }
      for (const [header, variable] of Object.entries(value.env_http_headers)) {
        const checked = envName(variable, `${at}.env_http_headers.${header}`);
        addPlain(context, checked, `${at}.env_http_headers`);
        headers[header] = `\${${checked}}`;
      }
    }
    if (value.bearer_token_env_var !== undefined) {
      const variable = envName(value.bearer_token_env_var, `${at}.bearer_token_env_var`);
      addPlain(context, variable, `${at}.bearer_token_env_var`);
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
  refuseProtoKeys(text, file);
  return value;
}

// A JSON reader that assigns keys one by one drops a key named "__proto__" (it sets the object's
// prototype instead), so a server or variable of that name would vanish without a word: refused.
function refuseProtoKeys(text: string, file: string): void {
  let found: number | undefined;
  jsonc.visit(
    text,
    {
      onObjectProperty: (property, _offset, _length, startLine) => {
        if (property === '__proto__' && found === undefined) found = startLine + 1;
      },
    },
    { allowTrailingComma: true },
  );
  if (found !== undefined) {
    throw new GatewayConfigError(
      `${file}: has a key named "__proto__" (line ${found}), which no config can use safely; rename it`,
      { code: 'WRAP_PROTO_KEY', details: { at: file } },
    );
  }
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
    plain: new Set(),
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
 * {@link GatewayConfigError} naming the server and the key; a JSON key named `__proto__`
 * anywhere in the file is refused (`WRAP_PROTO_KEY`) rather than dropped. `disabled` is carried
 * over; `timeout`, `autoApprove`, `alwaysAllow`, `description`, `trust` and VS Code's `dev`,
 * `gallery` and `version` are left out and listed in `dropped`.
 */
export function importClientServers(
  client: ClientKind,
  text: string,
  file: string,
  options: ClientFileOptions = {},
): ImportedServers {
  const translation = context(client, options);
  const mcpServers = emptyMap<Record<string, unknown>>();
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
        `${file}: mcp_servers.${NAME.test(name) ? name : shownName(name)}`,
        translation,
        dropped,
      );
    }
    return finish(client, mcpServers, translation, kept, dropped);
  }
  const located = locate(parseJson(text, client, file), client, file, options.project);
  for (const [name, value] of Object.entries(located.servers)) {
    mcpServers[name] = jsonEntry(
      name,
      value,
      `${located.at}.${NAME.test(name) ? name : shownName(name)}`,
      translation,
      dropped,
    );
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
  if (client === 'codex') {
    return {
      text: wrapToml(text, file, imported, name, gateway),
      imported,
      serversPath: ['mcp_servers'],
    };
  }
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
  const edits = jsonc.modify(text, [...located.path], { [name]: value }, formatting(text));
  const next = jsonc.applyEdits(text, edits);
  const before = jsonc.parse(text, [], { allowTrailingComma: true }) as Record<string, unknown>;
  const after = jsonc.parse(next, [], { allowTrailingComma: true }) as Record<string, unknown>;
  setPath(before, located.path, { [name]: value });
  if (JSON.stringify(sorted(before)) !== JSON.stringify(sorted(after))) {
    fail('could not be rewritten without changing other settings; edit it by hand', file);
  }
  return { text: next, imported, serversPath: located.path.map(String) };
}

function formatting(text: string): jsonc.ModificationOptions {
  const indent = /\n([ \t]+)"/.exec(text)?.[1] ?? '  ';
  return {
    formattingOptions: {
      insertSpaces: !indent.includes('\t'),
      tabSize: indent.includes('\t') ? 1 : indent.length,
      eol: text.includes('\r\n') ? '\r\n' : '\n',
    },
  };
}

function at(document: unknown, path: readonly string[]): unknown {
  let current = document;
  for (const key of path) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

function unwrapConflict(file: string, server: string): never {
  const shown = NAME.test(server) ? `"${server}"` : 'a moved server';
  throw new GatewayConfigError(
    `${file}: lists ${shown} again, not as it was when wrap moved it; unwrap --force restores the backup whole (dropping the client's later changes), or remove that entry first`,
    { code: 'WRAP_UNWRAP_CONFLICT', details: { at: file } },
  );
}

const same = (a: unknown, b: unknown): boolean =>
  JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/**
 * Undoes `wrap` in a client file the client has rewritten since: removes the gateway's entry and
 * puts back the servers `wrap` moved, as the backup holds them, and leaves everything else of the
 * current file as it is (Claude Code's own state in `~/.claude.json`, a new setting, a server
 * added since). A moved server's name listed again with another entry is refused
 * (`WRAP_UNWRAP_CONFLICT`). The result is parsed again and compared with what was meant.
 */
export function unwrapClientFile(
  client: ClientKind,
  current: string,
  backup: string,
  file: string,
  plan: UnwrapPlan,
): string {
  if (client === 'codex') return unwrapToml(current, backup, file, plan);
  const original = at(jsonc.parse(backup, [], { allowTrailingComma: true }), plan.serversPath);
  if (!isRecord(original)) fail('the backup does not hold the moved servers', file);
  const now = parseJson(current, client, file);
  const listed = at(now, plan.serversPath) ?? {};
  if (!isRecord(listed)) fail('the servers are no longer an object; edit the file by hand', file);
  let text = current;
  const expected = jsonc.parse(current, [], { allowTrailingComma: true }) as Record<
    string,
    unknown
  >;
  const servers: Record<string, unknown> = emptyMap();
  Object.assign(servers, listed);
  if (Object.hasOwn(listed, plan.name)) {
    text = jsonc.applyEdits(
      text,
      jsonc.modify(text, [...plan.serversPath, plan.name], undefined, formatting(text)),
    );
    delete servers[plan.name];
  }
  for (const server of plan.servers) {
    if (!Object.hasOwn(original, server)) continue;
    const value = original[server];
    if (Object.hasOwn(listed, server)) {
      if (same(listed[server], value)) continue;
      unwrapConflict(file, server);
    }
    text = jsonc.applyEdits(
      text,
      jsonc.modify(text, [...plan.serversPath, server], value, formatting(text)),
    );
    servers[server] = value;
  }
  setDeep(expected, plan.serversPath, servers);
  if (!same(expected, jsonc.parse(text, [], { allowTrailingComma: true }))) {
    fail(
      'could not be restored without changing other settings; unwrap --force restores the backup whole',
      file,
    );
  }
  return text;
}

function setDeep(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let current = target;
  for (const key of path.slice(0, -1)) {
    if (!isRecord(current[key])) current[key] = {};
    current = current[key] as Record<string, unknown>;
  }
  current[path[path.length - 1] as string] = value;
}

function unwrapToml(current: string, backup: string, file: string, plan: UnwrapPlan): string {
  let before: Record<string, unknown>;
  let original: Record<string, unknown>;
  try {
    before = parseToml(current) as Record<string, unknown>;
    original = parseToml(backup) as Record<string, unknown>;
  } catch (error) {
    throw new GatewayConfigError(`${file}: is not valid TOML; unwrap --force restores the backup`, {
      cause: error,
      details: { at: file },
    });
  }
  const listed = isRecord(before.mcp_servers) ? before.mcp_servers : {};
  const originals = isRecord(original.mcp_servers) ? original.mcp_servers : {};
  const restore = new Set<string>();
  for (const server of plan.servers) {
    if (!Object.hasOwn(originals, server)) continue;
    if (Object.hasOwn(listed, server)) {
      if (same(listed[server], originals[server])) continue;
      unwrapConflict(file, server);
    }
    restore.add(server);
  }
  const chunk: string[] = [];
  let taking = false;
  for (const line of linesOf(backup)) {
    const bare = line.replace(/\r?\n$/, '');
    const path = headerPath(bare);
    if (path !== undefined) taking = path[0] === 'mcp_servers' && restore.has(path[1] ?? '');
    if (taking) chunk.push(bare);
  }
  while (chunk.length > 0 && (chunk[chunk.length - 1] as string).trim() === '') chunk.pop();
  const next = replaceTables(
    current,
    (path) => path[0] === 'mcp_servers' && path[1] === plan.name,
    chunk,
  );
  const servers: Record<string, unknown> = { ...listed };
  delete servers[plan.name];
  for (const server of restore) servers[server] = originals[server];
  before.mcp_servers = servers;
  let after: Record<string, unknown> | undefined;
  try {
    after = { ...(parseToml(next) as Record<string, unknown>) };
  } catch {
    after = undefined;
  }
  // A file whose only server was the gateway has no mcp_servers table left.
  if (Object.keys(servers).length === 0 && after !== undefined && after.mcp_servers === undefined) {
    delete before.mcp_servers;
  }
  if (!same(before, after)) {
    fail(
      'could not be restored without changing other settings; unwrap --force restores the backup whole',
      file,
    );
  }
  return next;
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

/** A text's lines, each with its own line ending (`\n`, `\r\n` or none for the last). */
function linesOf(text: string): string[] {
  return text.split(/(?<=\n)/).filter((line) => line !== '');
}

/**
 * Removes the TOML tables (and their sub-tables) whose header path `drop` picks, and appends the
 * lines of `table`. Every other line is kept byte for byte, line ending included, so a file with
 * mixed line endings changes only where tables were removed or added; the added lines take the
 * line ending of the file's first line.
 */
export function replaceTables(
  text: string,
  drop: (path: readonly string[]) => boolean,
  table: readonly string[],
): string {
  const lines = linesOf(text);
  const eol = /\r\n$/.test(lines[0] ?? '') ? '\r\n' : '\n';
  let out = '';
  let skipping = false;
  for (const line of lines) {
    const path = headerPath(line.replace(/\r?\n$/, ''));
    if (path !== undefined) skipping = drop(path);
    if (!skipping) out += line;
  }
  if (table.length === 0) return out;
  if (out !== '' && !out.endsWith('\n')) out += eol;
  return `${out}${out === '' || /(^|\n)\r?\n$/.test(out) ? '' : eol}${table.map((line) => `${line}${eol}`).join('')}`;
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
  const table = [
    `[mcp_servers.${name}]`,
    `command = ${tomlString(gateway.command)}`,
    `args = [${gateway.args.map(tomlString).join(', ')}]`,
    ...(imported.variables.length > 0
      ? [`env_vars = [${imported.variables.map(tomlString).join(', ')}]`]
      : []),
  ];
  const next = replaceTables(
    text,
    (path) => path[0] === 'mcp_servers' && moved.has(path[1] ?? ''),
    table,
  );
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
