/** The version of `@toolfence/tool-contract`; kept equal to package.json by scripts/sync-versions.mjs. */
export const VERSION: string = '0.1.0';
