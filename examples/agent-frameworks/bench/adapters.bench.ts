/**
 * One tool call through each framework adapter against calling `registry.invoke` directly, on a
 * real FileSystemTool reading a 4 KiB file behind a RiskPolicy (the call is allowed). Each adapter
 * call goes through the framework's own tool entry point: the AI SDK tool's `execute` and
 * `toModelOutput`, the Agents SDK `FunctionTool.invoke` (it parses the JSON arguments), and
 * LangChain's `StructuredTool.invoke` with a tool call (callbacks, JSON Schema check,
 * `ToolMessage`). Run: npx tsx examples/agent-frameworks/bench/adapters.bench.ts
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool as langChainTool } from '@langchain/core/tools';
import { tool as agentsTool, RunContext } from '@openai/agents';
import {
  createToolContext,
  FileSystemTool,
  RiskPolicy,
  type Tool,
  ToolRegistry,
  textResult,
} from '@toolfence/tools';
import { aiSdkTools } from '@toolfence/tools/ai-sdk';
import { langChainTools } from '@toolfence/tools/langchain';
import { openAiAgentsTools } from '@toolfence/tools/openai-agents';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 9;
const CALLS_PER_ROUND = QUICK ? 50 : 1_000;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function time(call: (index: number) => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let index = 0; index < CALLS_PER_ROUND; index += 1) await call(index);
  return Number(process.hrtime.bigint() - start) / 1e6;
}

interface Figure {
  readonly id: string;
  readonly label: string;
  readonly tool: Tool;
  readonly args: Record<string, unknown>;
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'toolfence-adapters-bench-'));
  await writeFile(join(root, 'data.txt'), 'x'.repeat(4096));
  try {
    await measure({
      id: '',
      label: 'FileSystemTool, 4 KiB read',
      tool: new FileSystemTool({ root }),
      args: { operation: 'read', path: 'data.txt' },
    });
    await measure({
      id: '-no-op',
      label: 'a tool that returns a constant text: the fixed cost alone',
      tool: {
        spec: {
          name: 'filesystem',
          description: 'no-op',
          inputSchema: { type: 'object', properties: { operation: { type: 'string' } } },
        },
        invoke: async () => textResult('ok'),
      },
      args: { operation: 'read' },
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function measure(figure: Figure): Promise<void> {
  const registry = new ToolRegistry({
    authorizer: new RiskPolicy({ overrides: { filesystem: { risk: 'read-only' } } }),
    tools: [figure.tool],
  });
  await registry.ready();
  const args = figure.args;
  const run = { runId: 'bench' };
  const context = createToolContext(run);

  const aiTool = aiSdkTools(registry, { context: run }).filesystem as unknown as {
    execute: (input: unknown, options: unknown) => Promise<unknown>;
    toModelOutput: (options: unknown) => unknown;
    needsApproval: (input: unknown, options: unknown) => Promise<boolean>;
  };
  const adaptedAgents = openAiAgentsTools(registry, { context: run })[0];
  const adaptedLangChain = langChainTools(registry, { context: run })[0];
  if (adaptedAgents === undefined || adaptedLangChain === undefined) throw new Error('no tools');
  // Hand-written glue in each framework (what a user writes without the adapter): the same
  // framework entry point around a bare registry.invoke, to tell the framework's own cost from
  // the adapter's.
  const agentsGlue = agentsTool({
    name: 'filesystem',
    description: 'glue',
    parameters: figure.tool.spec.inputSchema as never,
    strict: false,
    execute: async (input: unknown) =>
      JSON.stringify((await registry.invoke('filesystem', input, run)).content),
  });
  const langChainGlue = langChainTool(
    async (input: unknown) =>
      JSON.stringify((await registry.invoke('filesystem', input, run)).content),
    { name: 'filesystem', description: 'glue', schema: figure.tool.spec.inputSchema as never },
  );
  const runContext = new RunContext();
  const argsJson = JSON.stringify(args);

  const paths: Record<string, (index: number) => Promise<unknown>> = {
    'registry.invoke': () => registry.invoke('filesystem', args, context),
    'ai-sdk': async (index) => {
      const options = { toolCallId: `c${index}`, messages: [], context: {} };
      // The SDK asks needsApproval before every call (the adapter's authorize preview).
      if ((await aiTool.needsApproval(args, options)) !== false) throw new Error('asked');
      const output = await aiTool.execute(args, options);
      return aiTool.toModelOutput({ toolCallId: `c${index}`, input: args, output });
    },
    'openai-agents': async (index) => {
      // The runner asks needsApproval before every call (the adapter's authorize preview).
      if (await adaptedAgents.needsApproval(runContext, args as never, `c${index}`))
        throw new Error('asked');
      return adaptedAgents.invoke(runContext, argsJson, {
        toolCall: {
          type: 'function_call',
          callId: `c${index}`,
          name: 'filesystem',
          arguments: argsJson,
        },
      });
    },
    langchain: (index) =>
      adaptedLangChain.invoke({ name: 'filesystem', args, id: `c${index}`, type: 'tool_call' }),
    'openai-agents glue': (index) =>
      agentsGlue.invoke(runContext, argsJson, {
        toolCall: {
          type: 'function_call',
          callId: `c${index}`,
          name: 'filesystem',
          arguments: argsJson,
        },
      }),
    'langchain glue': (index) =>
      langChainGlue.invoke({ name: 'filesystem', args, id: `c${index}`, type: 'tool_call' }),
  };
  const names = Object.keys(paths);
  const baselinePath = paths['registry.invoke'] as (index: number) => Promise<unknown>;
  // Each path is timed in a pair with the baseline (interleaved rounds, alternating order), so
  // garbage left by one framework does not land on another's figure.
  const ratios = new Map<string, { ratio: number; ms: number; baseline: number }>();
  for (const name of names.slice(1)) {
    const path = paths[name] as (index: number) => Promise<unknown>;
    await time(path);
    await time(baselinePath);
    const pathTimes: number[] = [];
    const baselineTimes: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      if (round % 2 === 0) {
        baselineTimes.push(await time(baselinePath));
        pathTimes.push(await time(path));
      } else {
        pathTimes.push(await time(path));
        baselineTimes.push(await time(baselinePath));
      }
    }
    const ms = median(pathTimes);
    const baseline = median(baselineTimes);
    ratios.set(name, { ratio: ms / baseline, ms, baseline });
  }
  process.stdout.write(
    `\n${figure.label}: each path paired with registry.invoke, median of ${ROUNDS} interleaved rounds of ${CALLS_PER_ROUND} calls\n`,
  );
  process.stdout.write(
    `${'path'.padEnd(20)}${'µs / call'.padStart(12)}${'baseline µs'.padStart(13)}${'ratio'.padStart(8)}\n`,
  );
  for (const [name, figureOf] of ratios) {
    process.stdout.write(
      `${name.padEnd(20)}${((figureOf.ms * 1000) / CALLS_PER_ROUND).toFixed(1).padStart(12)}${((figureOf.baseline * 1000) / CALLS_PER_ROUND).toFixed(1).padStart(13)}${figureOf.ratio.toFixed(2).padStart(8)}\n`,
    );
  }
  for (const [name, figureOf] of ratios) {
    if (name.endsWith(' glue')) continue;
    const glue = ratios.get(`${name} glue`);
    const line = {
      id: `agent-frameworks.${name}${figure.id}`,
      label: `one call through the ${name} adapter vs registry.invoke (${figure.label}; informational: an adapter is judged against the same framework's hand-written glue in packages/tools/bench/adapters.bench.ts)`,
      ratio: Number(figureOf.ratio.toFixed(3)),
      target: null,
      detail: `${glue === undefined ? '' : `hand-written glue in the same framework: ${glue.ratio.toFixed(2)}x; `}${(((figureOf.ms - figureOf.baseline) * 1000) / CALLS_PER_ROUND).toFixed(1)} µs added per call over ${((figureOf.baseline * 1000) / CALLS_PER_ROUND).toFixed(1)} µs (median of ${ROUNDS} interleaved rounds of ${CALLS_PER_ROUND})`,
    };
    process.stdout.write(`BENCH ${JSON.stringify(line)}\n`);
  }
  await registry.close();
}

await main();
