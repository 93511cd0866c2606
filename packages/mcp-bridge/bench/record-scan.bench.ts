// The structural scan every record passes before JSON.parse: parseBoundedJson (scan + parse, as
// the transports run it) against JSON.parse alone, on 8 MiB JSON-RPC records that stay within
// the default limits (8 MiB, 20,001 tokens, depth 64), in three shapes:
// - `text blocks`: a tools/call result of 2,000 text blocks of about 4 KiB (about 10,000 tokens);
// - `one string`: one text block holding the whole 8 MiB;
// - `escaped`: source-code-like text dense with escaped quotes, backslashes and newlines
//   (a stress shape: an escape every few characters);
// - `dense-then-plain`: 100 escaped quotes, then one plain run to the end of the string;
// - `short-dense`: 19,000 strings of 8 escaped quotes and 420 plain characters.
// The last two were the scan's worst shapes before the WebAssembly screen (2.3x and 2.9x: the
// regular expression that skips dense escapes backtracked over the plain runs after them).
// A full GC runs (untimed) before every timed run, so one side's garbage is not charged to the other.
//
//   npx tsx bench/record-scan.bench.ts
import { DEFAULT_RECORD_LIMITS, parseBoundedJson, scanJsonStructure } from '@toolfence/mcp-bridge';
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

const TARGET_BYTES = 8 * 1024 * 1024 - 4096;

/** A tools/call result record holding `content` (text blocks, or bare strings for the last shape). */
function record(content: readonly unknown[]): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 42, result: { content, isError: false } });
}

function fill(unit: string, bytes: number): string {
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

const prose =
  'The quick brown fox jumps over the lazy dog while the benchmark measures a record. 0123456789 ';
const code =
  '  if (path === "C:\\\\temp\\\\x") { console.log("say \\"hi\\"", \'q\'); }\n\treturn {"a": [1, 2]};\n';

function textBlocks(): string {
  const block = { type: 'text', text: fill(prose, 4096) };
  const perBlock = JSON.stringify(block).length + 1;
  const count = Math.floor((TARGET_BYTES - record([]).length) / perBlock);
  return record(Array.from({ length: count }, () => block));
}

function oneString(): string {
  const overhead = record([{ type: 'text', text: '' }]).length;
  return record([{ type: 'text', text: fill(prose, TARGET_BYTES - overhead) }]);
}

function escaped(): string {
  // JSON.stringify escapes the quotes, backslashes and newlines of `code`: measure after escaping.
  const overhead = record([{ type: 'text', text: '' }]).length;
  const growth = JSON.stringify(code).length / code.length;
  const length = Math.floor((TARGET_BYTES - overhead) / growth) - 64;
  const text = record([{ type: 'text', text: fill(code, length) }]);
  if (text.length > TARGET_BYTES) throw new Error('escaped record over target');
  return text;
}

function denseThenPlain(): string {
  const overhead = record([{ type: 'text', text: '' }]).length;
  return record([
    { type: 'text', text: `${'"'.repeat(100)}${'x'.repeat(TARGET_BYTES - overhead - 200)}` },
  ]);
}

function shortDense(): string {
  const unit = `${'"'.repeat(8)}${'y'.repeat(420)}`;
  return record(Array.from({ length: 19_000 }, () => unit));
}

// Built one at a time, so only the measured record is alive (a forced GC stays cheap).
const SHAPES: readonly { name: string; id: string; make: () => string }[] = [
  { name: 'text blocks (2,000 x 4 KiB)', id: 'text-blocks', make: textBlocks },
  { name: 'one 8 MiB string', id: 'one-string', make: oneString },
  { name: 'escape-dense source text', id: 'escaped', make: escaped },
  { name: '100 escaped quotes, then plain text', id: 'dense-then-plain', make: denseThenPlain },
  { name: '19,000 short strings, 8 escaped quotes each', id: 'short-dense', make: shortDense },
];

const gc = forcedGc();
const WARMUP = scaled(5, 1);
const ROUNDS = scaled(50, 2);
const PER_ROUND = 2;
const rows: string[][] = [];
const started = performance.now();
for (const shape of SHAPES) {
  const text = shape.make();
  const bytes = Buffer.byteLength(text);
  if (bytes > DEFAULT_RECORD_LIMITS.maxRecordBytes) throw new Error(`${shape.id} is over 8 MiB`);
  // Same result both ways, and within the default limits.
  const parsed = parseBoundedJson(text, DEFAULT_RECORD_LIMITS) as { id: number };
  if (parsed.id !== 42 || JSON.stringify(parsed) !== text) throw new Error('parse mismatch');
  const contenders: Contender[] = [
    { name: 'parseBoundedJson', run: async () => parseBoundedJson(text, DEFAULT_RECORD_LIMITS) },
    { name: 'JSON.parse', run: async () => JSON.parse(text) },
    { name: 'scanJsonStructure', run: async () => scanJsonStructure(text, DEFAULT_RECORD_LIMITS) },
  ];
  const results = await interleave(contenders, {
    warmup: WARMUP,
    rounds: ROUNDS,
    perRound: PER_ROUND,
    beforeEach: gc,
  });
  const ours = figure(results.get('parseBoundedJson'));
  const baseline = figure(results.get('JSON.parse'));
  const scan = figure(results.get('scanJsonStructure'));
  const paired = pairedRatio(results.get('parseBoundedJson'), results.get('JSON.parse'));
  rows.push([
    shape.name,
    `${(bytes / 1024 / 1024).toFixed(2)} MiB`,
    formatMs(scan),
    formatMs(baseline),
    formatMs(ours),
    (ours / baseline).toFixed(2),
    paired.toFixed(2),
  ]);
  bench({
    id: `mcp-bridge.record-scan-${shape.id}`,
    label: `structural scan + parse of an 8 MiB record (${shape.name}) vs JSON.parse alone`,
    // The paired ratio (each round's two medians side by side) cancels the load drifting
    // between rounds on a shared machine; the ratio of the overall medians is in the detail.
    ratio: paired,
    target: 1.3,
    detail: `per-round paired ratio ${paired.toFixed(2)} (ratio of medians ${(ours / baseline).toFixed(2)}); parseBoundedJson ${formatMs(ours)} ms (scan alone ${formatMs(scan)} ms) vs JSON.parse ${formatMs(baseline)} ms on ${bytes} bytes, default limits; ${WARMUP} warm-up runs each, ${ROUNDS} interleaved rounds x ${PER_ROUND}, median of round medians`,
  });
}
printTable(
  `8 MiB records: ${WARMUP} warm-up runs each, ${ROUNDS} interleaved rounds x ${PER_ROUND} runs, median of round medians (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  ['record', 'size', 'scan ms', 'JSON.parse ms', 'scan + parse ms', 'ratio', 'paired ratio'],
  rows,
);
