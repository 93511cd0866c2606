// MCP 2026-07-28 (modern mode): McpClient against the SDK v2 Client (@modelcontextprotocol/client
// 2.x, versionNegotiation 'auto') on the same SDK v2 server, over stdio and Streamable HTTP:
// one `tools/call` round trip, the connect (processes spawned, round trips), and listing
// 10,000 tools (time interleaved in this process; peak memory of one listing with each side
// alone in fresh child processes, as in tools-listing.bench.ts).
//
//   npx tsx bench/modern-call.bench.ts [call] [connect] [listing]     (default: all three)
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { McpClient } from '@toolfence/mcp-bridge';
import {
  bench,
  type Contender,
  cpuPerOperation,
  figure,
  forcedGc,
  formatMs,
  formatSpread,
  interleave,
  median,
  type PeakMemory,
  pairedRatio,
  peakMemoryOf,
  printTable,
  runChild,
  scaled,
  stopAll,
  threadCpuPerOperation,
} from './fixtures/harness.js';

const SERVER = fileURLToPath(new URL('./fixtures/bench-server-v2.mjs', import.meta.url));
const ARGS = { text: 'hello from the benchmark' };
const allowLoopback = (_target: unknown, address: { readonly range: string }) =>
  address.range === 'loopback';
const children = new Set<ChildProcess>();

async function startHttp(extra: readonly string[] = []): Promise<string> {
  const child = spawn(process.execPath, [SERVER, 'http', ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  const port = await new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const match = /LISTENING (\d+)/.exec(buffer);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`v2 bench server exited with ${code}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

function ours(
  url: string | undefined,
  extra: readonly string[] = [],
  limits: { maxRecordTokens?: number; maxRecordBytes?: number; maxTools?: number } = {},
): McpClient {
  return url === undefined
    ? new McpClient({
        command: [process.execPath, SERVER, 'stdio', ...extra],
        clientName: 'bench',
        ...limits,
      })
    : new McpClient({ url, clientName: 'bench', allowNonPublic: allowLoopback });
}

async function v2(url: string | undefined, extra: readonly string[] = []): Promise<Client> {
  const client = new Client(
    { name: 'bench-v2', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(
    url === undefined
      ? new StdioClientTransport({ command: process.execPath, args: [SERVER, 'stdio', ...extra] })
      : new StreamableHTTPClientTransport(new URL(url)),
  );
  return client;
}

type CallTransport = 'stdio' | 'http';
const CALL_RUNS = scaled(5, 1);
const CALL_SETTINGS: Record<CallTransport, { warmup: number; rounds: number; perRound: number }> = {
  stdio: { warmup: scaled(300, 20), rounds: scaled(20, 2), perRound: scaled(100, 10) },
  http: { warmup: scaled(200, 20), rounds: scaled(12, 2), perRound: scaled(50, 10) },
};

const load = (): string => `load average ${(loadavg()[0] ?? 0).toFixed(1)}`;

interface CallRun {
  readonly ours: number;
  readonly sdk: number;
  readonly paired: number;
  /** This process's CPU time per timed call (ms), each client. */
  readonly cpuOurs: number;
  readonly cpuSdk: number;
  /** The main thread's CPU time per timed call (ms), each client (NaN off Linux). */
  readonly threadOurs: number;
  readonly threadSdk: number;
  /**
   * Over stdio, an A/A control: a second SDK v2 Client (its own server) against the first, in
   * the same rounds; how far two identical clients' wall times drift apart in one run.
   */
  readonly control?: number;
}

/** Child mode: one run of the modern call round trip, in this fresh process. */
async function callRun(transport: CallTransport): Promise<CallRun> {
  const url = transport === 'http' ? await startHttp() : undefined;
  const mine = ours(url);
  await mine.connect();
  const sdk = await v2(url);
  const control = transport === 'stdio' ? await v2(url) : undefined;
  try {
    if (
      mine.protocolVersion !== '2026-07-28' ||
      sdk.getNegotiatedProtocolVersion?.() !== '2026-07-28'
    ) {
      throw new Error('both clients must negotiate 2026-07-28');
    }
    const contenders: Contender[] = [
      { name: 'mcp-client', run: () => mine.callTool('echo', ARGS) },
      { name: 'sdk-v2', run: () => sdk.callTool({ name: 'echo', arguments: ARGS }) },
      ...(control === undefined
        ? []
        : [
            {
              name: 'sdk-v2-control',
              run: () => control.callTool({ name: 'echo', arguments: ARGS }),
            },
          ]),
    ];
    for (const contender of contenders) {
      const text = JSON.stringify(await contender.run());
      if (!text.includes(ARGS.text)) throw new Error(`${contender.name} did not echo`);
    }
    const results = await interleave(contenders, {
      ...CALL_SETTINGS[transport],
      beforeRound: forcedGc(),
    });
    return {
      ours: figure(results.get('mcp-client')),
      sdk: figure(results.get('sdk-v2')),
      paired: pairedRatio(results.get('mcp-client'), results.get('sdk-v2')),
      cpuOurs: cpuPerOperation(results.get('mcp-client')),
      cpuSdk: cpuPerOperation(results.get('sdk-v2')),
      threadOurs: threadCpuPerOperation(results.get('mcp-client')),
      threadSdk: threadCpuPerOperation(results.get('sdk-v2')),
      ...(control === undefined
        ? {}
        : { control: pairedRatio(results.get('sdk-v2-control'), results.get('sdk-v2')) }),
    };
  } finally {
    await mine.close();
    await sdk.close();
    await control?.close();
  }
}

/** The modern call round trip over both transports, CALL_RUNS fresh processes each. */
async function calls(): Promise<void> {
  const runs = new Map<CallTransport, CallRun[]>([
    ['stdio', []],
    ['http', []],
  ]);
  for (let run = 0; run < CALL_RUNS; run++) {
    for (const transport of ['stdio', 'http'] as const) {
      runs.get(transport)?.push(await runChild<CallRun>(['--call-child', transport]));
    }
  }
  for (const [transport, measured] of runs) {
    const settings = CALL_SETTINGS[transport];
    const paired = measured.map((run) => run.paired);
    const value = median(measured.map((run) => run.ours));
    const baseline = median(measured.map((run) => run.sdk));
    printTable(
      `modern tools/call echo over ${transport}: ${CALL_RUNS} runs in fresh processes, each ${settings.warmup} warm-up calls then ${settings.rounds} interleaved rounds x ${settings.perRound} (GC before each round)`,
      ['client', 'median ms/call', 'paired x SDK v2 Client: median (min-max)'],
      [
        ['mcp-client', formatMs(value), formatSpread(paired)],
        ['sdk-v2', formatMs(baseline), '1.00x'],
      ],
    );
    bench({
      id: `mcp-bridge.modern-call-${transport}`,
      label: `modern (2026-07-28) tools/call over ${transport}: McpClient vs SDK v2 Client${transport === 'stdio' ? ', wall (informational: judged by CPU per call)' : ''}`,
      ratio: median(paired),
      // Over stdio the wall ratio is reported only: the CPU row below judges it (issue 41).
      target: transport === 'stdio' ? null : 0.8,
      detail: `${formatSpread(paired)} over ${CALL_RUNS} runs (each run's paired ratio: median over rounds of round-median ratios); McpClient ${formatMs(value)} ms vs SDK v2 Client ${formatMs(baseline)} ms per call; each run ${settings.rounds} interleaved rounds x ${settings.perRound} calls after ${settings.warmup} warm-up calls, in a fresh process; ${load()}`,
    });
    if (transport === 'stdio') {
      // Issue 41: wall time over stdio moves with the scheduling of two processes; the client's
      // own CPU per call (its main thread's around its timed calls, the same run: Linux's
      // /proc/thread-self/schedstat; the process's CPU, printed beside it, also counts the
      // background threads whose work lands on whichever client waits) is what the client
      // controls. Off Linux the process figure judges.
      // With the wall ratio required inside the A/A control's range (no slower than the
      // control's slowest run), as for the SDK 1.x comparison in bridge-call.bench.ts.
      const threads = measured.every((run) => Number.isFinite(run.threadSdk));
      const ours = (run: CallRun) => (threads ? run.threadOurs : run.cpuOurs);
      const theirs = (run: CallRun) => (threads ? run.threadSdk : run.cpuSdk);
      const cpu = measured.map((run) => ours(run) / theirs(run));
      const processCpu = measured.map((run) => run.cpuOurs / run.cpuSdk);
      const control = measured.map((run) => run.control as number);
      const inside = median(paired) <= Math.max(...control);
      bench({
        id: 'mcp-bridge.modern-call-stdio-cpu',
        label:
          'modern (2026-07-28) tools/call over stdio: McpClient CPU per call vs the SDK v2 Client (wall inside the A/A range)',
        ratio: median(cpu),
        target: 0.8,
        met: median(cpu) <= 0.8 && inside,
        detail: `${formatSpread(cpu)} over ${CALL_RUNS} runs; client ${threads ? 'main-thread' : 'process'} CPU per call ${formatMs(median(measured.map(ours)))} ms vs ${formatMs(median(measured.map(theirs)))} ms (around each client's timed calls); process CPU ratio ${formatSpread(processCpu)}; wall ${formatSpread(paired)} vs the A/A control's (a second SDK v2 Client) ${formatSpread(control)} (${inside ? 'inside' : 'outside'} its range); ${load()}`,
      });
    }
  }
}

/** This process's direct children now, by pid, read from /proc (empty where there is none). */
function childPids(): string[] {
  const pids: string[] = [];
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === process.pid) pids.push(entry);
      } catch {
        // the process ended
      }
    }
  } catch {
    // no /proc
  }
  return pids;
}

async function connects(): Promise<void> {
  const rounds = scaled(9, 1);
  const mine: number[] = [];
  const sdk: number[] = [];
  const spawnedMine: number[] = [];
  const spawnedSdk: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['mine', 'sdk'] : ['sdk', 'mine'];
    for (const who of order) {
      const before = new Set(childPids());
      const seen = new Set<string>();
      const sample = () => {
        for (const pid of childPids()) if (!before.has(pid)) seen.add(pid);
      };
      const timer = setInterval(sample, 5);
      const start = performance.now();
      if (who === 'mine') {
        const client = ours(undefined);
        await client.connect();
        mine.push(performance.now() - start);
        clearInterval(timer);
        sample();
        spawnedMine.push(seen.size);
        await client.close();
      } else {
        const client = await v2(undefined);
        sdk.push(performance.now() - start);
        clearInterval(timer);
        sample();
        spawnedSdk.push(seen.size);
        await client.close();
      }
    }
  }
  const a = median(mine);
  const b = median(sdk);
  printTable(
    `modern stdio connect (spawn + negotiate), ${rounds} interleaved rounds`,
    ['client', 'median ms', 'processes spawned (max per connect)'],
    [
      ['mcp-client', formatMs(a), String(Math.max(...spawnedMine))],
      ['sdk-v2 (auto)', formatMs(b), String(Math.max(...spawnedSdk))],
    ],
  );
  bench({
    id: 'mcp-bridge.modern-connect-stdio',
    label:
      'modern stdio connect: McpClient (one process, one server/discover) vs SDK v2 Client auto mode',
    ratio: a / b,
    target: null,
    detail: `McpClient ${formatMs(a)} ms spawning ${Math.max(...spawnedMine)} process vs SDK v2 Client ${formatMs(b)} ms spawning ${Math.max(...spawnedSdk)} (its disposable probe sibling); median of ${rounds} interleaved rounds; child pids sampled every 5 ms from /proc`,
  });
}

const LISTED = scaled(10_000, 500);
const MEMORY_RUNS = scaled(3, 1);

/** One side's listing, a fresh one every time (McpClient's refresh, never the v2 response cache). */
async function listingSide(
  side: string,
): Promise<{ list: () => Promise<void>; close: () => Promise<void> }> {
  if (side === 'mcp-client') {
    // The SDK v2 server sends all tools in one page: a host listing such a server raises the
    // per-record limits (the defaults bound a record at 20,001 tokens and 8 MiB).
    const client = ours(undefined, ['--count', String(LISTED)], {
      maxRecordTokens: 1_000_000,
      maxRecordBytes: 64 * 1024 * 1024,
      maxTools: 20_000,
    });
    await client.connect();
    return {
      list: async () => {
        const tools = await client.tools({ refresh: true });
        if (tools.length !== LISTED + 1) throw new Error(`McpClient listed ${tools.length}`);
      },
      close: () => client.close(),
    };
  }
  const client = await v2(undefined, ['--count', String(LISTED)]);
  return {
    list: async () => {
      const listed = await client.listTools(undefined, { cacheMode: 'refresh' });
      if (listed.tools.length !== LISTED + 1)
        throw new Error(`SDK v2 listed ${listed.tools.length}`);
    },
    close: () => client.close(),
  };
}

/**
 * Child mode: one side alone in a fresh process, the peak heap and RSS above the connected
 * baseline during its first listing, sampled every 1 ms (as in tools-listing.bench.ts). In the
 * benchmark's own long-lived process the young generation has grown large by then, so a sampled
 * peak there counts mostly the garbage that no scavenge has collected yet: it measured when each
 * side's collections happened to run (a side that allocates more can show a lower peak).
 */
async function listingMemoryChild(side: string): Promise<void> {
  const { list, close } = await listingSide(side);
  const { peak } = await peakMemoryOf(list);
  await close();
  process.stdout.write(`\n${JSON.stringify(peak)}\n`);
}

async function listings(): Promise<void> {
  const gc = forcedGc();
  const mine = await listingSide('mcp-client');
  const sdk = await listingSide('sdk-v2');
  let results: Awaited<ReturnType<typeof interleave>>;
  try {
    // A full GC (untimed) before each listing, so one side's garbage is not collected on the
    // other's time.
    results = await interleave(
      [
        { name: 'mcp-client', run: mine.list },
        { name: 'sdk-v2', run: sdk.list },
      ],
      { warmup: 1, rounds: scaled(5, 1), perRound: 1, beforeEach: gc },
    );
  } finally {
    await mine.close();
    await sdk.close();
  }
  const a = figure(results.get('mcp-client'));
  const b = figure(results.get('sdk-v2'));
  const cpuMine = cpuPerOperation(results.get('mcp-client'));
  const cpuSdk = cpuPerOperation(results.get('sdk-v2'));
  // Memory: each side alone in fresh processes, which side goes first alternating, median of
  // the runs.
  const memory: Record<string, PeakMemory[]> = { 'mcp-client': [], 'sdk-v2': [] };
  for (let run = 0; run < MEMORY_RUNS; run++) {
    const sides = run % 2 === 0 ? ['mcp-client', 'sdk-v2'] : ['sdk-v2', 'mcp-client'];
    for (const side of sides) {
      memory[side]?.push(await runChild<PeakMemory>(['--listing-child', side]));
    }
  }
  const peakOf = (side: string, key: 'heap' | 'rss') =>
    median((memory[side] ?? []).map((peak) => peak[key]));
  const heapMine = peakOf('mcp-client', 'heap');
  const heapSdk = peakOf('sdk-v2', 'heap');
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  printTable(
    `modern listing of ${LISTED} tools over stdio (one page; ${scaled(5, 1)} interleaved rounds; memory: median of ${MEMORY_RUNS} fresh processes per side, peak above the connected baseline during one listing)`,
    [
      'client',
      'median ms',
      'client CPU ms per listing',
      'peak heap growth MiB',
      'peak RSS growth MiB',
    ],
    [
      ['mcp-client', formatMs(a), formatMs(cpuMine), mb(heapMine), mb(peakOf('mcp-client', 'rss'))],
      ['sdk-v2', formatMs(b), formatMs(cpuSdk), mb(heapSdk), mb(peakOf('sdk-v2', 'rss'))],
    ],
  );
  bench({
    id: 'mcp-bridge.modern-listing-10k',
    label: `modern tools/list of ${LISTED} tools over stdio: McpClient vs SDK v2 Client`,
    ratio: a / b,
    target: 0.8,
    met: a / b <= 0.8 && heapMine <= heapSdk,
    detail: `McpClient ${formatMs(a)} ms (this process's CPU ${formatMs(cpuMine)} ms per listing) vs SDK v2 Client ${formatMs(b)} ms (CPU ${formatMs(cpuSdk)} ms); the server's own time (the same SDK v2 server for both) is in both; target also requires no higher peak memory: peak heap growth ${mb(heapMine)} vs ${mb(heapSdk)} MiB, RSS ${mb(peakOf('mcp-client', 'rss'))} vs ${mb(peakOf('sdk-v2', 'rss'))} MiB (each side alone in a fresh process, sampled every 1 ms, median of ${MEMORY_RUNS})`,
  });
}

const callChild = process.argv.indexOf('--call-child');
const listingChild = process.argv.indexOf('--listing-child');
const isChild = callChild !== -1 || listingChild !== -1;
const requested = isChild ? [] : process.argv.slice(2);
const parts = isChild ? [] : requested.length > 0 ? requested : ['call', 'connect', 'listing'];
try {
  if (callChild !== -1) {
    const result = await callRun(process.argv[callChild + 1] as CallTransport);
    process.stdout.write(`\n${JSON.stringify(result)}\n`);
  }
  if (listingChild !== -1) await listingMemoryChild(process.argv[listingChild + 1] as string);
  if (parts.includes('call')) await calls();
  if (parts.includes('connect')) await connects();
  if (parts.includes('listing')) await listings();
} finally {
  for (const child of children) child.kill('SIGTERM');
  await stopAll();
}
