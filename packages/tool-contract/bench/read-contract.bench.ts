// How much readContract and catalogFingerprint cost a gateway, next to what it already pays for
// the same tools/list: the MCP SDK's own schema parse of each tool, and a plain (non-canonical)
// JSON.stringify + SHA-256. The issue sets no target, so the figures are informational.
// Run: npx tsx bench/read-contract.bench.ts
import { createHash } from 'node:crypto';
import { ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  CONTENT_TRUST_LEVELS,
  catalogFingerprint,
  defineContract,
  RISK_LEVELS,
  readContract,
  type ToolListEntry,
  withContractAnnotations,
} from '@toolfence/tool-contract';

// `pnpm bench --quick` (TOOLFENCE_BENCH_QUICK=1): a few rounds, to prove the benchmark still runs.
const QUICK = process.env.TOOLFENCE_BENCH_QUICK === '1';
const TOOLS = 200;
const ROUNDS = QUICK ? 2 : 15;
const WARMUP = QUICK ? 1 : 3;

const catalog: ToolListEntry[] = [];
for (let index = 0; index < TOOLS; index += 1) {
  const base = {
    name: `tool_${index}`,
    description: `Gets record ${index} from the store and returns it as JSON.`,
    inputSchema: {
      type: 'object',
      properties: { id: { type: 'string' }, limit: { type: 'number' } },
      required: ['id'],
    },
  };
  // Three in four tools declare; the rest go through the heuristic.
  catalog.push(
    index % 4 === 3
      ? base
      : withContractAnnotations(
          defineContract({
            risk: RISK_LEVELS[index % RISK_LEVELS.length] ?? 'read-only',
            contentTrust: CONTENT_TRUST_LEVELS[index % CONTENT_TRUST_LEVELS.length] ?? 'trusted',
            version: '1.2.3',
            aliases: [`alias_${index}`],
          }),
          base,
        ),
  );
}

function time(run: () => void): number {
  const start = process.hrtime.bigint();
  run();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function compare(id: string, label: string, ours: () => void, baseline: () => void): void {
  const oursTimes: number[] = [];
  const baselineTimes: number[] = [];
  for (let round = 0; round < WARMUP + ROUNDS; round += 1) {
    // Interleaved, alternating which side goes first.
    const first = round % 2 === 0;
    const a = first ? time(ours) : Number.NaN;
    const b = time(baseline);
    const c = first ? Number.NaN : time(ours);
    if (round < WARMUP) continue;
    oursTimes.push(first ? a : c);
    baselineTimes.push(b);
  }
  const oursMs = median(oursTimes);
  const baselineMs = median(baselineTimes);
  const ratio = Number((oursMs / baselineMs).toFixed(2));
  console.log(
    `${label.padEnd(58)} ours ${oursMs.toFixed(2).padStart(8)} ms  baseline ${baselineMs.toFixed(2).padStart(8)} ms  ratio ${ratio}`,
  );
  console.log(
    `BENCH ${JSON.stringify({
      id: `tool-contract.${id}`,
      label,
      ratio,
      target: null,
      met: true,
      detail: `${TOOLS} tools x 20 passes, median of ${ROUNDS} rounds: ${oursMs.toFixed(1)} ms vs ${baselineMs.toFixed(1)} ms`,
    })}`,
  );
}

const PASSES = 20;
compare(
  'read-contract',
  'readContract vs the SDK ToolSchema parse, per tools/list',
  () => {
    for (let pass = 0; pass < PASSES; pass += 1) for (const tool of catalog) readContract(tool);
  },
  () => {
    for (let pass = 0; pass < PASSES; pass += 1) for (const tool of catalog) ToolSchema.parse(tool);
  },
);
compare(
  'catalog-fingerprint',
  'catalogFingerprint vs JSON.stringify + sha256 (unsorted)',
  () => {
    for (let pass = 0; pass < PASSES; pass += 1) catalogFingerprint(catalog);
  },
  () => {
    for (let pass = 0; pass < PASSES; pass += 1) {
      createHash('sha256').update(JSON.stringify(catalog)).digest('hex');
    }
  },
);
