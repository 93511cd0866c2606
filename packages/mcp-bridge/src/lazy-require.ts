import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/**
 * A dependency loaded synchronously on first use, once, instead of when the module that needs it
 * is imported: a CommonJS package (or an ES module without top-level `await`, which `require`
 * gives as the same instance `import` would on Node >= 20.19). Resolved from this package.
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireHere(specifier) as T;
    return loaded;
  };
}
