import { createHash } from 'node:crypto';
import { ConfigurationError } from '../../registry/configuration-error.js';
import type { AdapterOutcome } from '../registry-call.js';

/** Default of `completedCallMemory`: how many calls' outcomes an adapter keeps for resumes. */
export const DEFAULT_COMPLETED_CALL_MEMORY = 1000;

/** One call that reached the registry inside a LangGraph task. */
export interface CompletedCall {
  /** Registry name of the tool. */
  readonly toolName: string;
  /** SHA-256 of the arguments' JSON, so a reused call id with other arguments is not matched. */
  readonly argsDigest: string;
  /** The call waited for a human through `interrupt()` before it ran. */
  readonly asked: boolean;
  /** The registry's outcome (pending while the call runs). */
  readonly outcome: Promise<AdapterOutcome>;
}

/** The part of LangChain's run config this reads (LangGraph sets both keys for a task). */
export interface LangGraphTaskConfig {
  readonly configurable?: {
    readonly thread_id?: unknown;
    readonly checkpoint_ns?: unknown;
  };
}

/**
 * The outcomes of the calls an adapter sent to the registry inside LangGraph tasks, by thread,
 * task and tool call id, so a task LangGraph runs again on resume (every call of a `ToolNode` step
 * is run again when one of them interrupted) gets each finished or running call's outcome instead
 * of running it a second time. Keeps the most recent `limit` calls (in this process only; a graph
 * resumed by another process with new tools runs them again, see the README).
 */
export class CompletedCalls {
  readonly #limit: number;
  readonly #calls = new Map<string, CompletedCall>();

  /** `limit`: how many calls to keep (a positive integer). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /**
   * The key of one call in one LangGraph task: the thread, the task's checkpoint namespace (which
   * carries the task id, the same across a resume of that step and different in any other step)
   * and the tool call id. `undefined` outside a checkpointed graph or without a call id.
   */
  static key(
    config: LangGraphTaskConfig | undefined,
    toolCallId: string | undefined,
  ): string | undefined {
    const thread = config?.configurable?.thread_id;
    const namespace = config?.configurable?.checkpoint_ns;
    if (toolCallId === undefined || typeof namespace !== 'string' || namespace === '') {
      return undefined;
    }
    if (typeof thread !== 'string' && typeof thread !== 'number') return undefined;
    return JSON.stringify([String(thread), namespace, toolCallId]);
  }

  /** The digest calls are matched by (arguments as JSON). */
  static digest(args: unknown): string {
    return createHash('sha256')
      .update(JSON.stringify(args) ?? 'undefined', 'utf8')
      .digest('hex');
  }

  /** The call under `key`, when it was for the same tool and arguments. */
  get(key: string, toolName: string, argsDigest: string): CompletedCall | undefined {
    const call = this.#calls.get(key);
    if (call === undefined || call.toolName !== toolName || call.argsDigest !== argsDigest) {
      return undefined;
    }
    return call;
  }

  /**
   * Keeps `call` under `key`, forgetting the oldest beyond the limit. A call whose outcome is
   * a thrown (programming) error is forgotten, so a run again meets the same error.
   */
  set(key: string, call: CompletedCall): void {
    this.#calls.delete(key);
    this.#calls.set(key, call);
    if (this.#calls.size > this.#limit) {
      const oldest = this.#calls.keys().next().value;
      if (oldest !== undefined) this.#calls.delete(oldest);
    }
    call.outcome.catch(() => {
      if (this.#calls.get(key) === call) this.#calls.delete(key);
    });
  }

  /** How many calls are kept. */
  get size(): number {
    return this.#calls.size;
  }
}

/** Checks `completedCallMemory`: a positive safe integer, or the default when absent. */
export function completedCallMemory(value: unknown, adapter: string): number {
  if (value === undefined) return DEFAULT_COMPLETED_CALL_MEMORY;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new ConfigurationError(
      `${adapter} completedCallMemory must be a positive integer (default ${DEFAULT_COMPLETED_CALL_MEMORY})`,
      { details: { option: 'completedCallMemory' } },
    );
  }
  return value;
}
