/**
 * One file attachment in a tool's arguments. Toolkits extend it with their own fields; the hook
 * carries unknown fields across unchanged.
 *
 * On the wire the model names a local file (`file:///abs/path`); the client hook replaces it
 * with `data:<mime>;base64,<bytes>` before the call leaves the machine.
 */
export interface Attachment {
  /** `file:///absolute/path` from the model; `data:`, `http://` or `https://` once it arrives. */
  source: string;
  /** File name to show or store; the hook backfills it from the path when absent. */
  filename?: string;
  /** MIME type; the hook backfills it from the file name and first bytes when absent. */
  mime_type?: string;
}

/** JSON Schema (draft 2020-12 compatible) of one {@link Attachment}, for a tool's `inputSchema`. */
export interface AttachmentJsonSchema {
  /** An attachment is a JSON object. */
  readonly type: 'object';
  /** Tells the model how to give a local file (as a `file:///` URL the hook inlines). */
  readonly description: string;
  /** The attachment's known fields. */
  readonly properties: {
    /** Where the content comes from: a `file:///` absolute path, a `data:` URL or an `https:` URL. */
    readonly source: {
      /** The source is a string. */
      readonly type: 'string';
      /** The source must not be empty. */
      readonly minLength: 1;
      /** Tells the model which source forms are accepted. */
      readonly description: string;
    };
    /** Optional file name, filled in from the path when omitted. */
    readonly filename: {
      /** The file name is a string. */
      readonly type: 'string';
      /** Tells the model the name is optional. */
      readonly description: string;
    };
    /** Optional MIME type, detected when omitted. */
    readonly mime_type: {
      /** The MIME type is a string. */
      readonly type: 'string';
      /** Tells the model the type is optional. */
      readonly description: string;
    };
  };
  /** Only `source` is required. */
  readonly required: readonly ['source'];
  /** Extra fields are allowed, so toolkits can spread the schema and add their own. */
  readonly additionalProperties: true;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * JSON Schema for one attachment. Use it as `attachment`, or as the `items` of `attachments`:
 * those are the only two keys the hook rewrites, and only at the top level of a tool's input.
 * Spread it to add fields of your own (`{ ...ATTACHMENT_JSON_SCHEMA, properties: {...} }`).
 */
export const ATTACHMENT_JSON_SCHEMA: AttachmentJsonSchema = deepFreeze({
  type: 'object',
  description:
    'A file to attach. Give a local file as file:///absolute/path; it is inlined on your machine by the toolfence attachment hook.',
  properties: {
    source: {
      type: 'string',
      minLength: 1,
      description:
        'file:///absolute/path of a local file (percent-encode special characters), or a data: or https: URL.',
    },
    filename: { type: 'string', description: 'File name; filled in from the path when omitted.' },
    mime_type: { type: 'string', description: 'MIME type; detected when omitted.' },
  },
  required: ['source'],
  additionalProperties: true,
} as const);

/** What kind of source an attachment carries. */
export const AttachmentSourceScheme: {
  /** A `file:` URL: the hook did not inline it (not installed, or too old). */
  readonly FILE: 'file';
  /** An `http:` or `https:` URL, whether or not the toolkit can fetch it. */
  readonly URL: 'url';
  /** A `data:` URL carrying the content inline. */
  readonly DATA: 'data';
  /** Any other scheme, no scheme, or a non-string source. */
  readonly UNSUPPORTED: 'unsupported';
} = Object.freeze({ FILE: 'file', URL: 'url', DATA: 'data', UNSUPPORTED: 'unsupported' } as const);

/** One of the {@link AttachmentSourceScheme} values. */
export type AttachmentSourceScheme =
  (typeof AttachmentSourceScheme)[keyof typeof AttachmentSourceScheme];

/**
 * Classifies an attachment source by its URI scheme (case-insensitive, no leading whitespace
 * allowed), truthfully: `file:` is FILE (the hook did not run, or is too old), `http:`/`https:`
 * is URL even for a toolkit that cannot fetch URLs, `data:` is DATA, anything else UNSUPPORTED.
 * Accepting or rejecting each kind is the toolkit's decision.
 */
export function classifyAttachmentSource(source: unknown): AttachmentSourceScheme {
  if (typeof source !== 'string') return AttachmentSourceScheme.UNSUPPORTED;
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(source);
  const scheme = match?.[1]?.toLowerCase();
  if (scheme === 'file') return AttachmentSourceScheme.FILE;
  if (scheme === 'data') return AttachmentSourceScheme.DATA;
  if (scheme === 'http' || scheme === 'https') return AttachmentSourceScheme.URL;
  return AttachmentSourceScheme.UNSUPPORTED;
}
