/**
 * The flow guard's cost per call: registry.invoke of the same tool with a FlowGuard against
 * without one. The tool declares `untrusted` content, so every call is checked in an exposed
 * session (the guard looks for a sink) and its result is recorded (the label is already set).
 *
 * Two figures: a tool that reads a 4 KiB file from a temp dir (the target, <= 1.05x), and
 * a tool that returns a 4 KiB string it holds (the guard's fixed cost with nothing to hide it).
 * Run: npx tsx packages/tools/bench/flow-guard.bench.ts
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineContract } from '@toolfence/tool-contract';
import {
  AllowAllAuthorizer,
  createToolContext,
  FlowGuard,
  type JsonObject,
  type Tool,
  ToolRegistry,
  textResult,
} from '../src/index.js';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 21;

const inputSchema: JsonObject = {
  type: 'object',
  properties: { path: { type: 'string', maxLength: 4096 } },
  required: ['path'],
  additionalProperties: false,
};

function makeTool(read: (path: string) => Promise<string>): Tool {
  return {
    spec: {
      name: 'read_page',
      description: 'bench reader',
      inputSchema,
      contract: defineContract({
        risk: 'read-only',
        contentTrust: 'untrusted',
        idempotent: true,
        version: '1.0.0',
      }),
    },
    async invoke(args) {
      return textResult(await read(args.path as string));
    },
  };
}

interface Figure {
  readonly id: string;
  readonly label: string;
  readonly target: number;
  readonly callsPerRound: number;
  readonly read: (path: string) => Promise<string>;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function measure(figure: Figure): Promise<void> {
  const calls = figure.callsPerRound;
  const off = new ToolRegistry({
    authorizer: new AllowAllAuthorizer(),
    tools: [makeTool(figure.read)],
  });
  const on = new ToolRegistry({
    authorizer: new AllowAllAuthorizer(),
    tools: [makeTool(figure.read)],
    flowGuard: new FlowGuard(),
  });
  await Promise.all([off.ready(), on.ready()]);
  const context = createToolContext({ runId: 'bench', session: 'bench-session' });
  const args = { path: '/workspace/page.html' };
  const round = async (registry: ToolRegistry): Promise<number> => {
    const start = process.hrtime.bigint();
    for (let index = 0; index < calls; index += 1) {
      await registry.invoke('read_page', args, context);
    }
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  for (let warm = 0; warm < (QUICK ? 1 : 3); warm += 1) {
    await round(off);
    await round(on);
  }
  // Paired rounds in alternating order; the figure is the median round ratio.
  const offTimes: number[] = [];
  const onTimes: number[] = [];
  const ratios: number[] = [];
  for (let index = 0; index < ROUNDS; index += 1) {
    let offMs: number;
    let onMs: number;
    if (index % 2 === 0) {
      offMs = await round(off);
      onMs = await round(on);
    } else {
      onMs = await round(on);
      offMs = await round(off);
    }
    offTimes.push(offMs);
    onTimes.push(onMs);
    ratios.push(onMs / offMs);
  }
  const offMs = median(offTimes);
  const onMs = median(onTimes);
  const ratio = median(ratios);
  const offRate = Math.round((calls / offMs) * 1000);
  const onRate = Math.round((calls / onMs) * 1000);
  const addedMicros = ((onMs - offMs) * 1000) / calls;
  process.stdout.write(`\n${figure.label}\n`);
  process.stdout.write(`guard off: ${offMs.toFixed(1)} ms / ${calls} calls (${offRate} calls/s)\n`);
  process.stdout.write(`guard on:  ${onMs.toFixed(1)} ms / ${calls} calls (${onRate} calls/s)\n`);
  process.stdout.write(`ratio ${ratio.toFixed(3)} (target <= ${figure.target})\n`);
  const line = {
    id: figure.id,
    label: figure.label,
    ratio: Number(ratio.toFixed(3)),
    target: figure.target,
    met: ratio <= figure.target,
    detail: `${onRate} calls/s with the guard, ${offRate} calls/s without, ${addedMicros.toFixed(2)} µs added per call (median of ${ROUNDS} paired round ratios, ${calls} calls each)`,
  };
  process.stdout.write(`BENCH ${JSON.stringify(line)}\n`);
  await Promise.all([off.close(), on.close()]);
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), 'toolfence-bench-'));
  try {
    const file = join(directory, 'page.html');
    await writeFile(file, 'x'.repeat(4096));
    await measure({
      id: 'tools.flow-guard-file-read',
      label: 'registry.invoke with vs without a FlowGuard (tool reads a 4 KiB file)',
      target: 1.05,
      callsPerRound: QUICK ? 50 : 200,
      read: () => readFile(file, 'utf8'),
    });
    const page = 'x'.repeat(4096);
    await measure({
      id: 'tools.flow-guard-in-memory',
      label: 'registry.invoke with vs without a FlowGuard (tool returns a 4 KiB string it holds)',
      target: 1.25,
      callsPerRound: QUICK ? 1_000 : 20_000,
      read: async () => page,
    });
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
