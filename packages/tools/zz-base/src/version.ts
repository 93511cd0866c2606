/** The version of `@toolfence/tools`; kept equal to package.json by scripts/sync-versions.mjs. */
export const VERSION: string = '0.1.0';
