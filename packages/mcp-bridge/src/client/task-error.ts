import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/** Why a `tools/call` that the server turned into a task (SEP-2663) ended without a result. */
export type TaskFailureReason =
  /** The caller's `AbortSignal` fired while polling; `tasks/cancel` was sent. */
  | 'aborted'
  /** The task did not finish within `tasks.maxWaitMs`; `tasks/cancel` was sent. */
  | 'timeout'
  /** The server reports the task as cancelled. */
  | 'cancelled'
  /** `tasks.maxPollFailures` polls in a row failed on the wire; the task was left running. */
  | 'poll-failed'
  /** The server no longer knows the task (`tasks/get` answered `-32602`). */
  | 'not-found'
  /** `close()` was called while the task ran; the task was left running. */
  | 'closed'
  /** The task handle or a `tasks/get` answer was malformed; `tasks/cancel` was sent. */
  | 'invalid';

/**
 * A `tools/call` was accepted as a task (the server answered with a task handle) and the task
 * ended without a result. The call itself was delivered exactly once and is never repeated; but
 * cancellation is cooperative, so for every reason but `cancelled` and `invalid` the work
 * may still have run or finish: verify external state before calling again. The task id is on
 * {@link TaskError.taskId} (never in the message or `details`: a server may use it as a bearer
 * token).
 */
export class TaskError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_TASK_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/TaskError');
  /** Why the task ended. */
  readonly reason: TaskFailureReason;
  /** The server's task id (untrusted text; treat it as a secret). */
  readonly taskId: string | undefined;
  /** True when `tasks/cancel` was sent and the server acknowledged it. */
  readonly cancelAcknowledged: boolean;

  /** Creates the error; `reason` and `cancelAcknowledged` are also in `details`. */
  constructor(
    reason: TaskFailureReason,
    taskId: string | undefined,
    cancelAcknowledged: boolean,
    options: McpBridgeErrorOptions = {},
  ) {
    super(messageFor(reason), {
      ...options,
      details: { reason, cancelAcknowledged, ...options.details },
    });
    this.reason = reason;
    this.taskId = taskId;
    this.cancelAcknowledged = cancelAcknowledged;
  }
}

function messageFor(reason: TaskFailureReason): string {
  switch (reason) {
    case 'aborted':
      return 'The tool call was aborted while its task ran; tasks/cancel was sent, but the work may still complete: verify external state before calling again';
    case 'timeout':
      return 'The task did not finish within tasks.maxWaitMs; tasks/cancel was sent, but the work may still complete: verify external state before calling again';
    case 'cancelled':
      return 'The MCP server cancelled the task; the tool call has no result';
    case 'poll-failed':
      return 'Polling the task failed tasks.maxPollFailures times in a row; the task may still run: verify external state before calling again';
    case 'closed':
      return 'The client was closed while the task ran; the task was left running: verify external state before calling again';
    case 'not-found':
      return 'The MCP server no longer knows the task; its outcome is unknown: verify external state before calling again';
    default:
      return 'The MCP server sent a malformed task; tasks/cancel was sent and its outcome is unknown';
  }
}
