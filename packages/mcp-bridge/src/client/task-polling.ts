// The Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) from the client side: a
// `tools/call` answered with `resultType: "task"` is polled with `tasks/get` (bounded interval,
// bounded total time), input the task asks for is given through `tasks/update`, and the task is
// cancelled with `tasks/cancel` on abort and at the time limit. The call is never repeated.

import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { checkOptionKeys } from '@toolfence/tools/core';
import { isRecord } from '../is-record.js';
import { type LinkedSignal, linkSignal } from '../protocol/abort-link.js';
import { InputRequestError } from '../protocol/input-request-error.js';
import { answerInputRequests, type InputHandlers } from '../protocol/input-requests.js';
import type { PromptAllowance } from '../protocol/prompt-allowance.js';
import { sleepUnlessAborted } from '../transport/abortable-sleep.js';
import { positiveInteger } from '../transport/record-limits.js';
import { ClientConfigurationError, ServerRpcError } from './errors.js';
import { TaskError } from './task-error.js';

/** The `tasks` option of `McpClient`: opting in to the Tasks extension, with its limits. */
export interface McpTaskOptions {
  /** Milliseconds between two polls when the server suggests no `pollIntervalMs`. Default 1,000. */
  readonly pollIntervalMs?: number;
  /** The shortest wait between two polls, whatever the server suggests. Default 100. */
  readonly minPollIntervalMs?: number;
  /** The longest wait between two polls, whatever the server suggests. Default 30,000. */
  readonly maxPollIntervalMs?: number;
  /** Milliseconds a task may run from its handle to its result; then it is cancelled. Default 600,000. */
  readonly maxWaitMs?: number;
  /** Polls in a row that may fail on the wire before the call gives up. Default 3. */
  readonly maxPollFailures?: number;
}

/** The resolved `tasks` option. */
export interface TaskSettings {
  readonly pollIntervalMs: number;
  readonly minPollIntervalMs: number;
  readonly maxPollIntervalMs: number;
  readonly maxWaitMs: number;
  readonly maxPollFailures: number;
}

const TASK_OPTION_KEYS: readonly string[] = Object.freeze([
  'pollIntervalMs',
  'minPollIntervalMs',
  'maxPollIntervalMs',
  'maxWaitMs',
  'maxPollFailures',
]);

/** Task ids longer than this are refused (the id goes into headers and every poll). */
const MAX_TASK_ID_LENGTH = 1024;

/** Checks the `tasks` option (unknown keys refused) and fills in the defaults. */
export function resolveTaskOptions(value: unknown): TaskSettings | undefined {
  if (value === undefined) return undefined;
  const fail = (message: string, option: string): Error =>
    new ClientConfigurationError(message, { details: { option: `tasks.${option}` } });
  checkOptionKeys(value, TASK_OPTION_KEYS, 'McpClient tasks', fail);
  const options = value as McpTaskOptions;
  const settings: TaskSettings = Object.freeze({
    pollIntervalMs: positiveInteger('tasks.pollIntervalMs', options.pollIntervalMs, 1000),
    minPollIntervalMs: positiveInteger('tasks.minPollIntervalMs', options.minPollIntervalMs, 100),
    maxPollIntervalMs: positiveInteger(
      'tasks.maxPollIntervalMs',
      options.maxPollIntervalMs,
      30_000,
    ),
    maxWaitMs: positiveInteger('tasks.maxWaitMs', options.maxWaitMs, 600_000),
    maxPollFailures: positiveInteger('tasks.maxPollFailures', options.maxPollFailures, 3),
  });
  if (settings.minPollIntervalMs > settings.maxPollIntervalMs) {
    throw fail(
      'tasks.minPollIntervalMs must not exceed tasks.maxPollIntervalMs',
      'minPollIntervalMs',
    );
  }
  return settings;
}

/** A task handle: what a `CreateTaskResult` says. */
export interface TaskHandle {
  readonly taskId: string;
  readonly pollIntervalMs: number | undefined;
}

/** True when a result is a `CreateTaskResult` (`resultType: "task"`). */
export function isTaskResult(result: Readonly<Record<string, unknown>>): boolean {
  return result.resultType === 'task';
}

/**
 * Reads a `CreateTaskResult`; undefined when it is malformed (then the call's outcome is unknown:
 * the server said it took the work but gave no usable handle).
 */
export function readTaskHandle(result: Readonly<Record<string, unknown>>): TaskHandle | undefined {
  const { taskId, pollIntervalMs } = result;
  if (typeof taskId !== 'string' || taskId === '' || taskId.length > MAX_TASK_ID_LENGTH) {
    return undefined;
  }
  if ('result' in result || 'error' in result || 'inputRequests' in result) return undefined;
  return { taskId, pollIntervalMs: pollInterval(pollIntervalMs) };
}

function pollInterval(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** What one poll gives the loop: a `tasks/get` answer, or a wire failure. */
export type PollOutcome =
  | { readonly ok: true; readonly task: Readonly<Record<string, unknown>> }
  | { readonly ok: false; readonly error: unknown };

/** The requests the loop sends (each under the client's own semaphore and session handling). */
export interface TaskPort {
  /** `tasks/get`; a wire failure is returned, a JSON-RPC error thrown (as `McpError`). */
  readonly get: (taskId: string, timeoutMs: number, signal: AbortSignal) => Promise<PollOutcome>;
  /** `tasks/update` with input responses; resolves true when acknowledged. */
  readonly update: (
    taskId: string,
    inputResponses: Readonly<Record<string, unknown>>,
    timeoutMs: number,
    signal: AbortSignal,
  ) => Promise<boolean>;
  /** `tasks/cancel`; resolves true when acknowledged (never throws). */
  readonly cancel: (taskId: string) => Promise<boolean>;
}

/** Per-call inputs of {@link awaitTask}. */
export interface AwaitTaskOptions {
  readonly settings: TaskSettings;
  readonly port: TaskPort;
  readonly handlers: InputHandlers;
  /** `tasks/update` rounds allowed (the client's `maxInputRounds`). */
  readonly maxInputRounds: number;
  /** The call's prompt allowance (the client's `maxInputPrompts`, shared with its rounds). */
  readonly prompts: PromptAllowance;
  /** Milliseconds for each poll's answer (the client's read timeout). */
  readonly requestTimeoutMs: number;
  readonly signal?: AbortSignal;
  /** Fires when the client is closed: the wait ends at once and the task is left running. */
  readonly closeSignal?: AbortSignal;
}

/**
 * Polls a task to its end and returns its `CallToolResult` (unchecked), or throws
 * {@link TaskError} (aborted, timeout, cancelled, poll-failed, not-found, invalid),
 * {@link ServerRpcError} (the task failed with a JSON-RPC error), or {@link InputRequestError}
 * (input the task asked for could not be given; the task is cancelled). `tools/call` is never
 * sent again.
 */
export async function awaitTask(
  handle: TaskHandle,
  options: AwaitTaskOptions,
): Promise<Record<string, unknown>> {
  const { settings, port, signal, closeSignal } = options;
  const taskId = handle.taskId;
  const deadline = Date.now() + settings.maxWaitMs;
  const aborted = (): boolean => signal?.aborted === true;
  const closed = (): boolean => closeSignal?.aborted === true;
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  closeSignal?.addEventListener('abort', onAbort, { once: true });
  const closedError = (): TaskError => new TaskError('closed', taskId, false);
  const cancelled = async (reason: 'aborted' | 'timeout' | 'invalid', cause?: unknown) =>
    new TaskError(reason, taskId, await port.cancel(taskId), cause === undefined ? {} : { cause });
  try {
    let suggested = handle.pollIntervalMs;
    let failures = 0;
    let rounds = 0;
    const answered = new Set<string>();
    /** Answers the host gave whose `tasks/update` is not acknowledged yet. */
    const prepared = new Map<string, unknown>();
    for (;;) {
      const interval = clamp(
        suggested ?? settings.pollIntervalMs,
        settings.minPollIntervalMs,
        settings.maxPollIntervalMs,
      );
      await sleepUnlessAborted(Math.min(interval, Math.max(0, deadline - Date.now())), stop.signal);
      if (closed()) throw closedError();
      if (aborted()) throw await cancelled('aborted');
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw await cancelled('timeout');
      let outcome: PollOutcome;
      // Each poll gets its own signal: the JSON-RPC layer leaves a listener on the signal of every
      // request, which on `stop.signal` would pile up one per poll (MaxListenersExceededWarning).
      const poll = linkSignal(stop.signal) as LinkedSignal;
      try {
        outcome = await port.get(
          taskId,
          Math.min(options.requestTimeoutMs, remaining),
          poll.signal,
        );
      } catch (error) {
        if (closed()) throw closedError();
        if (aborted()) throw await cancelled('aborted', error);
        // -32602 is the spec's answer for an unknown or expired task; other errors count as a
        // failed poll below.
        if (!(error instanceof McpError)) throw error;
        if (error.code === -32602) {
          throw new TaskError('not-found', taskId, false, {
            cause: error,
            details: { rpcCode: error.code },
          });
        }
        outcome = { ok: false, error };
      } finally {
        poll.release();
      }
      if (closed()) throw closedError();
      if (aborted()) throw await cancelled('aborted');
      if (!outcome.ok) {
        failures++;
        if (failures >= settings.maxPollFailures) {
          throw new TaskError('poll-failed', taskId, false, {
            cause: outcome.error,
            details: { maxPollFailures: settings.maxPollFailures },
          });
        }
        continue;
      }
      failures = 0;
      const task = outcome.task;
      if (task.taskId !== undefined && task.taskId !== taskId) throw await cancelled('invalid');
      suggested = pollInterval(task.pollIntervalMs) ?? suggested;
      switch (task.status) {
        case 'working':
          continue;
        case 'completed':
          if (!isRecord(task.result)) throw await cancelled('invalid');
          return task.result;
        case 'failed': {
          const error = isRecord(task.error) ? task.error : {};
          const code = Number.isSafeInteger(error.code) ? (error.code as number) : -32603;
          throw new ServerRpcError(code, { details: { task: 'failed' } });
        }
        case 'cancelled':
          throw new TaskError('cancelled', taskId, false);
        case 'input_required': {
          const pending = pendingRequests(task.inputRequests, answered);
          if (pending === undefined) throw await cancelled('invalid');
          if (Object.keys(pending).length === 0) continue;
          // Ask the host only for requests it has not answered yet: an answer whose tasks/update
          // was lost is sent again, never asked for twice.
          const unasked = Object.fromEntries(
            Object.entries(pending).filter(([key]) => !prepared.has(key)),
          );
          if (Object.keys(unasked).length > 0) {
            if (rounds >= options.maxInputRounds) {
              await port.cancel(taskId);
              throw new InputRequestError('too-many-rounds', undefined, {
                details: { maxInputRounds: options.maxInputRounds },
              });
            }
            rounds++;
            let answers: Record<string, unknown>;
            try {
              answers = await answerInputRequests(
                { inputRequests: unasked },
                options.handlers,
                options.prompts,
              );
            } catch (error) {
              await port.cancel(taskId);
              throw error;
            }
            for (const [key, answer] of Object.entries(answers)) prepared.set(key, answer);
          }
          if (aborted()) throw await cancelled('aborted');
          const responses = Object.fromEntries(
            Object.keys(pending)
              .filter((key) => prepared.has(key))
              .map((key) => [key, prepared.get(key)]),
          );
          let acknowledged: boolean;
          const update = linkSignal(stop.signal) as LinkedSignal;
          try {
            acknowledged = await port.update(
              taskId,
              responses,
              Math.min(options.requestTimeoutMs, Math.max(1, deadline - Date.now())),
              update.signal,
            );
          } catch (error) {
            // The server refused the input (a JSON-RPC error): the task cannot go on.
            if (aborted()) throw await cancelled('aborted', error);
            await port.cancel(taskId);
            const rpcCode = error instanceof McpError ? error.code : -32603;
            throw new ServerRpcError(rpcCode, {
              cause: error,
              details: { method: 'tasks/update' },
            });
          } finally {
            update.release();
          }
          if (!acknowledged) {
            failures++;
            if (failures >= settings.maxPollFailures) {
              throw new TaskError('poll-failed', taskId, false, {
                details: { maxPollFailures: settings.maxPollFailures },
              });
            }
            continue;
          }
          for (const key of Object.keys(responses)) {
            answered.add(key);
            prepared.delete(key);
          }
          continue;
        }
        default:
          throw await cancelled('invalid');
      }
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    closeSignal?.removeEventListener('abort', onAbort);
  }
}

/** The input requests not answered yet; undefined when the field is malformed. */
function pendingRequests(
  value: unknown,
  answered: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  if (!isRecord(value)) return undefined;
  const pending: Record<string, unknown> = {};
  for (const [key, request] of Object.entries(value)) {
    if (!answered.has(key)) pending[key] = request;
  }
  return pending;
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), max);
}
