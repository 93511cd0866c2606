// `tools/call` round trip: the bridged path (bridgeTools -> ToolRegistry.invoke) and the bare
// McpClient.callTool against the SDK's own Client with its own transport, on the same fixture
// server, over stdio and Streamable HTTP (SSE replies, the SDK server's default; and JSON replies).
// @ai-sdk/mcp and @langchain/mcp-adapters run the same call for comparison (informational).
//
// Call times move from run to run (each run has its own heap, JIT state and server processes, and
// the machine's load changes), so every mode runs RUNS times, each in a fresh process, modes
// interleaved; each figure is the median over runs of the run's paired ratio (median over rounds
// of our round median / the SDK's), with the min-max range. A second SDK 1.x client (`sdk-control`,
// an A/A control) shows how far two identical clients drift apart in the same runs. Over stdio,
// `sdk-own-session` is the SDK client once more with its server started through `setsid`, so it
// runs in its own session like McpClient's (which spawns `detached` to kill the server's whole
// process group on close): on a loaded Linux machine with autogroup scheduling, a server in its
// own session waits longer to be scheduled than one sharing the benchmark's session (most of
// McpClient's run-to-run spread against the plain SDK client under heavy load; a few percent on a
// quieter machine). A full GC runs
// (untimed) before every contender's round, so one client's garbage is not collected on another's
// time.
//
//   npx tsx bench/bridge-call.bench.ts [stdio] [http] [http-json]     (default: all three)
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { createMCPClient, type MCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableHttpV2,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bridgeTools, McpClient } from '@toolfence/mcp-bridge';
import { AllowAllAuthorizer, createToolContext, ToolRegistry } from '@toolfence/tools';
import {
  bench,
  type Contender,
  cpuPerOperation,
  figure,
  forcedGc,
  formatMs,
  formatSpread,
  interleave,
  pairedRatio,
  printTable,
  runChild,
  SERVER_SCRIPT,
  scaled,
  spread,
  startHttpServer,
  stdioCommand,
  stopAll,
  threadCpuPerOperation,
} from './fixtures/harness.js';

type Mode = 'stdio' | 'http' | 'http-json';

const WARMUP = scaled(200, 20);
const SETTINGS: Record<Mode, { rounds: number; perRound: number }> = {
  stdio: { rounds: scaled(20, 2), perRound: scaled(100, 10) },
  http: { rounds: scaled(10, 2), perRound: scaled(50, 10) },
  'http-json': { rounds: scaled(10, 2), perRound: scaled(50, 10) },
};
const ARGS = { text: 'hello from the benchmark' };
const RUNS = scaled(5, 1);
/**
 * The bridged call's allowance over the SDK client (arguments validated, the registry's
 * authorization and snapshot, the result mapped): CPU per call over stdio, wall time over HTTP.
 */
const BRIDGE_TARGET = 1.1;
/** util-linux `setsid`, to start a baseline server in its own session like McpClient's. */
const HAS_SETSID = spawnSync('setsid', ['--version'], { stdio: 'ignore' }).status === 0;

interface Setup {
  readonly contenders: Contender[];
  readonly close: () => Promise<void>;
}

async function setUp(mode: Mode, url: string | undefined): Promise<Setup> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    return { contenders: await build(mode, url, closers), close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function build(
  mode: Mode,
  url: string | undefined,
  closers: (() => Promise<unknown>)[],
): Promise<Contender[]> {
  // ours: one McpClient for the bridged path, one for the bare client (separate connections,
  // so each gets its own server process over stdio, like every other contender)
  const makeOurs = () =>
    url === undefined
      ? new McpClient({ command: stdioCommand(), clientName: 'bench' })
      : new McpClient({
          url,
          clientName: 'bench',
          allowNonPublic: (_target, address) => address.range === 'loopback',
        });
  const bridgeClient = makeOurs();
  closers.push(() => bridgeClient.close());
  const tools = await bridgeTools(bridgeClient, { prefix: 'bench' });
  const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools });
  await registry.ready();
  closers.push(() => registry.close());
  const context = createToolContext({ runId: 'bench' });
  const bareClient = makeOurs();
  await bareClient.connect();
  closers.push(() => bareClient.close());

  // the SDK's own Client and transport
  const sdk = new Client({ name: 'bench-sdk', version: '1.0.0' });
  await sdk.connect(
    url === undefined
      ? new StdioClientTransport({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] })
      : new StreamableHTTPClientTransport(new URL(url)),
  );
  closers.push(() => sdk.close());
  // the same SDK client once more, as an A/A control (its ratio to `sdk` is pure noise)
  const control = new Client({ name: 'bench-sdk-control', version: '1.0.0' });
  await control.connect(
    url === undefined
      ? new StdioClientTransport({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] })
      : new StreamableHTTPClientTransport(new URL(url)),
  );
  closers.push(() => control.close());
  // over stdio: the SDK client whose server runs in its own session, as McpClient's does
  const ownSession =
    url === undefined && HAS_SETSID
      ? new Client({ name: 'bench-sdk-own-session', version: '1.0.0' })
      : undefined;
  if (ownSession !== undefined) {
    await ownSession.connect(
      new StdioClientTransport({
        command: 'setsid',
        args: [process.execPath, SERVER_SCRIPT, 'stdio'],
      }),
    );
    closers.push(() => ownSession.close());
  }

  // the SDK v2 Client (@modelcontextprotocol/client 2.x) against this legacy (1.x) server
  const sdkV2 = new ClientV2({ name: 'bench-sdk-v2', version: '1.0.0' });
  await sdkV2.connect(
    url === undefined
      ? new StdioV2({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] })
      : new StreamableHttpV2(new URL(url)),
  );
  closers.push(() => sdkV2.close());

  // @ai-sdk/mcp: its tool's execute (what an AI SDK agent runs)
  const ai: MCPClient = await createMCPClient({
    transport:
      url === undefined
        ? new Experimental_StdioMCPTransport({
            command: process.execPath,
            args: [SERVER_SCRIPT, 'stdio'],
          })
        : { type: 'http', url },
    protocolVersionDiscovery: false,
  });
  closers.push(() => ai.close());
  const aiTools = await ai.tools();
  const aiEcho = aiTools.echo;
  if (aiEcho?.execute === undefined) throw new Error('AI SDK did not list echo');
  const aiExecute = aiEcho.execute.bind(aiEcho);

  // @langchain/mcp-adapters: its StructuredTool's invoke
  const langchain = new MultiServerMCPClient({
    mcpServers: {
      bench:
        url === undefined
          ? { transport: 'stdio', command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] }
          : { transport: 'http', url, automaticSSEFallback: false },
    },
    prefixToolNameWithServerName: false,
    useStandardContentBlocks: true,
  });
  closers.push(() => langchain.close());
  const lcTools = await langchain.getTools();
  const lcEcho = lcTools.find((tool) => tool.name === 'echo');
  if (lcEcho === undefined) throw new Error('LangChain did not list echo');

  // Every contender checks the echoed text once before timing.
  const contenders: Contender[] = [
    {
      name: 'bridge',
      run: () => registry.invoke('bench__echo', ARGS, context),
    },
    { name: 'mcp-client', run: () => bareClient.callTool('echo', ARGS) },
    { name: 'sdk', run: () => sdk.callTool({ name: 'echo', arguments: ARGS }) },
    { name: 'sdk-control', run: () => control.callTool({ name: 'echo', arguments: ARGS }) },
    ...(ownSession === undefined
      ? []
      : [
          {
            name: 'sdk-own-session',
            run: () => ownSession.callTool({ name: 'echo', arguments: ARGS }),
          },
        ]),
    { name: 'sdk-v2', run: () => sdkV2.callTool({ name: 'echo', arguments: ARGS }) },
    {
      name: 'ai-sdk',
      run: () =>
        aiExecute(ARGS, { toolCallId: 'bench', messages: [], context: {} }) as Promise<unknown>,
    },
    { name: 'langchain', run: () => lcEcho.invoke(ARGS) },
  ];
  for (const contender of contenders) {
    const text = JSON.stringify(await contender.run());
    if (!text.includes(ARGS.text)) {
      throw new Error(`${contender.name} (${mode}) did not echo: ${text.slice(0, 200)}`);
    }
  }
  return contenders;
}

const LABEL: Record<Mode, string> = {
  stdio: 'stdio',
  http: 'Streamable HTTP (SSE replies)',
  'http-json': 'Streamable HTTP (JSON replies)',
};

/** One run's figures: per contender, the median of round medians and the paired ratio to `sdk`. */
interface RunResult {
  readonly ms: Record<string, number>;
  /** This process's CPU time per timed call (ms), per contender. */
  readonly cpu: Record<string, number>;
  /** The main thread's CPU time per timed call (ms), per contender (NaN off Linux). */
  readonly threadCpu: Record<string, number>;
  readonly paired: Record<string, number>;
  readonly pairedToV2: number;
  /** Over stdio (when `setsid` exists): McpClient vs the SDK client whose server has its own session. */
  readonly pairedToOwnSession?: number;
}

/** Child mode: one run of one mode in this fresh process. */
async function runOnce(mode: Mode): Promise<RunResult> {
  const server =
    mode === 'stdio' ? undefined : await startHttpServer(mode === 'http-json' ? ['--json'] : []);
  const setup = await setUp(mode, server?.url);
  const { rounds, perRound } = SETTINGS[mode];
  const started = performance.now();
  let results: Awaited<ReturnType<typeof interleave>>;
  try {
    results = await interleave(setup.contenders, {
      warmup: WARMUP,
      rounds,
      perRound,
      beforeRound: forcedGc(),
    });
  } finally {
    await setup.close();
    if (server !== undefined) {
      server.child.stdin?.end();
      server.child.kill('SIGTERM');
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const sdk = figure(results.get('sdk'));
  printTable(
    `tools/call echo over ${LABEL[mode]}, one run: ${WARMUP} warm-up calls per client, ${rounds} interleaved rounds x ${perRound} calls, median of round medians (${seconds} s)`,
    ['client', 'median ms/call', 'round range', 'x SDK Client', 'paired x SDK'],
    [...results.values()].map((result) => {
      const value = figure(result);
      const sorted = [...result.roundMedians].sort((a, b) => a - b);
      return [
        result.name,
        formatMs(value),
        `${formatMs(sorted[0] as number)}-${formatMs(sorted.at(-1) as number)}`,
        (value / sdk).toFixed(2),
        pairedRatio(result, results.get('sdk')).toFixed(2),
      ];
    }),
  );
  const ms: Record<string, number> = {};
  const cpu: Record<string, number> = {};
  const threadCpu: Record<string, number> = {};
  const paired: Record<string, number> = {};
  for (const [name, result] of results) {
    ms[name] = figure(result);
    cpu[name] = cpuPerOperation(result);
    threadCpu[name] = threadCpuPerOperation(result);
    paired[name] = pairedRatio(result, results.get('sdk'));
  }
  return {
    ms,
    cpu,
    threadCpu,
    paired,
    pairedToV2: pairedRatio(results.get('mcp-client'), results.get('sdk-v2')),
    ...(results.has('sdk-own-session')
      ? {
          pairedToOwnSession: pairedRatio(
            results.get('mcp-client'),
            results.get('sdk-own-session'),
          ),
        }
      : {}),
  };
}

function report(mode: Mode, runs: readonly RunResult[]): void {
  const { rounds, perRound } = SETTINGS[mode];
  const how = `${runs.length} runs in fresh processes, each ${WARMUP} warm-up calls per client then ${rounds} interleaved rounds x ${perRound} sequential calls (GC before each round); ratio = median over runs of the run's paired ratio (median over rounds of round-median ratios), range min-max`;
  const ratios = (name: string) => runs.map((run) => run.paired[name] as number);
  const ms = (name: string) => spread(runs.map((run) => run.ms[name] as number)).median;
  const control = `A/A control (a second SDK 1.x client vs the first) ${formatSpread(ratios('sdk-control'))}`;
  printTable(
    `tools/call echo over ${LABEL[mode]}: paired ratio to the SDK 1.x Client over ${runs.length} runs`,
    ['client', 'median ms/call', 'paired x SDK: median (min-max)'],
    Object.keys(runs[0]?.ms ?? {}).map((name) => [
      name,
      formatMs(ms(name)),
      formatSpread(ratios(name)),
    ]),
  );
  const id = mode === 'stdio' ? 'stdio' : mode === 'http' ? 'http' : 'http-json';
  const median = (name: string) => spread(ratios(name)).median;
  bench({
    id: `mcp-bridge.call-${id}-bridge`,
    label: `tools/call over ${LABEL[mode]}: bridgeTools + ToolRegistry.invoke vs SDK Client${mode === 'stdio' ? ', wall (informational: judged by CPU per call)' : ''}`,
    ratio: median('bridge'),
    // Over stdio the wall ratio is reported only: the CPU row below judges the bridged call.
    target: mode === 'stdio' ? null : BRIDGE_TARGET,
    detail: `${formatSpread(ratios('bridge'))} over ${runs.length} runs; bridge ${formatMs(ms('bridge'))} ms vs SDK Client ${formatMs(ms('sdk'))} ms per call; ${control}; target: ${mode === 'stdio' ? 'none on stdio (mcp-bridge.call-stdio-bridge-cpu judges the bridged call: CPU per call, wall inside the A/A range widened by the same allowance)' : `${BRIDGE_TARGET}x on HTTP`}; ${how}`,
  });
  if (mode === 'stdio') {
    // The bridged call is judged like the bare client (issue 41, "targets that measure what we
    // control"): its CPU per call against the SDK client's, in the same run, at most
    // BRIDGE_TARGET (the allowance for validation, the registry and the result mapping), with
    // its wall ratio required to stay inside the A/A control's range widened by that same
    // allowance (no slower than BRIDGE_TARGET x the control's slowest run).
    // The client's CPU is its main thread's (Linux: /proc/thread-self/schedstat), the thread
    // that runs the client's code. This process's CPU time also counts every background thread
    // (the collector's helpers after the forced GC, the platform's workers), and that work lands
    // on whichever client is waiting at the time: a second SDK 1.x client's process CPU against
    // the first's moves 0.87-1.15x within one run. The process figure is printed beside it; off
    // Linux the process figure judges.
    const basis = runs.every((run) => Number.isFinite(run.threadCpu?.sdk)) ? 'threadCpu' : 'cpu';
    const basisText =
      basis === 'threadCpu'
        ? 'main-thread CPU per call (this process: see the process-CPU ratio)'
        : 'process CPU per call';
    const cpuRatioOf = (name: string, of: 'cpu' | 'threadCpu' = basis) =>
      runs
        .filter((run) => run[of][name] !== undefined)
        .map((run) => (run[of][name] as number) / (run[of].sdk as number));
    const cpuOf = (name: string) => spread(runs.map((run) => run[basis][name] as number)).median;
    // The CPU ratio's own noise in the same runs: a second SDK 1.x client's CPU per call against
    // the first's (an A/A control), and the SDK client whose server runs in its own session as
    // McpClient's does.
    const cpuNoise = `A/A control's CPU ratio ${formatSpread(cpuRatioOf('sdk-control'))}${runs.some((run) => run.cpu['sdk-own-session'] !== undefined) ? `, SDK client with its server in its own session ${formatSpread(cpuRatioOf('sdk-own-session'))}` : ''}`;
    const bridgeCpu = cpuRatioOf('bridge');
    const bridgeCpuRatio = spread(bridgeCpu).median;
    const bridgeWall = median('bridge');
    const bridgeRoom = BRIDGE_TARGET * spread(ratios('sdk-control')).max;
    const bridgeInside = bridgeWall <= bridgeRoom;
    bench({
      id: 'mcp-bridge.call-stdio-bridge-cpu',
      label: `tools/call over stdio: bridgeTools + ToolRegistry.invoke client CPU per call vs the SDK 1.x Client (wall inside the A/A range x ${BRIDGE_TARGET})`,
      ratio: bridgeCpuRatio,
      target: BRIDGE_TARGET,
      met: Math.round(bridgeCpuRatio * 1000) / 1000 <= BRIDGE_TARGET && bridgeInside,
      detail: `${formatSpread(bridgeCpu)} over ${runs.length} runs; ${basisText} ${formatMs(cpuOf('bridge'))} ms (bridge + registry + McpClient) vs ${formatMs(cpuOf('sdk'))} ms (SDK Client), McpClient alone ${formatMs(cpuOf('mcp-client'))} ms; process CPU ratio ${formatSpread(cpuRatioOf('bridge', 'cpu'))}; wall ${formatSpread(ratios('bridge'))} vs at most ${bridgeRoom.toFixed(2)}x (${BRIDGE_TARGET} x the A/A control's slowest run; control ${formatSpread(ratios('sdk-control'))}; ${bridgeInside ? 'inside' : 'outside'}); ${cpuNoise}; load average ${(loadavg()[0] ?? 0).toFixed(1)}`,
    });
    // Issue 41: over stdio the wall ratio moves by more than its margin from run to run (see the
    // A/A control), so the client is judged by its own CPU per call (its main thread's around its
    // timed calls, against the SDK client's in the same run), with the wall ratio reported and
    // required to stay inside the A/A control's range.
    const cpu = cpuRatioOf('mcp-client');
    const wall = median('mcp-client');
    const control = spread(ratios('sdk-control'));
    const cpuRatio = spread(cpu).median;
    // Inside the range: no slower than the A/A control's slowest run (faster is inside too).
    const inside = wall <= control.max;
    bench({
      id: 'mcp-bridge.call-stdio-client-cpu',
      label:
        'tools/call over stdio: McpClient.callTool client CPU per call vs the SDK 1.x Client (wall inside the A/A range)',
      ratio: cpuRatio,
      target: 1,
      met: cpuRatio <= 1 && inside,
      detail: `${formatSpread(cpu)} over ${runs.length} runs; ${basisText} ${formatMs(cpuOf('mcp-client'))} ms vs ${formatMs(cpuOf('sdk'))} ms; process CPU ratio ${formatSpread(cpuRatioOf('mcp-client', 'cpu'))}; wall ${formatSpread(ratios('mcp-client'))} vs the A/A control's ${formatSpread(ratios('sdk-control'))} (${inside ? 'inside' : 'outside'} its range); ${cpuNoise}; load average ${(loadavg()[0] ?? 0).toFixed(1)}`,
    });
  }
  bench({
    id: `mcp-bridge.call-${id}-client`,
    label: `tools/call over ${LABEL[mode]}: McpClient.callTool vs SDK Client (legacy mode)${mode === 'stdio' ? ', wall (informational: judged by CPU per call)' : ''}`,
    ratio: median('mcp-client'),
    // Over stdio the wall ratio is reported only: the CPU row above judges it (issue 41).
    target: mode === 'stdio' ? null : 0.8,
    detail: `${formatSpread(ratios('mcp-client'))} over ${runs.length} runs; McpClient ${formatMs(ms('mcp-client'))} ms vs SDK Client ${formatMs(ms('sdk'))} ms per call; ${control}; target: ${mode === 'stdio' ? 'none on stdio (mcp-bridge.call-stdio-client-cpu judges the client: CPU per call, wall inside the A/A range)' : '0.8x on HTTP'}; ${how}`,
  });
  const toOwnSession = runs
    .map((run) => run.pairedToOwnSession)
    .filter((value): value is number => value !== undefined);
  if (toOwnSession.length > 0) {
    bench({
      id: `mcp-bridge.call-${id}-client-vs-sdk-own-session`,
      label: `tools/call over ${LABEL[mode]}: McpClient.callTool vs SDK Client with its server in its own session (as McpClient's)`,
      ratio: spread(toOwnSession).median,
      target: 1,
      detail: `${formatSpread(toOwnSession)} over ${runs.length} runs; McpClient ${formatMs(ms('mcp-client'))} ms vs SDK Client (server started through setsid) ${formatMs(ms('sdk-own-session'))} ms per call; the same client against the same server, only the server's session differs: that is the share of the spread against the plain SDK client that comes from scheduling, not from the client; ${control}; ${how}`,
    });
  }
  const toV2 = runs.map((run) => run.pairedToV2);
  bench({
    id: `mcp-bridge.call-${id}-client-vs-sdk-v2`,
    label: `tools/call over ${LABEL[mode]} (legacy server): McpClient.callTool vs the SDK v2 Client`,
    ratio: spread(toV2).median,
    target: mode === 'stdio' ? 1 : 0.8,
    detail: `${formatSpread(toV2)} over ${runs.length} runs; McpClient ${formatMs(ms('mcp-client'))} ms vs SDK v2 Client ${formatMs(ms('sdk-v2'))} ms per call (SDK v2 = ${formatSpread(ratios('sdk-v2'))} the 1.x SDK Client); target: no slower than the faster SDK client on stdio, 0.8x on HTTP; ${how}`,
  });
  bench({
    id: `mcp-bridge.call-${id}-vs-ai-sdk`,
    label: `tools/call over ${LABEL[mode]}: bridge vs @ai-sdk/mcp tool execute (informational)`,
    ratio: ms('bridge') / ms('ai-sdk'),
    target: null,
    detail: `bridge ${formatMs(ms('bridge'))} ms vs AI SDK ${formatMs(ms('ai-sdk'))} ms (AI SDK = ${formatSpread(ratios('ai-sdk'))} SDK Client; it does not validate arguments); medians over ${runs.length} runs`,
  });
  bench({
    id: `mcp-bridge.call-${id}-vs-langchain`,
    label: `tools/call over ${LABEL[mode]}: bridge vs @langchain/mcp-adapters tool invoke (informational)`,
    ratio: ms('bridge') / ms('langchain'),
    target: null,
    detail: `bridge ${formatMs(ms('bridge'))} ms vs LangChain ${formatMs(ms('langchain'))} ms (LangChain = ${formatSpread(ratios('langchain'))} SDK Client); medians over ${runs.length} runs`,
  });
}

const childIndex = process.argv.indexOf('--child');
if (childIndex !== -1) {
  try {
    const result = await runOnce(process.argv[childIndex + 1] as Mode);
    process.stdout.write(`\n${JSON.stringify(result)}\n`);
  } finally {
    await stopAll();
  }
} else {
  const requested = process.argv.slice(2) as Mode[];
  const modes: Mode[] = requested.length > 0 ? requested : ['stdio', 'http', 'http-json'];
  const runs = new Map<Mode, RunResult[]>(modes.map((mode) => [mode, []]));
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const mode of modes) {
        console.log(`\n-- run ${run + 1} of ${RUNS}, ${mode}`);
        runs.get(mode)?.push(await runChild<RunResult>(['--child', mode]));
      }
    }
    for (const mode of modes) report(mode, runs.get(mode) ?? []);
  } finally {
    await stopAll();
  }
}
