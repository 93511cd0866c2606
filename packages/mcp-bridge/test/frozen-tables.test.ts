import * as bridge from '@toolfence/mcp-bridge';
import * as contract from '@toolfence/tool-contract';
import * as tools from '@toolfence/tools';
import { describe, expect, it } from 'vitest';

/** The first path inside `value` (itself included) that can be changed, or `undefined`. */
function mutablePath(value: unknown, path: string, seen = new Set<unknown>()): string | undefined {
  if (typeof value !== 'object' || value === null || seen.has(value)) return undefined;
  seen.add(value);
  if (!Object.isFrozen(value)) return path;
  if (value instanceof Set) {
    try {
      value.add('__probe__');
    } catch {
      return undefined;
    }
    value.delete('__probe__');
    return path;
  }
  for (const [key, inner] of Object.entries(value)) {
    const found = mutablePath(inner, `${path}.${key}`, seen);
    if (found !== undefined) return found;
  }
  return undefined;
}

// Every exported object of the three packages this one builds on and ships (the built
// packages, as a consumer imports them): a new table cannot be left mutable.
const tables = [
  ['@toolfence/tool-contract', contract],
  ['@toolfence/tools', tools],
  ['@toolfence/mcp-bridge', bridge],
].flatMap(([pkg, surface]) =>
  Object.entries(surface as object)
    .filter(([, value]) => typeof value === 'object' && value !== null)
    .map(([name, value]) => [`${pkg as string} ${name}`, value] as const),
);

describe('exported tables of tool-contract, tools and mcp-bridge', () => {
  it('finds the tables (the check below is not empty)', () => {
    expect(tables.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        '@toolfence/tool-contract RISK_LEVELS',
        '@toolfence/tool-contract CONTENT_TRUST_LEVELS',
        '@toolfence/tools TOOL_EFFECTS',
        '@toolfence/mcp-bridge REFUSED_HEADER_NAMES',
      ]),
    );
  });

  it.each(tables)('%s cannot be changed (frozen all the way down)', (name, value) => {
    expect(mutablePath(value, name)).toBeUndefined();
  });
});
