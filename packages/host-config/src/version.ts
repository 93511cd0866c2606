/** The version of `@toolfence/host-config`; kept equal to package.json by scripts/sync-versions.mjs. */
export const VERSION: string = '0.1.0';
