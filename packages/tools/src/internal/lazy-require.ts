import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded on first use instead of when this package is imported: ajv, yaml
 * and undici cost tens of milliseconds each to load, and most programs that import the package
 * (a gateway answering `initialize`, a CLI command) never reach the code that needs them. The
 * module is the one `import` would give (Node shares one CommonJS instance between both).
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireHere(specifier) as T;
    return loaded;
  };
}
