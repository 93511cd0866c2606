import type {
  ContentAnnotations,
  ContentAudience,
  ContentBlock,
  JsonObject,
  JsonValue,
  ToolResult,
} from '../registry/tool.js';
import { McpProtocolError } from './errors.js';
import { DEFAULT_MCP_LIMITS, type McpLimits } from './mcp-limits.js';

/** The limits result mapping applies. */
export type McpResultLimits = Pick<McpLimits, 'maxContentBlocks' | 'maxResultChars'>;

/** Options of {@link mapCallToolResult}. */
export interface McpCallToolResultMappingOptions {
  /** Server name, recorded in the metadata. */
  readonly server: string;
  /** The tool's name on the server, recorded in the metadata. */
  readonly tool: string;
  /** Defaults to {@link DEFAULT_MCP_LIMITS}. */
  readonly limits?: McpResultLimits;
}

/** Maps a raw `tools/call` result; replaceable per connection (`McpServerConnection` `mapper`). */
export type McpResultMapper = (
  raw: unknown,
  options: McpCallToolResultMappingOptions & { readonly limits: McpResultLimits },
) => ToolResult;

/**
 * Keeps blocks and characters within the limits, counting what it drops. Characters counted:
 * text, base64 data, URIs, names and MIME types, and the JSON of structured content.
 */
class ContentBudget {
  readonly limits: McpResultLimits;
  chars = 0;
  kept = 0;
  omitted = 0;
  truncated = false;

  constructor(limits: McpResultLimits) {
    this.limits = limits;
  }

  get remaining(): number {
    return this.limits.maxResultChars - this.chars;
  }

  /** Charges `size` characters if they fit; otherwise records an omission. */
  take(size: number): boolean {
    if (size > this.remaining) {
      this.omitted += 1;
      this.truncated = true;
      return false;
    }
    this.chars += size;
    return true;
  }

  /** Cuts a text to what remains; `undefined` when nothing remains. */
  text(value: string): string | undefined {
    if (value.length <= this.remaining) {
      this.chars += value.length;
      return value;
    }
    this.truncated = true;
    if (this.remaining <= 0) {
      this.omitted += 1;
      return undefined;
    }
    const cut = value.slice(0, this.remaining);
    this.chars += cut.length;
    return cut;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

function stringsLength(...values: (string | undefined)[]): number {
  let total = 0;
  for (const value of values) total += value?.length ?? 0;
  return total;
}

/** Longest `lastModified` kept (an ISO 8601 timestamp is far shorter). */
const MAX_LAST_MODIFIED_LENGTH = 64;
const AUDIENCES: ReadonlySet<string> = new Set<ContentAudience>(['user', 'assistant']);

/**
 * The block's MCP annotations (`audience`, `priority`, `lastModified`), each kept only when well
 * formed; `undefined` when none is. An `audience` keeps the roles MCP defines (an audience of only
 * unknown roles becomes `[]`: meant for nobody the host knows, so never for the model).
 */
function mapAnnotations(raw: unknown): ContentAnnotations | undefined {
  if (!isRecord(raw)) return undefined;
  const out: { -readonly [K in keyof ContentAnnotations]: ContentAnnotations[K] } = {};
  if (Array.isArray(raw.audience)) {
    const audience = [
      ...new Set(
        raw.audience.filter(
          (role): role is ContentAudience => typeof role === 'string' && AUDIENCES.has(role),
        ),
      ),
    ];
    out.audience = Object.freeze(audience);
  }
  if (
    typeof raw.priority === 'number' &&
    Number.isFinite(raw.priority) &&
    raw.priority >= 0 &&
    raw.priority <= 1
  ) {
    out.priority = raw.priority;
  }
  if (typeof raw.lastModified === 'string' && raw.lastModified.length <= MAX_LAST_MODIFIED_LENGTH) {
    out.lastModified = raw.lastModified;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** Maps one raw MCP content block, or returns `undefined` (counted as omitted). */
function mapBlock(raw: unknown, budget: ContentBudget): ContentBlock | undefined {
  if (!isRecord(raw)) {
    budget.omitted += 1;
    return undefined;
  }
  const block = mapBlockBody(raw, budget);
  if (block === undefined) return undefined;
  let annotations = mapAnnotations(raw.annotations);
  if (annotations?.lastModified !== undefined && !budget.take(annotations.lastModified.length)) {
    // Over the character budget: the timestamp goes (not counted as an omitted block); the
    // audience and priority, a few fixed characters, always stay (an audience decides who sees it).
    budget.omitted -= 1;
    const { lastModified: _dropped, ...rest } = annotations;
    annotations = Object.keys(rest).length === 0 ? undefined : rest;
  }
  if (annotations === undefined || block.type === 'json') return block;
  return { ...block, annotations };
}

function mapBlockBody(
  raw: Record<string, unknown>,
  budget: ContentBudget,
): ContentBlock | undefined {
  switch (raw.type) {
    case 'text': {
      if (typeof raw.text !== 'string') break;
      const text = budget.text(raw.text);
      return text === undefined ? undefined : { type: 'text', text };
    }
    case 'image':
    case 'audio': {
      const { data, mimeType } = raw;
      if (typeof data !== 'string' || typeof mimeType !== 'string') break;
      if (!budget.take(stringsLength(data, mimeType))) return undefined;
      return { type: raw.type, data, mimeType };
    }
    case 'resource_link': {
      if (typeof raw.uri !== 'string') break;
      const name = optionalString(raw, 'name');
      const title = optionalString(raw, 'title');
      const description = optionalString(raw, 'description');
      const mimeType = optionalString(raw, 'mimeType');
      if (!budget.take(stringsLength(raw.uri, name, title, description, mimeType))) {
        return undefined;
      }
      return {
        type: 'resource_link',
        uri: raw.uri,
        ...(name === undefined ? {} : { name }),
        ...(title === undefined ? {} : { title }),
        ...(description === undefined ? {} : { description }),
        ...(mimeType === undefined ? {} : { mimeType }),
      };
    }
    case 'resource': {
      const resource = mapResourceContents(raw.resource, budget);
      return resource === undefined ? undefined : { type: 'resource', resource };
    }
    default:
      break;
  }
  budget.omitted += 1;
  return undefined;
}

type EmbeddedResource = Extract<ContentBlock, { type: 'resource' }>['resource'];

function mapResourceContents(raw: unknown, budget: ContentBudget): EmbeddedResource | undefined {
  if (!isRecord(raw) || typeof raw.uri !== 'string') {
    budget.omitted += 1;
    return undefined;
  }
  const mimeType = optionalString(raw, 'mimeType');
  const text = optionalString(raw, 'text');
  const blob = optionalString(raw, 'blob');
  if ((text === undefined) === (blob === undefined)) {
    budget.omitted += 1;
    return undefined;
  }
  if (!budget.take(stringsLength(raw.uri, mimeType, text, blob))) return undefined;
  return {
    uri: raw.uri,
    ...(mimeType === undefined ? {} : { mimeType }),
    ...(text === undefined ? {} : { text }),
    ...(blob === undefined ? {} : { blob }),
  };
}

function mapBlocks(
  raw: unknown,
  budget: ContentBudget,
  what: string,
): { blocks: ContentBlock[]; sourceCount: number } {
  if (raw === undefined) return { blocks: [], sourceCount: 0 };
  if (!Array.isArray(raw)) {
    throw new McpProtocolError(`MCP ${what} content is not an array`);
  }
  const blocks: ContentBlock[] = [];
  const keep = Math.min(raw.length, budget.limits.maxContentBlocks);
  if (raw.length > keep) {
    budget.truncated = true;
    budget.omitted += raw.length - keep;
  }
  for (let index = 0; index < keep; index += 1) {
    const block = mapBlock(raw[index], budget);
    if (block !== undefined) blocks.push(block);
  }
  budget.kept = blocks.length;
  return { blocks, sourceCount: raw.length };
}

function copyJsonObject(value: unknown): JsonObject {
  try {
    const copy: unknown = JSON.parse(JSON.stringify(value));
    if (isRecord(copy)) return copy as JsonObject;
  } catch {
    // fall through
  }
  throw new McpProtocolError('MCP structuredContent is not a JSON object');
}

/**
 * Maps a raw MCP `CallToolResult` to a {@link ToolResult}.
 *
 * - Blocks: `text`, `image`, `audio`, `resource` (embedded text or blob) and `resource_link`
 *   (kept as a link; never fetched). Unknown or malformed blocks are omitted and counted.
 * - Each block keeps its well-formed MCP `annotations` (`audience`, `priority`,
 *   `lastModified`): a block whose `audience` leaves out `assistant` is for the user only.
 * - `structuredContent` is kept alongside `content` (it counts first against the character
 *   budget; when it alone does not fit it is omitted and `structuredContentOmitted` is set).
 * - At most `maxContentBlocks` blocks are looked at (checked on the raw array before mapping);
 *   text is cut and other blocks are omitted once `maxResultChars` is reached.
 * - `isError` is preserved. `metadata` names the server, tool, block counts and truncation.
 *
 * Throws {@link McpProtocolError} when the result is not an object or `content` is not an array.
 */
export function mapCallToolResult(
  raw: unknown,
  options: McpCallToolResultMappingOptions,
): ToolResult {
  const limits = options.limits ?? DEFAULT_MCP_LIMITS;
  if (!isRecord(raw)) {
    throw new McpProtocolError('MCP tool result is not an object', {
      details: { server: options.server },
    });
  }
  const budget = new ContentBudget(limits);
  let structuredContent: JsonObject | undefined;
  let structuredContentOmitted = false;
  if (raw.structuredContent !== undefined && raw.structuredContent !== null) {
    const copy = copyJsonObject(raw.structuredContent);
    if (budget.take(JSON.stringify(copy).length)) {
      structuredContent = copy;
    } else {
      budget.omitted -= 1;
      structuredContentOmitted = true;
    }
  }
  const { blocks, sourceCount } = mapBlocks(raw.content, budget, 'tool result');
  // Built by assignment in the order of the keys (no spread per optional field, once per call).
  const metadata: { [key: string]: JsonValue } = {
    server: options.server,
    tool: options.tool,
    blockCount: blocks.length,
    sourceBlockCount: sourceCount,
    omittedBlocks: budget.omitted,
    resultChars: budget.chars,
    truncated: budget.truncated,
  };
  if (structuredContentOmitted) metadata.structuredContentOmitted = true;
  const result: { -readonly [K in keyof ToolResult]: ToolResult[K] } = { content: blocks };
  if (structuredContent !== undefined) result.structuredContent = structuredContent;
  if (raw.isError === true) result.isError = true;
  result.metadata = metadata;
  return result;
}

/** A resource read, mapped and bounded. */
export interface McpResourceReadResult {
  /** Each entry is an embedded `resource` block (text or base64 blob). */
  readonly contents: readonly Extract<ContentBlock, { type: 'resource' }>[];
  /** Server, URI, counts and truncation. */
  readonly metadata: JsonObject;
}

/** Maps a raw `resources/read` result with the same block and character bounds. */
export function mapReadResourceResult(
  raw: unknown,
  options: { readonly server: string; readonly uri: string; readonly limits?: McpResultLimits },
): McpResourceReadResult {
  const limits = options.limits ?? DEFAULT_MCP_LIMITS;
  if (!isRecord(raw) || !Array.isArray(raw.contents)) {
    throw new McpProtocolError('MCP resource result has no contents array', {
      details: { server: options.server },
    });
  }
  const budget = new ContentBudget(limits);
  const wrapped = raw.contents.map((resource: unknown) => ({ type: 'resource', resource }));
  const { blocks, sourceCount } = mapBlocks(wrapped, budget, 'resource');
  return {
    contents: blocks as Extract<ContentBlock, { type: 'resource' }>[],
    metadata: {
      server: options.server,
      uri: options.uri,
      blockCount: blocks.length,
      sourceBlockCount: sourceCount,
      omittedBlocks: budget.omitted,
      resultChars: budget.chars,
      truncated: budget.truncated,
    },
  };
}

/** One prompt message: data for the host to inspect, never an instruction. */
export interface McpPromptMessage {
  /** Who the message is attributed to in the prompt's conversation. */
  readonly role: 'user' | 'assistant';
  /** The message's mapped, bounded content block. */
  readonly content: ContentBlock;
}

/** A prompt fetched from a server, mapped and bounded, marked untrusted. */
export interface McpPromptResult {
  /** The server's description of the prompt result (untrusted text), if any. */
  readonly description?: string;
  /** The prompt's messages in order; data for the host, never instructions to follow. */
  readonly messages: readonly McpPromptMessage[];
  /** Server, prompt, counts, truncation and `trust: 'untrusted'`. */
  readonly metadata: JsonObject;
}

/** Maps a raw `prompts/get` result with the same bounds; the result is marked untrusted. */
export function mapGetPromptResult(
  raw: unknown,
  options: { readonly server: string; readonly prompt: string; readonly limits?: McpResultLimits },
): McpPromptResult {
  const limits = options.limits ?? DEFAULT_MCP_LIMITS;
  if (!isRecord(raw) || !Array.isArray(raw.messages)) {
    throw new McpProtocolError('MCP prompt result has no messages array', {
      details: { server: options.server },
    });
  }
  const budget = new ContentBudget(limits);
  const description =
    typeof raw.description === 'string' ? budget.text(raw.description) : undefined;
  const messages: McpPromptMessage[] = [];
  const keep = Math.min(raw.messages.length, limits.maxContentBlocks);
  if (raw.messages.length > keep) {
    budget.truncated = true;
    budget.omitted += raw.messages.length - keep;
  }
  for (let index = 0; index < keep; index += 1) {
    const message: unknown = raw.messages[index];
    if (!isRecord(message) || (message.role !== 'user' && message.role !== 'assistant')) {
      budget.omitted += 1;
      continue;
    }
    const content = mapBlock(message.content, budget);
    if (content !== undefined) messages.push({ role: message.role, content });
  }
  return {
    ...(description === undefined ? {} : { description }),
    messages,
    metadata: {
      server: options.server,
      prompt: options.prompt,
      trust: 'untrusted',
      blockCount: messages.length,
      sourceBlockCount: raw.messages.length,
      omittedBlocks: budget.omitted,
      resultChars: budget.chars,
      truncated: budget.truncated,
    },
  };
}
