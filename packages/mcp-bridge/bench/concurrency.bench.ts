// Throughput under concurrency (what a gateway or a parallel agent needs): a batch of 400
// concurrent `echo` calls to the real server-everything (SDK 1.x, legacy protocol), over stdio and
// Streamable HTTP, by McpClient at several `maxConcurrentRequests` (1, 8 = the default, 32, 128,
// and the batch size) against the SDK 1.x Client and the SDK v2 Client, which both send every
// request at once (no limit). Each contender has its own connection (its own server process over
// stdio, its own session over HTTP); batches are interleaved round by round after warm-up batches
// (10 over stdio), with a full GC before each batch. The figure is time per batch, as a ratio to
// the faster SDK client.
//
//   npx tsx bench/concurrency.bench.ts [stdio] [http]     (default: both)
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpV2,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_MAX_CONCURRENT_REQUESTS, McpClient } from '@toolfence/mcp-bridge';
import {
  allowLoopback,
  CHILD_ENV,
  EVERYTHING_ENTRY,
  type EverythingHttp,
  startEverythingHttp,
} from '../test/helpers.js';
import {
  bench,
  type Contender,
  figure,
  forcedGc,
  formatMs,
  interleave,
  pairedRatio,
  printTable,
  scaled,
} from './fixtures/harness.js';

type Mode = 'stdio' | 'http';

const BATCH = scaled(400, 40);
/** Timed batches per contender (an HTTP batch takes 0.2 to 0.8 s against server-everything). */
const ROUNDS_BY_MODE: Record<Mode, number> = { stdio: scaled(41, 1), http: scaled(5, 1) };
/**
 * Warm-up batches per contender. Over stdio one batch (400 calls) left every client and every
 * server process still tiering up in the JIT while timed: the calls/s of every contender about
 * doubled with 10, and the ratio moved less from run to run.
 */
const WARMUP_BY_MODE: Record<Mode, number> = { stdio: scaled(10, 1), http: scaled(1, 1) };
/**
 * The host-set figure: a limit as large as the burst, so McpClient has as many calls in flight
 * as the SDK clients, which send every request at once (the table shows 32 and 128 as well).
 */
const HOST_SET = BATCH;
/** maxConcurrentRequests tried; 32 and 128 stand for a host that raises it for bursts. */
const LIMITS = [1, DEFAULT_MAX_CONCURRENT_REQUESTS, 32, 128, HOST_SET];
const nameOf = (limit: number) =>
  `mcp-client @${limit}${limit === DEFAULT_MAX_CONCURRENT_REQUESTS ? ' (default)' : ''}`;

function batch(call: (index: number) => Promise<unknown>): () => Promise<void> {
  return async () => {
    const results = await Promise.all(Array.from({ length: BATCH }, (_, index) => call(index)));
    if (results.length !== BATCH) throw new Error('a call was lost');
  };
}

function text(result: unknown): string {
  return JSON.stringify(result);
}

async function measure(mode: Mode): Promise<void> {
  const ROUNDS = ROUNDS_BY_MODE[mode];
  const WARMUP = WARMUP_BY_MODE[mode];
  const server: EverythingHttp | undefined =
    mode === 'http' ? await startEverythingHttp() : undefined;
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const command = [process.execPath, EVERYTHING_ENTRY, 'stdio'];
    const ours = (limit: number) => {
      const client =
        server === undefined
          ? new McpClient({ command, env: CHILD_ENV, maxConcurrentRequests: limit })
          : new McpClient({
              url: server.url,
              allowNonPublic: allowLoopback,
              maxConcurrentRequests: limit,
            });
      closers.push(() => client.close());
      return client;
    };
    const contenders: Contender[] = [];
    for (const limit of LIMITS) {
      const client = ours(limit);
      await client.connect();
      contenders.push({
        name: nameOf(limit),
        run: batch((index) => client.callTool('echo', { message: `m${index}` })),
      });
    }
    const sdk = new Client({ name: 'bench-sdk', version: '1.0.0' });
    await sdk.connect(
      server === undefined
        ? new StdioClientTransport({
            command: process.execPath,
            args: command.slice(1),
            env: CHILD_ENV,
          })
        : new StreamableHTTPClientTransport(new URL(server.url)),
    );
    closers.push(() => sdk.close());
    contenders.push({
      name: 'sdk',
      run: batch((index) => sdk.callTool({ name: 'echo', arguments: { message: `m${index}` } })),
    });
    const sdkV2 = new ClientV2({ name: 'bench-sdk-v2', version: '1.0.0' });
    await sdkV2.connect(
      server === undefined
        ? new StdioV2({ command: process.execPath, args: command.slice(1), env: CHILD_ENV })
        : new HttpV2(new URL(server.url)),
    );
    closers.push(() => sdkV2.close());
    contenders.push({
      name: 'sdk-v2',
      run: batch((index) => sdkV2.callTool({ name: 'echo', arguments: { message: `m${index}` } })),
    });
    // Every contender echoes once before timing.
    for (const contender of contenders) await contender.run();
    const checks = await Promise.all([
      sdk.callTool({ name: 'echo', arguments: { message: 'check' } }),
      sdkV2.callTool({ name: 'echo', arguments: { message: 'check' } }),
    ]);
    for (const check of checks)
      if (!text(check).includes('Echo: check')) throw new Error('no echo');

    const gc = forcedGc();
    const started = performance.now();
    const results = await interleave(contenders, {
      warmup: WARMUP,
      rounds: ROUNDS,
      perRound: 1,
      beforeEach: gc,
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const perSecond = (name: string) => (BATCH / figure(results.get(name))) * 1000;
    const sdkName = perSecond('sdk') >= perSecond('sdk-v2') ? 'sdk' : 'sdk-v2';
    printTable(
      `${BATCH} concurrent echo calls to server-everything over ${mode}: ${ROUNDS} interleaved batches after ${WARMUP} warm-up batches, GC before each (${seconds} s)`,
      ['client', 'ms per batch', 'calls/s', `x ${sdkName}`],
      [...results.values()].map((result) => [
        result.name,
        formatMs(figure(result)),
        perSecond(result.name).toFixed(0),
        (figure(result) / figure(results.get(sdkName))).toFixed(2),
      ]),
    );
    const rates = [...results.keys()]
      .map((name) => `${name} ${perSecond(name).toFixed(0)}`)
      .join(', ');
    const how = `${BATCH} concurrent calls per batch, ${ROUNDS} interleaved batches after ${WARMUP} warm-up batches, median; calls/s: ${rates}`;
    const defaultName = nameOf(DEFAULT_MAX_CONCURRENT_REQUESTS);
    const hostName = nameOf(HOST_SET);
    const sdkMs = figure(results.get(sdkName));
    bench({
      id: `mcp-bridge.concurrency-${mode}-host-set`,
      label: `${BATCH} concurrent tools/call over ${mode} (server-everything): McpClient at maxConcurrentRequests ${HOST_SET} vs the faster SDK client (${sdkName}, unbounded)`,
      ratio: figure(results.get(hostName)) / sdkMs,
      target: 1,
      detail: `time per batch (paired ${pairedRatio(results.get(hostName), results.get(sdkName)).toFixed(2)}); ${how}`,
    });
    bench({
      id: `mcp-bridge.concurrency-${mode}-default`,
      label: `${BATCH} concurrent tools/call over ${mode} (server-everything): McpClient at its default maxConcurrentRequests (${DEFAULT_MAX_CONCURRENT_REQUESTS}) vs the faster SDK client (informational: the default bounds a client, it is not set for bursts)`,
      ratio: figure(results.get(defaultName)) / sdkMs,
      target: null,
      detail: `time per batch (paired ${pairedRatio(results.get(defaultName), results.get(sdkName)).toFixed(2)}); ${how}`,
    });
  } finally {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
    await server?.close();
  }
}

const requested = process.argv.slice(2) as Mode[];
for (const mode of requested.length > 0 ? requested : (['stdio', 'http'] as const)) {
  await measure(mode);
}
