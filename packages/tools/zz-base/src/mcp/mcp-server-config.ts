import { checkOptionKeys } from '../registry/option-keys.js';
import { McpConfigurationError } from './errors.js';
import { type McpLimits, resolveMcpLimits } from './mcp-limits.js';
import { isValidMcpToolNamespace } from './tool-name.js';

/** How a connection reacts to `notifications/tools/list_changed`. */
export interface McpListChangedOptions {
  /** Rediscover the tools after a change (the catalog is marked stale either way). Default `false`. */
  readonly rediscover?: boolean;
  /** Quiet time after a notification before rediscovering, in ms. Default 250. */
  readonly debounceMs?: number;
  /** Minimum time between two rediscoveries, in ms. Default 5,000. */
  readonly minIntervalMs?: number;
}

/** What {@link McpServerConfig} accepts. */
export interface McpServerConfigInit {
  /** Server name in the registry: 1 to 64 of `[A-Za-z0-9_.-]`, starting alphanumeric. */
  readonly name: string;
  /** Namespace of its tools (`mcp__<namespace>__<tool>`); defaults to `name` when that is valid. */
  readonly toolNamespace?: string;
  /** Overrides of the page, item, content and time limits; the rest keep their defaults. */
  readonly limits?: Partial<McpLimits>;
  /** Run `initialize` when the connection is registered. Default `true`. */
  readonly initializeOnStart?: boolean;
  /** Close the session when the connection is retired. Default `false` (the host owns it). */
  readonly ownsSession?: boolean;
  /** Reaction to `notifications/tools/list_changed`. Default: mark stale, do not rediscover. */
  readonly listChanged?: McpListChangedOptions;
}

const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function booleanOption(value: unknown, fallback: boolean, option: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new McpConfigurationError('MCP server option must be a boolean', { details: { option } });
  }
  return value;
}

function durationOption(value: unknown, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new McpConfigurationError('MCP server option must be a non-negative integer', {
      details: { option, type: typeof value },
    });
  }
  return value;
}

/** Validated, frozen configuration of one MCP server connection. */
export class McpServerConfig {
  /** Server name in the registry (1 to 64 of `[A-Za-z0-9_.-]`, starting alphanumeric). */
  readonly name: string;
  /** Namespace of the server's tools in the registry (`mcp__<namespace>__<tool>`). */
  readonly toolNamespace: string;
  /** The complete limits: the given overrides merged with the defaults. */
  readonly limits: McpLimits;
  /** Whether `initialize` runs when the connection is registered (default `true`). */
  readonly initializeOnStart: boolean;
  /** Whether the connection closes the session when retired (default `false`). */
  readonly ownsSession: boolean;
  /** List-change handling with every default filled in (rediscover, debounce, interval). */
  readonly listChanged: Required<McpListChangedOptions>;

  /** Validates and freezes `init`; throws {@link McpConfigurationError} for an invalid field. */
  constructor(init: McpServerConfigInit) {
    checkOptionKeys(
      init,
      ['name', 'toolNamespace', 'limits', 'initializeOnStart', 'ownsSession', 'listChanged'],
      'McpServerConfig',
    );
    if (typeof init !== 'object' || init === null) {
      throw new McpConfigurationError('MCP server config must be an object');
    }
    if (typeof init.name !== 'string' || !SERVER_NAME.test(init.name)) {
      throw new McpConfigurationError('MCP server name is invalid', {
        details: { rule: '1-64 of [A-Za-z0-9_.-], starting alphanumeric' },
      });
    }
    const namespace = init.toolNamespace ?? init.name;
    if (!isValidMcpToolNamespace(namespace)) {
      throw new McpConfigurationError('MCP tool namespace is invalid', {
        details: { rule: '1-24 of [A-Za-z0-9_-], starting alphanumeric, no "__"' },
      });
    }
    this.name = init.name;
    this.toolNamespace = namespace;
    this.limits = resolveMcpLimits(init.limits ?? {});
    this.initializeOnStart = booleanOption(init.initializeOnStart, true, 'initializeOnStart');
    this.ownsSession = booleanOption(init.ownsSession, false, 'ownsSession');
    const listChanged = init.listChanged ?? {};
    if (typeof listChanged !== 'object' || listChanged === null) {
      throw new McpConfigurationError('MCP listChanged option must be an object');
    }
    this.listChanged = Object.freeze({
      rediscover: booleanOption(listChanged.rediscover, false, 'listChanged.rediscover'),
      debounceMs: durationOption(listChanged.debounceMs, 250, 'listChanged.debounceMs'),
      minIntervalMs: durationOption(listChanged.minIntervalMs, 5_000, 'listChanged.minIntervalMs'),
    });
    Object.freeze(this);
  }
}
