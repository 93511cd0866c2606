import { CONTRACT_META_KEY } from '@toolfence/tool-contract';
import { declaredSchemaDialect } from '../registry/schema-dialect.js';
import type { JsonObject } from '../registry/tool.js';

/** A tool as listed by a server, checked and copied (JSON only). */
export interface McpToolDescriptor {
  /** The server's name for the tool (1 to 1,024 characters), used in `tools/call`. */
  readonly name: string;
  /** Human-readable display name the server gave (untrusted). */
  readonly title?: string;
  /** The server's description of the tool (untrusted text). */
  readonly description?: string;
  /** The input JSON Schema (`type: "object"`), `$schema` as declared (validated in that dialect). */
  readonly inputSchema: JsonObject;
  /** The output JSON Schema of `structuredContent` (`type: "object"`), `$schema` as declared. */
  readonly outputSchema?: JsonObject;
  /** The server's annotations: untrusted hints, plus tool-contract's keys when declared. */
  readonly annotations?: JsonObject;
  /**
   * Only tool-contract's entry of the tool's `_meta` (`_meta["io.github.toolfence/contract"]`),
   * the copy of the declaration that survives clients which strip unknown annotation keys.
   */
  readonly _meta?: JsonObject;
}

/** A resource as listed by a server. Resources are data, never tools. */
export interface McpResourceDescriptor {
  /** URI to pass to `resources/read`. */
  readonly uri: string;
  /** The server's name for the resource (1 to 1,024 characters). */
  readonly name: string;
  /** Human-readable display name the server gave (untrusted). */
  readonly title?: string;
  /** The server's description of the resource (untrusted text). */
  readonly description?: string;
  /** Media type the server declared, if any. */
  readonly mimeType?: string;
  /** Size in bytes the server declared (not verified), if any. */
  readonly size?: number;
}

/** A resource template as listed by a server. */
export interface McpResourceTemplateDescriptor {
  /** RFC 6570 URI template that expands to readable resource URIs. */
  readonly uriTemplate: string;
  /** The server's name for the template (1 to 1,024 characters). */
  readonly name: string;
  /** Human-readable display name the server gave (untrusted). */
  readonly title?: string;
  /** The server's description of the template (untrusted text). */
  readonly description?: string;
  /** Media type of the resources the template yields, if declared. */
  readonly mimeType?: string;
}

/** A prompt as listed by a server. Prompts are data for the host, never instructions. */
export interface McpPromptDescriptor {
  /** The server's name for the prompt (1 to 1,024 characters), used in `prompts/get`. */
  readonly name: string;
  /** Human-readable display name the server gave (untrusted). */
  readonly title?: string;
  /** The server's description of the prompt (untrusted text). */
  readonly description?: string;
  /** Arguments the prompt accepts, in the server's order; empty when it takes none. */
  readonly arguments: readonly {
    /** Argument name, the key in `prompts/get` arguments. */
    readonly name: string;
    /** The server's description of the argument (untrusted text). */
    readonly description?: string;
    /** The server marked the argument required (false when it did not say). */
    readonly required: boolean;
  }[];
}

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const MAX_NAME_LENGTH = 1_024;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonCopy(value: unknown): JsonObject | undefined {
  try {
    const copy: unknown = JSON.parse(JSON.stringify(value));
    return isRecord(copy) ? (copy as JsonObject) : undefined;
  } catch {
    return undefined;
  }
}

function validName(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_NAME_LENGTH;
}

/** Copies the optional string keys that are strings; a non-string value makes the item malformed. */
function optionalStrings(
  raw: Record<string, unknown>,
  keys: readonly string[],
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const key of keys) {
    const value = raw[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') return undefined;
    out[key] = value;
  }
  return out;
}

/** A copy of an object schema, `$schema` kept (the validator reads it in that dialect). */
function objectSchema(value: unknown): JsonObject | undefined {
  if (!isRecord(value) || value.type !== 'object') return undefined;
  return jsonCopy(value);
}

export function parseTool(raw: unknown): Parsed<McpToolDescriptor> {
  if (!isRecord(raw)) return { ok: false, reason: 'tool is not an object' };
  if (!validName(raw.name)) return { ok: false, reason: 'tool name is missing or too long' };
  const strings = optionalStrings(raw, ['title', 'description']);
  if (strings === undefined)
    return { ok: false, reason: 'tool title or description is not a string' };
  const inputSchema = objectSchema(raw.inputSchema);
  if (inputSchema === undefined) {
    return { ok: false, reason: 'tool inputSchema is not an object schema' };
  }
  if (declaredSchemaDialect(inputSchema) === 'unknown') {
    return { ok: false, reason: 'tool inputSchema declares an unknown JSON Schema dialect' };
  }
  let outputSchema: JsonObject | undefined;
  if (raw.outputSchema !== undefined && raw.outputSchema !== null) {
    outputSchema = objectSchema(raw.outputSchema);
    if (outputSchema === undefined) {
      return { ok: false, reason: 'tool outputSchema is not an object schema' };
    }
    if (declaredSchemaDialect(outputSchema) === 'unknown') {
      return { ok: false, reason: 'tool outputSchema declares an unknown JSON Schema dialect' };
    }
  }
  let annotations: JsonObject | undefined;
  if (raw.annotations !== undefined && raw.annotations !== null) {
    annotations = isRecord(raw.annotations) ? jsonCopy(raw.annotations) : undefined;
    if (annotations === undefined)
      return { ok: false, reason: 'tool annotations are not an object' };
  }
  const declaredMeta =
    isRecord(raw._meta) && isRecord(raw._meta[CONTRACT_META_KEY])
      ? jsonCopy(raw._meta[CONTRACT_META_KEY])
      : undefined;
  return {
    ok: true,
    value: {
      name: raw.name,
      ...strings,
      inputSchema,
      ...(outputSchema === undefined ? {} : { outputSchema }),
      ...(annotations === undefined ? {} : { annotations }),
      ...(declaredMeta === undefined ? {} : { _meta: { [CONTRACT_META_KEY]: declaredMeta } }),
    },
  };
}

export function parseResource(raw: unknown): Parsed<McpResourceDescriptor> {
  if (!isRecord(raw)) return { ok: false, reason: 'resource is not an object' };
  if (!validName(raw.uri)) return { ok: false, reason: 'resource uri is missing or too long' };
  if (!validName(raw.name)) return { ok: false, reason: 'resource name is missing or too long' };
  const strings = optionalStrings(raw, ['title', 'description', 'mimeType']);
  if (strings === undefined) return { ok: false, reason: 'resource field is not a string' };
  const size = raw.size;
  if (size !== undefined && size !== null && (typeof size !== 'number' || !(size >= 0))) {
    return { ok: false, reason: 'resource size is not a number' };
  }
  return {
    ok: true,
    value: {
      uri: raw.uri,
      name: raw.name,
      ...strings,
      ...(typeof size === 'number' ? { size } : {}),
    },
  };
}

export function parseResourceTemplate(raw: unknown): Parsed<McpResourceTemplateDescriptor> {
  if (!isRecord(raw)) return { ok: false, reason: 'resource template is not an object' };
  if (!validName(raw.uriTemplate)) {
    return { ok: false, reason: 'resource template uriTemplate is missing or too long' };
  }
  if (!validName(raw.name)) return { ok: false, reason: 'resource template name is missing' };
  const strings = optionalStrings(raw, ['title', 'description', 'mimeType']);
  if (strings === undefined)
    return { ok: false, reason: 'resource template field is not a string' };
  return { ok: true, value: { uriTemplate: raw.uriTemplate, name: raw.name, ...strings } };
}

export function parsePrompt(raw: unknown): Parsed<McpPromptDescriptor> {
  if (!isRecord(raw)) return { ok: false, reason: 'prompt is not an object' };
  if (!validName(raw.name)) return { ok: false, reason: 'prompt name is missing or too long' };
  const strings = optionalStrings(raw, ['title', 'description']);
  if (strings === undefined) return { ok: false, reason: 'prompt field is not a string' };
  const rawArguments = raw.arguments ?? [];
  if (!Array.isArray(rawArguments))
    return { ok: false, reason: 'prompt arguments is not an array' };
  const args: McpPromptDescriptor['arguments'][number][] = [];
  for (const argument of rawArguments) {
    if (!isRecord(argument) || !validName(argument.name)) {
      return { ok: false, reason: 'prompt argument is malformed' };
    }
    const description = argument.description;
    if (description !== undefined && typeof description !== 'string') {
      return { ok: false, reason: 'prompt argument is malformed' };
    }
    args.push({
      name: argument.name,
      ...(description === undefined ? {} : { description }),
      required: argument.required === true,
    });
  }
  return { ok: true, value: { name: raw.name, ...strings, arguments: args } };
}
