import { CONTRACT_META_KEY, RISK_LEVELS, type RiskLevel } from '@toolfence/tool-contract';
import {
  AjvSchemaValidator,
  DEFAULT_MCP_LIMITS,
  errorResult,
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
} from '@toolfence/tools';
import { type AmbiguityReason, AmbiguousDeliveryError, ServerRpcError } from '../client/errors.js';
import type { McpClient } from '../client/mcp-client.js';
import type { McpToolInfo } from '../client/tool-listing.js';
import { BridgeApprovalError, BridgeConfigurationError, BridgeSchemaError } from './errors.js';
import { authoritativeSchema, type SchemaDialectMode } from './schema-authority.js';

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

/** Options of {@link bridgeTools}. */
export interface BridgeToolsOptions {
  /** Registry names are `<prefix>__<remote>` (1-24 of `[A-Za-z0-9_-]`, starting alphanumeric, no `__`). */
  readonly prefix: string;
  /** Remote names to bridge; default all. */
  readonly allow?: readonly string[];
  /** Remote names never bridged (wins over `allow`). Default none. */
  readonly deny?: readonly string[];
  /** Every bridged tool needs the bridge's own approval. Default: decided by `approvalRisk` (none). */
  readonly needsApproval?: boolean;
  /** Per remote name, overriding `needsApproval` and `approvalRisk`. */
  readonly gates?: Readonly<Record<string, boolean>>;
  /**
   * A tool whose declared contract is at or above this risk needs the bridge's own approval.
   * Default `'none'`: inside a `ToolRegistry` the registry's policy and approval decide (one
   * approval per call); set a level only for bridged tools called without a registry policy.
   */
  readonly approvalRisk?: RiskLevel | 'none';
  /** Answers gated calls; without it a gated call is refused. */
  readonly approve?: (request: BridgeApprovalRequest) => boolean | Promise<boolean>;
  /** Validates arguments (JSON Schema 2020-12) before every call, and results lazily. Default a new `AjvSchemaValidator`. */
  readonly validator?: SchemaValidator;
  /** `compatible` (default) accepts draft-07 schemas whose keywords mean the same in 2020-12; `strict` accepts only 2020-12. */
  readonly schemaDialects?: SchemaDialectMode;
  /** Blocks and characters kept from one result. Default the MCP adapter's limits. */
  readonly resultLimits?: McpResultLimits;
  /** List again instead of using the client's cached listing. Default false. */
  readonly refresh?: boolean;
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

let defaultValidator: AjvSchemaValidator | undefined;

/**
 * One default validator for every bridge in the process: a new Ajv instance compiles the 2020-12
 * meta-schema on first use (tens of milliseconds), and compiled schemas are cached by content
 * (bounded LRU), so sharing it costs nothing and saves that start-up on every client.
 */
function sharedValidator(): AjvSchemaValidator {
  defaultValidator ??= new AjvSchemaValidator();
  return defaultValidator;
}

/**
 * Turns a server's tools into registry tools. Each call validates its arguments in full against
 * the authoritative input schema, passes its approval gate, then goes to the server once; the
 * result is mapped by the MCP adapter's `mapCallToolResult`. An ambiguous delivery becomes an
 * error result that tells the model to verify external state.
 */
export async function bridgeTools(
  client: McpClient,
  options: BridgeToolsOptions,
): Promise<readonly BridgedTool[]> {
  if (typeof options !== 'object' || options === null) {
    throw new BridgeConfigurationError('bridgeTools options must be an object');
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
  const validator = options.validator ?? sharedValidator();
  const limits = options.resultLimits ?? DEFAULT_MCP_LIMITS;
  const prefix = options.prefix;
  // Validates the prefix (mcpToolName refuses an invalid namespace).
  try {
    mcpToolName(prefix, 'probe');
  } catch (error) {
    throw new BridgeConfigurationError('prefix must be 1-24 of [A-Za-z0-9_-], no "__"', {
      cause: error,
    });
  }

  const listed = await client.tools({ refresh: options.refresh === true });
  const selected = listed.filter(
    (tool) => (allow === undefined || allow.has(tool.name)) && !deny?.has(tool.name),
  );
  const names = new Set<string>();
  const tools: BridgedTool[] = [];
  for (const info of selected) {
    const localName = mcpToolName(prefix, info.name).slice('mcp__'.length);
    if (names.has(localName)) {
      throw new BridgeConfigurationError('Two server tools map to the same registry name', {
        details: { tool: localName },
      });
    }
    names.add(localName);
    tools.push(
      bridgeOne(client, info, localName, {
        validator,
        limits,
        mode,
        gates,
        needsApproval: options.needsApproval,
        approvalRisk,
        approve: options.approve,
        prefix,
      }),
    );
  }
  return Object.freeze(tools);
}

interface BridgeOneOptions {
  readonly validator: SchemaValidator;
  readonly limits: McpResultLimits;
  readonly mode: SchemaDialectMode;
  readonly gates: Readonly<Record<string, boolean>>;
  readonly needsApproval: boolean | undefined;
  readonly approvalRisk: RiskLevel | 'none';
  readonly approve: BridgeToolsOptions['approve'];
  readonly prefix: string;
}

function bridgeOne(
  client: McpClient,
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
  // Schemas compile lazily, on first use (a registry compiles the input schema when the tool is
  // registered); listing 1,000 tools compiles nothing.
  const { validator } = options;
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
  else if (
    options.approvalRisk !== 'none' &&
    contract !== undefined &&
    RISK_LEVELS.indexOf(contract.risk) >= RISK_LEVELS.indexOf(options.approvalRisk)
  ) {
    reason = 'risk';
  }
  const spec: ToolSpec = Object.freeze({
    name: localName,
    description: info.description ?? info.title ?? `MCP tool ${remoteName}`,
    inputSchema,
    ...(outputSchema === undefined ? {} : { outputSchema }),
    ...(annotations === undefined ? {} : { annotations }),
    ...(contract === undefined ? {} : { contract }),
    effect: reading.effect,
  });
  let outputChecked = false;

  async function invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    let verdict: ReturnType<SchemaValidator['validate']>;
    try {
      verdict = validator.validate(inputSchema, args);
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
    try {
      raw = await client.callTool(remoteName, args, {
        ...(context.signal === undefined ? {} : { signal: context.signal }),
      });
    } catch (error) {
      if (error instanceof AmbiguousDeliveryError) {
        return errorResult(ambiguousText(error.reason), {
          metadata: { code: AmbiguousDeliveryError.code, ambiguous: true, reason: error.reason },
        });
      }
      if (error instanceof ServerRpcError) {
        return errorResult(`The server refused the call to ${localName}`, {
          metadata: { code: ServerRpcError.code, rpcCode: error.rpcCode },
        });
      }
      throw error;
    }
    const result = mapCallToolResult(raw, {
      server: options.prefix,
      tool: remoteName,
      limits: options.limits,
    });
    if (
      outputSchema !== undefined &&
      result.isError !== true &&
      result.structuredContent !== undefined
    ) {
      if (!outputChecked) {
        try {
          validator.prepare(outputSchema);
        } catch {
          return errorResult(`The output schema of ${localName} cannot be compiled`, {
            metadata: { code: BridgeSchemaError.code },
          });
        }
        outputChecked = true;
      }
      const check = validator.validate(outputSchema, result.structuredContent as JsonValue);
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
