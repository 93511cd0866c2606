import { createHash } from 'node:crypto';
import { McpConfigurationError } from '../mcp/errors.js';
import type { ApprovalGrant } from '../registry/approval-grant.js';
import { BudgetExceededError } from '../registry/budget-exceeded-error.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import { PermissionDeniedError } from '../registry/permission-denied-error.js';
import { RegistryClosedError } from '../registry/registry-closed-error.js';
import { type SameJsonValueOptions, sameJsonValue } from '../registry/same-json-value.js';
import type {
  ContentBlock,
  JsonObject,
  JsonValue,
  ToolContext,
  ToolResult,
} from '../registry/tool.js';
import { ToolCloseError } from '../registry/tool-close-error.js';
import {
  createToolContext,
  deriveToolContext,
  type ToolContextInit,
} from '../registry/tool-context.js';
import { ToolExecutionError } from '../registry/tool-execution-error.js';
import { ToolInputError } from '../registry/tool-input-error.js';
import { ToolNotFoundError } from '../registry/tool-not-found-error.js';
import type { ToolRegistry } from '../registry/tool-registry.js';
import { ToolStartError } from '../registry/tool-start-error.js';
import { SkillConfigurationError } from '../skills/errors.js';
import { ToolsError } from '../tools-error.js';

/** Longest tool name model APIs accept (OpenAI, Anthropic, Gemini: 64). */
export const MODEL_TOOL_NAME_MAX_LENGTH = 64;

/**
 * The per-run context every adapter call derives its registry context from: the run id,
 * metadata and access scope of the run, and optionally a run-wide abort signal. Each call adds
 * the framework's tool call id as `stepId` and merges the framework's abort signal.
 */
export type AdapterRunContext = ToolContextInit;

/**
 * The registry methods an adapter uses: the one boundary every call goes through. `mayAsk` is
 * optional: without it every call the framework asks about is previewed with `authorize`.
 */
export type AdapterRegistry = Pick<
  ToolRegistry,
  'invoke' | 'authorize' | 'grantApproval' | 'names' | 'get'
> &
  Partial<Pick<ToolRegistry, 'mayAsk'>>;

/** The options every adapter takes. */
export interface AdapterOptions {
  /** The run's context (run id required); each call derives its own from it. */
  readonly context: AdapterRunContext;
  /** Registry tool names to expose. Default: every tool installed when the adapter is built. */
  readonly names?: readonly string[];
}

/** A call's outcome as the adapters hand it to a framework. */
export type AdapterOutcome =
  | {
      /** The tool ran (its result may still be an error result). */
      readonly kind: 'result';
      /** The registry's result. */
      readonly result: ToolResult;
    }
  | {
      /** The registry refused the call or the tool failed: the model reads `text`. */
      readonly kind: 'refused';
      /** The error code, for example `POLICY_PERMISSION_DENIED`. */
      readonly code: string;
      /** What the model reads: code, safe message and what to do. */
      readonly text: string;
    };

/** One call as an adapter sees it, after the framework parsed its arguments. */
export interface AdapterCall {
  /** Registry name of the tool. */
  readonly toolName: string;
  /** Arguments from the model (the registry snapshots and validates them). */
  readonly args: unknown;
  /** The framework's id of the tool call; becomes the context's `stepId`. */
  readonly toolCallId: string | undefined;
  /** The framework's abort signal for this call, if any. */
  readonly signal: AbortSignal | undefined;
  /**
   * True when the framework's own human-in-the-loop approved this exact call. Asked only when the
   * policy may ask about the call (not for a call the adapter's preview found not to ask).
   */
  readonly approved: () => boolean;
}

const OPTION_KEYS: readonly string[] = ['context', 'names'];

/** The checked, resolved options an adapter works from. */
export interface ResolvedAdapter {
  readonly registry: AdapterRegistry;
  /**
   * The run's context, checked and built once when the adapter is built: the context of every
   * call that has neither a tool call id nor a signal of its own, and the source of the metadata
   * every other call's context starts from.
   */
  readonly runContext: ToolContext;
  /** Registry names in order, each with its model-facing name. */
  readonly tools: readonly { readonly registryName: string; readonly modelName: string }[];
  /**
   * The preview's answer by tool call id (with the tool it was for), from the framework's
   * approval question to its `execute` (most recent {@link PREVIEW_MEMORY} only), with the
   * call's context so `execute` does not build it again. A call the preview found not to ask
   * skips the framework's approval lookup; a forgotten or unknown call takes the full path, so
   * forgetting costs time, never safety.
   */
  readonly previews: Map<string, Preview>;
}

/** What the preview of one call left for its `execute`. */
export interface Preview {
  /** Registry name of the tool the preview was for. */
  readonly toolName: string;
  /** The policy may ask a human about the call. */
  readonly asks: boolean;
  /** The call's context (run id, the call id as `stepId`, the run's signal). */
  readonly context: ToolContext;
}

/** How many preview answers an adapter remembers (see {@link ResolvedAdapter.previews}). */
const PREVIEW_MEMORY = 1024;

/**
 * Checks an adapter's registry and options (unknown keys, the context, the names) and maps each
 * registry name to a model-facing one; `adapterKeys` are the adapter's own option keys (it checks
 * their values). Throws {@link ConfigurationError}.
 */
export function resolveAdapter(
  adapter: string,
  registry: AdapterRegistry,
  options: AdapterOptions,
  nameStyle: ModelNameStyle,
  adapterKeys: readonly string[] = [],
): ResolvedAdapter {
  if (
    typeof registry !== 'object' ||
    registry === null ||
    typeof registry.invoke !== 'function' ||
    typeof registry.authorize !== 'function' ||
    typeof registry.grantApproval !== 'function'
  ) {
    throw new ConfigurationError(`${adapter} needs a ToolRegistry`, {
      details: { option: 'registry' },
    });
  }
  checkOptionKeys(options, [...OPTION_KEYS, ...adapterKeys], adapter);
  // Checks the context once, up front (run id, metadata, scope, signal), and keeps it.
  const runContext = createToolContext(options.context);
  let names: readonly string[];
  if (options.names === undefined) {
    names = registry.names();
  } else {
    if (
      !Array.isArray(options.names) ||
      !options.names.every((name: unknown) => typeof name === 'string')
    ) {
      throw new ConfigurationError(`${adapter} names must be an array of tool names`, {
        details: { option: 'names' },
      });
    }
    for (const name of options.names) {
      if (registry.get(name) === undefined) {
        throw new ConfigurationError(
          `${adapter}: no tool named ${JSON.stringify(name)} is registered`,
          {
            details: { option: 'names', tool: name.slice(0, 256) },
          },
        );
      }
    }
    names = [...new Set(options.names)];
  }
  return {
    registry,
    runContext,
    tools: assignModelToolNames(names, nameStyle),
    previews: new Map(),
  };
}

/** Which characters a framework allows in tool names. */
export type ModelNameStyle = 'letters-digits-underscore-hyphen' | 'letters-digits-underscore';

/**
 * Maps registry names to names model APIs accept: at most 64 characters of `[A-Za-z0-9_-]`
 * (or `[A-Za-z0-9_]` for frameworks that rewrite `-`). A name that already fits is kept; any
 * other has its other characters replaced by `_`, is cut to fit, and gets `_` plus 8 hex digits
 * of its SHA-256, so the mapping is deterministic. Throws {@link ConfigurationError} when two
 * names still meet.
 */
export function assignModelToolNames(
  names: readonly string[],
  style: ModelNameStyle,
): { readonly registryName: string; readonly modelName: string }[] {
  const allowed = style === 'letters-digits-underscore' ? /^[A-Za-z0-9_]+$/ : /^[A-Za-z0-9_-]+$/;
  const allowedChar = style === 'letters-digits-underscore' ? /^[A-Za-z0-9_]$/ : /^[A-Za-z0-9_-]$/;
  const seen = new Map<string, string>();
  const result: { registryName: string; modelName: string }[] = [];
  for (const registryName of names) {
    let modelName = registryName;
    if (!allowed.test(registryName) || registryName.length > MODEL_TOOL_NAME_MAX_LENGTH) {
      const hash = createHash('sha256').update(registryName, 'utf8').digest('hex').slice(0, 8);
      const cleaned = Array.from(registryName)
        .map((char) => (allowedChar.test(char) ? char : '_'))
        .join('')
        .slice(0, MODEL_TOOL_NAME_MAX_LENGTH - hash.length - 1);
      modelName = `${cleaned}_${hash}`;
    }
    const previous = seen.get(modelName);
    if (previous !== undefined) {
      throw new ConfigurationError('Two registry tools map to the same model tool name', {
        details: { option: 'names', modelName },
      });
    }
    seen.set(modelName, registryName);
    result.push({ registryName, modelName });
  }
  return result;
}

/**
 * The call's registry context: the run's, with the call id as `stepId` and both signals. A call
 * with neither gets the run's context as built once by {@link resolveAdapter}.
 */
function callContext(
  adapter: ResolvedAdapter,
  toolCallId: string | undefined,
  callSignal: AbortSignal | undefined,
): ToolContext {
  const run = adapter.runContext;
  if (toolCallId === undefined && callSignal === undefined) return run;
  const runSignal = run.signal;
  const signal =
    runSignal === undefined
      ? callSignal
      : callSignal === undefined
        ? runSignal
        : AbortSignal.any([runSignal, callSignal]);
  // The run's context was checked and snapshotted once by resolveAdapter: derived, not rebuilt.
  return deriveToolContext(run, toolCallId ?? run.stepId, signal);
}

/** Why the policy asks a human about a call. */
export interface ApprovalNeed {
  /** The authorizer's log-safe reason, if it gave one. */
  readonly reason: string | undefined;
}

/**
 * Asks the registry whether a call needs a human first: an {@link ApprovalNeed} only for an
 * `ask` verdict. A call that would be refused anyway (deny, invalid arguments, unknown tool)
 * needs no approval: it goes to `invoke`, which refuses it, and the model reads why.
 */
export function approvalNeed(
  adapter: ResolvedAdapter,
  toolName: string,
  args: unknown,
  toolCallId: string | undefined,
): Promise<ApprovalNeed | undefined> {
  return preview(adapter, toolName, args, toolCallId).then(toApprovalNeed);
}

function toApprovalNeed(authorization: Authorization | undefined): ApprovalNeed | undefined {
  return authorization?.verdict === 'ask' ? { reason: authorization.reason } : undefined;
}

function asks(authorization: Authorization | undefined): boolean {
  return authorization?.verdict === 'ask';
}

/** The answer of a preview that does not run (see {@link mayAsk}). */
const NO_PREVIEW: Promise<undefined> = Promise.resolve(undefined);

/** What the registry's `authorize` answers. */
type Authorization = Awaited<ReturnType<AdapterRegistry['authorize']>>;

/**
 * The preview both {@link approvalNeed} and {@link needsApproval} run: the registry's
 * authorization of the call (`undefined` for a refusal that is not a programming error), with
 * the answer and the call's context remembered by call id for its `execute`.
 */
function preview(
  adapter: ResolvedAdapter,
  toolName: string,
  args: unknown,
  toolCallId: string | undefined,
): Promise<Authorization | undefined> {
  // No preview for a tool the policy never asks about: nothing to remember, and its `execute`
  // skips the approval lookup on the same answer (invoke still authorizes the call).
  if (!mayAsk(adapter, toolName)) return NO_PREVIEW;
  // Promise chains rather than async functions: this runs on every call the framework asks about,
  // and each async layer costs a promise and a turn. Every failure still arrives as a rejection.
  let context: ToolContext;
  try {
    context = callContext(adapter, toolCallId, undefined);
  } catch (error) {
    return Promise.reject(error);
  }
  let pending: Promise<Authorization>;
  try {
    pending = adapter.registry.authorize(toolName, args, context);
  } catch (error) {
    pending = Promise.reject(error);
  }
  const settle = (authorization: Authorization | undefined): Authorization | undefined => {
    if (toolCallId !== undefined) {
      remember(adapter.previews, toolCallId, { toolName, asks: asks(authorization), context });
    }
    return authorization;
  };
  return pending.then(settle, (error: unknown) => {
    if (isProgrammingError(error)) throw error;
    return settle(undefined);
  });
}

/**
 * False when the registry says no call of the tool can be asked about (`ToolRegistry.mayAsk`):
 * the preview and the approval lookup are skipped. A registry without `mayAsk` is asked every
 * time.
 */
export function mayAsk(adapter: ResolvedAdapter, toolName: string): boolean {
  return adapter.registry.mayAsk?.(toolName) !== false;
}

/**
 * A preview is remembered by call id, with the tool it was for (a call id a model gave two tools
 * keeps only the later preview; the other call takes the full path). A stale answer (a call id a
 * model reused) can only make the adapter skip the approval lookup, so the registry refuses the
 * call: never a grant. Its context carries the same run id and step id the call's own would, and
 * no signal but the run's.
 */
function remember(previews: Map<string, Preview>, key: string, preview: Preview): void {
  previews.delete(key);
  previews.set(key, preview);
  if (previews.size > PREVIEW_MEMORY) {
    const oldest = previews.keys().next().value;
    if (oldest !== undefined) previews.delete(oldest);
  }
}

/**
 * True when the policy asks a human about the call (see {@link approvalNeed}; the same preview,
 * without building the reason).
 */
export function needsApproval(
  adapter: ResolvedAdapter,
  toolName: string,
  args: unknown,
  toolCallId: string | undefined,
): Promise<boolean> {
  return preview(adapter, toolName, args, toolCallId).then(asks);
}

/**
 * Runs one call through `registry.invoke`. When the framework's human-in-the-loop approved it,
 * the registry is asked again and an `ask` is answered with a single-use grant bound to exactly
 * these arguments (no second gate); without that approval an `ask` goes to the registry's own
 * approval callback, if any. Refusals and tool failures come back as text for the model;
 * programming errors (configuration, a closed registry, foreign errors) are thrown.
 */
export async function callRegistry(
  adapter: ResolvedAdapter,
  call: AdapterCall,
): Promise<AdapterOutcome> {
  const { registry } = adapter;
  let preview: Preview | undefined;
  // Most calls find no preview (none ran, or the tool is never asked about): no lookup then.
  if (call.toolCallId !== undefined && adapter.previews.size > 0) {
    const known = adapter.previews.get(call.toolCallId);
    if (known !== undefined && known.toolName === call.toolName) {
      preview = known;
      adapter.previews.delete(call.toolCallId);
    }
  }
  try {
    // The preview's context is this call's own unless the framework gave the call a signal.
    const context =
      preview !== undefined && call.signal === undefined
        ? preview.context
        : callContext(adapter, call.toolCallId, call.signal);
    let grant: ApprovalGrant | undefined;
    if (preview?.asks !== false && mayAsk(adapter, call.toolName) && call.approved()) {
      const authorization = await registry.authorize(call.toolName, call.args, context);
      if (authorization.verdict === 'ask') grant = registry.grantApproval(authorization);
    }
    const result = await registry.invoke(
      call.toolName,
      call.args,
      context,
      grant === undefined ? undefined : { approval: grant },
    );
    return { kind: 'result', result };
  } catch (error) {
    if (isProgrammingError(error)) throw error;
    const refused = error as ToolsError;
    return { kind: 'refused', code: refused.code, text: refusalText(refused) };
  }
}

/** Configuration and lifecycle errors, and anything that is not a toolfence error, are thrown. */
function isProgrammingError(error: unknown): boolean {
  return (
    !ToolsError.isInstance(error) ||
    ConfigurationError.isInstance(error) ||
    RegistryClosedError.isInstance(error) ||
    ToolStartError.isInstance(error) ||
    ToolCloseError.isInstance(error) ||
    McpConfigurationError.isInstance(error) ||
    SkillConfigurationError.isInstance(error)
  );
}

const AMBIGUOUS_CODE = 'CLIENT_AMBIGUOUS_DELIVERY';

/** What the model reads for a refused or failed call: code, safe message, what to do next. */
export function refusalText(error: ToolsError): string {
  const reason = error.details?.reason;
  const because = typeof reason === 'string' ? ` (reason: ${reason})` : '';
  const cause = (error as { cause?: unknown }).cause;
  if (
    ToolExecutionError.isInstance(error) &&
    typeof cause === 'object' &&
    cause !== null &&
    (cause as { code?: unknown }).code === AMBIGUOUS_CODE
  ) {
    return `Error ${AMBIGUOUS_CODE}: the call may have completed, but its outcome is unknown. Verify external state before retrying; it was not retried.`;
  }
  let next: string;
  if (BudgetExceededError.isInstance(error)) {
    next = 'The call budget has no room left; the tool did not run. Do not retry in this run.';
  } else if (PermissionDeniedError.isInstance(error)) {
    next =
      'The tool did not run. Do not retry the same call; choose another approach or ask the user.';
  } else if (ToolInputError.isInstance(error)) {
    next =
      "The tool did not run. Fix the arguments to match the tool's input schema and call it again.";
  } else if (ToolNotFoundError.isInstance(error)) {
    next = 'The tool did not run. Use one of the tools offered.';
  } else {
    next = 'The tool failed.';
  }
  return `Error ${error.code}: ${error.message}${because}. ${next}`;
}

/** A framework-neutral part of a result. */
export type FlatPart =
  | {
      /** Text for the model (JSON blocks, links and text resources become text). */
      readonly type: 'text';
      /** The text. */
      readonly text: string;
    }
  | {
      /** An image, audio or other binary the framework can hand on as media. */
      readonly type: 'media';
      /** Base64 bytes. */
      readonly data: string;
      /** Media type, for example `image/png`. */
      readonly mimeType: string;
    };

/** A registry result, flattened for frameworks. */
export interface FlatResult {
  /** Content in order: text (the registry's `json` blocks flattened) and media. */
  readonly parts: readonly FlatPart[];
  /** The result's `structuredContent`, as JSON. */
  readonly structuredContent: JsonObject | undefined;
  /** The tool ran but reports a failure. */
  readonly isError: boolean;
  /** The result was cut to a size limit (by the tool or the MCP result limits). */
  readonly truncated: boolean;
  /**
   * A text part already carries `structuredContent` (its text is JSON equal to it, as MCP servers
   * send it), so the model reads that part and not `structuredContent` a second time.
   */
  readonly structuredInText: boolean;
  /**
   * `structuredContent` as JSON text, when flattening already wrote it (to compare a `json`
   * block that is not the same object); {@link structuredText} writes it at most once.
   */
  structuredJson?: string;
}

/**
 * `structuredContent` as JSON text for the model, written once per flattened result; `undefined`
 * when there is none or a text part already carries it ({@link FlatResult.structuredInText}).
 */
export function structuredText(flat: FlatResult): string | undefined {
  if (flat.structuredContent === undefined || flat.structuredInText) return undefined;
  flat.structuredJson ??= JSON.stringify(flat.structuredContent);
  return flat.structuredJson;
}

/** The note added when blocks meant only for the user were kept from the model. */
export const USER_ONLY_NOTE =
  '[toolfence: part of this result is meant only for the user and was not shown to the model]';

/** True for a block whose `audience` names who it is for and leaves the model (assistant) out. */
function isUserOnly(block: ContentBlock): boolean {
  const audience = (block as { annotations?: { audience?: readonly string[] } }).annotations
    ?.audience;
  return Array.isArray(audience) && !audience.includes('assistant');
}

/** The note appended for a truncated result, so the model knows it is partial. */
export const TRUNCATED_NOTE = '[toolfence: this result was cut to a size limit and is incomplete]';

/**
 * Flattens a result: blocks whose `annotations.audience` leaves out the assistant are kept from
 * the model (a note says so), `json` blocks become JSON text (a block equal to `structuredContent`
 * is dropped, as `structuredContent` carries it), links and text resources become text, images,
 * audio and blob resources become media, and truncation flags in `metadata` or
 * `structuredContent` set `truncated`.
 */
export function flattenResult(result: ToolResult): FlatResult {
  const structured = result.structuredContent;
  // Written only when a json block is not structuredContent itself (tools that return
  // jsonResult() hand over the same object twice, and that block is dropped unwritten).
  let structuredJson: string | undefined;
  const parts: FlatPart[] = [];
  let userOnly = 0;
  for (const block of result.content) {
    // MCP's audience annotation: a block for the user alone never reaches the model.
    if (isUserOnly(block)) {
      userOnly += 1;
      continue;
    }
    if (block.type === 'json') {
      if (block.json === structured) continue;
      const text = JSON.stringify(block.json as JsonValue);
      if (structured !== undefined) {
        structuredJson ??= JSON.stringify(structured);
        if (text === structuredJson) continue;
      }
      parts.push({ type: 'text', text });
      continue;
    }
    const part = flattenBlock(block);
    if (part !== undefined) parts.push(part);
  }
  if (userOnly > 0) parts.push({ type: 'text', text: USER_ONLY_NOTE });
  const structuredInText = structured !== undefined && partsCarry(parts, structured);
  const metadata = result.metadata;
  const truncated =
    metadata?.truncated === true ||
    metadata?.structuredContentOmitted === true ||
    (typeof metadata?.omittedBlocks === 'number' && metadata.omittedBlocks > 0) ||
    structured?.truncated === true;
  const flat: FlatResult = {
    parts,
    structuredContent: structured,
    isError: result.isError === true,
    truncated,
    structuredInText,
  };
  if (structuredJson !== undefined) flat.structuredJson = structuredJson;
  return flat;
}

/** Deepest nesting {@link partsCarry} compares; deeper values count as different. */
const CARRY_COMPARE: SameJsonValueOptions = Object.freeze({ maxDepth: 64 });

/**
 * True when a text part is JSON equal to `structured` (key order and whitespace aside): the
 * MCP convention of a text block that repeats the structured content for older clients.
 */
export function partsCarry(parts: readonly FlatPart[], structured: JsonObject): boolean {
  for (const part of parts) {
    if (part.type !== 'text') continue;
    const text = part.text.trimStart();
    if (!text.startsWith('{')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      continue;
    }
    if (sameJsonValue(parsed, structured, CARRY_COMPARE)) return true;
  }
  return false;
}

/** Every block but `json` (which {@link flattenResult} handles against `structuredContent`). */
function flattenBlock(block: ContentBlock): FlatPart | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
    case 'audio':
      return { type: 'media', data: block.data, mimeType: block.mimeType };
    case 'resource_link':
      return {
        type: 'text',
        text: `Resource link: ${block.uri}${block.mimeType === undefined ? '' : ` (${block.mimeType})`}${block.description === undefined ? '' : ` ${block.description}`}`,
      };
    case 'resource': {
      const { resource } = block;
      if (typeof resource.text === 'string') return { type: 'text', text: resource.text };
      if (typeof resource.blob === 'string') {
        return {
          type: 'media',
          data: resource.blob,
          mimeType: resource.mimeType ?? 'application/octet-stream',
        };
      }
      return { type: 'text', text: `Resource: ${resource.uri}` };
    }
    default:
      return undefined;
  }
}

/**
 * The whole result as one text: parts' text, `structuredContent` as JSON when no text part carries
 * it (see {@link structuredText}), media named by type, and the truncation note.
 */
export function resultText(flat: FlatResult, includeMedia: boolean): string {
  const lines: string[] = [];
  for (const part of flat.parts) {
    if (part.type === 'text') lines.push(part.text);
    else if (includeMedia) lines.push(`[${part.mimeType} content]`);
  }
  const structured = structuredText(flat);
  if (structured !== undefined) lines.push(structured);
  if (flat.truncated) lines.push(TRUNCATED_NOTE);
  return lines.length === 1 ? (lines[0] as string) : lines.join('\n');
}
