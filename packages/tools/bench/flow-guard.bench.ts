/**
 * The flow guard's cost per call: registry.invoke of the same tool with a FlowGuard against
 * without one. The tool declares `untrusted` content, so every call is checked in an exposed
 * session (the guard looks for a sink) and its result is recorded (the label is already set).
 *
 * Two figures: a tool that reads a 4 KiB file from a temp dir (the target, <= 1.05x), and
 * a tool that returns a 4 KiB string it holds (the guard's fixed cost with nothing to hide it).
 * Run: npx tsx packages/tools/bench/flow-guard.bench.ts
 */
import { readFile } from 'node:fs/promises';
import { defineContract } from '@toolfence/tool-contract';
import {
  AllowAllAuthorizer,
  createToolContext,
  FlowGuard,
  type JsonObject,
  type Tool,
  ToolRegistry,
  textResult,
} from '@toolfence/tools';
import {
  bench,
  pairedRounds,
  ROUNDS,
  scaled,
  timeCalls,
  withTempFile,
} from './fixtures/harness.js';

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
  const round = (registry: ToolRegistry) => () =>
    timeCalls(calls, () => registry.invoke('read_page', args, context));
  const { baseMs: offMs, testMs: onMs, ratio } = await pairedRounds(round(off), round(on));
  const offRate = Math.round((calls / offMs) * 1000);
  const onRate = Math.round((calls / onMs) * 1000);
  const addedMicros = ((onMs - offMs) * 1000) / calls;
  process.stdout.write(`\n${figure.label}\n`);
  process.stdout.write(`guard off: ${offMs.toFixed(1)} ms / ${calls} calls (${offRate} calls/s)\n`);
  process.stdout.write(`guard on:  ${onMs.toFixed(1)} ms / ${calls} calls (${onRate} calls/s)\n`);
  process.stdout.write(`ratio ${ratio.toFixed(3)} (target <= ${figure.target})\n`);
  bench({
    id: figure.id,
    label: figure.label,
    ratio,
    target: figure.target,
    detail: `${onRate} calls/s with the guard, ${offRate} calls/s without, ${addedMicros.toFixed(2)} µs added per call (median of ${ROUNDS} paired round ratios, ${calls} calls each)`,
  });
  await Promise.all([off.close(), on.close()]);
}

async function main(): Promise<void> {
  await withTempFile('page.html', 'x'.repeat(4096), (file) =>
    measure({
      id: 'tools.flow-guard-file-read',
      label: 'registry.invoke with vs without a FlowGuard (tool reads a 4 KiB file)',
      target: 1.05,
      callsPerRound: scaled(200, 50),
      read: () => readFile(file, 'utf8'),
    }),
  );
  const page = 'x'.repeat(4096);
  await measure({
    id: 'tools.flow-guard-in-memory',
    label: 'registry.invoke with vs without a FlowGuard (tool returns a 4 KiB string it holds)',
    target: 1.25,
    callsPerRound: scaled(20_000, 1_000),
    read: async () => page,
  });
}

await main();
