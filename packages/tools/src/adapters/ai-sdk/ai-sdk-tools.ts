import { type JSONSchema7, jsonSchema, type ModelMessage, type ToolSet, tool } from 'ai';
import type { JsonObject } from '../../registry/tool.js';
import {
  type AdapterOptions,
  type AdapterOutcome,
  type AdapterRegistry,
  callRegistry,
  type FlatPart,
  flattenResult,
  mayAsk,
  needsApproval,
  partsCarry,
  resolveAdapter,
  resultText,
  TRUNCATED_NOTE,
} from '../registry-call.js';

/** Options of {@link aiSdkTools}. */
export interface AiSdkToolsOptions extends AdapterOptions {}

/**
 * What a tool's `execute` returns (the tool part's `output` in the UI): JSON only. The model
 * reads it through the tool's `toModelOutput`.
 */
export interface AiSdkToolOutput {
  /** True when the registry refused the call, the tool failed, or its result is an error. */
  readonly isError: boolean;
  /** The refusal's error code (for example `POLICY_PERMISSION_DENIED`), when the call was refused. */
  readonly code?: string;
  /** The whole result (or the refusal) as text. */
  readonly text: string;
  /** Text and media parts in order (the registry's `json` blocks flattened to text). */
  readonly parts: readonly FlatPart[];
  /** The result's `structuredContent`. */
  readonly structuredContent?: JsonObject;
  /** The result was cut to a size limit. */
  readonly truncated: boolean;
}

/**
 * The registry's tools as a `tools` object for the AI SDK's `generateText`, `streamText` and
 * agents (package `ai`, optional peer dependency). Every `execute` goes through
 * `registry.invoke` with the run's context (the tool call id as `stepId`, the SDK's abort
 * signal merged in). A call the policy would `ask` about sets the SDK's `needsApproval`, so it
 * becomes a `tool-approval-request`; once the SDK sees the matching approved
 * `tool-approval-response` it runs `execute`, which presents a single-use grant for exactly those
 * arguments (no second gate). A rejected call never reaches the tool. Refusals, invalid
 * arguments, budgets and ambiguous deliveries reach the model as `error-text`; programming
 * errors throw.
 *
 * Throws `ConfigurationError` for unknown options, a bad context or an unregistered name.
 */
export function aiSdkTools(registry: AdapterRegistry, options: AiSdkToolsOptions): ToolSet {
  const adapter = resolveAdapter(
    'aiSdkTools',
    registry,
    options,
    'letters-digits-underscore-hyphen',
  );
  const tools: Record<string, ToolSet[string]> = {};
  for (const { registryName, modelName } of adapter.tools) {
    const spec = registry.get(registryName)?.spec;
    if (spec === undefined) continue;
    tools[modelName] = tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.inputSchema as JSONSchema7),
      // A plain `false`, not a promise, for a tool the policy never asks about: the SDK awaits
      // whatever this returns, and an answer already there saves it the async round.
      needsApproval: (input, { toolCallId }) =>
        mayAsk(adapter, registryName)
          ? needsApproval(adapter, registryName, input, toolCallId)
          : false,
      // One promise layer: callRegistry's own, mapped (the SDK awaits what this returns).
      execute: (input, { toolCallId, abortSignal, messages }) =>
        callRegistry(adapter, {
          toolName: registryName,
          args: input,
          toolCallId,
          signal: abortSignal,
          approved: () => approvedInMessages(messages, toolCallId),
        }).then(toOutput),
      toModelOutput: ({ output }) => toModelOutput(output),
    }) as ToolSet[string];
  }
  return tools;
}

/** True when `messages` hold an approved `tool-approval-response` for this tool call. */
function approvedInMessages(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const approvalIds = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) {
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) {
        approvalIds.add(part.approvalId);
      }
    }
  }
  if (approvalIds.size === 0) return false;
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (
        part.type === 'tool-approval-response' &&
        approvalIds.has(part.approvalId) &&
        part.approved === true
      ) {
        return true;
      }
    }
  }
  return false;
}

function toOutput(outcome: AdapterOutcome): AiSdkToolOutput {
  if (outcome.kind === 'refused') {
    return { isError: true, code: outcome.code, text: outcome.text, parts: [], truncated: false };
  }
  const flat = flattenResult(outcome.result);
  if (flat.structuredContent === undefined) {
    return {
      isError: flat.isError,
      text: resultText(flat, true),
      parts: flat.parts,
      truncated: flat.truncated,
    };
  }
  const output = {
    isError: flat.isError,
    text: '',
    parts: flat.parts,
    structuredContent: flat.structuredContent,
    truncated: flat.truncated,
  };
  // With structured content alone the text is its JSON, which the model does not read
  // (toModelOutput hands it `json`): the text is written when something reads it (the UI stream,
  // the host), once, and stays an ordinary enumerable property for JSON and spreads.
  let text: string | undefined;
  Object.defineProperty(output, 'text', {
    enumerable: true,
    configurable: true,
    get: (): string => {
      text ??= resultText(flat, true);
      return text;
    },
    set: (value: string): void => {
      text = value;
    },
  });
  return output;
}

function hasMedia(parts: readonly FlatPart[]): boolean {
  for (const part of parts) if (part.type === 'media') return true;
  return false;
}

type ModelOutput = ReturnType<NonNullable<ToolSet[string]['toModelOutput']>>;

function toModelOutput(output: AiSdkToolOutput): ModelOutput {
  if (output.isError) return { type: 'error-text', value: output.text };
  if (hasMedia(output.parts)) {
    const value: (
      | { type: 'text'; text: string }
      | {
          type: 'file';
          data: { type: 'data'; data: string };
          mediaType: string;
        }
    )[] = output.parts.map((part) =>
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : { type: 'file', data: { type: 'data', data: part.data }, mediaType: part.mimeType },
    );
    if (
      output.structuredContent !== undefined &&
      !partsCarry(output.parts, output.structuredContent)
    ) {
      value.push({ type: 'text', text: JSON.stringify(output.structuredContent) });
    }
    if (output.truncated) value.push({ type: 'text', text: TRUNCATED_NOTE });
    return { type: 'content', value };
  }
  if (output.structuredContent !== undefined && output.parts.length === 0 && !output.truncated) {
    return { type: 'json', value: output.structuredContent as never };
  }
  return { type: 'text', value: output.text };
}
