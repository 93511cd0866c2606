import { createRequire } from 'node:module';

let packageRequire: NodeJS.Require | undefined;

/**
 * The `require` of this package's install, made on the first load: found by the package's own
 * name (its self-reference, through the exports' `./package.json`), so code bundled from this
 * package (the `toolfence-mcp` command, a host's own bundle) still loads its dependencies from
 * here. Where the name does not resolve, or the loader gives modules no `import.meta.resolve`
 * (tsx compiling a required ES module as CommonJS), from this file, as unbundled code always can.
 */
function requireHere(): NodeJS.Require {
  if (packageRequire === undefined) {
    try {
      packageRequire = createRequire(import.meta.resolve('@toolfence/mcp-bridge/package.json'));
    } catch {
      packageRequire = createRequire(import.meta.url);
    }
  }
  return packageRequire;
}

/**
 * A dependency loaded synchronously on first use, once, instead of when the module that needs it
 * is imported: a CommonJS package (or an ES module without top-level `await`, which `require`
 * gives as the same instance `import` would on Node >= 20.19). Resolved from this package.
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireHere()(specifier) as T;
    return loaded;
  };
}
