// Tool listings over stdio, against the fixture server (pages of 100 tools):
// 1. McpClient.tools({ refresh: true }) of 10,000 tools against an SDK Client listTools cursor
//    loop and the SDK v2 Client's listTools() (which follows cursors itself; this fixture server
//    is legacy-only, so the v2 client runs in legacy mode), time in one process, interleaved, and
//    the peak memory of one listing (each side alone in a fresh child process, sampled RSS and
//    heap above the connected baseline).
// 2. 1,000 tools that each carry an outputSchema: McpClient.tools() and bridgeTools() against
//    the AI SDK's tools() (which follows cursors too) and, for context, the SDK Client's
//    listTools loop (which compiles an Ajv validator per outputSchema on every listing).
//
//   npx tsx bench/tools-listing.bench.ts
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bridgeTools, McpClient } from '@toolfence/mcp-bridge';
import { AjvSchemaValidator } from '@toolfence/tools';
import {
  bench,
  type Contender,
  figure,
  formatMs,
  interleave,
  median,
  type PeakMemory,
  peakMemoryOf,
  printTable,
  runChild,
  SERVER_SCRIPT,
  scaled,
  stdioCommand,
  stopAll,
} from './fixtures/harness.js';

const MANY = ['--tools', 'many', '--count', '10000', '--page', '100'];
const SCHEMAS = ['--tools', 'schemas', '--count', '1000', '--page', '100'];
const MEMORY_RUNS = scaled(3, 1);

async function sdkClient(serverArgs: readonly string[]): Promise<Client> {
  const client = new Client({ name: 'bench-sdk', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER_SCRIPT, 'stdio', ...serverArgs],
    }),
  );
  return client;
}

/** The SDK v2 Client; its listTools() walks every page (capped like ours at 100 pages). */
async function sdkV2Client(serverArgs: readonly string[]): Promise<ClientV2> {
  const client = new ClientV2({ name: 'bench-sdk-v2', version: '1.0.0' }, { listMaxPages: 100 });
  await client.connect(
    new StdioV2({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio', ...serverArgs] }),
  );
  return client;
}

/** A fresh v2 listing (never its response cache). */
async function sdkV2ListAll(client: ClientV2): Promise<unknown[]> {
  return (await client.listTools(undefined, { cacheMode: 'refresh' })).tools;
}

/** The SDK's documented way to list everything: follow nextCursor until it is absent. */
async function sdkListAll(client: Client): Promise<unknown[]> {
  const tools: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function expectCount(name: string, count: number, expected: number): void {
  if (count !== expected) throw new Error(`${name} listed ${count} tools, expected ${expected}`);
}

// ---- child mode: one side, one fresh process, peak memory of a listing ----

async function childMain(side: string): Promise<void> {
  let list: () => Promise<number>;
  let close: () => Promise<void>;
  if (side === 'ours') {
    const client = new McpClient({ command: stdioCommand(MANY), clientName: 'bench' });
    await client.connect();
    list = async () => (await client.tools({ refresh: true })).length;
    close = () => client.close();
  } else if (side === 'v2') {
    const client = await sdkV2Client(MANY);
    list = async () => (await sdkV2ListAll(client)).length;
    close = () => client.close();
  } else {
    const client = await sdkClient(MANY);
    list = async () => (await sdkListAll(client)).length;
    close = () => client.close();
  }
  const { value: count, peak } = await peakMemoryOf(list);
  expectCount(side, count, 10_000);
  await close();
  process.stdout.write(`${JSON.stringify(peak)}\n`);
}

// ---- main mode ----

const MiB = 1024 * 1024;

async function listingTime(): Promise<void> {
  const ours = new McpClient({ command: stdioCommand(MANY), clientName: 'bench' });
  const sdk = await sdkClient(MANY);
  const v2 = await sdkV2Client(MANY);
  const contenders: Contender[] = [
    {
      name: 'McpClient.tools()',
      run: async () => expectCount('ours', (await ours.tools({ refresh: true })).length, 10_000),
    },
    {
      name: 'SDK listTools loop',
      run: async () => expectCount('sdk', (await sdkListAll(sdk)).length, 10_000),
    },
    {
      name: 'SDK v2 listTools()',
      run: async () => expectCount('v2', (await sdkV2ListAll(v2)).length, 10_000),
    },
  ];
  const warmup = scaled(2, 1);
  const rounds = scaled(7, 1);
  const perRound = scaled(3, 1);
  const started = performance.now();
  const results = await interleave(contenders, { warmup, rounds, perRound }).finally(async () => {
    await ours.close();
    await sdk.close();
    await v2.close();
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const oursMs = figure(results.get('McpClient.tools()'));
  const sdkMs = figure(results.get('SDK listTools loop'));
  const v2Ms = figure(results.get('SDK v2 listTools()'));

  const memory: Record<string, { rss: number[]; heap: number[] }> = {
    ours: { rss: [], heap: [] },
    sdk: { rss: [], heap: [] },
    v2: { rss: [], heap: [] },
  };
  const sides = ['ours', 'sdk', 'v2'];
  for (let run = 0; run < MEMORY_RUNS; run++) {
    for (const side of [...sides.slice(run % 3), ...sides.slice(0, run % 3)]) {
      const measured = await runChild<PeakMemory>(['--child', side]);
      memory[side]?.rss.push(measured.rss);
      memory[side]?.heap.push(measured.heap);
    }
  }
  const oursRss = median(memory.ours?.rss ?? []);
  const sdkRss = median(memory.sdk?.rss ?? []);
  const oursHeap = median(memory.ours?.heap ?? []);
  const sdkHeap = median(memory.sdk?.heap ?? []);
  const v2Rss = median(memory.v2?.rss ?? []);
  const v2Heap = median(memory.v2?.heap ?? []);

  printTable(
    `tools() of 10,000 tools (100 pages of 100) over stdio: ${warmup} warm-up listings each, ${rounds} interleaved rounds x ${perRound} listings (${seconds} s); memory: median of ${MEMORY_RUNS} fresh child processes per side, peak above the connected baseline during one listing`,
    ['client', 'median ms/listing', 'peak RSS growth', 'peak heap growth'],
    [
      [
        'McpClient.tools({ refresh: true })',
        formatMs(oursMs),
        `${(oursRss / MiB).toFixed(1)} MiB`,
        `${(oursHeap / MiB).toFixed(1)} MiB`,
      ],
      [
        'SDK Client listTools loop',
        formatMs(sdkMs),
        `${(sdkRss / MiB).toFixed(1)} MiB`,
        `${(sdkHeap / MiB).toFixed(1)} MiB`,
      ],
      [
        'SDK v2 Client listTools()',
        formatMs(v2Ms),
        `${(v2Rss / MiB).toFixed(1)} MiB`,
        `${(v2Heap / MiB).toFixed(1)} MiB`,
      ],
    ],
  );
  bench({
    id: 'mcp-bridge.list-10k-time',
    label: 'tools() of 10,000 tools vs SDK Client listTools cursor loop (stdio)',
    ratio: oursMs / sdkMs,
    target: 1.25,
    detail: `McpClient ${formatMs(oursMs)} ms vs SDK ${formatMs(sdkMs)} ms per listing of 100 pages; ${warmup} warm-up listings each, ${rounds} interleaved rounds x ${perRound}, median of round medians`,
  });
  const heapRatio = oursHeap / sdkHeap;
  bench({
    id: 'mcp-bridge.list-10k-memory',
    label: 'tools() of 10,000 tools: peak heap growth vs SDK Client listTools loop',
    ratio: heapRatio,
    target: 1.0,
    detail: `peak heapUsed above the connected baseline during one listing, sampled every 1 ms, median of ${MEMORY_RUNS} fresh child processes per side: McpClient ${(oursHeap / MiB).toFixed(1)} MiB vs SDK ${(sdkHeap / MiB).toFixed(1)} MiB; peak RSS growth ${(oursRss / MiB).toFixed(1)} vs ${(sdkRss / MiB).toFixed(1)} MiB (ratio ${(oursRss / sdkRss).toFixed(2)})`,
  });
  bench({
    id: 'mcp-bridge.list-10k-time-vs-sdk-v2',
    label:
      'tools() of 10,000 tools vs the SDK v2 Client listTools() (stdio, legacy server; no higher peak heap either)',
    ratio: oursMs / v2Ms,
    target: 1.0,
    met: oursMs <= v2Ms && oursHeap <= v2Heap,
    detail: `McpClient ${formatMs(oursMs)} ms vs SDK v2 ${formatMs(v2Ms)} ms per listing of 100 pages (cacheMode 'refresh', listMaxPages 100); peak heap growth ${(oursHeap / MiB).toFixed(1)} vs ${(v2Heap / MiB).toFixed(1)} MiB, RSS ${(oursRss / MiB).toFixed(1)} vs ${(v2Rss / MiB).toFixed(1)} MiB (median of ${MEMORY_RUNS} fresh processes per side); ${warmup} warm-up listings each, ${rounds} interleaved rounds x ${perRound}, median of round medians`,
  });
}

async function outputSchemaListing(): Promise<void> {
  const ours = new McpClient({ command: stdioCommand(SCHEMAS), clientName: 'bench' });
  const sdk = await sdkClient(SCHEMAS);
  const ai = await createMCPClient({
    transport: new Experimental_StdioMCPTransport({
      command: process.execPath,
      args: [SERVER_SCRIPT, 'stdio', ...SCHEMAS],
    }),
    protocolVersionDiscovery: false,
  });
  const sharedValidator = new AjvSchemaValidator();
  const contenders: Contender[] = [
    {
      name: 'McpClient.tools()',
      run: async () => expectCount('ours', (await ours.tools({ refresh: true })).length, 1000),
    },
    {
      name: 'bridgeTools()',
      run: async () =>
        expectCount(
          'bridge',
          (await bridgeTools(ours, { prefix: 'bench', refresh: true })).length,
          1000,
        ),
    },
    {
      name: 'bridgeTools(shared validator)',
      run: async () =>
        expectCount(
          'bridge-shared',
          (await bridgeTools(ours, { prefix: 'bench', refresh: true, validator: sharedValidator }))
            .length,
          1000,
        ),
    },
    {
      name: 'AI SDK tools()',
      run: async () => expectCount('ai-sdk', Object.keys(await ai.tools()).length, 1000),
    },
    {
      name: 'SDK listTools loop',
      run: async () => expectCount('sdk', (await sdkListAll(sdk)).length, 1000),
    },
  ];
  const warmup = scaled(3, 1);
  const rounds = scaled(7, 1);
  const perRound = scaled(3, 1);
  const started = performance.now();
  const results = await interleave(contenders, { warmup, rounds, perRound }).finally(async () => {
    await ours.close();
    await sdk.close();
    await ai.close();
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const aiMs = figure(results.get('AI SDK tools()'));
  const sdkMs = figure(results.get('SDK listTools loop'));
  const oursMs = figure(results.get('McpClient.tools()'));
  const bridgeMs = figure(results.get('bridgeTools()'));
  const sharedMs = figure(results.get('bridgeTools(shared validator)'));
  printTable(
    `1,000 tools, each with an outputSchema (10 pages of 100) over stdio: ${warmup} warm-up listings each, ${rounds} interleaved rounds x ${perRound} listings (${seconds} s)`,
    ['client', 'median ms/listing', 'x AI SDK', 'x SDK Client'],
    [...results.values()].map((result) => {
      const value = figure(result);
      return [result.name, formatMs(value), (value / aiMs).toFixed(2), (value / sdkMs).toFixed(2)];
    }),
  );
  const how = `${warmup} warm-up listings each, ${rounds} interleaved rounds x ${perRound}, median of round medians`;
  bench({
    id: 'mcp-bridge.list-output-schema-vs-ai-sdk',
    label: 'tools() of 1,000 tools with outputSchema vs AI SDK tools() (stdio; target: below 1)',
    ratio: oursMs / aiMs,
    target: 1.0,
    met: oursMs < aiMs,
    detail: `McpClient.tools() ${formatMs(oursMs)} ms vs AI SDK ${formatMs(aiMs)} ms per listing; ${how}`,
  });
  bench({
    id: 'mcp-bridge.bridge-output-schema-vs-ai-sdk',
    label:
      'bridgeTools() of 1,000 tools with outputSchema vs AI SDK tools() (stdio; target: below 1)',
    ratio: bridgeMs / aiMs,
    target: 1.0,
    met: bridgeMs < aiMs,
    detail: `bridgeTools with its default validator (list + schema checks + contract reading + input schema prepare; output schemas compiled lazily) ${formatMs(bridgeMs)} ms vs AI SDK ${formatMs(aiMs)} ms per listing; with one validator shared across listings ${formatMs(sharedMs)} ms (${(sharedMs / aiMs).toFixed(2)}x); ${how}`,
  });
  bench({
    id: 'mcp-bridge.list-output-schema-vs-sdk',
    label: 'tools() of 1,000 tools with outputSchema vs SDK Client listTools loop (context)',
    ratio: oursMs / sdkMs,
    target: null,
    detail: `McpClient.tools() ${formatMs(oursMs)} ms vs SDK ${formatMs(sdkMs)} ms (the SDK compiles one Ajv validator per outputSchema on every listing); AI SDK ${formatMs(aiMs)} ms; ${how}`,
  });
}

const childIndex = process.argv.indexOf('--child');
if (childIndex !== -1) {
  await childMain(process.argv[childIndex + 1] as string);
} else {
  try {
    await listingTime();
    await outputSchemaListing();
  } finally {
    await stopAll();
  }
}
