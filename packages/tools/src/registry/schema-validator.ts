import type { Ajv, Options as AjvOptions, AnySchemaObject } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import type AjvDraft04Module from 'ajv-draft-04';
import type addFormatsModule from 'ajv-formats';
import { lazyRequire } from '../internal/lazy-require.js';
import { installLengthShortcuts } from './ajv-length-keywords.js';
import { mayFailCompile } from './compile-risk.js';
import { ConfigurationError } from './configuration-error.js';
import { appendPath } from './json-snapshot.js';
import { checkOptionKeys } from './option-keys.js';
import { assertValid2020Schema, usePrecompiledMetaSchema } from './precompiled-meta-schema.js';
import {
  DEFAULT_SCHEMA_DIALECT,
  declaredSchemaDialect,
  type JsonSchemaDialect,
  schemaForDialect,
} from './schema-dialect.js';
import {
  linearPatternEngine,
  type SchemaPatternEngine,
  type UnenforcedReason,
} from './schema-patterns.js';
import type { JsonObject, JsonValue } from './tool.js';

// ajv and its plugins are CommonJS and load in tens of milliseconds: they are required when the
// first schema is compiled, not when the package is imported (a gateway answers `initialize`
// without them). ajv-formats' and ajv-draft-04's `module.exports` is the plugin or class itself.
const ajvModule = lazyRequire<typeof import('ajv')>('ajv');
const ajv2019Module = lazyRequire<typeof import('ajv/dist/2019.js')>('ajv/dist/2019.js');
const ajv2020Module = lazyRequire<typeof import('ajv/dist/2020.js')>('ajv/dist/2020.js');
const ajvDraft04 = lazyRequire<typeof AjvDraft04Module.default>('ajv-draft-04');
const addFormats = lazyRequire<typeof addFormatsModule.default>('ajv-formats');
const draft06MetaSchema = lazyRequire<AnySchemaObject>('ajv/dist/refs/json-schema-draft-06.json');

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
 * Validates JSON values against JSON Schema objects (the default reads each in the dialect its
 * `$schema` declares, 2020-12 when none). The registry calls `prepare` when a tool is registered (so a broken schema fails registration) and `validate` on every call
 * (with the stock {@link AjvSchemaValidator}, whose `validate` is not overridden, it runs the
 * same compiled check through `compile`, taken once at registration).
 * Implementations must never fetch remote schemas and must not echo values in messages.
 */
export interface SchemaValidator {
  /** Compiles (and caches) a schema; throws {@link ConfigurationError} if it cannot be used. */
  prepare(schema: JsonObject): void;
  /** Validates a value; returns at most the implementation's issue limit. */
  validate(schema: JsonObject, value: JsonValue): ValidationResult;
}

/**
 * Where {@link AjvSchemaValidator} sends ajv's notes (for example an unknown `format`) and the
 * patterns it does not enforce.
 */
export interface SchemaValidatorLogger {
  /**
   * Receives one note; `details.note` is ajv's schema-side text, `details.pattern` a pattern the
   * linear engine cannot run (as JSON, at most 64 characters); never a validated value.
   */
  warn(message: string, details?: Readonly<Record<string, unknown>>): void;
}

/** Options of {@link AjvSchemaValidator}. */
export interface AjvSchemaValidatorOptions {
  /** Most issues reported per failed validation. Default 8. */
  readonly maxIssues?: number;
  /**
   * Assert `format` keywords (date-time, email, uri, uuid, ...) with ajv-formats. Default false:
   * `format` is an annotation, as JSON Schema 2020-12's default vocabulary says, so a value the
   * server accepts (a dashless UUID, a date-time without seconds) is not refused here.
   */
  readonly validateFormats?: boolean;
  /**
   * @deprecated Use {@link AjvSchemaValidatorOptions.validateFormats}; kept for one minor. Giving
   * both with different values is refused.
   */
  readonly formats?: boolean;
  /**
   * Compiled schemas kept by content, so an equal schema in a new object (a refreshed MCP tool
   * list) is not compiled again; least recently used first out. Default 256.
   */
  readonly maxCachedSchemas?: number;
  /** Receives ajv's warnings (an unknown format, for example). Default none: nothing is printed. */
  readonly logger?: SchemaValidatorLogger;
  /**
   * How the schema's regular expressions run (`pattern`, `patternProperties`, a `pattern` in
   * `propertyNames`, in every dialect). `linear` (default): RE2 (re2js), in time linear in the
   * text, so no schema and no text can stall the process; a pattern valid in JavaScript that RE2
   * cannot run (lookaround, backreferences, Unicode property names other than RE2's, such as
   * `\p{Letter}`) is not enforced (an annotation, like `format`), sent to `logger` when the
   * schema compiles and listed by {@link AjvSchemaValidator.unenforcedPatterns}. `native`:
   * JavaScript's RegExp with the `u` flag (full syntax, backtracking: `^(a+)+$` takes hours on 40
   * characters), only for a validator that never sees a schema you did not write.
   */
  readonly patterns?: SchemaPatternEngine;
  /**
   * With `linear` patterns: the most work one validation spends on patterns, counted for each
   * string a pattern is tested on as the pattern's RE2 program size (instructions) times the
   * string's length. RE2's time is linear in the text, but a large pattern (`.{1000}` is 1,002
   * instructions) can cost a step per instruction per character. A validation that would go over
   * fails (fail closed: even where a failing pattern would let the value pass, as under `not`)
   * with the issue `has text too long to check against the schema's patterns within
   * maxPatternWork`. Default 4,000,000 (a 4 KiB string against a 131-instruction
   * `^[a-z0-9_-]{1,64}$` is 536,576).
   */
  readonly maxPatternWork?: number;
  /**
   * With `linear` patterns: the most RE2 instructions the patterns of one schema may compile to
   * together, estimated from each pattern's text before it is compiled (an upper bound: counted
   * repetition expands, `a{1000}` is 1,002). Patterns beyond it are not enforced and reported as
   * for syntax RE2 cannot run (`reason: 'too-large'`), so a huge pattern costs no compile.
   * Default 16,384 (zod's ipv6 pattern is about 700, an email or date-time pattern under 100).
   */
  readonly maxPatternSize?: number;
}

/** The default of {@link AjvSchemaValidatorOptions.maxPatternWork}. */
export const DEFAULT_MAX_PATTERN_WORK = 4_000_000;

/** The default of {@link AjvSchemaValidatorOptions.maxPatternSize}. */
export const DEFAULT_MAX_PATTERN_SIZE = 16_384;

/** The default of {@link AjvSchemaValidatorOptions.maxCachedSchemas}. */
export const DEFAULT_MAX_CACHED_SCHEMAS = 256;

/** The default of {@link AjvSchemaValidatorOptions.maxIssues}. */
export const DEFAULT_MAX_VALIDATION_ISSUES = 8;

const VALID: ValidationResult = Object.freeze({ valid: true });

const OPTION_KEYS: readonly string[] = [
  'maxIssues',
  'validateFormats',
  'formats',
  'maxCachedSchemas',
  'logger',
  'patterns',
  'maxPatternWork',
  'maxPatternSize',
];

/** The issue of a validation whose pattern work went over maxPatternWork. */
const OVER_PATTERN_WORK: ValidationIssue = Object.freeze({
  path: '$',
  message: "has text too long to check against the schema's patterns within maxPatternWork",
});

const NO_PATTERNS: readonly string[] = Object.freeze([]);

/** The longest ajv note passed to the logger. */
const MAX_NOTE_LENGTH = 512;

/** What every ajv instance has in common here (the classes differ only in their dialect). */
interface DialectAjv {
  compile(schema: AnySchemaObject): ValidateFunction;
}

/**
 * The default {@link SchemaValidator}: ajv, in the JSON Schema dialect each schema declares with
 * `$schema` (draft-04 through `ajv-draft-04`, draft-06 and draft-07 through ajv's default class
 * with the draft-06 meta-schema added, 2019-09 and 2020-12 through ajv's classes for them), and
 * 2020-12 when none is declared. Keywords are judged as the declared dialect judges them: in
 * draft-04 to draft-07 the keywords beside a `$ref` are ignored, array-form `items` is a tuple,
 * `dependencies` applies; draft-04's `exclusiveMinimum` is a boolean. An unknown `$schema` value
 * is refused.
 *
 * Each schema object is compiled once and cached (by object, and by content in a bounded LRU).
 * Remote `$ref`s are never fetched: a `$ref` that does not resolve inside the schema makes
 * `prepare` fail. Unknown keywords are ignored (MCP servers send vendor keywords). `format` is an
 * annotation unless `validateFormats` is true. Patterns run in linear time by default (RE2; see
 * {@link AjvSchemaValidatorOptions.patterns}). Ajv's notes go to `logger` or nowhere, never to
 * the console. Messages carry JSON paths and ajv's schema-side text, never the offending values.
 */
export class AjvSchemaValidator implements SchemaValidator {
  /** How this validator runs patterns: `linear` (default) or `native`. */
  readonly patterns: SchemaPatternEngine;
  readonly #instances = new Map<JsonSchemaDialect, DialectAjv>();
  readonly #validateFormats: boolean;
  readonly #logger: SchemaValidatorLogger | undefined;
  readonly #maxIssues: number;
  readonly #compiled = new WeakMap<object, ValidateFunction>();
  readonly #byContent = new Map<string, ValidateFunction>();
  readonly #byText = new Map<string, ValidateFunction>();
  readonly #maxCachedSchemas: number;
  /** The patterns not enforced, by compiled check (only checks with any). */
  readonly #unenforced = new WeakMap<ValidateFunction, readonly string[]>();
  /** The patterns not enforced by the compile in progress (ajv compiles synchronously). */
  #unenforcedNow: string[] | undefined;
  readonly #maxPatternWork: number;
  readonly #maxPatternSize: number;
  /** Pattern work left to the validation in progress (see maxPatternWork). */
  #workLeft = 0;
  /** The validation in progress went over maxPatternWork. */
  #overWork = false;
  /** RE2 instructions left to the schema being compiled (see maxPatternSize). */
  #sizeLeft = 0;

  /** Checks the options; throws {@link ConfigurationError} for an invalid or unknown option. */
  constructor(options: AjvSchemaValidatorOptions = {}) {
    checkOptionKeys(options, OPTION_KEYS, 'AjvSchemaValidator');
    const maxIssues: unknown = options.maxIssues ?? DEFAULT_MAX_VALIDATION_ISSUES;
    if (typeof maxIssues !== 'number' || !Number.isSafeInteger(maxIssues) || maxIssues < 1) {
      throw new ConfigurationError('maxIssues must be a positive integer', {
        details: { option: 'maxIssues' },
      });
    }
    const legacy: unknown = options.formats;
    const formats: unknown = options.validateFormats ?? legacy ?? false;
    if (typeof formats !== 'boolean' || (legacy !== undefined && typeof legacy !== 'boolean')) {
      throw new ConfigurationError('validateFormats must be a boolean', {
        details: { option: options.validateFormats === undefined ? 'formats' : 'validateFormats' },
      });
    }
    if (legacy !== undefined && options.validateFormats !== undefined && legacy !== formats) {
      throw new ConfigurationError(
        'formats (deprecated) and validateFormats disagree; give only validateFormats',
        { details: { option: 'formats' } },
      );
    }
    this.#validateFormats = formats;
    const logger: unknown = options.logger;
    if (
      logger !== undefined &&
      (typeof logger !== 'object' ||
        logger === null ||
        typeof (logger as { warn?: unknown }).warn !== 'function')
    ) {
      throw new ConfigurationError(
        'logger must be an object with a warn(message, details) method',
        {
          details: { option: 'logger' },
        },
      );
    }
    this.#logger = logger as SchemaValidatorLogger | undefined;
    this.#maxIssues = maxIssues;
    const maxCached: unknown = options.maxCachedSchemas ?? DEFAULT_MAX_CACHED_SCHEMAS;
    if (typeof maxCached !== 'number' || !Number.isSafeInteger(maxCached) || maxCached < 0) {
      throw new ConfigurationError('maxCachedSchemas must be a non-negative integer', {
        details: { option: 'maxCachedSchemas' },
      });
    }
    this.#maxCachedSchemas = maxCached;
    const patterns: unknown = options.patterns ?? 'linear';
    if (patterns !== 'linear' && patterns !== 'native') {
      throw new ConfigurationError("patterns must be 'linear' or 'native'", {
        details: { option: 'patterns' },
      });
    }
    this.patterns = patterns;
    this.#maxPatternWork = positiveInteger(
      options.maxPatternWork,
      DEFAULT_MAX_PATTERN_WORK,
      'maxPatternWork',
    );
    this.#maxPatternSize = positiveInteger(
      options.maxPatternSize,
      DEFAULT_MAX_PATTERN_SIZE,
      'maxPatternSize',
    );
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

  /**
   * The schema's patterns this validator does not enforce (the linear engine cannot run them),
   * in the order ajv compiled them; empty with `patterns: 'native'` and for a schema without
   * patterns. Compiles the schema as {@link prepare} does (and throws as it does). The patterns
   * are the schema's own text: a host that shows them shows a server's text.
   */
  unenforcedPatterns(schema: JsonObject): readonly string[] {
    return this.#unenforced.get(this.#compile(schema)) ?? NO_PATTERNS;
  }

  /** One ajv instance per dialect, made on first use (each compiles its meta-schema once). */
  #ajv(dialect: JsonSchemaDialect): DialectAjv {
    // draft-06 and draft-07 share ajv's default class (draft-06 differs by `if`/`then`/`else`,
    // which schemaForDialect drops).
    const key = dialect === 'draft-06' ? 'draft-07' : dialect;
    const existing = this.#instances.get(key);
    if (existing !== undefined) return existing;
    const logger = this.#logger;
    const options: AjvOptions = {
      ...(this.patterns === 'linear'
        ? {
            code: {
              regExp: linearPatternEngine({
                unenforced: (source, reason) => {
                  this.#unenforcedNow?.push(source);
                  if (logger !== undefined) unenforcedNote(logger, dialect, source, reason);
                },
                reserveSize: (size) => {
                  if (size > this.#sizeLeft) return false;
                  this.#sizeLeft -= size;
                  return true;
                },
                spendWork: (work) => {
                  if (work > this.#workLeft) {
                    this.#overWork = true;
                    return false;
                  }
                  this.#workLeft -= work;
                  return true;
                },
              }),
            },
          }
        : {}),
      strict: false,
      allErrors: true,
      // Schemas with the same `$id` (two MCP servers, or two versions of one tool) must not clash.
      addUsedSchema: false,
      // Never load anything: no loadSchema, and compile is synchronous.
      validateFormats: this.#validateFormats,
      logger:
        logger === undefined
          ? false
          : {
              log: () => {},
              warn: (...args: unknown[]) => note(logger, dialect, args),
              error: (...args: unknown[]) => note(logger, dialect, args),
            },
    };
    let ajv: Ajv | Ajv2019 | Ajv2020 | InstanceType<typeof AjvDraft04Module.default>;
    switch (key) {
      case 'draft-04':
        ajv = new (ajvDraft04())(options);
        break;
      case 'draft-07': {
        const draft07 = new (ajvModule().Ajv)(options);
        draft07.addMetaSchema(draft06MetaSchema());
        ajv = draft07;
        break;
      }
      case '2019-09':
        ajv = new (ajv2019Module().Ajv2019)(options);
        break;
      default: {
        // The meta-schema check is the precompiled one: this instance never compiles it.
        const ajv2020 = new (ajv2020Module().Ajv2020)(options);
        usePrecompiledMetaSchema(ajv2020);
        ajv = ajv2020;
      }
    }
    installLengthShortcuts(ajv as Ajv);
    if (this.#validateFormats) addFormats()(ajv as Ajv);
    this.#instances.set(key, ajv);
    return ajv;
  }

  #compile(schema: JsonObject): ValidateFunction {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      throw new ConfigurationError('A JSON Schema must be an object', {
        details: { reason: 'schema-not-object' },
      });
    }
    const cached = this.#compiled.get(schema);
    if (cached !== undefined) return cached;
    // The schema's JSON as written is tried first (native, no copies: a refreshed listing repeats
    // its key order); its canonical form (sorted keys) second, so key order never costs a compile.
    const text = this.#maxCachedSchemas > 0 ? plainKey(schema) : undefined;
    const sameText = text === undefined ? undefined : this.#byText.get(text);
    if (text !== undefined && sameText !== undefined) {
      remember(this.#byText, text, sameText, this.#maxCachedSchemas);
      this.#compiled.set(schema, sameText);
      return sameText;
    }
    const content = this.#maxCachedSchemas > 0 ? contentKey(schema) : undefined;
    const equal = content === undefined ? undefined : this.#byContent.get(content);
    if (content !== undefined && equal !== undefined) {
      remember(this.#byContent, content, equal, this.#maxCachedSchemas);
      if (text !== undefined) remember(this.#byText, text, equal, this.#maxCachedSchemas);
      this.#compiled.set(schema, equal);
      return equal;
    }
    const declared = declaredSchemaDialect(schema);
    if (declared === 'unknown') {
      throw new ConfigurationError(
        'The JSON Schema declares a $schema this validator does not know (accepted: draft-04, draft-06, draft-07, 2019-09, 2020-12, or none for 2020-12)',
        { details: { reason: 'unknown-dialect' } },
      );
    }
    const dialect = declared === 'none' ? DEFAULT_SCHEMA_DIALECT : declared;
    const validate =
      dialect === '2020-12' && !mayFailCompile(schema, this.#validateFormats)
        ? this.#deferred(schema)
        : this.#compileNow(schema, dialect);
    this.#compiled.set(schema, validate);
    if (content !== undefined) remember(this.#byContent, content, validate, this.#maxCachedSchemas);
    if (text !== undefined) remember(this.#byText, text, validate, this.#maxCachedSchemas);
    return validate;
  }

  /** ajv's compile of one schema, its failure as a {@link ConfigurationError}. */
  #compileNow(schema: JsonObject, dialect: JsonSchemaDialect): ValidateFunction {
    const unenforced: string[] = [];
    this.#unenforcedNow = unenforced;
    this.#sizeLeft = this.#maxPatternSize;
    // ajv checks the schema against its meta-schema while compiling (the meta-schema's own
    // patterns run then): that check gets a budget of its own, whatever a validation left.
    const workLeft = this.#workLeft;
    const overWork = this.#overWork;
    this.#workLeft = this.#maxPatternWork;
    let validate: ValidateFunction;
    try {
      validate = this.#ajv(dialect).compile(schemaForDialect(schema, dialect) as AnySchemaObject);
    } catch (error) {
      throw compileError(error, dialect);
    } finally {
      this.#unenforcedNow = undefined;
      // A compile on a validation's first use (a deferred schema) leaves that validation's
      // budget as it found it.
      this.#workLeft = workLeft;
      this.#overWork = overWork;
    }
    if (unenforced.length > 0) this.#unenforced.set(validate, Object.freeze(unenforced));
    return validate;
  }

  /**
   * A 2020-12 schema that cannot fail ajv's compile once the meta-schema accepts it (see
   * mayFailCompile): checked now against the precompiled meta-schema (a schema it refuses throws
   * here, the same error as a compile), compiled on its first validation. Preparing a listing's
   * schemas so loads neither ajv's compiler nor any code generation. Should that compile fail, the
   * failure is kept: later validations throw the same {@link ConfigurationError} at once.
   */
  #deferred(schema: JsonObject): ValidateFunction {
    try {
      assertValid2020Schema(schemaForDialect(schema, '2020-12'));
    } catch (error) {
      throw compileError(error, '2020-12');
    }
    let compiled: ValidateFunction | undefined;
    // A compile that failed is not tried again: every later call throws the same error.
    let failure: ConfigurationError | undefined;
    const validate = ((value: unknown) => {
      if (compiled === undefined) {
        if (failure !== undefined) throw failure;
        try {
          compiled = this.#compileNow(schema, '2020-12');
        } catch (error) {
          failure = error as ConfigurationError;
          throw failure;
        }
      }
      const valid = compiled(value);
      validate.errors = compiled.errors ?? null;
      return valid;
    }) as ValidateFunction;
    return validate;
  }

  #run(validate: ValidateFunction, value: JsonValue): ValidationResult {
    this.#workLeft = this.#maxPatternWork;
    this.#overWork = false;
    const valid = validate(value) === true;
    // Over the work limit the value fails, whatever the schema made of the failed pattern test.
    if (this.#overWork) return { valid: false, issues: [OVER_PATTERN_WORK] };
    if (valid) return VALID;
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

/** The {@link ConfigurationError} for a schema ajv (or the precompiled meta-schema) refused. */
function compileError(error: unknown, dialect: JsonSchemaDialect): ConfigurationError {
  const missingRef =
    typeof error === 'object' && error !== null && 'missingRef' in error
      ? 'unresolved-ref'
      : 'invalid-schema';
  return new ConfigurationError(
    missingRef === 'unresolved-ref'
      ? 'The JSON Schema has a $ref that does not resolve inside it (remote schemas are never fetched)'
      : `The JSON Schema is not a valid ${dialect} schema`,
    { details: { reason: missingRef, dialect }, cause: error },
  );
}

/** Passes one ajv note on; a logger that throws is ignored (diagnostics never fail a call). */
function note(logger: SchemaValidatorLogger, dialect: JsonSchemaDialect, args: unknown[]): void {
  const text = args
    .map((arg) => (typeof arg === 'string' ? arg : arg instanceof Error ? arg.message : ''))
    .join(' ')
    .trim()
    .slice(0, MAX_NOTE_LENGTH);
  try {
    logger.warn('JSON Schema validator note', { note: text, dialect });
  } catch {
    // ignored
  }
}

/** Reports a pattern the linear engine cannot run; a logger that throws is ignored. */
function unenforcedNote(
  logger: SchemaValidatorLogger,
  dialect: JsonSchemaDialect,
  source: string,
  reason: UnenforcedReason,
): void {
  try {
    logger.warn(
      reason === 'too-large'
        ? "JSON Schema pattern not enforced: over the schema's maxPatternSize"
        : 'JSON Schema pattern not enforced: the linear-time engine cannot run it (unsupported syntax)',
      { pattern: shortText(source), dialect, reason },
    );
  } catch {
    // ignored
  }
}

/** A positive integer option, or its default; a {@link ConfigurationError} naming it otherwise. */
function positiveInteger(value: unknown, fallback: number, option: string): number {
  const resolved = value ?? fallback;
  if (typeof resolved !== 'number' || !Number.isSafeInteger(resolved) || resolved < 1) {
    throw new ConfigurationError(`${option} must be a positive integer`, { details: { option } });
  }
  return resolved;
}

/** Puts `key` last in an LRU map (most recent), dropping the oldest entry over `max`. */
function remember(
  map: Map<string, ValidateFunction>,
  key: string,
  validate: ValidateFunction,
  max: number,
): void {
  map.delete(key);
  map.set(key, validate);
  if (map.size > max) map.delete(map.keys().next().value as string);
}

/** The schema's JSON in its own key order; undefined when it cannot be serialized. */
function plainKey(schema: JsonObject): string | undefined {
  try {
    return JSON.stringify(schema);
  } catch {
    return undefined;
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
    case 'unevaluatedProperties': {
      const extra =
        (error.params as { additionalProperty?: unknown; unevaluatedProperty?: unknown })
          .additionalProperty ??
        (error.params as { unevaluatedProperty?: unknown }).unevaluatedProperty;
      return {
        path,
        message:
          typeof extra === 'string'
            ? `must not have the property ${shortText(extra)} (not in the schema)`
            : 'must not have additional properties',
      };
    }
    case 'enum': {
      const allowed = (error.params as { allowedValues?: unknown }).allowedValues;
      return {
        path,
        message: Array.isArray(allowed)
          ? `must be one of ${listValues(allowed)}`
          : 'must be one of the allowed values',
      };
    }
    case 'const':
      return {
        path,
        message: `must be ${listValues([(error.params as { allowedValue?: unknown }).allowedValue])}`,
      };
    default:
      return { path, message: error.message ?? `fails ${error.keyword}` };
  }
}

/** A name as JSON text, cut to 64 characters. */
function shortText(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

/** Allowed values from the schema as JSON, at most 10 of them and 200 characters. */
function listValues(values: readonly unknown[]): string {
  let out = '';
  for (const [index, value] of values.entries()) {
    const text = JSON.stringify(value) ?? 'null';
    const next = index === 0 ? text : `, ${text}`;
    if (index >= 10 || out.length + next.length > 200) {
      return `${out}, … (${values.length} values)`;
    }
    out += next;
  }
  return out;
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
