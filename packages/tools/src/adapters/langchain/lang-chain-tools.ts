import { ToolMessage } from '@langchain/core/messages';
import { StructuredTool } from '@langchain/core/tools';
import { interrupt } from '@langchain/langgraph';
import type { JsonObject } from '../../registry/tool.js';
import {
  type AdapterOptions,
  type AdapterOutcome,
  type AdapterRegistry,
  approvalNeed,
  callRegistry,
  flattenResult,
  type ResolvedAdapter,
  resolveAdapter,
  resultText,
  structuredText,
  TRUNCATED_NOTE,
} from '../registry-call.js';
import {
  CompletedCalls,
  completedCallMemory,
  DEFAULT_COMPLETED_CALL_MEMORY,
  type LangGraphTaskConfig,
} from './completed-calls.js';

/** Options of {@link langChainTools}. */
export interface LangChainToolsOptions extends AdapterOptions {
  /**
   * How many calls' outcomes the tools keep, by LangGraph thread, task and tool call id, so a step
   * LangGraph runs again after an `interrupt()` returns each call that already ran (or is
   * running) instead of running it twice. A positive integer; default
   * {@link DEFAULT_COMPLETED_CALL_MEMORY} (1,000). In this process only.
   */
  readonly completedCallMemory?: number;
}

/**
 * What an adapted tool passes to LangGraph's `interrupt()` when the policy asks a human. Resume
 * the graph with `new Command({ resume: decision })`, where `decision` is a
 * {@link LangChainApprovalDecision}.
 */
export interface LangChainApprovalRequest {
  /** Marks a toolfence approval request among other interrupts. */
  readonly type: 'toolfence-approval';
  /** The tool's name as the model sees it. */
  readonly toolName: string;
  /** The tool's registry name. */
  readonly registryName: string;
  /** The arguments the model gave (what an approval is bound to). */
  readonly args: unknown;
  /** The model's tool call id, when LangChain passed one. */
  readonly toolCallId: string | undefined;
  /** The policy's log-safe reason for asking. */
  readonly reason: string | undefined;
}

/**
 * The resume value for a {@link LangChainApprovalRequest}, the shape of LangChain's
 * human-in-the-loop decisions: `approve` runs the call once, `reject` answers the model with
 * `message` (or a default) and never reaches the tool. Anything else counts as `reject`.
 */
export type LangChainApprovalDecision =
  | {
      /** Run the call once, exactly as asked. */
      readonly type: 'approve';
    }
  | {
      /** Do not run the call. */
      readonly type: 'reject';
      /** What the model reads instead. */
      readonly message?: string;
    };

/** The artifact of an adapted tool's `ToolMessage` (not sent to the model). */
export interface LangChainToolArtifact {
  /** The result's `structuredContent`. */
  readonly structuredContent?: JsonObject;
  /** The result was cut to a size limit. */
  readonly truncated: boolean;
  /** The refusal's error code, when the call was refused. */
  readonly code?: string;
}

type ContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'image' | 'audio' | 'file'; readonly data: string; readonly mimeType: string };

/**
 * A registry tool as a LangChain `StructuredTool`. Its JSON Schema is the registry's input
 * schema, as is. Every call goes through `registry.invoke`; when the policy asks, the tool calls
 * LangGraph's `interrupt()` with a {@link LangChainApprovalRequest} (the graph needs a
 * checkpointer) and, resumed with `{ type: 'approve' }`, presents a single-use grant for exactly
 * these arguments. LangGraph runs the whole interrupted step again on resume; every call of it
 * that already reached the registry (allowed siblings, approved calls) gets its earlier outcome
 * from the adapter's {@link CompletedCalls} instead of running again. Refusals come back as a
 * `ToolMessage` with `status: 'error'`.
 */
class RegistryStructuredTool extends StructuredTool {
  /** The tool's name as the model sees it. */
  override name: string;
  /** The registry tool's description. */
  override description: string;
  /** The registry tool's input schema (JSON Schema). */
  override schema: JsonObject;
  /** The tool's registry name. */
  readonly registryName: string;
  readonly #adapter: ResolvedAdapter;
  readonly #completed: CompletedCalls;

  /** Wraps one registry tool; use {@link langChainTools}, which checks the options. */
  constructor(
    adapter: ResolvedAdapter,
    completed: CompletedCalls,
    registryName: string,
    modelName: string,
    description: string,
    schema: JsonObject,
  ) {
    super({ responseFormat: 'content_and_artifact', verboseParsingErrors: true });
    this.#adapter = adapter;
    this.#completed = completed;
    this.registryName = registryName;
    this.name = modelName;
    this.description = description;
    this.schema = schema;
  }

  /**
   * Asks the policy, interrupts for approval when it asks, then invokes the registry. A call this
   * LangGraph task already sent to the registry (LangGraph runs the whole step again on resume)
   * gets that call's outcome instead.
   */
  protected override async _call(
    input: unknown,
    _runManager?: unknown,
    config?: LangGraphTaskConfig & {
      readonly toolCall?: { readonly id?: string };
      readonly signal?: AbortSignal;
    },
  ): Promise<[string | ContentBlock[] | ToolMessage, LangChainToolArtifact]> {
    const toolCallId = config?.toolCall?.id;
    const key = CompletedCalls.key(config, toolCallId);
    const argsDigest = key === undefined ? '' : CompletedCalls.digest(input);
    const earlier =
      key === undefined ? undefined : this.#completed.get(key, this.registryName, argsDigest);
    if (earlier !== undefined) {
      // LangGraph matches resume values to interrupt() calls by their order in the task: a call
      // that interrupted the first time does so again (its answer is already there), so the
      // sibling calls still asking get their own answers.
      if (earlier.asked) interrupt(this.#request(input, toolCallId, undefined));
      return this.#toContent(await earlier.outcome, toolCallId);
    }
    const need = await approvalNeed(this.#adapter, this.registryName, input, toolCallId);
    let approved = false;
    if (need !== undefined) {
      const decision: unknown = interrupt(this.#request(input, toolCallId, need.reason));
      if ((decision as { type?: unknown } | null)?.type !== 'approve') {
        const message = (decision as { message?: unknown } | null)?.message;
        const text =
          typeof message === 'string' && message !== ''
            ? message
            : 'The user rejected this tool call; it did not run. Do not retry it unless the user asks.';
        const rejected: LangChainToolArtifact = { truncated: false, code: 'USER_REJECTED' };
        return [this.#errorMessage(text, toolCallId, rejected), rejected];
      }
      approved = true;
    }
    const outcome = callRegistry(this.#adapter, {
      toolName: this.registryName,
      args: input,
      toolCallId,
      signal: config?.signal,
      approved: () => approved,
    });
    if (key !== undefined) {
      this.#completed.set(key, {
        toolName: this.registryName,
        argsDigest,
        asked: need !== undefined,
        outcome,
      });
    }
    return this.#toContent(await outcome, toolCallId);
  }

  #request(
    input: unknown,
    toolCallId: string | undefined,
    reason: string | undefined,
  ): LangChainApprovalRequest {
    return {
      type: 'toolfence-approval',
      toolName: this.name,
      registryName: this.registryName,
      args: input,
      toolCallId,
      reason,
    };
  }

  /** An error `ToolMessage` (LangChain passes a returned message through, so it carries the artifact). */
  #errorMessage(
    text: string,
    toolCallId: string | undefined,
    artifact: LangChainToolArtifact,
  ): string | ToolMessage {
    if (toolCallId === undefined) return text;
    return new ToolMessage({
      content: text,
      tool_call_id: toolCallId,
      name: this.name,
      status: 'error',
      artifact,
    });
  }

  #toContent(
    outcome: AdapterOutcome,
    toolCallId: string | undefined,
  ): [string | ContentBlock[] | ToolMessage, LangChainToolArtifact] {
    if (outcome.kind === 'refused') {
      const refused: LangChainToolArtifact = { truncated: false, code: outcome.code };
      return [this.#errorMessage(outcome.text, toolCallId, refused), refused];
    }
    const flat = flattenResult(outcome.result);
    const artifact: LangChainToolArtifact = {
      ...(flat.structuredContent === undefined
        ? {}
        : { structuredContent: flat.structuredContent }),
      truncated: flat.truncated,
    };
    if (flat.isError) {
      return [this.#errorMessage(resultText(flat, true), toolCallId, artifact), artifact];
    }
    if (!flat.parts.some((part) => part.type === 'media'))
      return [resultText(flat, true), artifact];
    const blocks: ContentBlock[] = flat.parts.map((part) => {
      if (part.type === 'text') return { type: 'text', text: part.text };
      const kind = part.mimeType.startsWith('image/')
        ? 'image'
        : part.mimeType.startsWith('audio/')
          ? 'audio'
          : 'file';
      return { type: kind, data: part.data, mimeType: part.mimeType };
    });
    const structured = structuredText(flat);
    if (structured !== undefined) blocks.push({ type: 'text', text: structured });
    if (flat.truncated) blocks.push({ type: 'text', text: TRUNCATED_NOTE });
    return [blocks, artifact];
  }
}

/**
 * The registry's tools as LangChain `StructuredTool`s (`@langchain/core` 1.x, optional peer
 * dependency), for `model.bindTools`, LangGraph's `ToolNode` and agents built on them. Approval
 * uses LangGraph's `interrupt()` (`@langchain/langgraph`, optional peer dependency).
 *
 * Throws `ConfigurationError` for unknown options, a bad context or an unregistered name.
 */
export function langChainTools(
  registry: AdapterRegistry,
  options: LangChainToolsOptions,
): StructuredTool[] {
  const adapter = resolveAdapter(
    'langChainTools',
    registry,
    options,
    'letters-digits-underscore-hyphen',
    ['completedCallMemory'],
  );
  const completed = new CompletedCalls(
    completedCallMemory(options.completedCallMemory, 'langChainTools'),
  );
  const tools: StructuredTool[] = [];
  for (const { registryName, modelName } of adapter.tools) {
    const spec = registry.get(registryName)?.spec;
    if (spec === undefined) continue;
    tools.push(
      new RegistryStructuredTool(
        adapter,
        completed,
        registryName,
        modelName,
        spec.description,
        // A copy: LangChain's JSON Schema validator writes its own keys into the schema object,
        // and a registry spec's schema may be frozen (defineTool freezes it).
        structuredClone(spec.inputSchema),
      ),
    );
  }
  return tools;
}
