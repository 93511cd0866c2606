import { readFileSync } from 'node:fs';

/**
 * Stable, unversioned file name of the hook script; a reinstall overwrites it in place. A
 * CommonJS file (`.cjs`): Node starts it without the ESM loader, as fast as `node -e 0`.
 */
export const HOOK_SCRIPT_FILENAME = 'toolfence_attachment_substitution.cjs';

/**
 * File names earlier versions installed the hook script under (the ES module
 * `toolfence_attachment_substitution.mjs`). `install` replaces such an installation with
 * {@link HOOK_SCRIPT_FILENAME}, `status` reports it as outdated, `uninstall` removes it.
 */
export const LEGACY_HOOK_SCRIPT_FILENAMES: readonly string[] = Object.freeze([
  'toolfence_attachment_substitution.mjs',
]);

/** Name of the optional JSON config file the hook reads from its own directory. */
export const HOOK_CONFIG_FILENAME = 'toolfence_attachment_substitution.config.json';

/** URL of the hook script file shipped inside this package (`hook/` beside `dist/` and `src/`). */
export const HOOK_SCRIPT_URL: URL = new URL(`../../hook/${HOOK_SCRIPT_FILENAME}`, import.meta.url);

/**
 * The hook script's full text, read from the shipped file when this module loads, so the text a
 * server hands out is exactly the file the tests run.
 */
export const HOOK_SCRIPT: string = readFileSync(HOOK_SCRIPT_URL, 'utf8');

/** Reads `protocol=N` from a hook script's header comment; undefined when absent. */
export function readHookProtocolVersion(scriptText: string): number | undefined {
  const header = scriptText.slice(0, 400).split('\n', 1)[0] ?? '';
  const match = /\bprotocol=(\d+)\b/.exec(header);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * Version of the contract between the hook and servers (input scoping, output dialects, deny
 * payloads). Stamped in the script's first line as `protocol=N`; bumped only on a change that an
 * installed hook or a server must know about.
 */
export const HOOK_PROTOCOL_VERSION: number = readHookProtocolVersion(HOOK_SCRIPT) ?? 0;

/** Largest single file the hook inlines by default: 25 MiB. */
export const MAX_BYTES: number = 25 * 1024 * 1024;

/** Default per-call budget for all files the hook inlines into one call: 25 MiB (~34 MB base64). */
export const MAX_TOTAL_BYTES: number = 25 * 1024 * 1024;

/** Default cap on the hook event the hook reads from stdin: 64 MiB. */
export const MAX_HOOK_INPUT_BYTES: number = 64 * 1024 * 1024;

/**
 * Default cap on how deeply a tool input with a `file:` attachment may nest (each object and
 * array is one level, the tool input itself the first): 100. Deeper input is denied with
 * `HOOK_INPUT_TOO_DEEP` before any file is read. Settable up to {@link MAX_HOOK_DEPTH_CEILING}.
 */
export const MAX_HOOK_DEPTH: number = 100;

/** Highest nesting limit the hook accepts (deeper values could exhaust `JSON.stringify`'s stack). */
export const MAX_HOOK_DEPTH_CEILING: number = 1000;

/**
 * Default cap on the `file:` attachments one call may carry: 100. More are denied with
 * `HOOK_TOO_MANY_ATTACHMENTS` before any file is read (each attachment costs an open, checks and
 * a read). Settable from 1 up to {@link MAX_HOOK_ATTACHMENTS_CEILING}.
 */
export const MAX_HOOK_ATTACHMENTS: number = 100;

/** Highest attachment cap the hook accepts. */
export const MAX_HOOK_ATTACHMENTS_CEILING: number = 100000;

/**
 * Default quiet time in milliseconds: a file whose last change is more recent is re-checked after
 * the rest of that time and denied with `HOOK_FILE_CHANGED` if it changed meanwhile (a writer
 * between two writes leaves bytes no read can tell from a finished file). 0 turns the wait off.
 */
export const HOOK_SETTLE_MS: number = 100;

/** Environment variables the hook reads (all optional). */
export const HOOK_ENVIRONMENT: Readonly<{
  /** Absolute directories the hook may read from, separated by `path.delimiter`; unset: any readable file. */
  readonly allowedRoots: 'TOOLFENCE_HOOK_ALLOWED_ROOTS';
  /** Largest single file inlined, in bytes; default {@link MAX_BYTES}. */
  readonly maxBytes: 'TOOLFENCE_HOOK_MAX_BYTES';
  /** Per-call budget for all inlined files, in bytes; default {@link MAX_TOTAL_BYTES}. */
  readonly maxTotalBytes: 'TOOLFENCE_HOOK_MAX_TOTAL_BYTES';
  /** Largest hook event read from stdin, in bytes; default {@link MAX_HOOK_INPUT_BYTES}. */
  readonly maxInputBytes: 'TOOLFENCE_HOOK_MAX_INPUT_BYTES';
  /** Deepest nesting of a tool input with a file attachment; default {@link MAX_HOOK_DEPTH}. */
  readonly maxDepth: 'TOOLFENCE_HOOK_MAX_DEPTH';
  /** Most `file:` attachments one call may carry; default {@link MAX_HOOK_ATTACHMENTS}. */
  readonly maxAttachments: 'TOOLFENCE_HOOK_MAX_ATTACHMENTS';
  /** Quiet time in milliseconds for a file changed just now; default {@link HOOK_SETTLE_MS}. */
  readonly settleMs: 'TOOLFENCE_HOOK_SETTLE_MS';
  /** Path of the hook's config file (must exist when set); default: the config file beside the script. */
  readonly config: 'TOOLFENCE_HOOK_CONFIG';
  /**
   * `1` (the default) refuses well-known credential locations (`~/.ssh`, `~/.aws`, `.env` files,
   * `/etc/shadow`, private keys, ...) with `HOOK_CREDENTIAL_FILE_DENIED`; `0` turns that off.
   */
  readonly denyCredentialFiles: 'TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES';
}> = Object.freeze({
  allowedRoots: 'TOOLFENCE_HOOK_ALLOWED_ROOTS',
  maxBytes: 'TOOLFENCE_HOOK_MAX_BYTES',
  maxTotalBytes: 'TOOLFENCE_HOOK_MAX_TOTAL_BYTES',
  maxInputBytes: 'TOOLFENCE_HOOK_MAX_INPUT_BYTES',
  maxDepth: 'TOOLFENCE_HOOK_MAX_DEPTH',
  maxAttachments: 'TOOLFENCE_HOOK_MAX_ATTACHMENTS',
  settleMs: 'TOOLFENCE_HOOK_SETTLE_MS',
  config: 'TOOLFENCE_HOOK_CONFIG',
  denyCredentialFiles: 'TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES',
} as const);

/** Every code the hook puts in a deny reason (`toolfence attachment hook: <CODE>: ...`). */
export const HOOK_DENY_CODES: readonly string[] = Object.freeze([
  'HOOK_FILE_URL_IN_METADATA',
  'HOOK_FILE_PATH_RELATIVE',
  'HOOK_FILE_URL_HOST',
  'HOOK_FILE_URL_INVALID',
  'HOOK_FILE_NOT_FOUND',
  'HOOK_FILE_UNREADABLE',
  'HOOK_NOT_REGULAR_FILE',
  'HOOK_PATH_NOT_ALLOWED',
  'HOOK_CREDENTIAL_FILE_DENIED',
  'HOOK_FILE_TOO_LARGE',
  'HOOK_TOTAL_TOO_LARGE',
  'HOOK_TOOLKIT_BUDGET_EXCEEDED',
  'HOOK_FILE_CHANGED',
  'HOOK_CONFIG_INVALID',
  'HOOK_INPUT_TOO_LARGE',
  'HOOK_INPUT_TOO_DEEP',
  'HOOK_TOO_MANY_ATTACHMENTS',
]);
