import { createHash } from 'node:crypto';
import {
  CONTRACT_META_KEY,
  hintRiskFloor,
  RISK_LEVELS,
  type RiskLevel,
} from '@toolfence/tool-contract';
import {
  AjvSchemaValidator,
  DEFAULT_MCP_LIMITS,
  errorResult,
  isCallNotRun,
  type JsonObject,
  type JsonValue,
  type McpResultLimits,
  mapCallToolResult,
  mcpToolName,
  readMcpToolContract,
  type SchemaValidator,
  type Tool,
  type ToolContext,
  type ToolResult,
  type ToolSpec,
} from '@toolfence/tools/core';
import { type AmbiguityReason, AmbiguousDeliveryError, ServerRpcError } from '../client/errors.js';
import { clientLoggerOf, McpClient } from '../client/mcp-client.js';
import { type McpToolInfo, parseToolInfo } from '../client/tool-listing.js';
import { RequestNotSentError } from '../transport/errors.js';
import { ServerOverloadedError } from '../transport/server-overloaded-error.js';
import { ServerRateLimitedError } from '../transport/server-rate-limited-error.js';
import { BridgeApprovalError, BridgeConfigurationError, BridgeSchemaError } from './errors.js';
import {
  authoritativeSchema,
  type BridgeSchemaReason,
  type SchemaDialectMode,
} from './schema-authority.js';
import { sharedValidator } from './shared-validator.js';

/** What an approver is asked before a gated call reaches the server. */
export interface BridgeApprovalRequest {
  /** The registry name (`prefix__remote`). */
  readonly toolName: string;
  /** The tool's name on the server. */
  readonly remoteName: string;
  /** The validated, frozen arguments. */
  readonly args: JsonObject;
  /** The caller's context (run, step, access scope, abort signal) the call would run with. */
  readonly context: ToolContext;
  /** Why approval is needed: `needsApproval`, `gate`, or `risk`. */
  readonly reason: 'needsApproval' | 'gate' | 'risk';
}

/**
 * What {@link bridgeTools} needs of a client: the two methods it calls. An {@link McpClient} is
 * one; so is any object with the same two methods (a wrapper, a client of your own).
 */
export interface BridgeClient {
  /**
   * The server's tools (`refresh: true`: list again instead of a cache). A listing from anything
   * but an `McpClient` is shape-checked by the bridge (`BRIDGE_CONFIGURATION` names the entry).
   */
  tools(options?: { readonly refresh?: boolean }): Promise<readonly BridgeToolDefinition[]>;
  /**
   * Calls one tool once, never replaying it. `signal` cancels the call; `onSend` is to be called
   * when the request is handed to the connection (from then on it may reach the server). An
   * `McpClient` calls it, so an error before it is reported as not sent (`RequestNotSentError`,
   * refunded by budgets); any other client's error is passed on unchanged, never reported as not
   * sent. Errors of `McpClient`'s types (`AmbiguousDeliveryError`, `ServerRpcError`, ...) become
   * error results whoever throws them.
   */
  callTool(
    name: string,
    args: Readonly<Record<string, unknown>>,
    options: BridgeCallOptions,
  ): Promise<unknown>;
}

/**
 * One tool definition as a {@link BridgeClient} lists it: an `McpClient`'s `McpToolInfo`, or the
 * `tools/list` entry as the MCP SDK's `Client` returns it. Fields are checked when bridged.
 */
export interface BridgeToolDefinition {
  /** The tool's name on the server. */
  readonly name: string;
  /** Display name (a string when present). */
  readonly title?: unknown;
  /** Description (a string when present). */
  readonly description?: unknown;
  /** JSON Schema of the arguments (an object; absent means no arguments). */
  readonly inputSchema?: unknown;
  /** JSON Schema of structured results (an object when present). */
  readonly outputSchema?: unknown;
  /** MCP tool annotations (an object when present). */
  readonly annotations?: unknown;
  /** MCP execution hints (an object when present). */
  readonly execution?: unknown;
  /** The tool's `_meta` (an object when present). */
  readonly _meta?: unknown;
}

/** What {@link bridgeTools} passes to {@link BridgeClient.callTool}. */
export interface BridgeCallOptions {
  /** The caller's abort signal, when it has one. */
  readonly signal?: AbortSignal;
  /** Called when the request is handed to the connection. */
  readonly onSend: () => void;
}

/** Options of {@link bridgeTools}; every option has a default, so `bridgeTools(client)` works. */
export interface BridgeToolsOptions {
  /**
   * Registry names are `<prefix>__<remote>` (1-24 of `[A-Za-z0-9_-]`, starting alphanumeric, no
   * `__`). Default none: the remote name itself (made safe the same way). Two servers bridged into
   * one registry need prefixes; a name used twice fails the registration either way.
   */
  readonly prefix?: string;
  /**
   * The server's name as the host knows it (a gateway config's key), written to each tool's
   * `spec.origin.server` with the remote name as `spec.origin.tool`, so a `RuleBasedPolicy` rule
   * can name the tool by its own name or by `server` plus name. Default the `prefix` (none
   * without one: rules with `server` then never match).
   */
  readonly server?: string;
  /** Remote names to bridge; default all. */
  readonly allow?: readonly string[];
  /** Remote names never bridged (wins over `allow`). Default none. */
  readonly deny?: readonly string[];
  /**
   * `true`: every bridged tool needs the bridge's own approval; `false`: none does, whatever
   * `approvalRisk` says. Default unset (off): `approvalRisk` decides, and its default `'none'`
   * gates nothing. `gates` override it per tool.
   */
  readonly needsApproval?: boolean;
  /** Per remote name, overriding `needsApproval` and `approvalRisk`. */
  readonly gates?: Readonly<Record<string, boolean>>;
  /**
   * A tool whose risk is at or above this needs the bridge's own approval: its declared
   * contract's risk, or for a tool that declares none, the floor its standard hints claim
   * (`destructiveHint: true` is `destructive`, `readOnlyHint: false` a write). Default `'none'`:
   * inside a `ToolRegistry` the registry's policy and approval decide (one approval per call);
   * set a level only for bridged tools called without a registry policy.
   */
  readonly approvalRisk?: RiskLevel | 'none';
  /** Answers gated calls; without it a gated call is refused. */
  readonly approve?: (request: BridgeApprovalRequest) => boolean | Promise<boolean>;
  /**
   * Compiles each tool's input schema when it is bridged (output schemas on their first
   * structured result) and validates arguments before every call and structured results.
   * Default a shared `AjvSchemaValidator` (each schema in its declared dialect, `format` as an
   * annotation, patterns in linear time). An `AjvSchemaValidator` with `patterns: 'native'` is
   * refused: a server's pattern must never run in a backtracking engine. A pattern the linear
   * engine cannot run is not enforced and is reported to the client's logger once per schema.
   */
  readonly validator?: SchemaValidator;
  /**
   * `compatible` (default) accepts schemas declared draft-04, draft-06, draft-07, 2019-09 or
   * 2020-12 (validated in that dialect); `strict` accepts only 2020-12. No `$schema` is 2020-12.
   */
  readonly schemaDialects?: SchemaDialectMode;
  /**
   * Called once for each server tool that is left out because its schema cannot be given
   * authority; the other tools are bridged. Errors it throws are ignored. The client's `logger`
   * gets the same report at `warn`. Default none.
   */
  readonly onSkip?: (skipped: BridgeSkippedTool) => void;
  /** Blocks and characters kept from one result. Default the MCP adapter's limits. */
  readonly resultLimits?: McpResultLimits;
  /** List again instead of using the client's cached listing. Default false. */
  readonly refresh?: boolean;
  /**
   * Build from exactly these tool definitions (as `McpClient.tools()` returned them) instead of
   * asking the client: no `tools/list` is sent, so what a caller reviewed (pins, a policy) is
   * what is bridged. Not with `refresh`. Default: the client's listing.
   */
  readonly listing?: readonly McpToolInfo[];
}

/** A server tool {@link bridgeTools} left out, and why (log-safe). */
export interface BridgeSkippedTool {
  /** The tool's name on the server (server text; the logger gets it only when it is a short, safe identifier). */
  readonly name: string;
  /** Always `BRIDGE_SCHEMA`. */
  readonly code: string;
  /** Which of the tool's schemas was refused. */
  readonly schema: 'inputSchema' | 'outputSchema';
  /** Why: `null`, `not-object`, `not-object-type`, `dialect`, `external-ref`, `embedded-id`, `too-deep` or `compile`. */
  readonly reason: BridgeSchemaReason;
  /** The validator's reason when `reason` is `compile` (`invalid-schema`, `unresolved-ref`, `unknown-dialect`). */
  readonly compileReason?: string;
  /** A safe, fixed message (never the server's text). */
  readonly message: string;
}

/** A registry tool that forwards to one MCP server tool. */
export interface BridgedTool extends Tool {
  /** The tool's name on the server. */
  readonly remoteName: string;
  /** Whether a call waits for the approver first. */
  readonly needsApproval: boolean;
}

const STANDARD_HINTS: ReadonlySet<string> = new Set([
  'title',
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
]);

const UNDECLARED = Object.freeze({
  contract: undefined,
  effect: Object.freeze({ default: 'unknown' as const }),
});

function mayDeclareContract(
  annotations: JsonObject | undefined,
  meta: Readonly<Record<string, unknown>> | undefined,
): boolean {
  // tool-contract's copy in `_meta` survives clients that strip unknown annotation keys.
  if (meta !== undefined && Object.hasOwn(meta, CONTRACT_META_KEY)) return true;
  if (annotations === undefined) return false;
  for (const key in annotations) {
    if (!STANDARD_HINTS.has(key)) return true;
  }
  return false;
}

/** Why the outcome is unknown, in words the model can act on (never the server's own text). */
const AMBIGUITY_CAUSES: Readonly<Record<AmbiguityReason, string>> = {
  'wire-failed': 'the connection failed after the request was sent',
  timeout: 'no answer arrived in time',
  'response-too-large': "the server's reply was over the size limit and was refused",
  'response-too-complex': "the server's reply was over the structure limits and was refused",
  'invalid-response': "the server's reply was not valid",
  'server-error-status': 'the server answered with an error status after receiving the request',
  aborted: 'the call was cancelled after the request was sent',
  closed: 'the connection was closed before an answer arrived',
};

function ambiguousText(reason: AmbiguityReason): string {
  return `The call may have completed, but its outcome is unknown (${AMBIGUITY_CAUSES[reason]}). Verify external state before retrying; it was not retried.`;
}

function checkNameList(name: string, value: unknown): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new BridgeConfigurationError(`${name} must be an array of remote tool names`, {
      details: { option: name },
    });
  }
  return new Set(value);
}

/** A listing that did not come from an McpClient, checked as McpClient checks its own. */
function checkedListing(listing: unknown): readonly McpToolInfo[] {
  if (!Array.isArray(listing)) {
    throw new BridgeConfigurationError(
      'The listing (the listing option, or what client.tools() resolved to) must be an array of tools',
      { details: { option: 'listing' } },
    );
  }
  return listing.map((entry: unknown, index) => {
    const parsed = parseToolInfo(entry);
    if (parsed.ok) return parsed.value;
    throw new BridgeConfigurationError(
      `Listing entry ${index} is not a tool: ${parsed.reason} (a tool is an object with a string name, as McpClient.tools() returns)`,
      { details: { option: 'listing', index, reason: parsed.reason } },
    );
  });
}

/** A server tool name that may go into a log as it is (the MCP adapter's rule for listings). */
const SAFE_LOG_NAME = /^[A-Za-z0-9_.:/-]{1,128}$/;

/** A validator's check for one schema, bound once when the tool is bridged. */
type SchemaCheck = (value: JsonValue) => ReturnType<SchemaValidator['validate']>;

/**
 * The check of one (already prepared) schema: with the default `AjvSchemaValidator`, its compiled
 * function (a call does not look the schema up again); with a host's validator, its `validate`.
 * Either way the value is validated in full on every call.
 */
function schemaCheck(validator: SchemaValidator, schema: JsonObject): SchemaCheck {
  if (validator instanceof AjvSchemaValidator) return validator.compile(schema);
  return (value) => validator.validate(schema, value);
}

/** JSON-RPC's code for an internal error of the server. */
const JSON_RPC_INTERNAL_ERROR = -32603;

/**
 * Turns a server's tools into registry tools. Each tool's schemas are checked here and its input
 * schema compiled, in the dialect it declares; a tool whose schema cannot be given authority is left out
 * and reported (`onSkip`, the client's logger) while the others are bridged. Each call validates
 * its arguments in full against the authoritative input schema, passes its approval gate, then
 * goes to the server once; the result is mapped by the MCP adapter's `mapCallToolResult`. An
 * ambiguous delivery becomes an error result that tells the model to verify external state.
 */
export async function bridgeTools(
  client: BridgeClient,
  options: BridgeToolsOptions = {},
): Promise<readonly BridgedTool[]> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new BridgeConfigurationError(
      'bridgeTools options must be an object (or omitted: every option has a default)',
    );
  }
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.tools !== 'function' ||
    typeof client.callTool !== 'function'
  ) {
    throw new BridgeConfigurationError(
      'bridgeTools needs a client with tools() and callTool() methods, such as an McpClient',
      { details: { option: 'client' } },
    );
  }
  const allow = checkNameList('allow', options.allow);
  const deny = checkNameList('deny', options.deny);
  if (options.needsApproval !== undefined && typeof options.needsApproval !== 'boolean') {
    throw new BridgeConfigurationError('needsApproval must be a boolean');
  }
  const gates = options.gates ?? {};
  if (typeof gates !== 'object' || gates === null) {
    throw new BridgeConfigurationError('gates must map remote names to booleans');
  }
  for (const value of Object.values(gates)) {
    if (typeof value !== 'boolean') {
      throw new BridgeConfigurationError('gates must map remote names to booleans');
    }
  }
  const approvalRisk = options.approvalRisk ?? 'none';
  if (approvalRisk !== 'none' && !RISK_LEVELS.includes(approvalRisk)) {
    throw new BridgeConfigurationError('approvalRisk must be a risk level or none');
  }
  if (options.approve !== undefined && typeof options.approve !== 'function') {
    throw new BridgeConfigurationError('approve must be a function');
  }
  const mode = options.schemaDialects ?? 'compatible';
  if (mode !== 'compatible' && mode !== 'strict') {
    throw new BridgeConfigurationError("schemaDialects must be 'compatible' or 'strict'");
  }
  if (options.onSkip !== undefined && typeof options.onSkip !== 'function') {
    throw new BridgeConfigurationError('onSkip must be a function');
  }
  const validator = options.validator ?? sharedValidator();
  if (validator instanceof AjvSchemaValidator && validator.patterns !== 'linear') {
    throw new BridgeConfigurationError(
      "validator runs schema patterns with JavaScript's backtracking engine (patterns: 'native'); a server's schema could stall the process: give it patterns: 'linear' (the default)",
      { details: { option: 'validator' } },
    );
  }
  const limits = options.resultLimits ?? DEFAULT_MCP_LIMITS;
  const prefix = options.prefix;
  if (
    options.server !== undefined &&
    (typeof options.server !== 'string' || options.server === '')
  ) {
    throw new BridgeConfigurationError('server must be a non-empty string');
  }
  const server = options.server ?? prefix;
  // Validates the prefix (mcpToolName refuses an invalid namespace).
  if (prefix !== undefined) {
    try {
      mcpToolName(prefix, 'probe');
    } catch (error) {
      throw new BridgeConfigurationError(
        'prefix must be 1-24 of [A-Za-z0-9_-], starting with a letter or digit, no "__"',
        { cause: error },
      );
    }
  }

  if (options.listing !== undefined) {
    if (!Array.isArray(options.listing)) {
      throw new BridgeConfigurationError(
        'listing must be an array of tools from McpClient.tools()',
        {
          details: { option: 'listing' },
        },
      );
    }
    if (options.refresh === true) {
      throw new BridgeConfigurationError('listing and refresh cannot be combined', {
        details: { option: 'listing' },
      });
    }
  }
  const fromMcpClient = options.listing === undefined && client instanceof McpClient;
  const given = options.listing ?? (await client.tools({ refresh: options.refresh === true }));
  // An McpClient's listing is already shape-checked; any other is checked here.
  const listed = fromMcpClient ? (given as readonly McpToolInfo[]) : checkedListing(given);
  const selected = listed.filter(
    (tool) => (allow === undefined || allow.has(tool.name)) && !deny?.has(tool.name),
  );
  const names = new Set<string>();
  const tools: BridgedTool[] = [];
  const logger = clientLoggerOf(client);
  const reportUnenforced = (name: string, schema: JsonObject, which: SchemaName): void => {
    if (!(validator instanceof AjvSchemaValidator)) return;
    const patterns = validator.unenforcedPatterns(schema).length;
    if (patterns === 0) return;
    try {
      // The count only: the patterns are the server's text.
      logger?.warn?.(
        'bridgeTools: a server tool schema has patterns the linear-time engine cannot run; they are not enforced',
        { ...(SAFE_LOG_NAME.test(name) ? { name } : {}), schema: which, patterns },
      );
    } catch {
      // A logger that throws is ignored.
    }
  };
  if (allow !== undefined) {
    const listedNames = new Set(listed.map((tool) => tool.name));
    const unmatched = [...allow].filter((name) => !listedNames.has(name));
    const shown = unmatched
      .slice(0, 8)
      .map((name) => (SAFE_LOG_NAME.test(name) ? name : '(unsafe name)'));
    if (unmatched.length > 0 && unmatched.length === allow.size) {
      throw new BridgeConfigurationError(
        `No tool of the server is named as in allow (${shown.map((name) => JSON.stringify(name)).join(', ')}); it lists ${listed.length} tool(s)`,
        { details: { option: 'allow', unmatched: shown } },
      );
    }
    if (unmatched.length > 0) {
      try {
        logger?.warn?.('bridgeTools: allow names a tool the server does not list', {
          unmatched: shown,
        });
      } catch {
        // A logger that throws is ignored.
      }
    }
  }
  for (const info of selected) {
    const localName = bridgedToolName(prefix, info.name);
    if (names.has(localName)) {
      throw new BridgeConfigurationError('Two server tools map to the same registry name', {
        details: { tool: localName },
      });
    }
    names.add(localName);
    let tool: BridgedTool;
    try {
      tool = bridgeOne(client, info, localName, {
        reportsSend: client instanceof McpClient,
        validator,
        limits,
        mode,
        gates,
        needsApproval: options.needsApproval,
        approvalRisk,
        approve: options.approve,
        prefix,
        server,
        reportUnenforced,
      });
    } catch (error) {
      // One unbridgeable tool is left out and reported; the others are bridged.
      if (!(error instanceof BridgeSchemaError)) throw error;
      const skipped = skippedTool(info.name, error);
      try {
        // The log gets the server's name only when it is a short, safe identifier (as for a
        // malformed tool); onSkip always gets it, like BridgedTool.remoteName.
        const { name, ...rest } = skipped;
        logger?.warn?.('Skipped an MCP tool whose schema cannot be bridged', {
          ...(SAFE_LOG_NAME.test(name) ? { name } : {}),
          ...rest,
        });
      } catch {
        // A logger that throws is ignored.
      }
      try {
        options.onSkip?.(skipped);
      } catch {
        // onSkip errors are ignored (reporting never fails the bridge).
      }
      continue;
    }
    tools.push(tool);
  }
  return Object.freeze(tools);
}

/**
 * The registry name {@link bridgeTools} gives a server tool: `<prefix>__<remote>`, or the remote
 * name alone without a prefix (an unsafe or long name cleaned and suffixed with a hash).
 */
export function bridgedToolName(prefix: string | undefined, remoteName: string): string {
  return prefix === undefined
    ? safeToolName(remoteName)
    : mcpToolName(prefix, remoteName).slice('mcp__'.length);
}

/** A remote name as a registry name without a prefix: as is when safe, else cleaned plus a hash. */
function safeToolName(name: string): string {
  if (/^[A-Za-z0-9_-]{1,64}$/.test(name)) return name;
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 8);
  const cleaned = Array.from(name)
    .map((char) => (/^[A-Za-z0-9_-]$/.test(char) ? char : '_'))
    .join('')
    .slice(0, 64 - hash.length - 1);
  return `${cleaned}_${hash}`;
}

function skippedTool(name: string, error: BridgeSchemaError): BridgeSkippedTool {
  const details = error.details ?? {};
  const compileReason = details.compileReason;
  return Object.freeze({
    name,
    code: BridgeSchemaError.code,
    schema: details.schema === 'outputSchema' ? 'outputSchema' : 'inputSchema',
    reason: (typeof details.reason === 'string' ? details.reason : 'compile') as BridgeSchemaReason,
    ...(typeof compileReason === 'string' ? { compileReason } : {}),
    message: error.message,
  });
}

/** Compiles one schema now, so a tool whose schema cannot compile is never bridged. */
function prepareSchema(
  validator: SchemaValidator,
  tool: string,
  which: 'inputSchema',
  schema: JsonObject,
): void {
  try {
    validator.prepare(schema);
  } catch (error) {
    const reason =
      typeof error === 'object' && error !== null && 'details' in error
        ? (error as { details?: { reason?: unknown } }).details?.reason
        : undefined;
    throw new BridgeSchemaError(`The ${which} of a server tool cannot be compiled`, {
      cause: error,
      details: {
        tool,
        schema: which,
        reason: 'compile',
        ...(typeof reason === 'string' ? { compileReason: reason } : {}),
      },
    });
  }
}

interface BridgeOneOptions {
  /** The client calls `onSend` (an McpClient), so an error before it means not sent. */
  readonly reportsSend: boolean;
  readonly validator: SchemaValidator;
  readonly limits: McpResultLimits;
  readonly mode: SchemaDialectMode;
  readonly gates: Readonly<Record<string, boolean>>;
  readonly needsApproval: boolean | undefined;
  readonly approvalRisk: RiskLevel | 'none';
  readonly approve: BridgeToolsOptions['approve'];
  readonly prefix: string | undefined;
  readonly server: string | undefined;
  /**
   * Reports a schema's patterns the validator does not enforce (input schemas when bridged,
   * output schemas on their first structured result); a no-op for a validator that says nothing.
   */
  readonly reportUnenforced: (name: string, schema: JsonObject, which: SchemaName) => void;
}

/** Which of a tool's schemas. */
type SchemaName = 'inputSchema' | 'outputSchema';

function bridgeOne(
  client: BridgeClient,
  info: McpToolInfo,
  localName: string,
  options: BridgeOneOptions,
): BridgedTool {
  const remoteName = info.name;
  const inputSchema = authoritativeSchema(
    remoteName,
    'inputSchema',
    info.inputSchema,
    options.mode,
  );
  const outputSchema =
    info.outputSchema === undefined
      ? undefined
      : authoritativeSchema(remoteName, 'outputSchema', info.outputSchema, options.mode);
  // The input schema compiles now (cached by content in the validator; a registry compiles it
  // at registration anyway), so a tool whose input schema cannot compile is skipped and reported
  // here instead of failing a whole registration. The output schema compiles on the first
  // structured result: a listing of 1,000 tools with distinct output schemas compiles none.
  const { validator } = options;
  prepareSchema(validator, remoteName, 'inputSchema', inputSchema);
  options.reportUnenforced(remoteName, inputSchema, 'inputSchema');
  const checkArguments = schemaCheck(validator, inputSchema);
  // The output schema's unenforced patterns are reported once, when it first compiles.
  let outputReported = false;
  const mapping = Object.freeze({
    server: options.prefix ?? 'mcp',
    tool: remoteName,
    limits: options.limits,
  });
  const annotations = info.annotations as JsonObject | undefined;
  // A declared contract needs tool-contract's keys (in annotations or in `_meta`); annotations
  // with only MCP's standard hints (or none) cannot declare one, so the reading is skipped.
  const reading = mayDeclareContract(annotations, info._meta)
    ? readMcpToolContract({
        name: remoteName,
        ...(info.description === undefined ? {} : { description: info.description }),
        ...(annotations === undefined ? {} : { annotations }),
        ...(info._meta === undefined ? {} : { _meta: info._meta }),
      })
    : UNDECLARED;
  const contract = reading.contract;
  let reason: BridgeApprovalRequest['reason'] | undefined;
  const gate = Object.hasOwn(options.gates, remoteName) ? options.gates[remoteName] : undefined;
  if (gate !== undefined) reason = gate ? 'gate' : undefined;
  else if (options.needsApproval !== undefined)
    reason = options.needsApproval ? 'needsApproval' : undefined;
  else if (options.approvalRisk !== 'none') {
    // Declared risk, else the floor of the standard hints (the name heuristic is left to the
    // registry's policy: its guess for an unknown name would gate most tools of most servers).
    const risk = contract?.risk ?? hintRiskFloor(annotations);
    if (
      risk !== undefined &&
      RISK_LEVELS.indexOf(risk) >= RISK_LEVELS.indexOf(options.approvalRisk)
    ) {
      reason = 'risk';
    }
  }
  const spec: ToolSpec = Object.freeze({
    name: localName,
    description: info.description ?? info.title ?? `MCP tool ${remoteName}`,
    inputSchema,
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(annotations === undefined ? {} : { annotations }),
    ...(contract === undefined ? {} : { contract }),
    effect: reading.effect,
    origin: Object.freeze(
      options.server === undefined
        ? { tool: remoteName }
        : { server: options.server, tool: remoteName },
    ),
  });
  async function invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    let verdict: ReturnType<SchemaValidator['validate']>;
    try {
      verdict = checkArguments(args);
    } catch (error) {
      throw new BridgeSchemaError('The inputSchema of a server tool cannot be compiled', {
        cause: error,
        details: { tool: remoteName, schema: 'inputSchema' },
      });
    }
    if (!verdict.valid) {
      return errorResult(`The arguments do not match the schema of ${localName}`, {
        metadata: { code: 'BRIDGE_INVALID_ARGUMENTS', issues: verdict.issues.length },
      });
    }
    if (reason !== undefined) {
      const approve = options.approve;
      if (approve === undefined) {
        throw new BridgeApprovalError(`${localName} needs approval and no approver is configured`, {
          details: { tool: localName, reason },
        });
      }
      let approved: unknown;
      try {
        approved = await approve(
          Object.freeze({ toolName: localName, remoteName, args, context, reason }),
        );
      } catch (error) {
        throw new BridgeApprovalError(`The approver failed for ${localName}`, {
          cause: error,
          details: { tool: localName, reason },
        });
      }
      if (approved !== true) {
        throw new BridgeApprovalError(`${localName} was not approved`, {
          details: { tool: localName, reason },
        });
      }
    }
    let raw: unknown;
    // Set when the request is handed to the connection: from then on it may reach the server.
    let sent = false;
    const onSend = (): void => {
      sent = true;
    };
    try {
      raw = await client.callTool(
        remoteName,
        args,
        context.signal === undefined ? { onSend } : { signal: context.signal, onSend },
      );
    } catch (error) {
      if (!sent && options.reportsSend && !isCallNotRun(error)) {
        // Ended before the request was handed to the connection (aborted while waiting for a
        // slot, a session that could not be opened, ...): certainly not sent, so not counted.
        throw new RequestNotSentError(`The call to ${localName} ended before it was sent`, {
          cause: error,
          details: { tool: localName },
        });
      }
      if (error instanceof AmbiguousDeliveryError) {
        return errorResult(ambiguousText(error.reason), {
          metadata: { code: AmbiguousDeliveryError.code, ambiguous: true, reason: error.reason },
        });
      }
      if (error instanceof ServerRpcError) {
        // -32603 is the server's own failure while handling the call, not a refusal of it.
        const text =
          error.rpcCode === JSON_RPC_INTERNAL_ERROR
            ? `The server failed while handling the call to ${localName} (internal error); check whether it took effect before retrying`
            : `The server refused the call to ${localName} (JSON-RPC error ${error.rpcCode})`;
        // The server's own words (bounded, printable), labelled as such, so a model can correct
        // its arguments; the client keeps none when maxServerMessageChars is 0. An internal
        // error's text describes the server's own failure (often an exception), not the call.
        const words =
          error.serverMessage === undefined || error.rpcCode === JSON_RPC_INTERNAL_ERROR
            ? ''
            : `. The server's own message (not checked by toolfence): "${error.serverMessage}"`;
        return errorResult(`${text}${words}`, {
          metadata: { code: ServerRpcError.code, rpcCode: error.rpcCode },
        });
      }
      if (ServerRateLimitedError.isInstance(error) || ServerOverloadedError.isInstance(error)) {
        const why = error.status === 429 ? 'is rate limiting calls' : 'is overloaded';
        const wait =
          error.retryAfterMs === undefined
            ? 'Wait before calling it again'
            : `Wait at least ${Math.ceil(error.retryAfterMs / 1000)} s before calling it again`;
        return errorResult(
          `The server ${why} (HTTP ${error.status}) and refused the call to ${localName}. ${wait}.`,
          {
            metadata: {
              code: error.code,
              status: error.status,
              ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
            },
          },
        );
      }
      throw error;
    }
    const result = mapCallToolResult(raw, mapping);
    if (
      outputSchema !== undefined &&
      result.isError !== true &&
      result.structuredContent !== undefined
    ) {
      let check: ReturnType<SchemaValidator['validate']>;
      try {
        check = validator.validate(outputSchema, result.structuredContent as JsonValue);
      } catch {
        return errorResult(`The output schema of ${localName} cannot be compiled`, {
          metadata: { code: BridgeSchemaError.code },
        });
      }
      if (!outputReported) {
        outputReported = true;
        options.reportUnenforced(remoteName, outputSchema, 'outputSchema');
      }
      if (!check.valid) {
        return errorResult(`The result of ${localName} does not match its output schema`, {
          metadata: { code: 'BRIDGE_INVALID_OUTPUT', issues: check.issues.length },
        });
      }
    }
    return result;
  }

  return Object.freeze({ spec, remoteName, needsApproval: reason !== undefined, invoke });
}
