import type { ToolContract } from '@toolfence/tool-contract';
import { z } from 'zod';
import { ConfigurationError } from './configuration-error.js';
import { appendPath, snapshotJsonValue } from './json-snapshot.js';
import type {
  EffectDescriptor,
  JsonObject,
  OperationContracts,
  Tool,
  ToolContext,
  ToolEffect,
  ToolResult,
  ToolSpec,
} from './tool.js';
import { ToolInputError } from './tool-input-error.js';

/** Fields of {@link defineTool} besides `input` and `run`. */
export interface DefineToolBase {
  /** Tool name, unique within a registry; must be a non-empty string. */
  readonly name: string;
  /** What the tool does and when to use it, shown to the model. */
  readonly description: string;
  /** The author's declared risk and content-trust contract; copied to `spec.contract`. */
  readonly contract?: ToolContract;
  /** How each call's effect is found; copied to `spec.effect`. Default: from the contract. */
  readonly effect?: ToolEffect | EffectDescriptor;
  /**
   * A contract per operation, so each call is judged by the operation it performs; copied to
   * `spec.operationContracts` (not together with `effect`).
   */
  readonly operationContracts?: OperationContracts;
  /** Argument rule policies read as the operation; copied to `spec.operationArgument`. */
  readonly operationArgument?: string;
  /** MCP-style annotations; copied to `spec.annotations`. */
  readonly annotations?: JsonObject;
  /** JSON Schema 2020-12 of the `structuredContent` the tool returns; copied to the spec. */
  readonly outputSchema?: JsonObject;
  /** Becomes the tool's `start`: prepares it before a registry routes calls to it. */
  readonly start?: () => Promise<void>;
  /** Becomes the tool's `close`: releases what it holds; a registry calls it exactly once. */
  readonly close?: () => Promise<void>;
}

/** {@link defineTool} with a zod 4 schema: `run` gets the parsed (typed) arguments. */
export interface DefineZodToolOptions<Schema extends z.ZodType> extends DefineToolBase {
  /** zod 4 schema of the arguments; exported as the spec's `inputSchema` and parsed per call. */
  readonly input: Schema;
  /** Runs one call with the zod-parsed arguments (defaults and transforms applied). */
  readonly run: (args: z.output<Schema>, context: ToolContext) => ToolResult | Promise<ToolResult>;
}

/** {@link defineTool} with a JSON Schema 2020-12 object: `run` gets the validated JSON object. */
export interface DefineJsonSchemaToolOptions extends DefineToolBase {
  /** JSON Schema 2020-12 object schema of the arguments, used as the spec's `inputSchema`. */
  readonly input: JsonObject;
  /** Runs one call with the arguments the registry validated against `input`. */
  readonly run: (args: JsonObject, context: ToolContext) => ToolResult | Promise<ToolResult>;
}

/**
 * Builds a {@link Tool}. A zod 4 `input` becomes the spec's `inputSchema` through zod's own JSON
 * Schema export (2020-12, input side); each call is also parsed with zod, so `run` receives typed
 * output values (defaults and transforms applied). A JSON Schema `input` is used as is; the
 * registry validates arguments against it before `run` sees them. Throws
 * {@link ConfigurationError} for a schema that cannot be exported or is not an object schema.
 */
export function defineTool<Schema extends z.ZodType>(options: DefineZodToolOptions<Schema>): Tool;
export function defineTool(options: DefineJsonSchemaToolOptions): Tool;
export function defineTool(
  options: DefineZodToolOptions<z.ZodType> | DefineJsonSchemaToolOptions,
): Tool {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('defineTool needs an options object', {
      details: { option: 'options' },
    });
  }
  const { name, description, input, run } = options;
  if (typeof name !== 'string' || name === '') {
    throw new ConfigurationError('defineTool: name must be a non-empty string', {
      details: { option: 'name' },
    });
  }
  if (typeof description !== 'string') {
    throw new ConfigurationError('defineTool: description must be a string', {
      details: { option: 'description', tool: name },
    });
  }
  if (typeof run !== 'function') {
    throw new ConfigurationError('defineTool: run must be a function', {
      details: { option: 'run', tool: name },
    });
  }
  const zodSchema = isZodSchema(input) ? input : undefined;
  const inputSchema =
    zodSchema === undefined ? checkJsonSchema(input, name) : exportZod(zodSchema, name);
  const spec: ToolSpec = Object.freeze({
    name,
    description,
    inputSchema,
    ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema }),
    ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    ...(options.contract === undefined ? {} : { contract: options.contract }),
    ...(options.effect === undefined ? {} : { effect: options.effect }),
    ...(options.operationContracts === undefined
      ? {}
      : { operationContracts: options.operationContracts }),
    ...(options.operationArgument === undefined
      ? {}
      : { operationArgument: options.operationArgument }),
  });
  const runAny = run as (args: unknown, context: ToolContext) => ToolResult | Promise<ToolResult>;
  const tool: { -readonly [K in keyof Tool]: Tool[K] } = {
    spec,
    async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
      if (zodSchema === undefined) return runAny(args, context);
      const parsed = await zodSchema.safeParseAsync(args);
      if (!parsed.success) {
        const issues = parsed.error.issues.slice(0, 8).map((issue) => ({
          path: issue.path.reduce<string>(
            (path, key) =>
              typeof key === 'number' ? `${path}[${key}]` : appendPath(path, String(key)),
            '$',
          ),
          message: safeZodMessage(issue.code),
        }));
        throw new ToolInputError(
          `Invalid arguments for tool ${JSON.stringify(name)}: ${issues
            .map((issue) => `${issue.path} ${issue.message}`)
            .join('; ')}`,
          { details: { tool: name, reason: 'schema', issues } },
        );
      }
      return runAny(parsed.data, context);
    },
  };
  if (options.start !== undefined) tool.start = options.start;
  if (options.close !== undefined) tool.close = options.close;
  return Object.freeze(tool);
}

function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

function exportZod(schema: z.ZodType, name: string): JsonObject {
  let exported: unknown;
  try {
    exported = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io: 'input',
      unrepresentable: 'throw',
    });
  } catch (error) {
    throw new ConfigurationError(
      `defineTool ${JSON.stringify(name)}: the zod input cannot be expressed as JSON Schema`,
      { details: { option: 'input', tool: name }, cause: error },
    );
  }
  return checkJsonSchema(exported, name);
}

function checkJsonSchema(schema: unknown, name: string): JsonObject {
  let snapshot: unknown;
  try {
    snapshot = snapshotJsonValue(schema);
  } catch (error) {
    throw new ConfigurationError(
      `defineTool ${JSON.stringify(name)}: input must be a zod schema or a JSON Schema object`,
      { details: { option: 'input', tool: name }, cause: error },
    );
  }
  if (
    typeof snapshot !== 'object' ||
    snapshot === null ||
    Array.isArray(snapshot) ||
    (snapshot as JsonObject).type !== 'object'
  ) {
    throw new ConfigurationError(
      `defineTool ${JSON.stringify(name)}: input must describe an object ("type": "object")`,
      { details: { option: 'input', tool: name } },
    );
  }
  return snapshot as JsonObject;
}

/** zod's messages may quote received values; only the issue code is reported. */
function safeZodMessage(code: string): string {
  return `fails ${code}`;
}
