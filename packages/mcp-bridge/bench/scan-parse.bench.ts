// Structural scan plus parse of an 8 MiB record against JSON.parse alone (target at most 1.5x).
// Two record shapes: one large text block (long strings with escapes: the scan's indexOf path),
// and ~2,000 content blocks (more tokens). Warm-up, then interleaved rounds, median of rounds.
//
//   npx tsx bench/scan-parse.bench.ts
import { DEFAULT_RECORD_LIMITS, parseBoundedJson } from '@toolfence/mcp-bridge';
import { bench, formatMs, median, printTable } from './fixtures/harness.js';

const WARMUP = 5;
const ROUNDS = 21;
const SIZE = 8 * 1024 * 1024;

function record(shape: 'text' | 'blocks'): string {
  const envelope = (content: unknown): string =>
    JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content } });
  if (shape === 'text') {
    const unit = 'lorem ipsum dolor sit amet, "quoted" \\ path and more ';
    let text = unit.repeat(Math.ceil(SIZE / unit.length));
    // shrink until the serialized record (escapes included) fits in 8 MiB
    while (Buffer.byteLength(envelope([{ type: 'text', text }])) > SIZE) {
      text = text.slice(0, text.length - 64 * 1024);
    }
    return envelope([{ type: 'text', text }]);
  }
  const blocks: { type: string; text: string }[] = [];
  while (Buffer.byteLength(envelope(blocks)) < SIZE - 8192) {
    blocks.push({ type: 'text', text: `${'x'.repeat(4000)} block ${blocks.length}` });
  }
  return envelope(blocks);
}

const rows: string[][] = [];
for (const shape of ['text', 'blocks'] as const) {
  const text = record(shape);
  const bytes = Buffer.byteLength(text);
  for (let index = 0; index < WARMUP; index++) {
    JSON.parse(text);
    parseBoundedJson(text, DEFAULT_RECORD_LIMITS);
  }
  const baseline: number[] = [];
  const ours: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const first = round % 2 === 0;
    for (const which of first ? ['base', 'ours'] : ['ours', 'base']) {
      const start = performance.now();
      if (which === 'base') JSON.parse(text);
      else parseBoundedJson(text, DEFAULT_RECORD_LIMITS);
      (which === 'base' ? baseline : ours).push(performance.now() - start);
    }
  }
  const base = median(baseline);
  const scanned = median(ours);
  const ratio = scanned / base;
  rows.push([
    shape,
    (bytes / 1048576).toFixed(2),
    formatMs(base),
    formatMs(scanned),
    ratio.toFixed(2),
  ]);
  bench({
    id: `mcp-bridge.scan-parse-${shape}`,
    label: `structural scan + JSON.parse of an 8 MiB record (${shape === 'text' ? 'one large text block' : '~2,000 content blocks'}) vs JSON.parse alone`,
    ratio,
    target: 1.5,
    detail: `${formatMs(scanned)} ms vs ${formatMs(base)} ms for ${(bytes / 1048576).toFixed(2)} MiB; ${WARMUP} warm-up parses each, ${ROUNDS} interleaved rounds, median`,
  });
}
printTable(
  `scan + parse vs JSON.parse: ${WARMUP} warm-up, ${ROUNDS} interleaved rounds, median`,
  ['record', 'MiB', 'JSON.parse ms', 'scan+parse ms', 'ratio'],
  rows,
);
