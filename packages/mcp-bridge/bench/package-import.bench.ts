// The cost of importing @toolfence/mcp-bridge (its main entry: McpClient, bridgeTools, the
// gateway's classes) against importing the MCP client libraries people use instead, each in a
// fresh process (Node started, nothing loaded yet): the SDK v2 client (@modelcontextprotocol/client),
// the SDK 1.x Client and the AI SDK's MCP client. Rounds are interleaved; a figure is the median
// wall time of the import over the rounds, with its CPU beside it.
//
//   npx tsx bench/package-import.bench.ts
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { bench, formatMs, median, printTable, scaled } from './fixtures/harness.js';

const IMPORTER = fileURLToPath(new URL('./fixtures/import-time.mjs', import.meta.url));

const CONTENDERS = [
  ['@toolfence/mcp-bridge', '@toolfence/mcp-bridge'],
  ['SDK v2 client', '@modelcontextprotocol/client'],
  ['SDK 1.x Client', '@modelcontextprotocol/sdk/client/index.js'],
  ['AI SDK MCP client', '@ai-sdk/mcp'],
] as const;

async function importOnce(specifier: string): Promise<{ wallMs: number; cpuMs: number }> {
  const child = spawn(process.execPath, [IMPORTER, specifier], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`importing ${specifier} exited with ${code}`);
  return JSON.parse(output.trim()) as { wallMs: number; cpuMs: number };
}

const rounds = scaled(15, 2);
const wall = new Map<string, number[]>(CONTENDERS.map(([name]) => [name, []]));
const cpu = new Map<string, number[]>(CONTENDERS.map(([name]) => [name, []]));
// One warm-up import each (the file system cache), then interleaved rounds, rotating who goes first.
for (const [, specifier] of CONTENDERS) await importOnce(specifier);
for (let round = 0; round < rounds; round += 1) {
  for (let index = 0; index < CONTENDERS.length; index += 1) {
    const [name, specifier] = CONTENDERS[
      (round + index) % CONTENDERS.length
    ] as (typeof CONTENDERS)[number];
    const figure = await importOnce(specifier);
    wall.get(name)?.push(figure.wallMs);
    cpu.get(name)?.push(figure.cpuMs);
  }
}
const wallOf = (name: string) => median(wall.get(name) ?? []);
const cpuOf = (name: string) => median(cpu.get(name) ?? []);
printTable(
  `Importing a client library in a fresh process: ${rounds} interleaved rounds after one warm-up import each; median`,
  ['library', 'import wall ms', 'import CPU ms'],
  CONTENDERS.map(([name]) => [name, formatMs(wallOf(name)), formatMs(cpuOf(name))]),
);
const ours = wallOf('@toolfence/mcp-bridge');
const detail = `${CONTENDERS.map(([name]) => `${name} ${formatMs(wallOf(name))} ms (CPU ${formatMs(cpuOf(name))} ms)`).join(', ')}; median of ${rounds} interleaved rounds in fresh processes, after one warm-up import each`;
bench({
  id: 'mcp-bridge.import-vs-sdk-v2',
  label:
    'import @toolfence/mcp-bridge (McpClient, bridgeTools, the gateway classes) vs import the SDK v2 client (informational)',
  ratio: ours / wallOf('SDK v2 client'),
  target: null,
  detail,
});
bench({
  id: 'mcp-bridge.import-vs-sdk-v1',
  label: 'import @toolfence/mcp-bridge vs import the SDK 1.x Client (informational)',
  ratio: ours / wallOf('SDK 1.x Client'),
  target: null,
  detail,
});
