import {
  type ContentTrustLevel,
  type ContractProblem,
  type ContractSource,
  type RiskLevel,
  readContract,
  type ToolContract,
} from '@toolfence/tool-contract';
import {
  AjvSchemaValidator,
  createToolContext,
  type JsonObject,
  type McpListingProblem,
  type PermissionVerdict,
  type ToolContext,
  type ToolEffect,
  type ToolSpec,
} from '@toolfence/tools';
import { bridgedToolName } from '../bridge/bridge-tools.js';
import { BridgeSchemaError } from '../bridge/errors.js';
import {
  authoritativeSchema,
  NO_ARGUMENTS_SCHEMA,
  type SchemaDialectMode,
} from '../bridge/schema-authority.js';
import type { McpClient } from '../client/mcp-client.js';
import type { McpToolInfo } from '../client/tool-listing.js';
import type { InspectPolicy, InspectPolicySummary } from '../gateway/policy-file.js';

/** A schema the bridge would refuse to give authority to, and why. */
export interface InspectSchemaProblem {
  readonly schema: 'inputSchema' | 'outputSchema';
  readonly code: string;
  readonly message: string;
  /** `dialect`, `external-ref`, `embedded-id`, `compile`, when known. */
  readonly reason?: string;
}

/** One tool of the report. Server text (title, description) is untrusted. */
export interface InspectedTool {
  readonly name: string;
  /** The name `toolfence-mcp serve` offers it under (`NAMESPACE__tool`), with `--server`. */
  readonly offeredName?: string;
  readonly title?: string;
  readonly description?: string;
  readonly risk: RiskLevel;
  readonly contentTrust: ContentTrustLevel;
  readonly idempotent: boolean;
  /** `declared` when the tool published a readable contract, else `heuristic`. */
  readonly source: ContractSource;
  /** What the policy would answer for a call of this tool (arguments are not known here). */
  readonly policy: { readonly verdict: PermissionVerdict; readonly reason?: string };
  /** Problems of the declared contract (the reported facts are already the cautious ones). */
  readonly contractProblems: readonly ContractProblem[];
  /** Empty when the bridge would accept the tool's schemas. */
  readonly schemaProblems: readonly InspectSchemaProblem[];
}

/** What `toolfence-mcp inspect` found; `--json` prints exactly this. */
export interface InspectReport {
  readonly server: { readonly name: string; readonly version: string } | null;
  readonly transport: 'stdio' | 'streamable-http';
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly policy: InspectPolicySummary;
  readonly tools: readonly InspectedTool[];
  /** Tools the listing skipped because they were malformed. */
  readonly skippedTools: readonly McpListingProblem[];
}

const NO_ARGUMENTS: JsonObject = Object.freeze({}) as JsonObject;

function schemaProblem(
  which: InspectSchemaProblem['schema'],
  error: unknown,
  reason?: string,
): InspectSchemaProblem {
  if (error instanceof BridgeSchemaError) {
    const detail = error.details?.reason;
    const known = typeof detail === 'string' ? detail : reason;
    return {
      schema: which,
      code: error.code,
      message: error.message,
      ...(known === undefined ? {} : { reason: known }),
    };
  }
  return {
    schema: which,
    code: BridgeSchemaError.code,
    message: `The ${which} cannot be checked`,
  };
}

/** The bridge's schema-authority check for one tool, reported instead of thrown. */
export function checkToolSchemas(
  info: McpToolInfo,
  validator: AjvSchemaValidator,
  mode: SchemaDialectMode = 'compatible',
): { readonly inputSchema: JsonObject | undefined; readonly problems: InspectSchemaProblem[] } {
  const problems: InspectSchemaProblem[] = [];
  let inputSchema: JsonObject | undefined;
  try {
    inputSchema = authoritativeSchema(info.name, 'inputSchema', info.inputSchema, mode);
  } catch (error) {
    problems.push(schemaProblem('inputSchema', error));
  }
  if (inputSchema !== undefined) {
    try {
      validator.prepare(inputSchema);
    } catch {
      problems.push({
        schema: 'inputSchema',
        code: BridgeSchemaError.code,
        message: 'The inputSchema of a server tool cannot be compiled',
        reason: 'compile',
      });
      inputSchema = undefined;
    }
  }
  if (info.outputSchema !== undefined) {
    try {
      const output = authoritativeSchema(info.name, 'outputSchema', info.outputSchema, mode);
      try {
        validator.prepare(output);
      } catch {
        problems.push({
          schema: 'outputSchema',
          code: BridgeSchemaError.code,
          message: 'The outputSchema of a server tool cannot be compiled',
          reason: 'compile',
        });
      }
    } catch (error) {
      problems.push(schemaProblem('outputSchema', error));
    }
  }
  return { inputSchema, problems };
}

/** How `serve` would name a server's tools: its config name and namespace (`--server`). */
export interface InspectNaming {
  readonly server: string;
  readonly namespace: string;
}

async function judge(
  policy: InspectPolicy,
  info: McpToolInfo,
  inputSchema: JsonObject,
  declared: ToolContract | undefined,
  context: ToolContext,
  toolName: string,
  naming: InspectNaming | undefined,
): Promise<InspectedTool['policy']> {
  // The same identity `serve` gives the bridged tool: offered name and origin (server, own name).
  const spec: ToolSpec = {
    name: toolName,
    origin: naming === undefined ? { tool: info.name } : { server: naming.server, tool: info.name },
    description: info.description ?? info.title ?? `MCP tool ${info.name}`,
    inputSchema,
    ...(info.annotations === undefined ? {} : { annotations: info.annotations as JsonObject }),
    ...(declared === undefined ? {} : { contract: declared }),
  };
  const effect: ToolEffect =
    declared === undefined ? 'unknown' : declared.risk === 'read-only' ? 'read' : 'write';
  try {
    const decision = await policy.authorizer.authorize({
      toolName,
      args: NO_ARGUMENTS,
      context,
      spec,
      contract: declared,
      effect,
    });
    return decision.reason === undefined
      ? { verdict: decision.verdict }
      : { verdict: decision.verdict, reason: decision.reason };
  } catch {
    // A throwing authorizer denies the call in a registry; report the same.
    return { verdict: 'deny', reason: 'policy failed' };
  }
}

function offeredNameOf(naming: InspectNaming, remoteName: string): string | undefined {
  try {
    return bridgedToolName(naming.namespace, remoteName);
  } catch {
    return undefined;
  }
}

/** Inspects one tool: its contract, the policy's answer, and its schema problems. */
export async function inspectTool(
  info: McpToolInfo,
  policy: InspectPolicy,
  validator: AjvSchemaValidator,
  context: ToolContext,
  naming?: InspectNaming,
): Promise<InspectedTool> {
  // The listing keeps `annotations` and `_meta` as sent, so both declaration places are read.
  const reading = readContract({
    name: info.name,
    ...(info.description === undefined ? {} : { description: info.description }),
    ...(info.annotations === undefined ? {} : { annotations: info.annotations }),
    ...(info._meta === undefined ? {} : { _meta: info._meta }),
  });
  const { inputSchema, problems } = checkToolSchemas(info, validator);
  const declared = reading.source === 'declared' ? reading.contract : undefined;
  const offeredName = naming === undefined ? undefined : offeredNameOf(naming, info.name);
  const verdict = await judge(
    policy,
    info,
    inputSchema ?? NO_ARGUMENTS_SCHEMA,
    declared,
    context,
    offeredName ?? info.name,
    naming,
  );
  return {
    name: info.name,
    ...(offeredName === undefined ? {} : { offeredName }),
    ...(info.title === undefined ? {} : { title: info.title }),
    ...(info.description === undefined ? {} : { description: info.description }),
    risk: reading.contract.risk,
    contentTrust: reading.contract.contentTrust,
    idempotent: reading.contract.idempotent,
    source: reading.source,
    policy: verdict,
    contractProblems: reading.problems.map((problem) => ({ ...problem })),
    schemaProblems: problems,
  };
}

/** Connects (if needed), lists the tools once and builds the report. */
export async function buildInspectReport(
  client: McpClient,
  policy: InspectPolicy,
  transport: InspectReport['transport'],
  naming?: InspectNaming,
): Promise<InspectReport> {
  await client.connect();
  const capabilities = client.serverCapabilities ?? {};
  // A server without the tools capability need not answer tools/list: report no tools.
  const listing =
    capabilities.tools === undefined ? { tools: [], problems: [] } : await client.listing();
  const validator = new AjvSchemaValidator();
  const context = createToolContext({ runId: 'toolfence-mcp-inspect' });
  const tools: InspectedTool[] = [];
  for (const info of listing.tools) {
    tools.push(await inspectTool(info, policy, validator, context, naming));
  }
  const version = client.serverVersion;
  return {
    server: version === undefined ? null : { name: version.name, version: version.version },
    transport,
    capabilities,
    policy: policy.summary,
    tools,
    skippedTools: listing.problems.map((problem) => ({ ...problem })),
  };
}
