import { McpLimitError, McpProtocolError } from './errors.js';

/** Why one listed item was skipped. */
export interface McpListingProblem {
  /** Which listing (`tools`, `resources`, `resourceTemplates`, `prompts`). */
  readonly listing: string;
  /** 1-based page number. */
  readonly page: number;
  /** 0-based index in that page. */
  readonly index: number;
  /** The item's name when it is a short, safe identifier; otherwise absent. */
  readonly name?: string;
  /** A fixed, log-safe reason (never the server's text). */
  readonly reason: string;
}

/** What {@link collectPages} returns. */
export interface McpCollectedPages<T> {
  /** The parsed items of all pages, in server order, malformed ones left out. */
  readonly items: readonly T[];
  /** One entry per item that was malformed and skipped. */
  readonly problems: readonly McpListingProblem[];
  /** Number of pages fetched. */
  readonly pages: number;
}

/** Options of {@link collectPages}. */
export interface McpCollectPagesOptions<T> {
  /** Key of the item array in each page: `tools`, `resources`, `resourceTemplates`, `prompts`. */
  readonly itemsKey: string;
  /** Fetches one raw page; `cursor` is `undefined` for the first. */
  readonly fetchPage: (cursor: string | undefined) => Promise<unknown>;
  /**
   * Maps one raw item. Return `{ ok: false, reason }` (or throw) to skip it as malformed; the
   * reason must be a fixed, log-safe string.
   */
  readonly parseItem: (raw: unknown) =>
    | {
        /** The item is well formed. */
        readonly ok: true;
        /** The mapped item. */
        readonly value: T;
      }
    | {
        /** The item is malformed and is skipped. */
        readonly ok: false;
        /** Fixed, log-safe reason, reported in `problems`. */
        readonly reason: string;
      };
  /** Pages followed at most (`McpLimits.maxPages`). */
  readonly maxPages: number;
  /** Items over all pages at most (`McpLimits.maxItems`). */
  readonly maxItems: number;
}

const SAFE_NAME = /^[A-Za-z0-9_.:/-]{1,128}$/;

/**
 * Follows `nextCursor` page by page. Checks each **raw** page before mapping anything: it must
 * be an object whose `itemsKey` is an array, the running item count must stay within
 * `maxItems`, the page count within `maxPages`, and a cursor must never repeat (a server that
 * loops is refused). A malformed item is skipped and reported in `problems` with its page,
 * index and reason, so one bad tool does not hide the others.
 */
export async function collectPages<T>(
  options: McpCollectPagesOptions<T>,
): Promise<McpCollectedPages<T>> {
  const { itemsKey, maxItems, maxPages } = options;
  const items: T[] = [];
  const problems: McpListingProblem[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | undefined;
  let page = 0;
  let itemCount = 0;
  for (;;) {
    if (page >= maxPages) {
      throw new McpLimitError('MCP listing has more pages than allowed', {
        details: { listing: itemsKey, limit: 'maxPages', maxPages },
      });
    }
    page += 1;
    const raw = await options.fetchPage(cursor);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new McpProtocolError('MCP listing page is not an object', {
        details: { listing: itemsKey, page },
      });
    }
    const record = raw as Record<string, unknown>;
    const pageItems = record[itemsKey];
    if (!Array.isArray(pageItems)) {
      throw new McpProtocolError('MCP listing page has no item array', {
        details: { listing: itemsKey, page },
      });
    }
    itemCount += pageItems.length;
    if (itemCount > maxItems) {
      throw new McpLimitError('MCP listing has more items than allowed', {
        details: { listing: itemsKey, limit: 'maxItems', maxItems, page },
      });
    }
    const next = record.nextCursor;
    if (next !== undefined && next !== null && typeof next !== 'string') {
      throw new McpProtocolError('MCP listing cursor is not a string', {
        details: { listing: itemsKey, page },
      });
    }
    pageItems.forEach((item: unknown, index) => {
      let parsed: ReturnType<McpCollectPagesOptions<T>['parseItem']>;
      try {
        parsed = options.parseItem(item);
      } catch {
        parsed = { ok: false, reason: 'item could not be parsed' };
      }
      if (parsed.ok) {
        items.push(parsed.value);
      } else {
        const name = safeItemName(item);
        problems.push({
          listing: itemsKey,
          page,
          index,
          ...(name === undefined ? {} : { name }),
          reason: parsed.reason,
        });
      }
    });
    if (typeof next !== 'string' || next === '') break;
    if (seenCursors.has(next)) {
      throw new McpProtocolError('MCP server repeated a listing cursor', {
        details: { listing: itemsKey, page, reason: 'repeated_cursor' },
      });
    }
    seenCursors.add(next);
    cursor = next;
  }
  return { items, problems, pages: page };
}

function safeItemName(item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const name = (item as Record<string, unknown>).name;
  return typeof name === 'string' && SAFE_NAME.test(name) ? name : undefined;
}
