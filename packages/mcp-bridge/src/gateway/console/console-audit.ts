import { open } from 'node:fs/promises';
import type { AuditRow } from './console-pages.js';

/** Default number of audit lines the console's table shows: 200, newest first. */
export const DEFAULT_CONSOLE_AUDIT_ROWS = 200;
/** Default bytes read from the end of the audit log for the table: 4 MiB. */
export const DEFAULT_CONSOLE_AUDIT_READ_BYTES: number = 4 * 1024 * 1024;

/** The audit table's filters: an exact tool name, a decision (empty: any). */
export interface AuditFilters {
  readonly tool: string;
  readonly decision: string;
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  return JSON.stringify(value) ?? '';
}

/** The principal of a line as a short text (`sub` and `iss` of an object), when it has one. */
function principalOf(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const { sub, iss } = value as { sub?: unknown; iss?: unknown };
    if (typeof sub === 'string') return typeof iss === 'string' ? `${sub} (${iss})` : sub;
  }
  return text(value);
}

/**
 * The last lines of the audit log at `path` that match `filters`, newest first, at most `rows`,
 * read from at most the last `readBytes` bytes of the file (older lines live in `<path>.1` and
 * beyond the window; `audit verify` checks them all). Lines that are not JSON are skipped here;
 * the chain's verification reports them.
 */
export async function readAuditRows(
  path: string,
  filters: AuditFilters,
  rows: number,
  readBytes: number,
): Promise<{ readonly rows: AuditRow[]; readonly matched: number }> {
  let content = '';
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, 'r');
    const { size } = await handle.stat();
    const start = Math.max(0, size - readBytes);
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    content = buffer.toString('utf8');
    // A window that starts inside a line drops that partial line.
    if (start > 0) content = content.slice(content.indexOf('\n') + 1);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
  } finally {
    await handle?.close();
  }
  const matched: AuditRow[] = [];
  for (const line of content.split('\n')) {
    if (line === '') continue;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof entry !== 'object' || entry === null) continue;
    const row: AuditRow = {
      time: text(entry.time),
      principal: principalOf(entry.principal),
      tool:
        entry.kind === undefined ? text(entry.tool) : `${text(entry.tool)} (${text(entry.kind)})`,
      decision: text(entry.decision),
      approvedBy: text(entry.approvedBy),
      outcome: text(entry.outcome),
    };
    if (filters.tool !== '' && text(entry.tool) !== filters.tool) continue;
    if (filters.decision !== '' && row.decision !== filters.decision) continue;
    matched.push(row);
  }
  return { rows: matched.slice(-rows).reverse(), matched: matched.length };
}
