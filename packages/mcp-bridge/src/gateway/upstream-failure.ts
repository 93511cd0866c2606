import { isRecord } from '../is-record.js';
import { printableText } from '../printable-text.js';

/** Why an upstream could not start or list its tools, in words a person can act on. */
export interface UpstreamFailure {
  /** The stable code of the outermost error that has one (`unknown` when none does). */
  readonly code: string;
  /** The messages along the cause chain, outermost first, joined (our own texts only). */
  readonly message: string;
  /** The server process's exit code, when it exited. */
  readonly exitCode?: number;
  /** The signal that ended the server process, when one did. */
  readonly signal?: string;
  /** The server's last stderr output (cleaned and bounded by the transport's `stderrTailBytes`). */
  readonly stderrTail?: string;
}

// Deep enough for any chain this package builds (client -> protocol -> transport -> spawn).
const MAX_CHAIN = 8;

/**
 * Reads an upstream's start failure along its cause chain: the code, the messages, and what the
 * stdio transport recorded about the process (exit code, signal, stderr tail). Only the messages
 * of errors with a stable `code` are kept (this package's and the tools package's own, safe
 * texts), each made printable and bounded.
 */
export function describeUpstreamFailure(error: unknown): UpstreamFailure {
  let code: string | undefined;
  const messages: string[] = [];
  let exitCode: number | undefined;
  let signal: string | undefined;
  let stderrTail: string | undefined;
  let at: unknown = error;
  for (let depth = 0; depth < MAX_CHAIN && at instanceof Error; depth++) {
    const own = (at as { code?: unknown }).code;
    if (typeof own === 'string' && /^[A-Z][A-Z0-9_]*$/.test(own)) {
      code ??= own;
      const text = printableText(at.message, 500);
      if (!messages.includes(text)) messages.push(text);
    }
    const details = (at as { details?: unknown }).details;
    if (isRecord(details)) {
      if (exitCode === undefined && typeof details.exitCode === 'number') {
        exitCode = details.exitCode;
      }
      if (signal === undefined && typeof details.signal === 'string') signal = details.signal;
      if (stderrTail === undefined && typeof details.stderrTail === 'string') {
        stderrTail = details.stderrTail;
      }
    }
    at = (at as { cause?: unknown }).cause;
  }
  return Object.freeze({
    code: code ?? 'unknown',
    message:
      messages.length === 0 ? 'the upstream failed for an unknown reason' : messages.join(': '),
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(signal === undefined ? {} : { signal }),
    ...(stderrTail === undefined ? {} : { stderrTail }),
  });
}

/** The failure as lines for a terminal: the message, then the stderr tail indented. */
export function formatUpstreamFailure(name: string, failure: UpstreamFailure): string {
  const exit =
    failure.exitCode !== undefined
      ? ` (exit code ${failure.exitCode})`
      : failure.signal !== undefined
        ? ` (signal ${failure.signal})`
        : '';
  const head = `upstream "${printableText(name, 64)}" failed to start${exit}: ${failure.message} [${failure.code}]`;
  if (failure.stderrTail === undefined) return `${head}\n`;
  const tail = failure.stderrTail
    .split('\n')
    .map((line) => `    | ${line}`)
    .join('\n');
  return `${head}\n  its last stderr output:\n${tail}\n`;
}
