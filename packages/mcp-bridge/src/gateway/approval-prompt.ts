import type { ApprovalRequest } from '@toolfence/tools';
import { escapeInvisible } from './pin-store.js';

/**
 * Default limit on the arguments an approval prompt shows, in characters of the arguments as
 * shown (pretty-printed JSON, escaped): 8,192. Arguments over it are never shown in part: the call
 * is refused without asking (audit outcome `prompt-too-long`).
 */
export const DEFAULT_APPROVAL_MAX_ARGUMENT_CHARS = 8_192;

/** Characters of the tool's description a prompt shows; the rest is said to be left out. */
const DESCRIPTION_CHARS = 500;

// C0 controls but the newline (ESC, CR, backspace, ...), DEL, C1 controls, the line and paragraph
// separators, and lone surrogates: each could move the cursor, overwrite or hide what is shown.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]|[\uD800-\uDFFF]/gu;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_OR_NEWLINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\uD800-\uDFFF]/gu;

/**
 * `text` safe to show a person in a prompt: control characters (C0 but the newline, DEL, C1,
 * U+2028/U+2029, lone surrogates) and invisible or bidirectional ones (zero-width, tag characters,
 * bidi overrides) are written as `\u{…}`. With `newlines: false` the newline is escaped too.
 */
export function escapeForPrompt(text: string, newlines = true): string {
  return escapeInvisible(text).replace(
    newlines ? CONTROL : CONTROL_OR_NEWLINE,
    (char) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`,
  );
}

/** An approval prompt, or why none can be shown. */
export type ApprovalPrompt =
  | { readonly message: string }
  /** The arguments as shown are `chars` characters, over the limit: the user is not asked. */
  | { readonly tooLong: number };

/**
 * The prompt of one approval: the tool, why, its description and exactly these arguments, whole,
 * every name and text escaped. Arguments longer than `maxArgumentChars` as shown are not cut:
 * no prompt is built (`tooLong`), since an approval must cover only what the user saw.
 */
export function approvalPrompt(
  request: ApprovalRequest,
  server: string | undefined,
  maxArgumentChars: number,
): ApprovalPrompt {
  const args = escapeForPrompt(JSON.stringify(request.args, null, 2) ?? 'null');
  if (args.length > maxArgumentChars) return { tooLong: args.length };
  const description = escapeForPrompt(request.spec.description);
  const shown =
    description.length > DESCRIPTION_CHARS
      ? `${description.slice(0, DESCRIPTION_CHARS)}… (${description.length - DESCRIPTION_CHARS} more characters of the description not shown)`
      : description;
  return {
    message: [
      `Allow this call to ${escapeForPrompt(request.toolName, false)} (server ${escapeForPrompt(server ?? 'unknown', false)})?`,
      `Why asked: ${escapeForPrompt(request.reason ?? 'the policy asks for this tool', false)}.`,
      `Tool description: ${shown}`,
      `Arguments (this approval covers exactly these, once; shown whole):\n${args}`,
    ].join('\n'),
  };
}
