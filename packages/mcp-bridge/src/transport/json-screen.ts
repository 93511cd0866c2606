import { JSON_SCREEN_WASM } from './json-screen-wasm.js';
import type { RecordLimits } from './record-limits.js';

/** What this module uses of the WebAssembly global (Node's types leave it out; the DOM's have it). */
interface WebAssemblyApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object) => { readonly exports: unknown };
}

/** The exports of `json-screen.wat`. */
interface ScreenModule {
  readonly memory: { readonly buffer: ArrayBuffer };
  reset(
    maxTokens: number,
    maxDepth: number,
    maxNumber: number,
    inString: number,
    tokens: number,
    depth: number,
  ): void;
  scan(length: number): number;
  finish(): number;
}

/**
 * UTF-16 code units encoded per call: at most three bytes each, so a chunk and the bytes carried
 * from the last one fit the module's 256 KiB memory.
 */
export const CHUNK_CHARS = 65_536;
/** The screen reads whole 64-byte blocks. */
export const BLOCK = 64;
/** The screen's counters are 32-bit; a text (at most 2^30 code units) never reaches this. */
const INT32_MAX = 0x7fff_ffff;
const SPACE = 0x20;

interface Screen {
  readonly screen: ScreenModule;
  readonly bytes: Uint8Array;
}

/** The instance once compiled; null where WebAssembly (with SIMD) is not available here. */
let instance: Screen | null | undefined;
const encoder = new TextEncoder();

function load(): Screen | null {
  if (instance !== undefined) return instance;
  try {
    const wasm = (globalThis as { WebAssembly?: WebAssemblyApi }).WebAssembly;
    if (wasm === undefined) throw new Error('no WebAssembly');
    const module = new wasm.Module(Buffer.from(JSON_SCREEN_WASM, 'base64'));
    const screen = new wasm.Instance(module).exports as ScreenModule;
    instance = { screen, bytes: new Uint8Array(screen.memory.buffer) };
  } catch {
    // No WebAssembly (`--jitless`, a policy that forbids it) or no SIMD: the exact scanner
    // alone reads every record, as it would anyway.
    instance = null;
  }
  return instance;
}

/** Whether the screen can run in this process (compiled at the first call). */
export function screenAvailable(): boolean {
  return load() !== null;
}

/**
 * Screens `text` from `from` to its end: true only when the exact scanner, continuing from
 * `from` with `tokens` and `depth` counted so far, would certainly stay within `limits`; false
 * means "decide exactly" (a limit may be broken, the text may not be JSON, or the screen is not
 * available), never a refusal by itself. `from` must not be an escaped character; `inString`
 * says whether it is inside a string.
 *
 * The text is encoded to UTF-8 in chunks: the structure lives in ASCII bytes, which a UTF-8
 * encoding keeps one to one, and every other code unit (a split surrogate pair too) becomes
 * bytes of 0x80 and above, which the exact scanner and the screen both pass over.
 */
export function screenRest(
  text: string,
  from: number,
  inString: boolean,
  tokens: number,
  depth: number,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
): boolean {
  const loaded = load();
  if (loaded === null) return false;
  const { screen, bytes } = loaded;
  screen.reset(
    Math.min(limits.maxRecordTokens, INT32_MAX),
    Math.min(limits.maxRecordDepth, INT32_MAX),
    Math.min(limits.maxNumberBytes, INT32_MAX),
    inString ? 1 : 0,
    tokens,
    depth,
  );
  let carried = 0;
  for (let start = from; start < text.length; start += CHUNK_CHARS) {
    const chunk = text.slice(start, start + CHUNK_CHARS);
    const { read, written } = encoder.encodeInto(chunk, bytes.subarray(carried));
    if (read !== chunk.length) return false;
    const filled = carried + written;
    const whole = filled - (filled % BLOCK);
    if (screen.scan(whole) !== 0) return false;
    carried = filled - whole;
    bytes.copyWithin(0, whole, filled);
  }
  bytes.fill(SPACE, carried, BLOCK);
  return screen.scan(BLOCK) === 0 && screen.finish() === 0;
}
