import { collectPages, type McpListingProblem } from '@toolfence/tools/core';
import { isRecord } from '../is-record.js';

/** One tool as the server listed it (untrusted; schemas are checked when bridged). */
export interface McpToolInfo {
  /** The tool's name on the server: non-empty, at most 256 characters. */
  readonly name: string;
  /** Display name the server gave, if any (untrusted text). */
  readonly title?: string;
  /** Description the server gave, if any (untrusted text, may carry injected instructions). */
  readonly description?: string;
  /** As sent: absent, `null`, or an object (the bridge decides what is acceptable). */
  readonly inputSchema?: unknown;
  /** JSON Schema of the structured result, as sent. */
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  /** MCP tool annotations (hints and any declared contract), as sent. */
  readonly annotations?: Readonly<Record<string, unknown>>;
  /** MCP execution hints (e.g. task support), as sent. */
  readonly execution?: Readonly<Record<string, unknown>>;
  /** The tool's `_meta` object, as sent. */
  readonly _meta?: Readonly<Record<string, unknown>>;
}

/** What a listing returns: the tools and the skipped ones' problems. */
export interface McpToolListing {
  /** The tools that passed the shape check, in listing order. */
  readonly tools: readonly McpToolInfo[];
  /** Why each skipped entry was left out. */
  readonly problems: readonly McpListingProblem[];
  /** How many `tools/list` pages were fetched. */
  readonly pages: number;
}

const MAX_NAME_LENGTH = 256;

type Parsed =
  | { readonly ok: true; readonly value: McpToolInfo }
  | { readonly ok: false; readonly reason: string };

/** Checks one listed tool's shape; never throws. */
export function parseToolInfo(raw: unknown): Parsed {
  if (!isRecord(raw)) return { ok: false, reason: 'tool is not an object' };
  // Each key read once, by name: a listing of 10,000 tools runs this 10,000 times, and a loop
  // over the key names with `in` and computed reads cost about three times as much.
  const { name, title, description, inputSchema, outputSchema, annotations, execution, _meta } =
    raw;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH) {
    return { ok: false, reason: 'tool name is not a non-empty string of at most 256 characters' };
  }
  if (title !== undefined && typeof title !== 'string') {
    return { ok: false, reason: 'tool title is not a string' };
  }
  if (description !== undefined && typeof description !== 'string') {
    return { ok: false, reason: 'tool description is not a string' };
  }
  if (inputSchema !== undefined && inputSchema !== null && !isRecord(inputSchema)) {
    return { ok: false, reason: 'tool inputSchema is not an object' };
  }
  if (outputSchema !== undefined && !isRecord(outputSchema)) {
    return { ok: false, reason: 'tool outputSchema is not an object' };
  }
  if (annotations !== undefined && !isRecord(annotations)) {
    return { ok: false, reason: 'tool annotations is not an object' };
  }
  if (execution !== undefined && !isRecord(execution)) {
    return { ok: false, reason: 'tool execution is not an object' };
  }
  if (_meta !== undefined && !isRecord(_meta)) {
    return { ok: false, reason: 'tool _meta is not an object' };
  }
  // Only the known keys, in this order, and none whose value is undefined.
  const info: Record<string, unknown> = { name };
  if (title !== undefined) info.title = title;
  if (description !== undefined) info.description = description;
  if (inputSchema !== undefined) info.inputSchema = inputSchema;
  if (outputSchema !== undefined) info.outputSchema = outputSchema;
  if (annotations !== undefined) info.annotations = annotations;
  if (execution !== undefined) info.execution = execution;
  if (_meta !== undefined) info._meta = _meta;
  return { ok: true, value: Object.freeze(info) as unknown as McpToolInfo };
}

/** Follows `tools/list` pages with the MCP adapter's `collectPages` (limits, repeated cursors). */
export async function listTools(options: {
  readonly maxPages: number;
  readonly maxItems: number;
  readonly fetchPage: (cursor: string | undefined) => Promise<unknown>;
  /** A further check of a well-shaped tool: a fixed reason skips it. */
  readonly checkTool?: (tool: McpToolInfo) => string | undefined;
}): Promise<McpToolListing> {
  const check = options.checkTool;
  const collected = await collectPages<McpToolInfo>({
    itemsKey: 'tools',
    fetchPage: options.fetchPage,
    parseItem:
      check === undefined
        ? parseToolInfo
        : (raw) => {
            const parsed = parseToolInfo(raw);
            if (!parsed.ok) return parsed;
            const reason = check(parsed.value);
            return reason === undefined ? parsed : { ok: false, reason };
          },
    maxPages: options.maxPages,
    maxItems: options.maxItems,
  });
  return Object.freeze({
    tools: Object.freeze([...collected.items]),
    problems: Object.freeze([...collected.problems]),
    pages: collected.pages,
  });
}
