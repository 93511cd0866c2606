import type { ToolContract } from '@toolfence/tool-contract';

/** A JSON value, as every argument, metadata and structured result is. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;

/** A JSON object with string keys. */
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

/** What a call does to the world, as the registry and policies see it. */
export const TOOL_EFFECTS = ['read', 'compute', 'write', 'unknown'] as const;

/** One of {@link TOOL_EFFECTS}. */
export type ToolEffect = (typeof TOOL_EFFECTS)[number];

/**
 * How a tool's effect is found for one call: a fixed effect, or one chosen by an argument
 * (for example `operation` or `method`) through a case-insensitive mapping with a default.
 */
export interface EffectDescriptor {
  /** The effect when no argument selects one (or the argument's value is not mapped). */
  readonly default: ToolEffect;
  /** Name of the top-level argument whose string value selects the effect. */
  readonly argument?: string;
  /** Effect for each value of `argument`; keys compare case-insensitively. */
  readonly byValue?: Readonly<Record<string, ToolEffect>>;
}

/** The static description of a tool. */
export interface ToolSpec {
  /** Unique name in a registry. */
  readonly name: string;
  readonly description: string;
  /** JSON Schema 2020-12 of the arguments object. */
  readonly inputSchema: JsonObject;
  /** JSON Schema 2020-12 of `structuredContent`, when the tool returns it. */
  readonly outputSchema?: JsonObject;
  /** MCP-style annotations (hints, and tool-contract's keys). */
  readonly annotations?: JsonObject;
  /** The contract the tool's author declared, if any. */
  readonly contract?: ToolContract;
  /** How the effect of a call is found; without it the effect comes from the contract, else `unknown`. */
  readonly effect?: EffectDescriptor;
  /** Top-level argument that rule policies read as the operation (for example `method`). */
  readonly operationArgument?: string;
}

/** A block of tool output. */
export type ContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'json'; readonly json: JsonValue }
  | { readonly type: 'image'; readonly data: string; readonly mimeType: string }
  | { readonly type: 'audio'; readonly data: string; readonly mimeType: string }
  | {
      readonly type: 'resource_link';
      readonly uri: string;
      readonly name?: string;
      readonly title?: string;
      readonly description?: string;
      readonly mimeType?: string;
    }
  | {
      readonly type: 'resource';
      readonly resource: {
        readonly uri: string;
        readonly mimeType?: string;
        readonly text?: string;
        /** Base64 bytes. */
        readonly blob?: string;
      };
    };

/** What a tool call returns. */
export interface ToolResult {
  readonly content: readonly ContentBlock[];
  readonly structuredContent?: JsonObject;
  /** True when the tool ran but reports a failure the model should see. */
  readonly isError?: boolean;
  /** Log-safe facts about the call (never secrets or raw arguments). */
  readonly metadata?: JsonObject;
}

/** Who may do what in a call: `read-only` denies anything whose effect is not `read`. */
export type AccessScope = 'full' | 'read-only';

/** Per-call context. Build it with `createToolContext`, which validates and freezes it. */
export interface ToolContext {
  /** Identifies the agent run; required and non-empty. */
  readonly runId: string;
  readonly stepId?: string;
  /** JSON values only, deep-snapshotted and frozen. */
  readonly metadata: JsonObject;
  readonly accessScope: AccessScope;
  /** Reaches the tool; aborting it asks the tool to stop. */
  readonly signal?: AbortSignal;
}

/** A tool: its spec, how to call it, and optional lifecycle. */
export interface Tool {
  readonly spec: ToolSpec;
  /** Runs one call with validated, frozen arguments. */
  invoke(args: JsonObject, context: ToolContext): Promise<ToolResult>;
  /** Prepares the tool; a registry runs it before the tool takes calls. */
  start?(): Promise<void>;
  /** Releases what the tool holds; a registry runs it exactly once. */
  close?(): Promise<void>;
}

/** A text result. */
export function textResult(
  text: string,
  options: { readonly isError?: boolean; readonly metadata?: JsonObject } = {},
): ToolResult {
  return { content: [{ type: 'text', text }], ...options };
}

/** A JSON result: the value as a JSON block and, for an object, as `structuredContent`. */
export function jsonResult(
  value: JsonValue,
  options: { readonly isError?: boolean; readonly metadata?: JsonObject } = {},
): ToolResult {
  const structured =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? { structuredContent: value as JsonObject }
      : {};
  return { content: [{ type: 'json', json: value }], ...structured, ...options };
}

/** An error result with a safe message the model may read. */
export function errorResult(
  text: string,
  options: { readonly metadata?: JsonObject } = {},
): ToolResult {
  return { content: [{ type: 'text', text }], isError: true, ...options };
}
