import { VERSION } from '../version.js';
import {
  CLIENT_MIN_VERSIONS,
  getHookSetup,
  HOOK_CLIENTS,
  type HookClient,
} from './client-setup.js';
import { HookPayloadOptionError } from './errors.js';
import { HOOK_PROTOCOL_VERSION, HOOK_SCRIPT, HOOK_SCRIPT_FILENAME } from './hook-script.js';

/** Options of {@link buildMissingHookPayload}. */
export interface MissingHookPayloadOptions {
  /** Where your toolkit documents attachments (an `https://` or `http://` URL). */
  readonly docsUrl: string;
  /** A tool of yours that takes attachments, named in the retry instruction. */
  readonly exampleToolName: string;
  /** Your toolkit's name as users know it. */
  readonly displayName: string;
  /**
   * The most attachment bytes one call to your toolkit may carry (all files together), as your
   * server's transport admits them (see `attachmentTransportLimits`). When set, the payload asks
   * for the hook to be installed with this budget, so the hook denies a larger file in the client
   * with a reason the model can act on. Default: unset (the hook's own 25 MiB default applies).
   */
  readonly maxAttachmentBytes?: number;
  /**
   * The name users usually give your server in their client config (`mcp__<name>__<tool>`), used
   * in the install command for the budget. Default: a placeholder the model fills in from the
   * tool name it called.
   */
  readonly serverName?: string;
}

const OPTION_KEYS = new Set([
  'docsUrl',
  'exampleToolName',
  'displayName',
  'maxAttachmentBytes',
  'serverName',
]);

/** Largest budget the hook accepts, in bytes (256 MiB). */
const BUDGET_CEILING = 268435456;

/** The lean, machine-readable part of the payload. */
export interface MissingHookExtra {
  /** File name the hook script is installed under ({@link HOOK_SCRIPT_FILENAME}). */
  readonly hook_filename: string;
  /** The minimum hook protocol version the server needs. */
  readonly min_version: number;
  /** The toolkit's attachment documentation (`docsUrl` of the options). */
  readonly docs_url: string;
  /** The toolkit's attachment budget in bytes (`maxAttachmentBytes`), when it has one. */
  readonly max_attachment_bytes?: number;
}

/** What a server answers when an attachment still arrives as `file://`. */
export interface MissingHookPayload {
  /**
   * Compact JSON text for the model (about 2 KB, no script): what to ask the user, one install
   * line per client, where the script is, how to retry. What `missingHookToolResult` sends.
   */
  readonly message: string;
  /**
   * The full JSON text for programs (about 51 KB): `message`'s facts plus the whole hook script
   * (`hook_script`) and each client's registration block (`setup_by_host`). Never send it to a
   * model: it costs about 13,000 tokens.
   */
  readonly fullMessage: string;
  /** One paragraph for logs and developers. */
  readonly developerMessage: string;
  /** The lean, machine-readable facts, also sent in the tool result's `_meta`. */
  readonly extra: MissingHookExtra;
}

/**
 * The install-or-upgrade payload as an MCP `CallToolResult` (plain object, no SDK import). A type
 * alias with mutable arrays, so it is assignable to the SDK's `CallToolResult`.
 */
export type MissingHookToolResult = {
  /** A single text block holding the payload's `message`. */
  content: [
    {
      /** Always a text block. */
      type: 'text';
      /** The payload's `message`: the self-sufficient JSON text for the model. */
      text: string;
    },
  ];
  /** Always true: the call failed and must be retried once the hook is installed. */
  isError: true;
  /** Result metadata carrying the lean payload. */
  _meta: {
    /** The payload's `extra`, under {@link MISSING_HOOK_META_KEY}. */
    'dev.toolfence/missing-hook': MissingHookExtra & {
      /** The payload's `developerMessage`. */
      readonly developer_message: string;
    };
  };
};

/** Key of the tool result's `_meta` entry that carries the lean payload. */
export const MISSING_HOOK_META_KEY = 'dev.toolfence/missing-hook';

function requireText(value: unknown, option: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 2000) {
    throw new HookPayloadOptionError(`${option} must be a non-empty string`, {
      details: { option },
    });
  }
  return value;
}

/**
 * Builds the install-or-upgrade payload a server returns when an attachment still has a
 * `file://` source: the hook did not run in the user's client (not installed, not trusted, or
 * older than {@link HOOK_PROTOCOL_VERSION}). Nothing of the call should be sent onward.
 *
 * @throws {HookPayloadOptionError} `HOOK_PAYLOAD_OPTION_INVALID` for a missing or bad option.
 */
export function buildMissingHookPayload(options: MissingHookPayloadOptions): MissingHookPayload {
  if (typeof options !== 'object' || options === null) {
    throw new HookPayloadOptionError('options must be an object', {
      details: { option: 'options' },
    });
  }
  const docsUrl = requireText(options.docsUrl, 'docsUrl');
  if (!/^https?:\/\/[^\s]+$/i.test(docsUrl)) {
    throw new HookPayloadOptionError('docsUrl must be an http(s) URL', {
      details: { option: 'docsUrl' },
    });
  }
  const exampleToolName = requireText(options.exampleToolName, 'exampleToolName');
  const displayName = requireText(options.displayName, 'displayName');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw new HookPayloadOptionError(
        `unknown option "${key.slice(0, 40)}"; accepted: ${[...OPTION_KEYS].join(', ')}`,
        { details: { option: key.slice(0, 40) } },
      );
    }
  }
  const budget = options.maxAttachmentBytes;
  if (
    budget !== undefined &&
    (typeof budget !== 'number' ||
      !Number.isSafeInteger(budget) ||
      budget < 1 ||
      budget > BUDGET_CEILING)
  ) {
    throw new HookPayloadOptionError(
      `maxAttachmentBytes must be a whole number of bytes from 1 to ${BUDGET_CEILING}`,
      { details: { option: 'maxAttachmentBytes' } },
    );
  }
  const serverName = options.serverName;
  if (serverName !== undefined && !SERVER_NAME.test(String(serverName))) {
    throw new HookPayloadOptionError(
      'serverName must be 1 to 128 letters, digits, "_", "-" or "."',
      { details: { option: 'serverName' } },
    );
  }
  const budgetFlag = budget === undefined ? '' : ` --budget ${serverName ?? '<server>'}=${budget}`;
  const setupByHost: Record<string, unknown> = {};
  for (const client of HOOK_CLIENTS) setupByHost[client] = describeClient(client);
  const installCommand = `npx -y @toolfence/host-config install --client <${HOOK_CLIENTS.join('|')}> [--scope user|project]${budgetFlag}`;
  const compact = {
    error: 'attachment_hook_missing',
    title: `${displayName} needs the toolfence attachment hook in your MCP client`,
    required_protocol_version: HOOK_PROTOCOL_VERSION,
    hook_filename: HOOK_SCRIPT_FILENAME,
    explanation: `An attachment reached ${displayName} as a file:// URL, so nothing was sent. A client-side hook (protocol ${HOOK_PROTOCOL_VERSION} or newer) must replace file:///absolute/path with the file's bytes before the call leaves the client; in this client it is not installed, not trusted, or too old.`,
    ask_user: `Ask the user which MCP client they use and whether the hook should apply to all projects (user scope, the default) or this project only (--scope project), then offer to run that client's install line. Mention that the hook reads local files the user can read, only when a tool call names one.`,
    install_by_client: Object.fromEntries(
      HOOK_CLIENTS.map((client) => [client, installLine(client, budgetFlag)]),
    ),
    ...(budget === undefined
      ? {}
      : {
          attachment_budget: `${displayName} accepts up to ${formatBytes(budget)} (${budget} bytes) of attachments per call; --budget makes the hook deny a larger file with a reason. ${serverName === undefined ? 'Replace <server> with the part between mcp__ and the next __ in the tool name you called.' : `If the user named this server differently in the client config, use that name instead of ${serverName}.`}`,
        }),
    script_location: `The install line writes the script ${HOOK_SCRIPT_FILENAME} (user scope: the path in parentheses) and registers it. Its text is the file hook/${HOOK_SCRIPT_FILENAME} of the npm package @toolfence/host-config@${VERSION}; see ${docsUrl} for manual setup.`,
    retry: `After the hook is installed and the client reloaded, call ${exampleToolName} again with the same file:///absolute/path source.`,
    docs_url: docsUrl,
  };
  const message = {
    error: 'attachment_hook_missing',
    title: `${displayName} needs the toolfence attachment hook in your MCP client`,
    explanation: `An attachment reached ${displayName} as a file:// URL. Local files are read on the user's machine by a client-side pre-tool-use hook that replaces file:///absolute/path with the file's bytes (data:<mime>;base64,...) before the call leaves the client. That hook is not installed, not trusted, or older than protocol ${HOOK_PROTOCOL_VERSION} in this client, so nothing was sent.`,
    required_protocol_version: HOOK_PROTOCOL_VERSION,
    hook_filename: HOOK_SCRIPT_FILENAME,
    install_command: installCommand,
    ...(budget === undefined
      ? {}
      : {
          attachment_budget: {
            max_bytes: budget,
            readable: formatBytes(budget),
            server_name: serverName ?? null,
            explanation: `${displayName} accepts up to ${formatBytes(budget)} (${budget} bytes) of attachments per call; larger calls do not fit its transport. Installed with --budget, the hook denies a larger file in the client with a reason instead of the connection being dropped. ${serverName === undefined ? 'Replace <server> with the name this server has in the client config: the part between mcp__ and the next __ in the tool name you called.' : `If the user named this server differently in the client config, use that name instead of ${serverName}.`}`,
          },
        }),
    manual_install: `Save hook_script as ${HOOK_SCRIPT_FILENAME} at the script_path for the user's client, merge the registration block into config_path (keep the hooks already there), and reload the client. Paths starting with ~ are in the user's home folder; replace <project> with the absolute project folder and use absolute paths in the command.`,
    setup_by_host: setupByHost,
    ask_user: `Ask the user which MCP client they use (Claude Code, Codex CLI, Cursor or VS Code) and whether they want the attachment hook for all projects (user) or this project only, then offer to run the install command or to write the two files. Mention that the hook reads local files the user can read, only when a tool call names one.`,
    retry: `After the hook is installed and the client reloaded, call ${exampleToolName} again with the same file:///absolute/path source.`,
    docs_url: docsUrl,
    hook_script: HOOK_SCRIPT,
  };
  return {
    message: JSON.stringify(compact),
    fullMessage: JSON.stringify(message, null, 2),
    developerMessage: `${displayName}: an attachment arrived with a file:// source, so the toolfence attachment hook (${HOOK_SCRIPT_FILENAME}, protocol >= ${HOOK_PROTOCOL_VERSION}) did not run in the client. The call was refused and nothing was sent. See ${docsUrl}.`,
    extra: {
      hook_filename: HOOK_SCRIPT_FILENAME,
      min_version: HOOK_PROTOCOL_VERSION,
      docs_url: docsUrl,
      ...(budget === undefined ? {} : { max_attachment_bytes: budget }),
    },
  };
}

const SERVER_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** A byte count as a person reads it (the hook's own deny reasons use the same form). */
function formatBytes(bytes: number): string {
  const units: [number, string][] = [
    [1073741824, 'GiB'],
    [1048576, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size) return `${(bytes / size).toFixed(1).replace(/\.0$/, '')} ${unit}`;
  }
  return `${bytes} bytes`;
}

/**
 * The payload in the snake_case shape of arcade-mcp-host-config's `MissingHookPayload`
 * (`message`, `developer_message`, `extra`), for toolkits that forward that object unchanged.
 */
export interface SnakeCaseMissingHookPayload {
  /** The payload's `message`: self-sufficient JSON text for the model. */
  readonly message: string;
  /** The payload's `developerMessage`. */
  readonly developer_message: string;
  /** The payload's `extra`. */
  readonly extra: MissingHookExtra;
}

/**
 * Gives a {@link MissingHookPayload} in arcade-mcp-host-config's snake_case shape:
 * `developer_message` for `developerMessage`, `extra` beside `message`, values unchanged.
 */
export function toSnakeCaseMissingHookPayload(
  payload: MissingHookPayload,
): SnakeCaseMissingHookPayload {
  return Object.freeze({
    message: payload.message,
    developer_message: payload.developerMessage,
    extra: payload.extra,
  });
}

/** One line: the client, its minimum version, its install command and where the script goes. */
function installLine(client: HookClient, budgetFlag: string): string {
  const minimum = CLIENT_MIN_VERSIONS[client];
  const trust = client === 'codex' ? ' --trust-codex-hook (or trust it in Codex with /hooks)' : '';
  return `${minimum.displayName} ${minimum.version} or newer: npx -y @toolfence/host-config install --client ${client}${budgetFlag}${trust}, then reload the client (script: ${getHookSetup(client, 'user').scriptPath})`;
}

function describeClient(client: HookClient): Record<string, unknown> {
  const user = getHookSetup(client, 'user');
  const project = getHookSetup(client, 'project');
  const minimum = CLIENT_MIN_VERSIONS[client];
  return {
    display_name: minimum.displayName,
    min_version: minimum.version,
    min_version_source: minimum.source,
    matcher: user.matcher,
    user: {
      script_path: user.scriptPath,
      config_path: user.configPath,
      registration: user.registration,
    },
    project: {
      script_path: project.scriptPath,
      config_path: project.configPath,
      registration: project.registration,
    },
    notes: [...user.notes, ...project.notes.filter((note) => !user.notes.includes(note))],
  };
}

/**
 * Turns a {@link MissingHookPayload} into an MCP tool error result (`isError: true`) for servers
 * built on `@modelcontextprotocol/sdk`: return it from the tool handler. The text content is the
 * self-sufficient `message`; `_meta` carries the lean `extra` and the developer message.
 */
export function missingHookToolResult(payload: MissingHookPayload): MissingHookToolResult {
  return {
    content: [{ type: 'text', text: payload.message }],
    isError: true,
    _meta: {
      [MISSING_HOOK_META_KEY]: { ...payload.extra, developer_message: payload.developerMessage },
    } as MissingHookToolResult['_meta'],
  };
}
