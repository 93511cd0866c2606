import { McpBridgeError } from '../mcp-bridge-error.js';

/** Why the audit log cannot be trusted or written, in `AuditLogError.details.reason`. */
export type AuditProblem =
  /** A line could not be written (the file is a folder, unwritable, deleted, replaced or cut). */
  | 'write-failed'
  /** An earlier line could not be written; no line is written until a restart. */
  | 'failed-before'
  /** The log (or its `.1`) holds lines, but its head file is missing. */
  | 'head-missing'
  /** The head file is not a head this gateway wrote (damaged, or edited without the key). */
  | 'head-damaged'
  /** The log is keyed, and no key (`TOOLFENCE_AUDIT_KEY`) was given. */
  | 'key-required'
  /** The log is keyed with another key. */
  | 'key-mismatch'
  /** A key was given, but the log was written without one. */
  | 'key-unexpected'
  /** The log file is missing although its head says it holds lines. */
  | 'log-missing'
  /** Lines were removed from the end of the log. */
  | 'cut'
  /** The rotated file `.1` is missing, or lines were removed from it. */
  | 'rotated-cut'
  /** The log does not end with the line its head sealed (changed, or its chain recomputed). */
  | 'head-mismatch'
  /** A line is not JSON. */
  | 'not-json'
  /** A line's hash does not match its content. */
  | 'hash-mismatch'
  /** A line does not link to the line before it. */
  | 'chain-broken';

/**
 * The audit log cannot be written, or does not match its sealed head. Code `AUDIT_WRITE_FAILED`
 * when a line could not be written (the gateway then runs no call: a call runs only after its
 * line is on disk), `AUDIT_LOG_BROKEN` when the log, its rotated file and its head disagree (the
 * gateway refuses to start on it). `details.reason` is an {@link AuditProblem}; `details.path`
 * names the file. The message says what to run (`toolfence-mcp audit verify`) and how to start a
 * new chain.
 */
export class AuditLogError extends McpBridgeError {
  static override readonly code: string = 'AUDIT_LOG_BROKEN';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/AuditLogError');
}
