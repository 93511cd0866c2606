// `tools/call` through the gateway against the same call straight to the upstream server, stdio.
// The SDK's own Client is the downstream (SDK 1.x, and the SDK v2 client as a second baseline),
// so the only difference is what sits between it and the fixture server:
//
//   direct        SDK 1.x Client -> bench server (stdio)
//   direct-v2     SDK v2 Client (2025-11-25; the bench server is SDK 1.x) -> bench server
//   relay-bytes   SDK 1.x Client -> a process that forwards bytes untouched -> bench server
//   relay-json    SDK 1.x Client -> a process that parses and re-serialises each line -> server
//   gateway       SDK 1.x Client -> `toolfence-mcp serve` (a second process, stdio) -> server
//   gateway-v2    SDK v2 Client in 2026-07-28 mode -> `toolfence-mcp serve` -> bench server
//   in-process    SDK 1.x Client -> in-memory pair -> McpGateway -> bench server (no 2nd process)
//   bridge        ToolRegistry.invoke -> bridgeTools -> McpClient -> bench server (no downstream)
//
// `gateway / direct` is the headline (target 1.5x). The relays are the floor of any design with
// one more process on the path: `relay-bytes / direct` is the hop alone, `relay-json / direct`
// the hop plus the JSON a process must read and write. `in-process` and `bridge` split the rest:
// the second process hop of the gateway is gateway - in-process; the gateway's own work per call
// (the SDK v2 server's request and result checks, registry lease, argument snapshot and
// validation, policy, audit line with two SHA-256 digests, result mapping) is in-process - bridge.
//
//   npx tsx bench/gateway-call.bench.ts
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  AuditLog,
  bridgeTools,
  McpClient,
  McpGateway,
  PinStore,
  parseGatewayConfig,
} from '@toolfence/mcp-bridge';
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
  stdioCommand,
  stopAll,
} from './fixtures/harness.js';

const WARMUP = scaled(300, 20);
const ROUNDS = scaled(20, 2);
const PER_ROUND = scaled(100, 10);
const ARGS = { text: 'hello from the benchmark' };
const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const RELAY = fileURLToPath(new URL('./fixtures/stdio-relay.mjs', import.meta.url));

const folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-bench-'));
const closers: (() => Promise<unknown>)[] = [];
try {
  const servers = {
    mcpServers: { bench: { command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] } },
    gateway: { audit: join(folder, 'audit.jsonl'), pins: join(folder, 'lock.json') },
  };
  const configPath = join(folder, 'toolfence.json');
  await writeFile(configPath, JSON.stringify(servers));
  // Each gateway process keeps its own audit log: a second writer on one log is refused (the
  // gateway checks the file is still the one it opened, with the size it wrote).
  const configPathV2 = join(folder, 'toolfence-v2.json');
  await writeFile(
    configPathV2,
    JSON.stringify({
      ...servers,
      gateway: { audit: join(folder, 'audit-v2.jsonl'), pins: join(folder, 'lock-v2.json') },
    }),
  );
  const policyPath = join(folder, 'policy.json');
  await writeFile(policyPath, JSON.stringify({ kind: 'rules', rules: [], default: 'allow' }));

  const direct = new Client({ name: 'bench-direct', version: '1.0.0' });
  await direct.connect(
    new StdioClientTransport({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio'] }),
  );
  closers.push(() => direct.close());

  const directV2 = new ClientV2({ name: 'bench-direct-v2', version: '1.0.0' });
  await directV2.connect(
    new StdioV2({ command: process.execPath, args: [SERVER_SCRIPT, 'stdio'], stderr: 'ignore' }),
  );
  closers.push(() => directV2.close());

  const relays = new Map<string, Client>();
  for (const mode of ['bytes', 'json']) {
    const relay = new Client({ name: `bench-relay-${mode}`, version: '1.0.0' });
    await relay.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [RELAY, mode, '--', process.execPath, SERVER_SCRIPT, 'stdio'],
      }),
    );
    closers.push(() => relay.close());
    relays.set(mode, relay);
  }

  const gatewayV2 = new ClientV2(
    { name: 'bench-gateway-v2', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await gatewayV2.connect(
    new StdioV2({
      command: process.execPath,
      args: [CLI, 'serve', '--config', configPathV2, '--policy', policyPath],
      stderr: 'ignore',
    }),
  );
  closers.push(() => gatewayV2.close());
  if (gatewayV2.getNegotiatedProtocolVersion() !== '2026-07-28') {
    throw new Error('the SDK v2 client did not reach the gateway in 2026-07-28 mode');
  }

  const viaGateway = new Client({ name: 'bench-gateway', version: '1.0.0' });
  await viaGateway.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--config', configPath, '--policy', policyPath],
      stderr: 'ignore',
    }),
  );
  closers.push(() => viaGateway.close());

  const gateway = new McpGateway({
    config: parseGatewayConfig({
      ...servers,
      gateway: { audit: join(folder, 'audit-2.jsonl'), pins: join(folder, 'lock-2.json') },
    }),
    authorizer: new AllowAllAuthorizer(),
    pins: await PinStore.open(join(folder, 'lock-2.json')),
    audit: new AuditLog(join(folder, 'audit-2.jsonl'), 1024 * 1024 * 1024),
  });
  await gateway.start();
  closers.push(() => gateway.close());
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const inProcess = new Client({ name: 'bench-in-process', version: '1.0.0' });
  await inProcess.connect(clientSide);
  closers.push(() => inProcess.close());

  const bridgeClient = new McpClient({ command: stdioCommand(), clientName: 'bench' });
  closers.push(() => bridgeClient.close());
  const registry = new ToolRegistry({
    authorizer: new AllowAllAuthorizer(),
    tools: await bridgeTools(bridgeClient, { prefix: 'bench' }),
  });
  await registry.ready();
  closers.push(() => registry.close());
  const context = createToolContext({ runId: 'bench' });

  const contenders: Contender[] = [
    { name: 'direct', run: () => direct.callTool({ name: 'echo', arguments: ARGS }) },
    { name: 'direct-v2', run: () => directV2.callTool({ name: 'echo', arguments: ARGS }) },
    {
      name: 'relay-bytes',
      run: () => (relays.get('bytes') as Client).callTool({ name: 'echo', arguments: ARGS }),
    },
    {
      name: 'relay-json',
      run: () => (relays.get('json') as Client).callTool({ name: 'echo', arguments: ARGS }),
    },
    { name: 'gateway', run: () => viaGateway.callTool({ name: 'bench__echo', arguments: ARGS }) },
    {
      name: 'gateway-v2',
      run: () => gatewayV2.callTool({ name: 'bench__echo', arguments: ARGS }),
    },
    {
      name: 'in-process',
      run: () => inProcess.callTool({ name: 'bench__echo', arguments: ARGS }),
    },
    { name: 'bridge', run: () => registry.invoke('bench__echo', ARGS, context) },
  ];
  for (const contender of contenders) {
    const text = JSON.stringify(await contender.run());
    if (!text.includes(ARGS.text) || text.includes('"isError":true')) {
      throw new Error(`${contender.name} did not echo: ${text.slice(0, 200)}`);
    }
  }

  const started = performance.now();
  const results = await interleave(contenders, {
    warmup: WARMUP,
    rounds: ROUNDS,
    perRound: PER_ROUND,
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const base = figure(results.get('direct'));
  printTable(
    `tools/call echo over stdio: ${WARMUP} warm-up calls each, ${ROUNDS} interleaved rounds x ${PER_ROUND} calls, median of round medians (${seconds} s)`,
    ['path', 'median ms/call', 'x direct', 'paired x direct'],
    [...results.values()].map((result) => [
      result.name,
      formatMs(figure(result)),
      (figure(result) / base).toFixed(2),
      pairedRatio(result, results.get('direct')).toFixed(2),
    ]),
  );
  const through = figure(results.get('gateway'));
  const local = figure(results.get('in-process'));
  const bridged = figure(results.get('bridge'));
  const floor = figure(results.get('relay-json'));
  const hop = figure(results.get('relay-bytes'));
  bench({
    id: 'mcp-bridge.gateway-call-stdio',
    label: 'tools/call through toolfence-mcp serve vs straight to the upstream (stdio)',
    ratio: through / base,
    target: 1.5,
    detail: `gateway ${formatMs(through)} ms vs direct ${formatMs(base)} ms per call (paired ${pairedRatio(results.get('gateway'), results.get('direct')).toFixed(2)}; SDK v2 client in 2026-07-28 mode ${(figure(results.get('gateway-v2')) / figure(results.get('direct-v2'))).toFixed(2)}x its direct call); the floor of one more stdio process is ${(hop / base).toFixed(2)}x forwarding bytes and ${(floor / base).toFixed(2)}x parsing and re-serialising JSON; of the ${formatMs(through - base)} ms added, the second process hop is ${formatMs(through - local)} ms, the gateway's own work (SDK v2 server checks, registry, policy, audit, mapping) ${formatMs(local - bridged)} ms, and the bridged McpClient path vs the SDK Client ${formatMs(bridged - base)} ms`,
  });
} finally {
  for (const closer of closers.reverse()) await closer().catch(() => undefined);
  await stopAll();
  await rm(folder, { recursive: true, force: true });
}
