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
      packageRequire = createRequire(import.meta.resolve('@toolfence/tools/package.json'));
    } catch {
      packageRequire = createRequire(import.meta.url);
    }
  }
  return packageRequire;
}

/**
 * A CommonJS dependency loaded on first use instead of when this package is imported: ajv, yaml
 * and undici cost tens of milliseconds each to load, and most programs that import the package
 * (a gateway answering `initialize`, a CLI command) never reach the code that needs them. The
 * module is the one `import` would give (Node shares one CommonJS instance between both).
 */
export function lazyRequire<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireHere()(specifier) as T;
    return loaded;
  };
}
