import type { ApprovalRequest, FlowRaise, FlowSource } from '@toolfence/tools';
import { escapeInvisible } from '../printable-text.js';

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
 * U+2028/U+2029, lone surrogates) and invisible ones (every default-ignorable and format
 * character: zero-width, joiners, variation selectors, tags, bidi controls; and the blank glyphs,
 * as `hasInvisibleUnicode` finds them) are written as `\u{…}`. With `newlines: false` the newline
 * is escaped too: every text from a server is shown that way.
 */
export function escapeForPrompt(text: string, newlines = true): string {
  return escapeInvisible(text).replace(
    newlines ? CONTROL : CONTROL_OR_NEWLINE,
    (char) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`,
  );
}

/**
 * What an approval prompt is built from: the name the policy judged, its arguments, the reason,
 * the description, and the flow raise of a call (an `ApprovalRequest` is one).
 */
export type ApprovalPromptRequest = Pick<
  ApprovalRequest,
  'toolName' | 'args' | 'reason' | 'flow'
> & {
  readonly spec: { readonly description: string };
};

/** What is approved: a tool call, a `prompts/get` or a `resources/read`. */
export type ApprovalSubject = 'call' | 'prompt' | 'resource';

const FIRST_LINE: Readonly<Record<ApprovalSubject, string>> = {
  call: 'Allow this call to',
  prompt: 'Allow this prompt:',
  resource: 'Allow this resource read:',
};

/** An approval prompt, or why none can be shown. */
export type ApprovalPrompt =
  | { readonly message: string }
  /** The arguments as shown are `chars` characters, over the limit: the user is not asked. */
  | { readonly tooLong: number };

/** The line that ends the arguments block of a prompt (no server text can begin a line). */
const ARGUMENTS_END = '(end of the arguments)';

/**
 * The prompt of one approval: the tool, why, exactly these arguments, whole, then the
 * description, every name and text escaped. Only the gateway begins a line: every text from a
 * server (the tool's name, its server's name, its description) and the policy's reason is shown
 * on a line the gateway labels, with its newlines escaped, so none can imitate the arguments
 * block; the arguments (pretty-printed JSON: each line an indented member or a bracket) come
 * before the description, and end with `ARGUMENTS_END`. For a call the flow guard raised (`request.flow`), "why" is the
 * flow: the sources that exposed the conversation, the private data it holds and the sink.
 * Arguments longer than `maxArgumentChars` as shown are not cut: no prompt is built (`tooLong`),
 * since an approval must cover only what the user saw. `subject`: a tool call (the default), or
 * a read the gateway passes through (`prompt`, `resource`), named as the policy judged it.
 */
export function approvalPrompt(
  request: ApprovalPromptRequest,
  server: string | undefined,
  maxArgumentChars: number,
  subject: ApprovalSubject = 'call',
): ApprovalPrompt {
  const args = escapeForPrompt(JSON.stringify(request.args, null, 2) ?? 'null');
  if (args.length > maxArgumentChars) return { tooLong: args.length };
  const description = escapeForPrompt(request.spec.description, false);
  const shown =
    description.length > DESCRIPTION_CHARS
      ? `${description.slice(0, DESCRIPTION_CHARS)}… (${description.length - DESCRIPTION_CHARS} more characters of the description not shown)`
      : description;
  return {
    message: [
      `${FIRST_LINE[subject]} ${escapeForPrompt(request.toolName, false)} (server ${escapeForPrompt(server ?? 'unknown', false)})?`,
      request.flow === undefined
        ? `Why asked: ${escapeForPrompt(request.reason ?? (subject === 'call' ? 'the policy asks for this tool' : 'the policy asks for this read'), false)}.`
        : `Why asked: ${flowChain(request.flow)}. Text from an untrusted source may be steering this call: approve it only if you meant it. Approving covers this one call only; the conversation stays marked.`,
      `Arguments (this approval covers exactly these, once; shown whole):\n${args}`,
      ARGUMENTS_END,
      `${subject === 'call' ? 'Tool description' : 'Description'} (the server's text, on one line): ${shown}`,
    ].join('\n'),
  };
}

/** Tool names a chain lists per label before `and N more`. */
const NAMES_SHOWN = 4;

/** Longest tool name shown, in characters (the rest is cut with `…`). */
const NAME_CHARS = 120;

/** What calling a sink does, by its risk. */
const SINK_DOES: Readonly<Record<string, string>> = {
  'external-publication': 'would publish or send data outside',
  'paid-operation': 'would spend money',
  destructive: 'would destroy data',
};

function shown(name: string): string {
  const escaped = escapeForPrompt(name, false);
  return `\`${escaped.length > NAME_CHARS ? `${escaped.slice(0, NAME_CHARS)}…` : escaped}\``;
}

function names(sources: readonly FlowSource[]): string {
  const all = [
    ...new Set(
      sources.map((source) =>
        source.basis === 'dropped'
          ? 'an earlier part of it (its labels were dropped at the session limit, or are not held by this process)'
          : shown(source.tool),
      ),
    ),
  ];
  const listed = all.slice(0, NAMES_SHOWN);
  const more = all.length - listed.length;
  const tail = more > 0 ? [`${more} more`] : [];
  const parts = [...listed, ...tail];
  return parts.length === 1
    ? (parts[0] as string)
    : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1) as string}`;
}

/**
 * The flow a raise is about, in words a person and a model can act on: "this conversation read
 * untrusted text from `tracker__get_issue` and private data from `repo__read_file`;
 * `publisher__publish` would publish or send data outside". Names are escaped and bounded.
 */
export function flowChain(flow: FlowRaise): string {
  const read = `this conversation read untrusted text from ${names(flow.labels.exposedBy)}`;
  const held =
    flow.labels.privateFrom.length > 0
      ? ` and private data from ${names(flow.labels.privateFrom)}`
      : '';
  const does =
    flow.sink.basis === 'configured'
      ? "is marked as a sink in the gateway's policy file"
      : Object.hasOwn(SINK_DOES, flow.sink.risk)
        ? (SINK_DOES[flow.sink.risk] as string)
        : 'is a sink';
  return `${read}${held}; ${shown(flow.sink.tool)} ${does}`;
}
