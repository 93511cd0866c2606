/**
 * registry.invoke (context check, argument snapshot, lease, ajv validation, RuleBasedPolicy,
 * audit-free pipeline) against calling the same tool's invoke directly after the same
 * pre-compiled ajv validation. Run: npx tsx packages/tools/bench/registry.bench.ts
 */
import {
  AjvSchemaValidator,
  createToolContext,
  type JsonObject,
  RuleBasedPolicy,
  type Tool,
  ToolRegistry,
  textResult,
} from '../src/index.js';

const TARGET_RATIO = 2;
const CALLS_PER_ROUND = 20_000;
const ROUNDS = 9;

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

const tool: Tool = {
  spec: { name: 'fs', description: 'bench file tool', inputSchema, operationArgument: 'operation' },
  async invoke(args) {
    return textResult(args.path as string);
  },
};

function makeArgs(index: number): Record<string, unknown> {
  return {
    path: `/workspace/project/src/file-${index % 100}.ts`,
    operation: index % 3 === 0 ? 'list' : 'read',
    options: { encoding: 'utf8', limit: 100 },
    tags: ['a', 'b', 'c'],
  };
}

async function main(): Promise<void> {
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
  await direct();
  await viaRegistry();
  const directTimes: number[] = [];
  const registryTimes: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    if (round % 2 === 0) {
      directTimes.push(await direct());
      registryTimes.push(await viaRegistry());
    } else {
      registryTimes.push(await viaRegistry());
      directTimes.push(await direct());
    }
  }
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] as number;
  };
  const directMs = median(directTimes);
  const registryMs = median(registryTimes);
  const ratio = registryMs / directMs;
  const directRate = Math.round((CALLS_PER_ROUND / directMs) * 1000);
  const registryRate = Math.round((CALLS_PER_ROUND / registryMs) * 1000);
  const rows = [
    ['path', 'median ms / 20k calls', 'calls/s'],
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
    id: 'tools.registry-invoke',
    label: 'registry.invoke vs direct tool invoke with the same pre-compiled validation',
    ratio: Number(ratio.toFixed(3)),
    target: TARGET_RATIO,
    met: ratio <= TARGET_RATIO,
    detail: `${registryRate} calls/s through the registry, ${directRate} calls/s direct (median of ${ROUNDS} interleaved rounds of ${CALLS_PER_ROUND})`,
  };
  process.stdout.write(`BENCH ${JSON.stringify(line)}\n`);
  await registry.close();
}

await main();
