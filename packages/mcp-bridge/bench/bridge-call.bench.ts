// `tools/call` round trip: the bridged path (bridgeTools -> ToolRegistry.invoke) and the bare
// McpClient.callTool against the SDK's own Client with its own transport, on the same fixture
// server, over stdio and Streamable HTTP (SSE replies, the SDK server's default; and JSON replies).
// @ai-sdk/mcp and @langchain/mcp-adapters run the same call for comparison (informational).
//
//   npx tsx bench/bridge-call.bench.ts [stdio] [http] [http-json]     (default: all three)
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
  figure,
  formatMs,
  interleave,
  pairedRatio,
  printTable,
  SERVER_SCRIPT,
  scaled,
  startHttpServer,
  stdioCommand,
  stopAll,
} from './fixtures/harness.js';

type Mode = 'stdio' | 'http' | 'http-json';

const WARMUP = scaled(300, 20);
const SETTINGS: Record<Mode, { rounds: number; perRound: number }> = {
  stdio: { rounds: scaled(30, 2), perRound: scaled(100, 10) },
  http: { rounds: scaled(15, 2), perRound: scaled(50, 10) },
  'http-json': { rounds: scaled(15, 2), perRound: scaled(50, 10) },
};
const ARGS = { text: 'hello from the benchmark' };

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

async function measure(mode: Mode): Promise<void> {
  const server =
    mode === 'stdio' ? undefined : await startHttpServer(mode === 'http-json' ? ['--json'] : []);
  const setup = await setUp(mode, server?.url);
  const { rounds, perRound } = SETTINGS[mode];
  const started = performance.now();
  let results: Awaited<ReturnType<typeof interleave>>;
  try {
    results = await interleave(setup.contenders, { warmup: WARMUP, rounds, perRound });
  } finally {
    await setup.close();
    if (server !== undefined) {
      server.child.stdin?.end();
      server.child.kill('SIGTERM');
    }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const sdk = figure(results.get('sdk'));
  const rows = [...results.values()].map((result) => {
    const value = figure(result);
    const sorted = [...result.roundMedians].sort((a, b) => a - b);
    return [
      result.name,
      formatMs(value),
      `${formatMs(sorted[0] as number)}-${formatMs(sorted.at(-1) as number)}`,
      (value / sdk).toFixed(2),
      pairedRatio(result, results.get('sdk')).toFixed(2),
    ];
  });
  printTable(
    `tools/call echo over ${LABEL[mode]}: ${WARMUP} warm-up calls per client, ${rounds} interleaved rounds x ${perRound} calls, median of round medians (${seconds} s)`,
    ['client', 'median ms/call', 'round range', 'x SDK Client', 'paired x SDK'],
    rows,
  );
  const how = `${WARMUP} warm-up calls each, ${rounds} interleaved rounds x ${perRound} sequential calls, median of round medians`;
  const bridge = figure(results.get('bridge'));
  const bare = figure(results.get('mcp-client'));
  const aiSdk = figure(results.get('ai-sdk'));
  const langchain = figure(results.get('langchain'));
  const paired = (name: string) => pairedRatio(results.get(name), results.get('sdk')).toFixed(2);
  const id = mode === 'stdio' ? 'stdio' : mode === 'http' ? 'http' : 'http-json';
  bench({
    id: `mcp-bridge.call-${id}-bridge`,
    label: `tools/call over ${LABEL[mode]}: bridgeTools + ToolRegistry.invoke vs SDK Client`,
    ratio: bridge / sdk,
    target: 1.1,
    detail: `bridge ${formatMs(bridge)} ms vs SDK Client ${formatMs(sdk)} ms per call (per-round paired ratio ${paired('bridge')}); ${how}`,
  });
  bench({
    id: `mcp-bridge.call-${id}-client`,
    label: `tools/call over ${LABEL[mode]}: McpClient.callTool vs SDK Client`,
    ratio: bare / sdk,
    target: 1.1,
    detail: `McpClient ${formatMs(bare)} ms vs SDK Client ${formatMs(sdk)} ms per call (per-round paired ratio ${paired('mcp-client')}); ${how}`,
  });
  const v2 = figure(results.get('sdk-v2'));
  bench({
    id: `mcp-bridge.call-${id}-client-vs-sdk-v2`,
    label: `tools/call over ${LABEL[mode]} (legacy server): McpClient.callTool vs the SDK v2 Client`,
    ratio: bare / v2,
    target: mode === 'stdio' ? 1 : 0.8,
    detail: `McpClient ${formatMs(bare)} ms vs SDK v2 Client ${formatMs(v2)} ms per call (SDK v2 = ${(v2 / sdk).toFixed(2)}x the 1.x SDK Client; target: no slower than the faster SDK client on stdio, 0.8x on HTTP); ${how}`,
  });
  bench({
    id: `mcp-bridge.call-${id}-vs-ai-sdk`,
    label: `tools/call over ${LABEL[mode]}: bridge vs @ai-sdk/mcp tool execute (informational)`,
    ratio: bridge / aiSdk,
    target: null,
    detail: `bridge ${formatMs(bridge)} ms vs AI SDK ${formatMs(aiSdk)} ms (AI SDK = ${(aiSdk / sdk).toFixed(2)}x SDK Client; it does not validate arguments); ${how}`,
  });
  bench({
    id: `mcp-bridge.call-${id}-vs-langchain`,
    label: `tools/call over ${LABEL[mode]}: bridge vs @langchain/mcp-adapters tool invoke (informational)`,
    ratio: bridge / langchain,
    target: null,
    detail: `bridge ${formatMs(bridge)} ms vs LangChain ${formatMs(langchain)} ms (LangChain = ${(langchain / sdk).toFixed(2)}x SDK Client); ${how}`,
  });
}

const requested = process.argv.slice(2) as Mode[];
const modes: Mode[] = requested.length > 0 ? requested : ['stdio', 'http', 'http-json'];
try {
  for (const mode of modes) await measure(mode);
} finally {
  await stopAll();
}
