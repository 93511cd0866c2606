// Names the fields of an object that a closed field set does not know, each with the nearest known
// field when one is close (a typo such as `contenTrust`, `content_trust` or `Risk`). Shared by
// defineContract and defineOverride so both refuse a typo the same way.

/** How many unknown fields a message names; the rest are counted. */
const MAX_NAMED_FIELDS = 5;

/** Longest part of an unknown field's name a message quotes. */
const MAX_QUOTED_LENGTH = 40;

/** Largest edit distance (insertions, deletions, substitutions, swaps of neighbours) suggested. */
const MAX_SUGGESTION_DISTANCE = 2;

/** A name folded for comparison: case and `_`/`-` separators do not count. */
function fold(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
}

/**
 * Optimal-string-alignment distance between `a` and `b`, or `limit + 1` as soon as it must exceed
 * `limit` (so a long name costs nothing).
 */
function boundedDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  // rows[i][j]: distance between the first i characters of a and the first j of b.
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const row: number[] = [i];
    let rowMinimum = i;
    for (let j = 1; j <= b.length; j += 1) {
      const above = rows[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row.push(best);
      rowMinimum = Math.min(rowMinimum, best);
    }
    if (rowMinimum > limit) return limit + 1;
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}

/** The known field nearest to `name` (ties go to the first in `known`), if one is close enough. */
export function nearestField(name: string, known: Iterable<string>): string | undefined {
  const folded = fold(name);
  let nearest: string | undefined;
  let nearestDistance = MAX_SUGGESTION_DISTANCE + 1;
  for (const candidate of known) {
    const distance = boundedDistance(folded, fold(candidate), MAX_SUGGESTION_DISTANCE);
    if (distance < nearestDistance) {
      nearest = candidate;
      nearestDistance = distance;
    }
  }
  return nearest;
}

/** What {@link findUnknownFields} reports about an object with unknown fields. */
export interface UnknownFields {
  /** The unknown fields, in the object's key order (names cut to 40 characters). */
  readonly fields: readonly [string, ...string[]];
  /** `unknown field "contenTrust" (did you mean "contentTrust"?)`, every field named up to 5. */
  readonly description: string;
}

/** The object's own keys that `known` lacks, described for a message; `undefined` when none. */
export function findUnknownFields(
  value: object,
  known: ReadonlySet<string>,
): UnknownFields | undefined {
  const unknown = Object.keys(value).filter((key) => !known.has(key));
  const [first, ...rest] = unknown.map((key) => key.slice(0, MAX_QUOTED_LENGTH));
  if (first === undefined) return undefined;
  const named = unknown.slice(0, MAX_NAMED_FIELDS).map((key) => {
    const near = nearestField(key, known);
    const quoted = JSON.stringify(key.slice(0, MAX_QUOTED_LENGTH));
    return near === undefined ? quoted : `${quoted} (did you mean ${JSON.stringify(near)}?)`;
  });
  const more = unknown.length - named.length;
  const noun = unknown.length === 1 ? 'unknown field' : 'unknown fields';
  return {
    fields: [first, ...rest],
    description: `${noun} ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`,
  };
}
