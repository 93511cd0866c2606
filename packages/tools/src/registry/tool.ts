import type { ToolContract } from '@toolfence/tool-contract';

/** A JSON value, as every argument, metadata and structured result is. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;

/** A JSON object with string keys. */
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

const TOOL_EFFECTS_VALUES = ['read', 'compute', 'write', 'unknown'] as const;

/** What a call does to the world, as the registry and policies see it. */
export const TOOL_EFFECTS: typeof TOOL_EFFECTS_VALUES = Object.freeze(TOOL_EFFECTS_VALUES);

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

/**
 * A contract per operation: each call is judged (risk policy, approval, audit) by the contract of
 * the operation it performs, not by the tool's worst case. The set of operations is fixed, so the
 * tool's riskiest contract can still be published statically (see `contractOf`).
 */
export interface OperationContracts {
  /**
   * How a call's operation is found: the name of a top-level argument whose string value is the
   * operation (compared exactly, as the tool compares it), or a function of the validated, frozen
   * arguments that returns the operation, or `undefined` when they name none. A call whose
   * operation is missing or not declared is refused before it runs (`REGISTRY_INPUT_INVALID`);
   * a function that throws or returns anything else fails closed (`POLICY_PERMISSION_DENIED`,
   * reason `contract-error`). The function must pick the operation the tool will perform from
   * the same arguments, so a call can never be judged by a lower contract than it executes.
   */
  readonly select: string | ((args: JsonObject) => string | undefined);
  /** The contract of each operation (each checked as `defineContract` checks it). */
  readonly operations: Readonly<Record<string, ToolContract>>;
}

/** The static description of a tool. */
export interface ToolSpec {
  /** Unique name in a registry. */
  readonly name: string;
  /** What the tool does and when to use it, shown to the model. */
  readonly description: string;
  /** JSON Schema of the arguments object (2020-12 unless its `$schema` declares another dialect). */
  readonly inputSchema: JsonObject;
  /** JSON Schema of `structuredContent`, when the tool returns it (dialect as for `inputSchema`). */
  readonly outputSchema?: JsonObject;
  /** MCP-style annotations (hints, and tool-contract's keys). */
  readonly annotations?: JsonObject;
  /**
   * The contract the tool's author declared, if any. With {@link ToolSpec.operationContracts} it
   * is the static (worst-case) contract and must be at least as risky as every operation.
   */
  readonly contract?: ToolContract;
  /**
   * Contracts per operation; each call is judged by the one of the operation it performs. Not
   * together with `effect` (each operation's contract gives its effect).
   */
  readonly operationContracts?: OperationContracts;
  /**
   * How the effect of a call is found: one effect for every call (`'read'`), or a descriptor
   * that selects it by an argument. Without it the effect comes from the contract, else `unknown`.
   */
  readonly effect?: ToolEffect | EffectDescriptor;
  /** Top-level argument that rule policies read as the operation (for example `method`). */
  readonly operationArgument?: string;
  /**
   * Where a tool bridged from an MCP server comes from: the server and the tool's own name there.
   * Rule policies match a rule's `tool` (without `__`) against `origin.tool` and its `server`
   * against `origin.server`. Absent for local tools.
   */
  readonly origin?: ToolOrigin;
}

/** The server a bridged tool comes from, and the tool's own name on that server. */
export interface ToolOrigin {
  /** The server's name as the host knows it (a gateway config's `mcpServers` key), if known. */
  readonly server?: string;
  /** The tool's name on its server, as the server lists it (never cleaned or prefixed). */
  readonly tool: string;
}

/** Who a content block is meant for, as MCP's `Role` names them. */
export type ContentAudience = 'user' | 'assistant';

/**
 * MCP content-block annotations, kept from the server's result. A block whose `audience` does
 * not include `assistant` is meant for the user only: show it to the user, do not hand it to the
 * model.
 */
export interface ContentAnnotations {
  /** Who the block is for (`user`, `assistant` or both); an empty list names nobody the host knows. */
  readonly audience?: readonly ContentAudience[];
  /** How important the block is, from 0 (least) to 1 (most important, effectively required). */
  readonly priority?: number;
  /** When the content was last modified, as the server wrote it (ISO 8601). */
  readonly lastModified?: string;
}

/** A block of tool output. */
export type ContentBlock =
  | {
      /** Marks a plain-text block. */
      readonly type: 'text';
      /** Text for the model to read. */
      readonly text: string;
      /** The server's content annotations (audience, priority, lastModified), when it sent any. */
      readonly annotations?: ContentAnnotations;
    }
  | {
      /** Marks a JSON block. */
      readonly type: 'json';
      /** The JSON value the tool returned. */
      readonly json: JsonValue;
    }
  | {
      /** Marks an image block. */
      readonly type: 'image';
      /** Base64-encoded image bytes. */
      readonly data: string;
      /** Media type of the image, for example `image/png`. */
      readonly mimeType: string;
      /** The server's content annotations (audience, priority, lastModified), when it sent any. */
      readonly annotations?: ContentAnnotations;
    }
  | {
      /** Marks an audio block. */
      readonly type: 'audio';
      /** Base64-encoded audio bytes. */
      readonly data: string;
      /** Media type of the audio, for example `audio/wav`. */
      readonly mimeType: string;
      /** The server's content annotations (audience, priority, lastModified), when it sent any. */
      readonly annotations?: ContentAnnotations;
    }
  | {
      /** Marks a link to a resource the client may fetch; its content is not included. */
      readonly type: 'resource_link';
      /** URI of the linked resource. */
      readonly uri: string;
      /** Programmatic name of the resource. */
      readonly name?: string;
      /** Human-readable title of the resource. */
      readonly title?: string;
      /** What the resource contains. */
      readonly description?: string;
      /** Media type of the resource, when known. */
      readonly mimeType?: string;
      /** The server's content annotations (audience, priority, lastModified), when it sent any. */
      readonly annotations?: ContentAnnotations;
    }
  | {
      /** Marks a resource embedded with its content. */
      readonly type: 'resource';
      /** The embedded resource: its URI and either `text` or base64 `blob`. */
      readonly resource: {
        /** URI that identifies the resource. */
        readonly uri: string;
        /** Media type of the content, when known. */
        readonly mimeType?: string;
        /** Content as text, for textual resources. */
        readonly text?: string;
        /** Base64 bytes. */
        readonly blob?: string;
      };
      /** The server's content annotations (audience, priority, lastModified), when it sent any. */
      readonly annotations?: ContentAnnotations;
    };

/** What a tool call returns. */
export interface ToolResult {
  /** Output blocks in order, as the model sees them. */
  readonly content: readonly ContentBlock[];
  /** Machine-readable result object; matches `spec.outputSchema` when the tool declares one. */
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
  /** Identifies the step of the run the call belongs to, when the host tracks steps. */
  readonly stepId?: string;
  /**
   * The session the call belongs to, for the flow guard's labels: what the host says it is (a
   * conversation, a downstream connection). `createToolContext` always sets it (default
   * `runId`); a context built by hand without it belongs to the session named by its `runId`.
   */
  readonly session?: string;
  /** JSON values only, deep-snapshotted and frozen. */
  readonly metadata: JsonObject;
  /** What the call may do; `read-only` denies calls whose effect is not `read`. */
  readonly accessScope: AccessScope;
  /** Reaches the tool; aborting it asks the tool to stop. */
  readonly signal?: AbortSignal;
}

/** A tool: its spec, how to call it, and optional lifecycle. */
export interface Tool {
  /** Static description: name, description, schemas, annotations and effect. */
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
