// Module resolve hook (registered by ./node20-fs-glob.mjs): when a module of a conformance suite
// imports 'fs' or 'node:fs', it gets Node's fs plus a `globSync` export. That export is Node's own
// where it exists and otherwise throws when called (only the suite's `tier-check` calls it).

/** Node's fs with a `globSync` export added, as a module of its own. */
const FS_WITH_GLOB_SYNC = `data:text/javascript,${encodeURIComponent(`
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync(pattern, options) {
  if (typeof fs.globSync === 'function') return fs.globSync(pattern, options);
  throw new Error('fs.globSync needs Node 22 or newer (the conformance suite uses it only in tier-check)');
}
`)}`;

/** Installed suites live in a folder of this name (also through the `conformance-alpha` alias). */
const SUITE_FOLDER = '/@modelcontextprotocol/conformance/';

export async function resolve(specifier, context, nextResolve) {
  if (
    (specifier === 'fs' || specifier === 'node:fs') &&
    context.parentURL?.includes(SUITE_FOLDER)
  ) {
    return { url: FS_WITH_GLOB_SYNC, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
