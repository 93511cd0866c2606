import { ContractReadError } from './contract-read-error.js';
import type { ToolListEntry } from './read-contract.js';

/** A `tools/list` snapshot: the array of tools, or the whole `{ tools }` result. */
export type CatalogSnapshot =
  | readonly ToolListEntry[]
  | {
      /** The tools of a whole `tools/list` result. */
      readonly tools: readonly ToolListEntry[];
    };

/** The tools of a snapshot, after checking its shape. */
export function catalogTools(catalog: CatalogSnapshot, what: string): readonly ToolListEntry[] {
  const tools = Array.isArray(catalog)
    ? catalog
    : typeof catalog === 'object' && catalog !== null
      ? (catalog as { tools?: unknown }).tools
      : undefined;
  if (!Array.isArray(tools)) {
    throw new ContractReadError(`${what} must be an array of tools or a { tools } object.`, {
      code: 'CONTRACT_INVALID_CATALOG',
    });
  }
  return tools as readonly ToolListEntry[];
}
