import { ConfigurationError } from './configuration-error.js';
import { type JsonSnapshotLimits, snapshotJsonObject } from './json-snapshot.js';
import type { AccessScope, JsonObject, ToolContext } from './tool.js';

/** Returns the object it is given, so a subclass's fields are added to that object. */
class Stamped {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the return override is how a private brand is put on a plain object
    return target;
  }
}

/**
 * The mark of a context {@link createToolContext} or {@link deriveToolContext} made: a private
 * field put on the plain object before it is frozen. Only this module can add it or test for it,
 * copies (spread, `structuredClone`, JSON) never carry it, and it leaves the object's keys and
 * prototype as they are. It costs a fraction of a `WeakSet` entry, which matters once per call.
 */
class CreatedMark extends Stamped {
  readonly #created = true;

  /** Marks `context` (not yet frozen) and returns it. */
  static mark<T extends object>(context: T): T {
    return new CreatedMark(context) as unknown as T;
  }

  /** True for an object {@link mark} marked. */
  static has(value: object): boolean {
    return #created in value;
  }
}

/** The metadata of a context made without any: empty and frozen, shared by all of them. */
const NO_METADATA: JsonObject = Object.freeze({}) as JsonObject;

/** What `createToolContext` accepts. */
export interface ToolContextInit {
  /** Identifies the agent run; must be a non-empty string. */
  readonly runId: string;
  /** Identifies the step within the run, when the host tracks steps. */
  readonly stepId?: string;
  /**
   * The session the call belongs to (a conversation, a downstream connection), for the flow
   * guard's labels: a non-empty string. Default `runId`.
   */
  readonly session?: string;
  /** Log-safe JSON facts for tools and policies; snapshotted and deep-frozen. Default `{}`. */
  readonly metadata?: JsonObject;
  /** What the call may do; `read-only` denies non-`read` effects. Default `full`. */
  readonly accessScope?: AccessScope;
  /** Passed to the tool; aborting it asks the tool to stop. */
  readonly signal?: AbortSignal;
}

/**
 * Builds a frozen {@link ToolContext}: `runId` must be a non-empty string, `session` (default
 * `runId`) too, `metadata` JSON values
 * only (taken as a bounded, deep-frozen JSON snapshot, the same one the registry takes of
 * arguments, with the same default limits), `accessScope` defaults to `full`, `signal` must be an
 * AbortSignal. Throws {@link ConfigurationError}.
 */
export function createToolContext(init: ToolContextInit, limits?: JsonSnapshotLimits): ToolContext {
  if (typeof init !== 'object' || init === null) {
    throw new ConfigurationError('A ToolContext must be an object', {
      details: { option: 'context' },
    });
  }
  if (typeof init.runId !== 'string' || init.runId.trim() === '') {
    throw new ConfigurationError('ToolContext.runId must be a non-empty string', {
      details: { option: 'context.runId' },
    });
  }
  if (init.stepId !== undefined && typeof init.stepId !== 'string') {
    throw new ConfigurationError('ToolContext.stepId must be a string', {
      details: { option: 'context.stepId' },
    });
  }
  if (init.session !== undefined && (typeof init.session !== 'string' || init.session === '')) {
    throw new ConfigurationError('ToolContext.session must be a non-empty string', {
      details: { option: 'context.session' },
    });
  }
  const accessScope = init.accessScope ?? 'full';
  if (accessScope !== 'full' && accessScope !== 'read-only') {
    throw new ConfigurationError("ToolContext.accessScope must be 'full' or 'read-only'", {
      details: { option: 'context.accessScope' },
    });
  }
  if (init.signal !== undefined && !(init.signal instanceof AbortSignal)) {
    throw new ConfigurationError('ToolContext.signal must be an AbortSignal', {
      details: { option: 'context.signal' },
    });
  }
  let metadata: JsonObject;
  try {
    // No metadata: the one frozen empty object (what a snapshot of `{}` would be, without one
    // per call).
    metadata =
      init.metadata === undefined ? NO_METADATA : snapshotJsonObject(init.metadata, limits);
  } catch (error) {
    throw new ConfigurationError('ToolContext.metadata must be a JSON object within the limits', {
      details: { option: 'context.metadata' },
      cause: error,
    });
  }
  // Assigned in the order of the keys (runId, stepId, session, metadata, accessScope, signal),
  // without a spread per optional field.
  const fields = { runId: init.runId } as { -readonly [K in keyof ToolContext]: ToolContext[K] };
  if (init.stepId !== undefined) fields.stepId = init.stepId;
  fields.session = init.session ?? init.runId;
  fields.metadata = metadata;
  fields.accessScope = accessScope;
  if (init.signal !== undefined) fields.signal = init.signal;
  const context: ToolContext = Object.freeze(CreatedMark.mark(fields));
  return context;
}

/**
 * A context made from `base` (one {@link createToolContext} made) with another step id and
 * signal, without checking and snapshotting `base` again: for hosts that derive one context per
 * call from a run's. `stepId` must be a string and `signal` an AbortSignal, when given.
 */
export function deriveToolContext(
  base: ToolContext,
  stepId: string | undefined,
  signal: AbortSignal | undefined,
): ToolContext {
  if (typeof base !== 'object' || base === null || !CreatedMark.has(base)) {
    return createToolContext({
      runId: base.runId,
      session: base.session ?? base.runId,
      metadata: base.metadata,
      accessScope: base.accessScope,
      ...(stepId === undefined ? {} : { stepId }),
      ...(signal === undefined ? {} : { signal }),
    });
  }
  if (stepId !== undefined && typeof stepId !== 'string') {
    throw new ConfigurationError('ToolContext.stepId must be a string', {
      details: { option: 'context.stepId' },
    });
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ConfigurationError('ToolContext.signal must be an AbortSignal', {
      details: { option: 'context.signal' },
    });
  }
  const runId = base.runId;
  const session = base.session ?? runId;
  const { metadata, accessScope } = base;
  // Literals of fixed shape (the same keys in the same order as createToolContext's), not spreads:
  // this runs once per adapter call.
  return Object.freeze(
    CreatedMark.mark(
      stepId === undefined
        ? signal === undefined
          ? { runId, session, metadata, accessScope }
          : { runId, session, metadata, accessScope, signal }
        : signal === undefined
          ? { runId, stepId, session, metadata, accessScope }
          : { runId, stepId, session, metadata, accessScope, signal },
    ),
  );
}

/** True for a context built by {@link createToolContext} (already checked and frozen). */
export function isCreatedToolContext(value: unknown): value is ToolContext {
  return typeof value === 'object' && value !== null && CreatedMark.has(value);
}
