// Bundles the toolfence-mcp command (dist/cli/main.js and what it imports) into dist/bin/, the
// package's `bin`: about 300 ES modules loaded one by one cost a start 50 to 65 ms of resolving,
// reading and linking (the gateway-start benchmark's bundled row), so the command ships as one
// entry and the chunks of what it loads later (`import()`: the SDK v2 server, jose, the OAuth
// flows, the console). The library entries (`exports`) stay unbundled.
//
// Kept outside the bundle, loaded from node_modules as before:
// - the peer dependencies (OpenTelemetry's API must be the host's own instance; the database
//   drivers are the host's);
// - the CommonJS dependencies loaded with `require` on first use (`lazyRequire`), which esbuild does
//   not see, and jsonc-parser, which is also imported: one instance of each. @toolfence/tools'
//   lazyRequire resolves from that package by its own name, so its copy in the bundle still loads
//   ajv and yaml from @toolfence/tools (this package does not depend on them).
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = join(root, 'dist', 'bin');
const packageJson = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));

const external = [
  ...Object.keys(packageJson.peerDependencies ?? {}),
  'jsonc-parser',
  'smol-toml',
  'undici',
];

await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });
const result = await build({
  entryPoints: { main: join(root, 'dist', 'cli', 'main.js') },
  outdir,
  absWorkingDir: root,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  // CommonJS modules in the bundle call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __toolfenceRequire } from 'node:module'; const require = __toolfenceRequire(import.meta.url);",
  },
  chunkNames: 'chunk-[hash]',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

// The licences of the packages bundled in, beside the bundle.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /^(.*node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(input);
  if (match === null) continue;
  const folder = join(root, match[1]);
  if (packages.has(folder)) continue;
  const manifest = JSON.parse(await readFile(join(folder, 'package.json'), 'utf8'));
  let text = '';
  for (const name of ['LICENSE', 'LICENSE.md', 'LICENSE.txt', 'license', 'LICENCE']) {
    text = await readFile(join(folder, name), 'utf8').catch(() => '');
    if (text !== '') break;
  }
  packages.set(folder, {
    name: manifest.name,
    version: manifest.version,
    license: manifest.license,
    text,
  });
}
const notices = [...packages.values()]
  .filter((entry) => !entry.name.startsWith('@toolfence/'))
  .sort((a, b) => a.name.localeCompare(b.name))
  .map(
    (entry) =>
      `${entry.name}@${entry.version} (${entry.license ?? 'see below'})\n\n${entry.text.trim() || `License: ${entry.license}`}\n`,
  )
  .join(`\n${'-'.repeat(72)}\n\n`);
await writeFile(
  join(outdir, 'THIRD-PARTY-LICENSES.txt'),
  `The toolfence-mcp command in this folder bundles these packages:\n\n${notices}`,
);
process.stdout.write(
  `bundle-cli: ${relative(root, outdir)} (${Object.keys(result.metafile.outputs).length} files, ${packages.size} packages bundled)\n`,
);
