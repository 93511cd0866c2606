import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ConfigurationError } from './configuration-error.js';
import { appendPath } from './json-snapshot.js';
import type { JsonObject, JsonValue } from './tool.js';

// ajv-formats is CommonJS: under NodeNext its default import is `module.exports`, the plugin itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** One reason a value failed validation: where (a JSON path such as `$.items[2].name`) and what. */
export interface ValidationIssue {
  /** JSON path of the offending value, from `$` (for example `$.items[2].name`). */
  readonly path: string;
  /** What is wrong, from the schema side; never contains the value itself. */
  readonly message: string;
}

/** The outcome of validating one value. */
export type ValidationResult =
  | {
      /** The value satisfies the schema. */
      readonly valid: true;
    }
  | {
      /** The value does not satisfy the schema. */
      readonly valid: false;
      /** Why it failed, at most the validator's issue limit. */
      readonly issues: readonly ValidationIssue[];
    };

/**
 * Validates JSON values against JSON Schema 2020-12 objects. The registry calls `prepare` when a
 * tool is registered (so a broken schema fails registration) and `validate` on every call.
 * Implementations must never fetch remote schemas and must not echo values in messages.
 */
export interface SchemaValidator {
  /** Compiles (and caches) a schema; throws {@link ConfigurationError} if it cannot be used. */
  prepare(schema: JsonObject): void;
  /** Validates a value; returns at most the implementation's issue limit. */
  validate(schema: JsonObject, value: JsonValue): ValidationResult;
}

/** Options of {@link AjvSchemaValidator}. */
export interface AjvSchemaValidatorOptions {
  /** Most issues reported per failed validation. Default 8. */
  readonly maxIssues?: number;
  /** Check `format` keywords (date-time, email, uri, ...) with ajv-formats. Default true. */
  readonly formats?: boolean;
  /**
   * Compiled schemas kept by content, so an equal schema in a new object (a refreshed MCP tool
   * list) is not compiled again; least recently used first out. Default 256.
   */
  readonly maxCachedSchemas?: number;
}

/** The default of {@link AjvSchemaValidatorOptions.maxCachedSchemas}. */
export const DEFAULT_MAX_CACHED_SCHEMAS = 256;

/** The default of {@link AjvSchemaValidatorOptions.maxIssues}. */
export const DEFAULT_MAX_VALIDATION_ISSUES = 8;

const VALID: ValidationResult = Object.freeze({ valid: true });

/**
 * The default {@link SchemaValidator}: ajv in JSON Schema 2020-12 mode. Each schema object is
 * compiled once and cached (keyed by the object, so a tool's schema is compiled at registration
 * and reused). Remote `$ref`s are never fetched: a `$ref` that does not resolve inside the schema
 * makes `prepare` fail. Unknown keywords are ignored (MCP servers send vendor keywords). Messages
 * carry JSON paths and ajv's schema-side text, never the offending values.
 */
export class AjvSchemaValidator implements SchemaValidator {
  readonly #ajv: Ajv2020;
  readonly #maxIssues: number;
  readonly #compiled = new WeakMap<object, ValidateFunction>();
  readonly #byContent = new Map<string, ValidateFunction>();
  readonly #maxCachedSchemas: number;

  /** Sets up ajv with the options; throws {@link ConfigurationError} for an invalid option. */
  constructor(options: AjvSchemaValidatorOptions = {}) {
    const maxIssues: unknown = options.maxIssues ?? DEFAULT_MAX_VALIDATION_ISSUES;
    if (typeof maxIssues !== 'number' || !Number.isSafeInteger(maxIssues) || maxIssues < 1) {
      throw new ConfigurationError('maxIssues must be a positive integer', {
        details: { option: 'maxIssues' },
      });
    }
    const formats: unknown = options.formats ?? true;
    if (typeof formats !== 'boolean') {
      throw new ConfigurationError('formats must be a boolean', { details: { option: 'formats' } });
    }
    this.#maxIssues = maxIssues;
    const maxCached: unknown = options.maxCachedSchemas ?? DEFAULT_MAX_CACHED_SCHEMAS;
    if (typeof maxCached !== 'number' || !Number.isSafeInteger(maxCached) || maxCached < 0) {
      throw new ConfigurationError('maxCachedSchemas must be a non-negative integer', {
        details: { option: 'maxCachedSchemas' },
      });
    }
    this.#maxCachedSchemas = maxCached;
    this.#ajv = new Ajv2020({
      strict: false,
      allErrors: true,
      // Schemas with the same `$id` (two MCP servers, or two versions of one tool) must not clash.
      addUsedSchema: false,
      // Never load anything: no loadSchema, and compile is synchronous.
      validateFormats: formats,
    });
    if (formats) addFormats(this.#ajv);
  }

  /** Compiles the schema (once) and returns a reusable check for values. */
  compile(schema: JsonObject): (value: JsonValue) => ValidationResult {
    const validate = this.#compile(schema);
    return (value) => this.#run(validate, value);
  }

  prepare(schema: JsonObject): void {
    this.#compile(schema);
  }

  validate(schema: JsonObject, value: JsonValue): ValidationResult {
    return this.#run(this.#compile(schema), value);
  }

  #compile(schema: JsonObject): ValidateFunction {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      throw new ConfigurationError('A JSON Schema must be an object', {
        details: { reason: 'schema-not-object' },
      });
    }
    const cached = this.#compiled.get(schema);
    if (cached !== undefined) return cached;
    const content = this.#maxCachedSchemas > 0 ? contentKey(schema) : undefined;
    const equal = content === undefined ? undefined : this.#byContent.get(content);
    if (content !== undefined && equal !== undefined) {
      this.#byContent.delete(content);
      this.#byContent.set(content, equal);
      this.#compiled.set(schema, equal);
      return equal;
    }
    let validate: ValidateFunction;
    try {
      validate = this.#ajv.compile(withoutForeignDialect(schema));
    } catch (error) {
      const missingRef =
        typeof error === 'object' && error !== null && 'missingRef' in error
          ? 'unresolved-ref'
          : 'invalid-schema';
      throw new ConfigurationError(
        missingRef === 'unresolved-ref'
          ? 'The JSON Schema has a $ref that does not resolve inside it (remote schemas are never fetched)'
          : 'The JSON Schema is not a valid 2020-12 schema',
        { details: { reason: missingRef }, cause: error },
      );
    }
    this.#compiled.set(schema, validate);
    if (content !== undefined) {
      this.#byContent.set(content, validate);
      if (this.#byContent.size > this.#maxCachedSchemas) {
        const oldest = this.#byContent.keys().next().value as string;
        this.#byContent.delete(oldest);
      }
    }
    return validate;
  }

  #run(validate: ValidateFunction, value: JsonValue): ValidationResult {
    if (validate(value) === true) return VALID;
    const errors = validate.errors ?? [];
    const issues: ValidationIssue[] = [];
    for (const error of errors) {
      if (issues.length >= this.#maxIssues) break;
      issues.push(toIssue(error));
    }
    if (issues.length === 0) issues.push({ path: '$', message: 'is not valid' });
    return { valid: false, issues };
  }
}

/** Canonical JSON (sorted keys) of a schema; undefined when it cannot be serialized. */
function contentKey(schema: JsonObject): string | undefined {
  try {
    return JSON.stringify(schema, (_key, value: unknown) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, (value as Record<string, unknown>)[key]]),
          )
        : value,
    );
  } catch {
    return undefined;
  }
}

const DIALECT_2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

/**
 * Tools (MCP servers especially) often label their schemas draft-07. Their keywords are read with
 * 2020-12 meaning (almost always the same); the foreign `$schema` label is dropped rather than
 * failing on a meta-schema this validator does not load.
 */
function withoutForeignDialect(schema: JsonObject): JsonObject {
  const dialect = schema.$schema;
  if (dialect === undefined || (typeof dialect === 'string' && DIALECT_2020.test(dialect))) {
    return schema;
  }
  const { $schema: _dropped, ...rest } = schema;
  return rest;
}

function toIssue(error: ErrorObject): ValidationIssue {
  const path = pointerToPath(error.instancePath);
  switch (error.keyword) {
    case 'required':
      return {
        path: appendPath(
          path,
          String((error.params as { missingProperty?: unknown }).missingProperty),
        ),
        message: 'is required',
      };
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return { path, message: 'must not have additional properties' };
    default:
      return { path, message: error.message ?? `fails ${error.keyword}` };
  }
}

/** `/items/2/na~1me` → `$.items[2]["na/me"]`. */
function pointerToPath(pointer: string): string {
  if (pointer === '') return '$';
  let path = '$';
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path = /^(?:0|[1-9][0-9]*)$/.test(segment) ? `${path}[${segment}]` : appendPath(path, segment);
    if (path.length > 512) return `${path.slice(0, 512)}…`;
  }
  return path;
}
