/**
 * registry.invoke (context check, argument snapshot, lease, ajv validation, RuleBasedPolicy)
 * against calling the same tool's invoke directly after the same pre-compiled ajv validation.
 *
 * Two figures: a tool that does nothing (the registry's whole fixed cost against ~nothing), and
 * the same comparison with a tool that reads a 4 KiB file from a temp dir (a realistic local
 * tool). Run: npx tsx packages/tools/bench/registry.bench.ts
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AjvSchemaValidator,
  createToolContext,
  type JsonObject,
  RuleBasedPolicy,
  type Tool,
  ToolRegistry,
  textResult,
} from '../src/index.js';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 21;

const inputSchema: JsonObject = {
  type: 'object',
  properties: {
    path: { type: 'string', maxLength: 4096 },
    operation: { type: 'string', enum: ['read', 'write', 'list'] },
    options: {
      type: 'object',
      properties: { encoding: { type: 'string' }, limit: { type: 'integer', minimum: 1 } },
    },
    tags: { type: 'array', items: { type: 'string' } },
  },
  required: ['path', 'operation'],
  additionalProperties: false,
};

function makeTool(read: ((path: string) => Promise<string>) | undefined): Tool {
  return {
    spec: {
      name: 'fs',
      description: 'bench file tool',
      inputSchema,
      operationArgument: 'operation',
    },
    async invoke(args) {
      const path = args.path as string;
      return textResult(read === undefined ? path : await read(path));
    },
  };
}

function makeArgs(index: number): Record<string, unknown> {
  return {
    path: `/workspace/project/src/file-${index % 100}.ts`,
    operation: index % 3 === 0 ? 'list' : 'read',
    options: { encoding: 'utf8', limit: 100 },
    tags: ['a', 'b', 'c'],
  };
}

interface Figure {
  readonly id: string;
  readonly label: string;
  readonly target: number;
  readonly callsPerRound: number;
  readonly read: ((path: string) => Promise<string>) | undefined;
}

async function measure(figure: Figure): Promise<void> {
  const CALLS_PER_ROUND = figure.callsPerRound;
  const tool = makeTool(figure.read);
  const validator = new AjvSchemaValidator();
  const registry = new ToolRegistry({
    authorizer: new RuleBasedPolicy([
      { tool: 'shell', decision: 'deny' },
      { tool: 'fs', operation: 'write', decision: 'ask' },
      { tool: 'fs', operation: ['read', 'list'], decision: 'allow' },
    ]),
    validator,
    tools: [tool],
  });
  await registry.ready();
  const context = createToolContext({ runId: 'bench', metadata: { user: 'u1' } });
  const check = validator.compile(inputSchema);

  const direct = async (): Promise<number> => {
    const start = process.hrtime.bigint();
    for (let index = 0; index < CALLS_PER_ROUND; index += 1) {
      const args = makeArgs(index) as JsonObject;
      if (!check(args).valid) throw new Error('invalid');
      await tool.invoke(args, context);
    }
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const viaRegistry = async (): Promise<number> => {
    const start = process.hrtime.bigint();
    for (let index = 0; index < CALLS_PER_ROUND; index += 1) {
      await registry.invoke('fs', makeArgs(index), context);
    }
    return Number(process.hrtime.bigint() - start) / 1e6;
  };

  // Warm-up.
  for (let round = 0; round < (QUICK ? 1 : 3); round += 1) {
    await direct();
    await viaRegistry();
  }
  // Paired rounds in alternating order: each round's ratio compares two back-to-back runs, so the
  // changing load of a shared machine cancels out; the figure is the median round ratio.
  const directTimes: number[] = [];
  const registryTimes: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    let directMs: number;
    let registryMs: number;
    if (round % 2 === 0) {
      directMs = await direct();
      registryMs = await viaRegistry();
    } else {
      registryMs = await viaRegistry();
      directMs = await direct();
    }
    directTimes.push(directMs);
    registryTimes.push(registryMs);
    ratios.push(registryMs / directMs);
  }
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] as number;
  };
  const directMs = median(directTimes);
  const registryMs = median(registryTimes);
  const ratio = median(ratios);
  const TARGET_RATIO = figure.target;
  const directRate = Math.round((CALLS_PER_ROUND / directMs) * 1000);
  const registryRate = Math.round((CALLS_PER_ROUND / registryMs) * 1000);
  const overheadMicros = ((registryMs - directMs) * 1000) / CALLS_PER_ROUND;
  process.stdout.write(`\n${figure.label}\n`);
  const rows = [
    ['path', `median ms / ${CALLS_PER_ROUND} calls`, 'calls/s'],
    ['direct invoke + pre-compiled validation', directMs.toFixed(1), String(directRate)],
    [
      'registry.invoke (snapshot, validation, rules, lease)',
      registryMs.toFixed(1),
      String(registryRate),
    ],
  ];
  for (const row of rows)
    process.stdout.write(`${row[0]?.padEnd(56)}${row[1]?.padStart(24)}${row[2]?.padStart(12)}\n`);
  process.stdout.write(`ratio ${ratio.toFixed(2)} (target <= ${TARGET_RATIO})\n`);
  const line = {
    id: figure.id,
    label: figure.label,
    ratio: Number(ratio.toFixed(3)),
    target: TARGET_RATIO,
    met: ratio <= TARGET_RATIO,
    detail: `${registryRate} calls/s through the registry, ${directRate} calls/s direct, ${overheadMicros.toFixed(2)} µs added per call (median of ${ROUNDS} paired round ratios, ${CALLS_PER_ROUND} calls each)`,
  };
  process.stdout.write(`BENCH ${JSON.stringify(line)}\n`);
  await registry.close();
}

async function main(): Promise<void> {
  await measure({
    id: 'tools.registry-invoke',
    label: 'registry.invoke vs direct invoke + pre-compiled validation (no-op tool)',
    target: 2,
    callsPerRound: QUICK ? 1_000 : 20_000,
    read: undefined,
  });
  const directory = await mkdtemp(join(tmpdir(), 'toolfence-bench-'));
  try {
    const file = join(directory, 'data.txt');
    await writeFile(file, 'x'.repeat(4096));
    await measure({
      id: 'tools.registry-invoke-file-read',
      label: 'registry.invoke vs direct invoke + pre-compiled validation (tool reads a 4 KiB file)',
      target: 1.05,
      callsPerRound: QUICK ? 50 : 200,
      read: () => readFile(file, 'utf8'),
    });
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
