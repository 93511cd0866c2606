import {
  type FunctionTool,
  type RunContext,
  type ToolOutputFileContent,
  type ToolOutputImage,
  type ToolOutputText,
  tool,
} from '@openai/agents';
import type { JsonObject, JsonValue } from '../../registry/tool.js';
import {
  type AdapterOptions,
  type AdapterOutcome,
  type AdapterRegistry,
  callRegistry,
  flattenResult,
  needsApproval,
  resolveAdapter,
  resultText,
  structuredText,
  TRUNCATED_NOTE,
} from '../registry-call.js';

/** The part of the SDK's tool call details the adapter reads. */
interface AgentsCallDetails {
  readonly toolCall?: { readonly callId?: string };
  readonly signal?: AbortSignal;
}

/** Options of {@link openAiAgentsTools}. */
export interface OpenAiAgentsToolsOptions extends AdapterOptions {}

/** What an adapted tool returns to the Agents SDK: text, or text, image and file parts. */
export type OpenAiAgentsToolOutput =
  | string
  | readonly (ToolOutputText | ToolOutputImage | ToolOutputFileContent)[];

/**
 * The registry's tools as `FunctionTool`s for the OpenAI Agents SDK (`@openai/agents`, optional
 * peer dependency), for `new Agent({ tools })`. Names fit the model API (64 of
 * `[A-Za-z0-9_]`); the input schema passes through as JSON Schema, `strict` only when it meets
 * strict mode (every object closed and fully required, supported keywords only), non-strict
 * otherwise. A call the policy would `ask` about sets the SDK's `needsApproval`, so the run stops
 * with an interruption; after `state.approve(item)` the resumed run presents a single-use grant
 * for exactly that call (no second gate); after `state.reject(item)` the tool is never reached.
 * Refusals, invalid arguments, budgets and ambiguous deliveries come back as text for the model;
 * programming errors throw (`errorFunction: null`).
 *
 * Throws `ConfigurationError` for unknown options, a bad context or an unregistered name.
 */
export function openAiAgentsTools(
  registry: AdapterRegistry,
  options: OpenAiAgentsToolsOptions,
): FunctionTool<unknown, never, OpenAiAgentsToolOutput>[] {
  const adapter = resolveAdapter(
    'openAiAgentsTools',
    registry,
    options,
    'letters-digits-underscore',
  );
  const tools: FunctionTool<unknown, never, OpenAiAgentsToolOutput>[] = [];
  for (const { registryName, modelName } of adapter.tools) {
    const spec = registry.get(registryName)?.spec;
    if (spec === undefined) continue;
    const strict = isStrictCompatible(spec.inputSchema);
    const created = tool({
      name: modelName,
      description: spec.description,
      parameters: spec.inputSchema as never,
      strict,
      errorFunction: null,
      needsApproval: async (_runContext: RunContext, input: unknown, callId?: string) =>
        needsApproval(adapter, registryName, input, callId),
      execute: async (input: unknown, runContext?: RunContext, details?: AgentsCallDetails) => {
        const callId = details?.toolCall?.callId;
        const approved = (): boolean =>
          callId !== undefined &&
          runContext?.isToolApproved({ toolName: modelName, callId }) === true;
        return toOutput(
          await callRegistry(adapter, {
            toolName: registryName,
            args: input,
            toolCallId: callId,
            signal: details?.signal,
            approved,
          }),
        );
      },
    });
    tools.push(created as unknown as FunctionTool<unknown, never, OpenAiAgentsToolOutput>);
  }
  return tools;
}

function toOutput(outcome: AdapterOutcome): OpenAiAgentsToolOutput {
  if (outcome.kind === 'refused') return outcome.text;
  const flat = flattenResult(outcome.result);
  const hasMedia = flat.parts.some((part) => part.type === 'media');
  if (!hasMedia || flat.isError) {
    const text = resultText(flat, true);
    return flat.isError ? `Error: the tool reported a failure.\n${text}` : text;
  }
  const parts: (ToolOutputText | ToolOutputImage | ToolOutputFileContent)[] = [];
  for (const [index, part] of flat.parts.entries()) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text });
    else if (part.mimeType.startsWith('image/')) {
      parts.push({ type: 'image', image: { data: part.data, mediaType: part.mimeType } });
    } else {
      parts.push({
        type: 'file',
        file: { data: part.data, mediaType: part.mimeType, filename: `part-${index + 1}` },
      });
    }
  }
  const structured = structuredText(flat);
  if (structured !== undefined) parts.push({ type: 'text', text: structured });
  if (flat.truncated) parts.push({ type: 'text', text: TRUNCATED_NOTE });
  return parts;
}

const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  '$ref',
  '$defs',
  'definitions',
  'description',
  'title',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);

/**
 * True when a JSON Schema meets OpenAI's strict mode: an object root, every object schema with
 * `additionalProperties: false` and every property required, and only supported keywords.
 */
export function isStrictCompatible(schema: JsonObject): boolean {
  if (schema.type !== 'object') return false;
  return strictNode(schema, 0);
}

function strictNode(node: JsonValue, depth: number): boolean {
  if (depth > 32 || typeof node !== 'object' || node === null || Array.isArray(node)) return false;
  const object = node as JsonObject;
  for (const key of Object.keys(object)) if (!STRICT_KEYWORDS.has(key)) return false;
  const isObject = object.type === 'object' || object.properties !== undefined;
  if (isObject) {
    if (object.additionalProperties !== false) return false;
    const properties = (object.properties ?? {}) as JsonObject;
    if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
      return false;
    }
    const required = Array.isArray(object.required) ? (object.required as JsonValue[]) : [];
    for (const [name, child] of Object.entries(properties)) {
      if (!required.includes(name) || !strictNode(child, depth + 1)) return false;
    }
  }
  if (object.items !== undefined && !strictNode(object.items, depth + 1)) return false;
  if (object.anyOf !== undefined) {
    if (!Array.isArray(object.anyOf)) return false;
    for (const child of object.anyOf as JsonValue[])
      if (!strictNode(child, depth + 1)) return false;
  }
  for (const key of ['$defs', 'definitions'] as const) {
    const definitions = object[key];
    if (definitions === undefined) continue;
    if (typeof definitions !== 'object' || definitions === null || Array.isArray(definitions)) {
      return false;
    }
    for (const child of Object.values(definitions as JsonObject)) {
      if (!strictNode(child, depth + 1)) return false;
    }
  }
  return true;
}
