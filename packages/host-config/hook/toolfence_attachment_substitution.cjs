// toolfence attachment substitution hook. protocol=1
//
// Shipped by @toolfence/host-config as `toolfence_attachment_substitution.cjs`. Run it as
// `node toolfence_attachment_substitution.cjs` (Node 18 or newer); it has no dependencies.
//
// It reads one pre-tool-use hook event on stdin (Claude Code, Codex CLI, Cursor or VS Code) and,
// when the tool input has a top-level `attachment: { source: "file:///abs/path", ... }` or
// `attachments: [{ source: "file:///abs/path", ... }, ...]`, answers in that client's own output
// form with the whole tool input, each such `source` replaced by `data:<mime>;base64,<bytes>`.
// Anything else is left untouched. A call it cannot serve safely is denied with a reason.
// With nothing to do it exits 0 and prints nothing (`{}` for Cursor), quickly.
//
// Security: the hook reads any file the user running the client can read, unless an allowlist
// of directories is set (TOOLFENCE_HOOK_ALLOWED_ROOTS, or `allowedRoots` in
// toolfence_attachment_substitution.config.json next to this file). Well-known credential
// locations (~/.ssh, ~/.aws, .env files, /etc/shadow, private keys, ...) are refused unless
// TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES=0 or `denyCredentialFiles: false`: defence in depth, not a
// boundary (a copy of a secret under another name is not recognised).
// Docs: https://github.com/toolfence/toolfence/tree/main/packages/host-config#readme

// CommonJS on purpose: clients start the hook for every tool call (VS Code and Cursor for every
// call, attachment or not), and on Node 20 an ES module pays for the ESM loader before its first
// line runs (about 3.5 ms, some 7% of `node -e 0`); a `.cjs` file starts as fast as `node -e 0`.
// `fs` and `path` are loaded by Node's own start-up already, so requiring them costs nothing.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

/** Largest single file the hook inlines, in bytes (25 MiB). */
const MAX_BYTES = 26214400;
/** Default per-call budget: all inlined files together, in bytes (25 MiB). */
const MAX_TOTAL_BYTES = 26214400;
/** Default cap on the hook event read from stdin, in bytes (64 MiB). */
const MAX_INPUT_BYTES = 67108864;
/** Highest value any byte limit may be set to (256 MiB keeps base64 below V8's string limit). */
const LIMIT_CEILING = 268435456;
/** Default cap on how deeply a tool input with a file attachment may nest (objects and arrays). */
const MAX_DEPTH = 100;
/** Highest value the nesting limit may be set to (JSON.stringify must not run out of stack). */
const DEPTH_CEILING = 1000;
/** Default cap on the file attachments one call may carry (each is opened, checked and read). */
const MAX_ATTACHMENTS = 100;
/** Highest value the attachment cap may be set to. */
const ATTACHMENTS_CEILING = 100000;
/** Digits of the attachment number in a marker: every marker has the same length. */
const MARKER_INDEX_DIGITS = 8;
/** Default quiet time: a file changed less than this many milliseconds ago is re-checked first. */
const SETTLE_MS = 100;
/** Highest quiet time that may be configured, in milliseconds. */
const SETTLE_CEILING_MS = 10000;
/** Largest config file the hook reads, in bytes. */
const MAX_CONFIG_BYTES = 65536;
const CONFIG_FILENAME = 'toolfence_attachment_substitution.config.json';
/** Bytes compared per step when a file is read a second time to prove it did not change. */
const VERIFY_CHUNK_BYTES = 1024 * 1024;
/** Size of the first stdin read, in bytes; the buffer doubles when an event is larger. */
const STDIN_FIRST_READ_BYTES = 65536;
/** Bytes base64-encoded per stdout write (a multiple of 3, so chunks join without padding). */
const ENCODE_CHUNK_BYTES = 3 * 1024 * 1024;

/**
 * @typedef {'claude-code' | 'codex' | 'cursor' | 'vscode'} Dialect
 * @typedef {{ [key: string]: unknown }} JsonObject
 * @typedef {{ allowedRoots: string[] | undefined, givenRoots?: string[], rootsAsWritten?: string[], denyCredentialFiles: boolean, maxBytes: number, maxTotalBytes: number, maxDepth: number, maxAttachments: number, settleMs: number, toolkitBudgets: Map<string, number> }} HookConfig
 * @typedef {{ name: string, bytes: number }} ToolkitBudget
 * @typedef {{ holder: JsonObject, where: string, item: JsonObject, index: number }} Slot
 * @typedef {{ marker: string, prefix: string, bytes: Buffer, target: JsonObject }} Payload
 * @typedef {{ markerPrefix: string, payloads: Payload[] }} Markers
 */

/** A refusal with a stable code; the message never contains file contents. */
class Denial {
  /**
   * @param {string} code
   * @param {string} message
   */
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}

/**
 * @param {unknown} value
 * @returns {value is JsonObject}
 */
function isObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads stdin, refusing more than `limit` bytes: straight into one buffer that grows as needed,
 * never reading more than one byte past the limit. Uses blocking reads when fd 0 allows them and
 * falls back to the stream API when it is non-blocking (EAGAIN).
 * @param {number} limit
 * @param {(bytes: Buffer | undefined) => void} done `undefined` when the input is too large
 */
function readStdin(limit, done) {
  let bytes = Buffer.allocUnsafe(Math.min(STDIN_FIRST_READ_BYTES, limit + 1));
  let total = 0;
  try {
    for (;;) {
      if (total === bytes.length) {
        const grown = Buffer.allocUnsafe(Math.min(bytes.length * 2, limit + 1));
        bytes.copy(grown, 0, 0, total);
        bytes = grown;
      }
      const count = fs.readSync(0, bytes, total, bytes.length - total, null);
      if (count === 0) return done(bytes.subarray(0, total));
      total += count;
      if (total > limit) return done(undefined);
    }
  } catch (error) {
    const code = /** @type {{ code?: unknown }} */ (error).code;
    if (code !== 'EAGAIN') return done(bytes.subarray(0, total));
  }
  /** @type {Buffer[]} */
  const chunks = [bytes.subarray(0, total)];
  let settled = false;
  process.stdin.on('data', (/** @type {Buffer} */ chunk) => {
    if (settled) return;
    total += chunk.length;
    if (total > limit) {
      settled = true;
      process.stdin.destroy();
      done(undefined);
      return;
    }
    chunks.push(chunk);
  });
  const settle = () => {
    if (settled) return;
    settled = true;
    done(Buffer.concat(chunks, total));
  };
  process.stdin.on('end', settle);
  process.stdin.on('error', settle);
}

/**
 * Which client sent this event, judged by its stdin shape; undefined for anything that is not a
 * pre-tool-use event this hook understands.
 * @param {JsonObject} event
 * @returns {Dialect | undefined}
 */
function detectDialect(event) {
  if (Object.hasOwn(event, 'hookEventName')) {
    return event.hookEventName === 'PreToolUse' ? 'vscode' : undefined;
  }
  if (event.hook_event_name === 'preToolUse') return 'cursor';
  if (event.hook_event_name === 'PreToolUse') {
    // Cursor running a hook from Claude settings: answer in Cursor's own form.
    if (Object.hasOwn(event, 'cursor_version')) return 'cursor';
    return Object.hasOwn(event, 'turn_id') ? 'codex' : 'claude-code';
  }
  return undefined;
}

/**
 * The attachment items of a tool input: top level only, by structure.
 * @param {JsonObject} input
 * @returns {Slot[]}
 */
function findAttachments(input) {
  /** @type {Slot[]} */
  const slots = [];
  const single = input.attachment;
  if (isObject(single) && Object.hasOwn(single, 'source')) {
    slots.push({ holder: input, where: 'attachment', item: single, index: -1 });
  }
  const list = input.attachments;
  if (Array.isArray(list)) {
    list.forEach((item, index) => {
      if (isObject(item) && Object.hasOwn(item, 'source')) {
        slots.push({ holder: input, where: `attachments[${index}]`, item, index });
      }
    });
  }
  return slots;
}

/**
 * @param {unknown} value
 * @returns {boolean}
 */
function isFileUrlLike(value) {
  return typeof value === 'string' && /^\s*file:/i.test(value);
}

/**
 * @param {unknown} source
 * @returns {boolean}
 */
function hasFileScheme(source) {
  return typeof source === 'string' && /^file:/i.test(source);
}

/**
 * Turns a `file://` URL into an absolute local path, or throws a Denial.
 * @param {string} url
 * @returns {string}
 */
function fileUrlToLocalPath(url) {
  if (!/^file:\/\//i.test(url)) {
    throw new Denial(
      'HOOK_FILE_PATH_RELATIVE',
      'the file URL is not absolute; use file:///absolute/path',
    );
  }
  // RFC 8089: "localhost" as the host names this machine, exactly like an empty host.
  const rest = url.slice(7).replace(/^localhost(?=\/)/i, '');
  if (!rest.startsWith('/')) {
    throw new Denial(
      'HOOK_FILE_URL_HOST',
      'file URLs with a host are not read; use file:///absolute/path on this machine',
    );
  }
  if (/[?#]/.test(rest)) {
    throw new Denial(
      'HOOK_FILE_URL_INVALID',
      'the file URL has a query or fragment; percent-encode "?" as %3F and "#" as %23',
    );
  }
  if (/%(?![0-9a-f]{2})/i.test(rest) || /%(?:2f|5c|00)/i.test(rest) || rest.includes('\0')) {
    throw new Denial(
      'HOOK_FILE_URL_INVALID',
      'the file URL has malformed or forbidden percent-encoding (%2F, %5C and %00 are refused)',
    );
  }
  let decoded;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    throw new Denial('HOOK_FILE_URL_INVALID', 'the file URL does not decode to valid UTF-8');
  }
  if (process.platform === 'win32') {
    const drive = /^\/([a-zA-Z])[:|](\/.*)?$/.exec(decoded);
    if (drive === null) {
      throw new Denial(
        'HOOK_FILE_URL_INVALID',
        'on Windows a file URL must name a drive: file:///C:/path/to/file',
      );
    }
    return path.win32.normalize(`${drive[1]}:${(drive[2] ?? '/').replace(/\//g, '\\')}`);
  }
  return path.posix.normalize(decoded);
}

/**
 * @param {string} name
 * @returns {string}
 */
function describeKind(name) {
  return `the path is a ${name}, not a regular file`;
}

/**
 * @param {import('node:fs').Stats | import('node:fs').BigIntStats} stats
 * @returns {Denial | undefined}
 */
function kindDenial(stats) {
  if (stats.isFile()) return undefined;
  let kind = 'special file';
  if (stats.isDirectory()) kind = 'directory';
  else if (stats.isFIFO()) kind = 'FIFO';
  else if (stats.isSocket()) kind = 'socket';
  else if (stats.isCharacterDevice() || stats.isBlockDevice()) kind = 'device';
  return new Denial('HOOK_NOT_REGULAR_FILE', describeKind(kind));
}

/**
 * @param {unknown} error
 * @returns {Denial}
 */
function accessDenial(error) {
  const code = /** @type {{ code?: unknown }} */ (error).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') {
    return new Denial('HOOK_FILE_NOT_FOUND', 'the file does not exist');
  }
  if (code === 'ENXIO' || code === 'EISDIR' || code === 'EOPNOTSUPP') {
    return new Denial('HOOK_NOT_REGULAR_FILE', describeKind('special file'));
  }
  return new Denial(
    'HOOK_FILE_UNREADABLE',
    `the file cannot be read (${typeof code === 'string' ? code : 'error'})`,
  );
}

/**
 * Reads the file again in chunks and compares it with what the first pass read.
 * @param {number} fd
 * @param {Buffer} bytes
 * @returns {boolean}
 */
function sameBytesAgain(fd, bytes) {
  if (bytes.length === 0) return true;
  const scratch = Buffer.allocUnsafe(Math.min(VERIFY_CHUNK_BYTES, bytes.length));
  let offset = 0;
  while (offset < bytes.length) {
    const want = Math.min(scratch.length, bytes.length - offset);
    let got = 0;
    while (got < want) {
      const count = fs.readSync(fd, scratch, got, want - got, offset + got);
      if (count === 0) return false;
      got += count;
    }
    if (!scratch.subarray(0, want).equals(bytes.subarray(offset, offset + want))) return false;
    offset += want;
  }
  return true;
}

/**
 * @param {import('node:fs').BigIntStats} left
 * @param {import('node:fs').BigIntStats} right
 * @returns {boolean}
 */
function sameState(left, right) {
  return (
    left.ino === right.ino &&
    left.dev === right.dev &&
    left.size === right.size &&
    left.mtimeNs === right.mtimeNs &&
    left.ctimeNs === right.ctimeNs
  );
}

/**
 * A file whose last change is more recent than `settleMs` may be in the middle of being written
 * (a writer between two write calls leaves a mix of old and new bytes that no read can tell
 * apart). Waits until it has been quiet that long, once, and refuses it if it changed meanwhile.
 * @param {number} fd
 * @param {import('node:fs').BigIntStats} opened
 * @param {number} settleMs
 */
function settle(fd, opened, settleMs) {
  let last = opened.ctimeNs;
  if (opened.mtimeNs > last) last = opened.mtimeNs;
  const age = BigInt(Date.now()) * 1000000n - last;
  const quiet = BigInt(settleMs) * 1000000n;
  if (age >= quiet) return;
  const wait = age < 0n ? settleMs : Math.min(settleMs, Math.ceil(Number(quiet - age) / 1e6));
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, wait);
  if (!sameState(fs.fstatSync(fd, { bigint: true }), opened)) {
    throw new Denial(
      'HOOK_FILE_CHANGED',
      'the file is still being written; try again once it is complete',
    );
  }
}

/** @returns {Denial} */
function changedDenial() {
  return new Denial('HOOK_FILE_CHANGED', 'the file changed while it was being read; try again');
}

/**
 * A byte count in the unit a person reads at a glance: 12 MiB, 700 KiB, 35 bytes.
 * @param {number} bytes
 * @returns {string}
 */
function formatBytes(bytes) {
  const units = [
    [1073741824, 'GiB'],
    [1048576, 'MiB'],
    [1024, 'KiB'],
  ];
  for (const [size, unit] of /** @type {[number, string][]} */ (units)) {
    if (bytes >= size) {
      return `${(bytes / size).toFixed(1).replace(/\.0$/, '')} ${unit}`;
    }
  }
  return `${bytes} bytes`;
}

/**
 * @param {number} size
 * @param {number} limit
 * @returns {Denial}
 */
function limitDenial(size, limit) {
  return new Denial(
    'HOOK_FILE_TOO_LARGE',
    `the file is ${formatBytes(size)} (${size} bytes); the hook inlines files up to ${formatBytes(limit)} (${limit} bytes). Attach a smaller file`,
  );
}

/**
 * Reads a regular file without ever blocking on a FIFO or device, refusing anything larger than
 * `limit`. `realPath` must already be resolved; the open refuses a symlink swapped in since.
 * @param {string} realPath
 * @param {number} limit
 * @param {(size: number) => Denial | undefined} [checkSize]
 * @param {(fd: number, stats: import('node:fs').BigIntStats) => Denial | undefined} [checkOpened]
 * @param {number} [settleMs] quiet time to wait out when the file changed just now
 * @returns {Buffer}
 */
function readRegularFile(realPath, limit, checkSize, checkOpened, settleMs = 0) {
  let stats;
  try {
    stats = fs.statSync(realPath);
  } catch (error) {
    throw accessDenial(error);
  }
  const before = kindDenial(stats);
  if (before !== undefined) throw before;
  const flags =
    fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOFOLLOW ?? 0);
  let fd;
  try {
    fd = fs.openSync(realPath, flags);
  } catch (error) {
    throw accessDenial(error);
  }
  try {
    const opened = fs.fstatSync(fd, { bigint: true });
    const after = kindDenial(opened);
    if (after !== undefined) throw after;
    if (opened.ino !== BigInt(stats.ino) || opened.dev !== BigInt(stats.dev)) {
      throw changedDenial();
    }
    const openedDenial = checkOpened?.(fd, opened);
    if (openedDenial !== undefined) throw openedDenial;
    const size = Number(opened.size);
    if (size > limit) throw limitDenial(size, limit);
    const sizeDenial = checkSize?.(size);
    if (sizeDenial !== undefined) throw sizeDenial;
    if (settleMs > 0) settle(fd, opened, settleMs);
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    while (filled < size) {
      const count = fs.readSync(fd, bytes, filled, size - filled, filled);
      if (count === 0) break;
      filled += count;
    }
    // A file that shrank, grew or was rewritten in place while it was read is refused: the bytes
    // could be a mix of two versions. Identity, size and both change times must be unchanged.
    if (filled !== size) throw changedDenial();
    const probe = Buffer.allocUnsafe(1);
    if (fs.readSync(fd, probe, 0, 1, filled) !== 0) throw changedDenial();
    // File systems keep change times at clock-tick granularity (ext4: a few milliseconds), so a
    // rewrite within one tick leaves them equal. A second pass must read the same bytes again.
    if (!sameBytesAgain(fd, bytes)) throw changedDenial();
    if (!sameState(fs.fstatSync(fd, { bigint: true }), opened)) throw changedDenial();
    return bytes;
  } catch (error) {
    if (error instanceof Denial) throw error;
    throw accessDenial(error);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * @param {string} text
 * @param {string} name
 * @returns {number}
 */
function parseLimit(text, name) {
  if (!/^[1-9][0-9]*$/.test(text) || Number(text) > LIMIT_CEILING) {
    throw new Denial(
      'HOOK_CONFIG_INVALID',
      `${name} must be a whole number of bytes from 1 to ${LIMIT_CEILING}`,
    );
  }
  return Number(text);
}

/**
 * @param {unknown} value
 * @param {string} name
 * @returns {number}
 */
function limitFromJson(value, name) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new Denial('HOOK_CONFIG_INVALID', `${name} must be a whole number of bytes`);
  }
  return parseLimit(String(value), name);
}

/**
 * A JSON number as the text the range checks read; anything else becomes text they refuse.
 * @param {unknown} value
 * @returns {string}
 */
function jsonWholeNumber(value) {
  return typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : 'invalid';
}

/**
 * @param {string} text
 * @param {string} name
 * @returns {number}
 */
function depthFrom(text, name) {
  if (!/^[1-9][0-9]*$/.test(text) || Number(text) > DEPTH_CEILING) {
    throw new Denial(
      'HOOK_CONFIG_INVALID',
      `${name} must be a whole number of nesting levels from 1 to ${DEPTH_CEILING}`,
    );
  }
  return Number(text);
}

/**
 * @param {string} text
 * @param {string} name
 * @returns {number}
 */
function attachmentsFrom(text, name) {
  if (!/^[1-9][0-9]*$/.test(text) || Number(text) > ATTACHMENTS_CEILING) {
    throw new Denial(
      'HOOK_CONFIG_INVALID',
      `${name} must be a whole number of attachments from 1 to ${ATTACHMENTS_CEILING}`,
    );
  }
  return Number(text);
}

/**
 * @param {string} text
 * @param {string} name
 * @returns {number}
 */
function settleFrom(text, name) {
  if (!/^(?:0|[1-9][0-9]*)$/.test(text) || Number(text) > SETTLE_CEILING_MS) {
    throw new Denial(
      'HOOK_CONFIG_INVALID',
      `${name} must be a whole number of milliseconds from 0 to ${SETTLE_CEILING_MS}`,
    );
  }
  return Number(text);
}

/**
 * `toolkitBudgets`: MCP server name (as configured in the client) to the most attachment bytes
 * one call to that server may carry.
 * @param {unknown} value
 * @returns {Map<string, number>}
 */
function budgetsFrom(value) {
  if (!isObject(value)) {
    throw new Denial(
      'HOOK_CONFIG_INVALID',
      'toolkitBudgets must map MCP server names to byte counts',
    );
  }
  /** @type {Map<string, number>} */
  const budgets = new Map();
  for (const [name, bytes] of Object.entries(value)) {
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(name)) {
      throw new Denial(
        'HOOK_CONFIG_INVALID',
        'toolkitBudgets keys must be MCP server names (letters, digits, "_", "-", ".")',
      );
    }
    budgets.set(name, limitFromJson(bytes, `toolkitBudgets.${name}`));
  }
  return budgets;
}

/**
 * The budget of the MCP server this call goes to, found from the tool's name in each client's
 * naming scheme: `mcp__<server>__<tool>` (Claude Code, Codex), `mcp_<server>_<tool>` (VS Code),
 * `MCP:<server>:<tool>` (Cursor, when it names the server). Clients put the server's name in
 * tool names with every character outside `A-Z a-z 0-9 _ -` replaced by `_` (Claude Code names
 * the tools of server `my.files` `mcp__my_files__*`), so a budget matches under its name as
 * configured and in that form. The longest matching name wins; of two equally long, the smaller
 * budget.
 * @param {Map<string, number>} budgets
 * @param {unknown} toolName
 * @returns {ToolkitBudget | undefined}
 */
function toolkitBudgetFor(budgets, toolName) {
  if (budgets.size === 0 || typeof toolName !== 'string') return undefined;
  /** @type {ToolkitBudget | undefined} */
  let found;
  for (const [name, bytes] of budgets) {
    const spellings = [name, name.replace(/[^A-Za-z0-9_-]/g, '_')];
    const matches = spellings.some(
      (spelt) =>
        toolName.startsWith(`mcp__${spelt}__`) ||
        toolName.startsWith(`mcp_${spelt}_`) ||
        toolName.startsWith(`MCP:${spelt}:`),
    );
    if (
      matches &&
      (found === undefined ||
        name.length > found.name.length ||
        (name.length === found.name.length && bytes < found.bytes))
    ) {
      found = { name, bytes };
    }
  }
  return found;
}

/**
 * How deeply `value` nests, counting each object and array as one level; stops counting once
 * `limit` is passed. Iterative, so no input can exhaust the stack.
 * @param {unknown} value
 * @param {number} limit
 * @returns {boolean} true when the nesting is deeper than `limit`
 */
function nestsDeeperThan(value, limit) {
  /** @type {[unknown, number][]} */
  const stack = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = /** @type {[unknown, number]} */ (stack.pop());
    if (typeof current !== 'object' || current === null) continue;
    if (depth > limit) return true;
    for (const inner of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof inner === 'object' && inner !== null) stack.push([inner, depth + 1]);
    }
  }
  return false;
}

/**
 * The allowlist: each root's real path (what a file's real path must be inside), and each
 * existing root as given (what the path as named may be inside, checked before any file is
 * looked at).
 * @param {unknown} roots
 * @param {string} name
 * @returns {{ real: string[], given: string[] }}
 */
function rootsFrom(roots, name) {
  if (!Array.isArray(roots) || roots.some((root) => typeof root !== 'string' || root === '')) {
    throw new Denial('HOOK_CONFIG_INVALID', `${name} must be a list of absolute directory paths`);
  }
  /** @type {string[]} */
  const real = [];
  /** @type {string[]} */
  const given = [];
  for (const root of /** @type {string[]} */ (roots)) {
    if (!path.isAbsolute(root)) {
      throw new Denial('HOOK_CONFIG_INVALID', `${name} must hold absolute paths only`);
    }
    try {
      real.push(fs.realpathSync.native(root));
      given.push(path.resolve(root));
    } catch {
      // A root that does not exist (yet) matches nothing.
    }
  }
  return { real, given };
}

/**
 * Loads the optional config file next to this script (or TOOLFENCE_HOOK_CONFIG), then applies the
 * environment variables, which win. Throws a Denial when anything is invalid (fail closed).
 * @param {NodeJS.ProcessEnv} [env] the environment to read (the installer's `status` passes none)
 * @param {string} [besideScript] the config file's path when TOOLFENCE_HOOK_CONFIG is not set
 * @returns {HookConfig}
 */
function loadConfig(env = process.env, besideScript = path.join(__dirname, CONFIG_FILENAME)) {
  /** @type {HookConfig} */
  const config = {
    allowedRoots: undefined,
    denyCredentialFiles: true,
    maxBytes: MAX_BYTES,
    maxTotalBytes: MAX_TOTAL_BYTES,
    maxDepth: MAX_DEPTH,
    maxAttachments: MAX_ATTACHMENTS,
    settleMs: SETTLE_MS,
    toolkitBudgets: new Map(),
  };
  const explicit = env.TOOLFENCE_HOOK_CONFIG;
  const configPath = explicit !== undefined && explicit !== '' ? explicit : besideScript;
  let text;
  // Missing means nothing at all at the path: anything there (a dangling or looping link, a
  // folder, a file this user cannot read) that cannot be read denies every rewrite.
  let present = true;
  try {
    fs.lstatSync(configPath);
  } catch (error) {
    const code = /** @type {{ code?: unknown }} */ (error).code;
    present = code !== 'ENOENT' && code !== 'ENOTDIR';
  }
  if (present || (explicit !== undefined && explicit !== '')) {
    try {
      text = readRegularFile(fs.realpathSync.native(configPath), MAX_CONFIG_BYTES).toString('utf8');
    } catch {
      throw new Denial('HOOK_CONFIG_INVALID', 'the hook config file cannot be read');
    }
  }
  if (text !== undefined) {
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Denial('HOOK_CONFIG_INVALID', 'the hook config file is not valid JSON');
    }
    if (!isObject(parsed)) {
      throw new Denial('HOOK_CONFIG_INVALID', 'the hook config file must hold a JSON object');
    }
    for (const key of Object.keys(parsed)) {
      if (key === 'allowedRoots') {
        const roots = rootsFrom(parsed[key], 'allowedRoots');
        config.allowedRoots = roots.real;
        config.givenRoots = roots.given;
        config.rootsAsWritten = /** @type {string[]} */ (parsed[key]);
      } else if (key === 'denyCredentialFiles') {
        if (typeof parsed[key] !== 'boolean') {
          throw new Denial('HOOK_CONFIG_INVALID', 'denyCredentialFiles must be true or false');
        }
        config.denyCredentialFiles = parsed[key];
      } else if (key === 'maxBytes') config.maxBytes = limitFromJson(parsed[key], 'maxBytes');
      else if (key === 'maxTotalBytes') {
        config.maxTotalBytes = limitFromJson(parsed[key], 'maxTotalBytes');
      } else if (key === 'maxDepth') {
        config.maxDepth = depthFrom(jsonWholeNumber(parsed[key]), 'maxDepth');
      } else if (key === 'maxAttachments') {
        config.maxAttachments = attachmentsFrom(jsonWholeNumber(parsed[key]), 'maxAttachments');
      } else if (key === 'settleMs') {
        config.settleMs = settleFrom(jsonWholeNumber(parsed[key]), 'settleMs');
      } else if (key === 'toolkitBudgets') {
        config.toolkitBudgets = budgetsFrom(parsed[key]);
      } else if (key !== '$comment') {
        throw new Denial('HOOK_CONFIG_INVALID', 'the hook config file has an unknown key');
      }
    }
  }
  const roots = env.TOOLFENCE_HOOK_ALLOWED_ROOTS;
  if (roots !== undefined && roots.trim() !== '') {
    const listed = rootsFrom(
      roots.split(path.delimiter).filter((root) => root !== ''),
      'TOOLFENCE_HOOK_ALLOWED_ROOTS',
    );
    config.allowedRoots = listed.real;
    config.givenRoots = listed.given;
  }
  const denyCredentials = env.TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES;
  if (denyCredentials !== undefined && denyCredentials !== '') {
    if (denyCredentials !== '0' && denyCredentials !== '1') {
      throw new Denial(
        'HOOK_CONFIG_INVALID',
        'TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES must be 1 (refuse credential files, the default) or 0',
      );
    }
    config.denyCredentialFiles = denyCredentials === '1';
  }
  const maxBytes = env.TOOLFENCE_HOOK_MAX_BYTES;
  if (maxBytes !== undefined && maxBytes !== '') {
    config.maxBytes = parseLimit(maxBytes, 'TOOLFENCE_HOOK_MAX_BYTES');
  }
  const maxDepth = env.TOOLFENCE_HOOK_MAX_DEPTH;
  if (maxDepth !== undefined && maxDepth !== '') {
    config.maxDepth = depthFrom(maxDepth, 'TOOLFENCE_HOOK_MAX_DEPTH');
  }
  const maxAttachments = env.TOOLFENCE_HOOK_MAX_ATTACHMENTS;
  if (maxAttachments !== undefined && maxAttachments !== '') {
    config.maxAttachments = attachmentsFrom(maxAttachments, 'TOOLFENCE_HOOK_MAX_ATTACHMENTS');
  }
  const settle = env.TOOLFENCE_HOOK_SETTLE_MS;
  if (settle !== undefined && settle !== '') {
    config.settleMs = settleFrom(settle, 'TOOLFENCE_HOOK_SETTLE_MS');
  }
  const maxTotal = env.TOOLFENCE_HOOK_MAX_TOTAL_BYTES;
  if (maxTotal !== undefined && maxTotal !== '') {
    config.maxTotalBytes = parseLimit(maxTotal, 'TOOLFENCE_HOOK_MAX_TOTAL_BYTES');
  }
  return config;
}

/**
 * On Windows, `\\?\C:\x` and `\\?\UNC\server\share` name the same files as `C:\x` and
 * `\\server\share`; compare them in the plain form.
 * @param {string} value
 * @returns {string}
 */
function comparablePath(value) {
  if (process.platform !== 'win32') return value;
  if (/^\\\\\?\\UNC\\/i.test(value)) return `\\\\${value.slice(8)}`;
  if (value.startsWith('\\\\?\\')) return value.slice(4);
  return value;
}

/**
 * @param {string} realPath
 * @param {string[]} roots
 * @returns {boolean}
 */
function isInsideRoots(realPath, roots) {
  const target = comparablePath(realPath);
  return roots.some((root) => {
    // path.win32.relative compares letter case insensitively, as Windows names are.
    const relative = path.relative(comparablePath(root), target);
    return (
      relative !== '' &&
      relative !== '..' &&
      !relative.startsWith(`..${path.sep}`) &&
      !path.isAbsolute(relative)
    );
  });
}

// Well-known credential locations, compared in lower case on every platform (a case-insensitive
// file system reaches `~/.SSH` as `~/.ssh`) and segment by segment, so they match under any home
// (root's, another user's) and any number of `/`.
/** Folders whose whole content is credentials, wherever they are. */
const CREDENTIAL_FOLDERS = new Set([
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.kube',
  '.password-store',
  '.docker-credentials',
]);
/**
 * Folders under `.config` that hold credentials (`~/.config/gcloud`, GitHub CLI's tokens, GitHub
 * Copilot's `apps.json` and `hosts.json`).
 */
const CREDENTIAL_CONFIG_FOLDERS = new Set(['gcloud', 'gh', 'hub', 'github-copilot']);
/**
 * Files that hold credentials inside one folder only (a client's token store; the same name
 * elsewhere is an ordinary file): folder name to the file names in it.
 */
const CREDENTIAL_FILES_IN = new Map([
  ['.docker', new Set(['config.json'])],
  ['.codex', new Set(['auth.json', 'config.toml'])],
  ['.cursor', new Set(['mcp.json'])],
]);
/** File names that hold credentials, wherever they are. */
const CREDENTIAL_FILES = new Set([
  '.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.pgpass',
  '.my.cnf',
  '.vault-token',
  '.terraformrc',
  'credentials.tfrc.json',
  '.boto',
  '.s3cfg',
  '.htpasswd',
  '.dockercfg',
  '.envrc',
  '.credentials.json',
  '.claude.json',
  'shadow',
  'shadow-',
  'gshadow',
  'gshadow-',
  'master.passwd',
]);
/** System paths (after any `/private` of macOS) refused with everything below them. */
const CREDENTIAL_SYSTEM_PATHS = [
  '/etc/shadow',
  '/etc/gshadow',
  '/etc/sudoers',
  '/etc/sudoers.d',
  '/etc/ssh',
  '/etc/master.passwd',
  '/proc',
  '/sys',
];
/** PKCS#12 key stores (`.p12`, `.pfx`): a private key and its certificate, by name. */
const KEY_STORE_EXTENSION = /\.(p12|pfx)$/;
/** An SSH private key's usual name (no extension; the `.pub` half is public). */
const SSH_KEY_NAME = /^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/;

/**
 * True when `file` is in a well-known credential location (see the lists above). `.env` and
 * `.env.*` files are refused except the templates `.env.example`, `.env.sample`, `.env.template`.
 * @param {string} file
 * @returns {boolean}
 */
function isCredentialPath(file) {
  const parts = comparablePath(file)
    .toLowerCase()
    .split(/[\\/]+/)
    .filter((part) => part !== '');
  let system = `/${parts.join('/')}`;
  if (/^\/private\/(etc|var|tmp)(\/|$)/.test(system)) system = system.slice('/private'.length);
  for (const prefix of CREDENTIAL_SYSTEM_PATHS) {
    if (system === prefix || system.startsWith(`${prefix}/`)) return true;
  }
  for (let index = 0; index < parts.length; index += 1) {
    const part = /** @type {string} */ (parts[index]);
    if (CREDENTIAL_FOLDERS.has(part)) return true;
    const next = parts[index + 1];
    if (part === '.config' && next !== undefined && CREDENTIAL_CONFIG_FOLDERS.has(next))
      return true;
    if (next !== undefined && CREDENTIAL_FILES_IN.get(part)?.has(next)) return true;
  }
  const name = parts[parts.length - 1] ?? '';
  if (CREDENTIAL_FILES.has(name) || SSH_KEY_NAME.test(name)) return true;
  if (KEY_STORE_EXTENSION.test(name)) return true;
  return /^\.env(\..*)?$/.test(name) && !/^\.env\.(example|sample|template)$/.test(name);
}

/** Credential files under the home folder whose identity is checked (see {@link knownCredentialIds}). */
const HOME_CREDENTIAL_FILES = [
  '.ssh/id_rsa',
  '.ssh/id_dsa',
  '.ssh/id_ecdsa',
  '.ssh/id_ed25519',
  '.ssh/id_ecdsa_sk',
  '.ssh/id_ed25519_sk',
  '.aws/credentials',
  '.aws/config',
  '.netrc',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.pgpass',
  '.my.cnf',
  '.vault-token',
  '.docker/config.json',
  '.kube/config',
  '.config/gh/hosts.yml',
  '.config/gcloud/application_default_credentials.json',
  '.config/gcloud/credentials.db',
  '.config/github-copilot/apps.json',
  '.config/github-copilot/hosts.json',
  '.azure/msal_token_cache.json',
  '.claude/.credentials.json',
  '.claude.json',
  '.codex/auth.json',
  '.cursor/mcp.json',
];
/** System credential files whose identity is checked. */
const SYSTEM_CREDENTIAL_FILES = [
  '/etc/shadow',
  '/etc/gshadow',
  '/etc/master.passwd',
  '/etc/sudoers',
  '/etc/ssh/ssh_host_rsa_key',
  '/etc/ssh/ssh_host_ecdsa_key',
  '/etc/ssh/ssh_host_ed25519_key',
];
/** @type {Set<string> | undefined} */
let credentialIds;

/**
 * `dev:ino` of each known credential file that exists (the system's, and those under the home
 * folder, `$HOME` or `%USERPROFILE%`; Codex's under `$CODEX_HOME` too), stat'ed once per run, so
 * a hard link to one under any name and in any folder is recognised as the same file.
 * @returns {Set<string>}
 */
function knownCredentialIds() {
  if (credentialIds !== undefined) return credentialIds;
  credentialIds = new Set();
  const home = process.env.HOME || process.env.USERPROFILE;
  const files = [...SYSTEM_CREDENTIAL_FILES];
  if (home) files.push(...HOME_CREDENTIAL_FILES.map((file) => path.join(home, file)));
  const codexHome = process.env.CODEX_HOME;
  if (codexHome && path.isAbsolute(codexHome)) files.push(path.join(codexHome, 'auth.json'));
  for (const file of files) {
    try {
      const stats = fs.statSync(file, { bigint: true });
      if (stats.isFile()) credentialIds.add(`${stats.dev}:${stats.ino}`);
    } catch {
      // Not there, or not readable by this user: nothing to compare with.
    }
  }
  return credentialIds;
}

/** @returns {Denial} */
function credentialDenial() {
  return new Denial(
    'HOOK_CREDENTIAL_FILE_DENIED',
    'the file is in a place that usually holds credentials (such as ~/.ssh, ~/.aws, a .env file or a private key), so the hook does not read it. Attach a copy without secrets, or, if this file is meant to be sent, set denyCredentialFiles: false in the hook config (or TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES=0)',
  );
}

/** `-----BEGIN ` as bytes: where a PEM block starts. */
const PEM_BEGIN = Buffer.from('-----BEGIN ');
/** The rest of a private key's PEM line after `-----BEGIN `: RSA, EC, DSA, OPENSSH, ENCRYPTED, plain. */
const PEM_PRIVATE_LABEL = /^[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----/;

/**
 * True when the bytes hold a private key, whatever the file is called: a PEM
 * `-----BEGIN ... PRIVATE KEY-----` line anywhere (after an EC PARAMETERS block, a certificate,
 * "Bag Attributes" lines or a UTF-8 byte order mark), a PuTTY key, or a whole file that is a DER
 * private key or PKCS#12 store (see {@link isDerPrivateKey}). Every byte read is searched (the read
 * is bounded by maxBytes); a `-----BEGIN` in the middle of a line (a text quoting one) is not a key.
 * @param {Buffer} bytes
 * @returns {boolean}
 */
function looksLikePrivateKey(bytes) {
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  if (startsWithAscii(bytes, 'PuTTY-User-Key-File-', start)) return true;
  for (let at = bytes.indexOf(PEM_BEGIN, start); at >= 0; at = bytes.indexOf(PEM_BEGIN, at + 1)) {
    const lineStart = at === start || bytes[at - 1] === 0x0a || bytes[at - 1] === 0x0d;
    if (!lineStart) continue;
    const label = bytes.subarray(at + PEM_BEGIN.length, at + PEM_BEGIN.length + 64);
    if (PEM_PRIVATE_LABEL.test(label.toString('latin1'))) return true;
  }
  return isDerPrivateKey(bytes);
}

/**
 * One DER element at `at`: its tag, where its content starts and ends; undefined when the bytes
 * there are no complete element (definite lengths of up to 4 bytes only).
 * @param {Buffer} bytes
 * @param {number} at
 * @param {number} end
 * @returns {{ tag: number, start: number, end: number } | undefined}
 */
function derElement(bytes, at, end) {
  if (at + 2 > end) return undefined;
  const tag = /** @type {number} */ (bytes[at]);
  const first = /** @type {number} */ (bytes[at + 1]);
  let length = first;
  let start = at + 2;
  if (first > 0x80 && first <= 0x84) {
    const count = first - 0x80;
    if (start + count > end) return undefined;
    length = 0;
    for (let index = 0; index < count; index += 1) {
      length = length * 256 + /** @type {number} */ (bytes[start + index]);
    }
    start += count;
  } else if (first >= 0x80) return undefined;
  return start + length <= end ? { tag, start, end: start + length } : undefined;
}

/**
 * The DER elements inside `[start, end)`, up to `limit` of them; undefined unless they fill it
 * exactly (or `limit` is reached first).
 * @param {Buffer} bytes
 * @param {number} start
 * @param {number} end
 * @param {number} limit
 * @returns {{ tag: number, start: number, end: number }[] | undefined}
 */
function derChildren(bytes, start, end, limit) {
  /** @type {{ tag: number, start: number, end: number }[]} */
  const children = [];
  let at = start;
  while (at < end && children.length < limit) {
    const element = derElement(bytes, at, end);
    if (element === undefined) return undefined;
    children.push(element);
    at = element.end;
  }
  return at === end || children.length === limit ? children : undefined;
}

/** DER OID prefixes of password-based encryption schemes (PKCS#5 and PKCS#12 PBE). */
const PBE_OID_PREFIXES = [
  Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05]),
  Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01]),
];
/** DER OID prefix of PKCS#7 content types (a PKCS#12 store's authSafe). */
const PKCS7_OID_PREFIX = Buffer.from([0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07]);

/**
 * True when the whole file is one DER structure of a private key: PKCS#8 (`{ version 0|1,
 * AlgorithmIdentifier, OCTET STRING }`), encrypted PKCS#8 (`{ { PBE OID, ... }, OCTET STRING }`),
 * PKCS#1 RSA (`{ 0, n, e, d, p, q, dp, dq, qi }`), DSA (`{ 0, p, q, g, y, x }`), SEC1 EC
 * (`{ 1, OCTET STRING, ... }`) or a PKCS#12 store (`{ 3, { PKCS#7 OID, ... }, ... }`). The
 * outer SEQUENCE must span the file exactly, so other binary files do not match by chance.
 * @param {Buffer} bytes
 * @returns {boolean}
 */
function isDerPrivateKey(bytes) {
  if (bytes[0] !== 0x30) return false;
  const outer = derElement(bytes, 0, bytes.length);
  if (outer === undefined || outer.end !== bytes.length) return false;
  const children = derChildren(bytes, outer.start, outer.end, 9);
  if (children === undefined || children.length < 2) return false;
  const [first, second] =
    /** @type {[{ tag: number, start: number, end: number }, { tag: number, start: number, end: number }]} */ (
      children
    );
  const smallInteger = (/** @type {{ tag: number, start: number, end: number }} */ item) =>
    item.tag === 0x02 && item.end - item.start === 1 ? bytes[item.start] : undefined;
  const version = smallInteger(first);
  const oidStartsWith = (
    /** @type {{ tag: number, start: number, end: number }} */ item,
    /** @type {Buffer} */ prefix,
  ) => {
    const oid = item.tag === 0x30 ? derElement(bytes, item.start, item.end) : undefined;
    return (
      oid !== undefined &&
      oid.tag === 0x06 &&
      bytes.subarray(oid.start, oid.end).subarray(0, prefix.length).equals(prefix)
    );
  };
  if ((version === 0 || version === 1) && second.tag === 0x30) {
    const algorithm = derElement(bytes, second.start, second.end);
    return algorithm?.tag === 0x06 && children[2]?.tag === 0x04;
  }
  if (version === 0 && children.every((item) => item.tag === 0x02)) {
    return children.length === 9 || children.length === 6;
  }
  if (version === 1 && second.tag === 0x04) return true;
  if (version === 3) return oidStartsWith(second, PKCS7_OID_PREFIX);
  return (
    children.length === 2 &&
    second.tag === 0x04 &&
    PBE_OID_PREFIXES.some((prefix) => oidStartsWith(first, prefix))
  );
}

/**
 * The path the kernel opened for `fd` (Linux), to check a path swapped after the first check.
 * @param {number} fd
 * @returns {string | undefined}
 */
function openedPath(fd) {
  if (process.platform !== 'linux') return undefined;
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/**
 * On Linux, checks the path the kernel actually opened (a directory in the path could have been
 * swapped for a symlink after the allowlist check). Elsewhere there is nothing to ask.
 * @param {string[]} roots
 * @returns {(fd: number) => Denial | undefined}
 */
function openedInside(roots) {
  return (fd) => {
    const opened = openedPath(fd);
    if (opened === undefined) return undefined;
    return isInsideRoots(opened, roots) ? undefined : notAllowedDenial();
  };
}

/** @returns {Denial} */
function notAllowedDenial() {
  return new Denial(
    'HOOK_PATH_NOT_ALLOWED',
    'the file is outside the directories the hook is allowed to read',
  );
}

/** @type {Record<string, string>} */
const MIME_BY_EXTENSION = {
  '.7z': 'application/x-7z-compressed',
  '.avif': 'image/avif',
  '.bmp': 'image/bmp',
  '.c': 'text/x-c',
  '.css': 'text/css',
  '.csv': 'text/csv',
  '.doc': 'application/msword',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.eml': 'message/rfc822',
  '.epub': 'application/epub+zip',
  '.flac': 'audio/flac',
  '.gif': 'image/gif',
  '.gz': 'application/gzip',
  '.heic': 'image/heic',
  '.htm': 'text/html',
  '.html': 'text/html',
  '.ico': 'image/vnd.microsoft.icon',
  '.ics': 'text/calendar',
  '.jpeg': 'image/jpeg',
  '.jpg': 'image/jpeg',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.jsonl': 'application/jsonl',
  '.log': 'text/plain',
  '.m4a': 'audio/mp4',
  '.md': 'text/markdown',
  '.mjs': 'text/javascript',
  '.mov': 'video/quicktime',
  '.mp3': 'audio/mpeg',
  '.mp4': 'video/mp4',
  '.odp': 'application/vnd.oasis.opendocument.presentation',
  '.ods': 'application/vnd.oasis.opendocument.spreadsheet',
  '.odt': 'application/vnd.oasis.opendocument.text',
  '.ogg': 'audio/ogg',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.ppt': 'application/vnd.ms-powerpoint',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  '.py': 'text/x-python',
  '.rtf': 'application/rtf',
  '.svg': 'image/svg+xml',
  '.tar': 'application/x-tar',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
  '.toml': 'application/toml',
  '.ts': 'text/plain',
  '.tsv': 'text/tab-separated-values',
  '.txt': 'text/plain',
  '.wav': 'audio/wav',
  '.webm': 'video/webm',
  '.webp': 'image/webp',
  '.xls': 'application/vnd.ms-excel',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.zip': 'application/zip',
};

/**
 * @param {Buffer} bytes
 * @param {string} ascii
 * @param {number} [offset]
 * @returns {boolean}
 */
function startsWithAscii(bytes, ascii, offset = 0) {
  if (bytes.length < offset + ascii.length) return false;
  for (let index = 0; index < ascii.length; index += 1) {
    if (bytes[offset + index] !== ascii.charCodeAt(index)) return false;
  }
  return true;
}

/**
 * MIME type from the file name's extension, else from the first bytes, else octet-stream.
 * @param {string} name
 * @param {Buffer} bytes
 * @returns {string}
 */
function detectMime(name, bytes) {
  const byExtension = MIME_BY_EXTENSION[path.extname(name).toLowerCase()];
  if (byExtension !== undefined) return byExtension;
  if (startsWithAscii(bytes, '\x89PNG\r\n\x1a\n')) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    return 'image/jpeg';
  }
  if (startsWithAscii(bytes, 'GIF87a') || startsWithAscii(bytes, 'GIF89a')) return 'image/gif';
  if (startsWithAscii(bytes, 'RIFF') && startsWithAscii(bytes, 'WEBP', 8)) return 'image/webp';
  if (startsWithAscii(bytes, 'RIFF') && startsWithAscii(bytes, 'WAVE', 8)) return 'audio/wav';
  if (startsWithAscii(bytes, '%PDF-')) return 'application/pdf';
  if (startsWithAscii(bytes, 'PK\x03\x04')) return 'application/zip';
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) return 'application/gzip';
  if (startsWithAscii(bytes, 'ftyp', 4)) return 'video/mp4';
  if (startsWithAscii(bytes, 'ID3')) return 'audio/mpeg';
  if (startsWithAscii(bytes, 'OggS')) return 'audio/ogg';
  if (startsWithAscii(bytes, 'BM')) return 'image/bmp';
  return 'application/octet-stream';
}

/**
 * What to check on the path the kernel opened: the allowlist and the credential locations.
 * @param {HookConfig} config
 * @returns {((fd: number, stats: import('node:fs').BigIntStats) => Denial | undefined) | undefined}
 */
function openedCheck(config) {
  const inside = config.allowedRoots === undefined ? undefined : openedInside(config.allowedRoots);
  if (!config.denyCredentialFiles) return inside;
  return (fd, stats) => {
    // A hard link to a known credential file is that file under another name.
    if (knownCredentialIds().has(`${stats.dev}:${stats.ino}`)) return credentialDenial();
    const opened = openedPath(fd);
    if (opened !== undefined && isCredentialPath(opened)) return credentialDenial();
    return inside?.(fd);
  };
}

/**
 * Reads every file:// attachment and returns the rewritten tool input, or throws a Denial. Each
 * new `source` is a unique marker at first; `answerRewrite` streams the base64 in its place, so
 * a 34 MB answer never exists as one string.
 * @param {JsonObject} input
 * @param {Slot[]} slots
 * @param {unknown} toolName
 * @returns {{ updated: JsonObject, payloads: Payload[], markerPrefix: string }}
 */
function substitute(input, slots, toolName) {
  const config = loadConfig();
  // Checked before any file is read: the answer must be serialisable, and JSON.stringify recurses.
  if (nestsDeeperThan(input, config.maxDepth)) {
    throw new Denial(
      'HOOK_INPUT_TOO_DEEP',
      `the tool input nests deeper than ${config.maxDepth} levels; no file was read. Flatten the arguments`,
    );
  }
  // Checked before any file is read: each attachment costs an open, checks and a read.
  if (slots.length > config.maxAttachments) {
    throw new Denial(
      'HOOK_TOO_MANY_ATTACHMENTS',
      `the call has ${slots.length} file attachments; the hook inlines at most ${config.maxAttachments} per call (maxAttachments); no file was read. Attach fewer files per call`,
    );
  }
  const toolkit = toolkitBudgetFor(config.toolkitBudgets, toolName);
  const nonce = `${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
  // Markers are `<prefix><index, fixed width>`: all the same length, so none is a prefix of
  // another (`-1` and `-10` were), and one scan of the answer finds them all.
  const markerPrefix = `toolfence-attachment-${nonce}-`;
  /** @type {Payload[]} */
  const payloads = [];
  let total = 0;
  /** @type {Map<Slot, JsonObject>} */
  const replacements = new Map();
  for (const slot of slots) {
    const source = /** @type {string} */ (slot.item.source);
    try {
      const localPath = fileUrlToLocalPath(source);
      // Outside every root as named: refused before the file is looked at, so whether it exists
      // is not revealed (a root counts as given and as its real path).
      if (
        config.allowedRoots !== undefined &&
        !isInsideRoots(path.resolve(localPath), config.allowedRoots) &&
        !isInsideRoots(path.resolve(localPath), config.givenRoots ?? [])
      ) {
        throw notAllowedDenial();
      }
      let realPath;
      try {
        realPath = fs.realpathSync.native(localPath);
      } catch (error) {
        throw accessDenial(error);
      }
      // Both the path as named (a credential file may itself be a link elsewhere) and the real
      // path it resolves to (a link, `..`, `/proc/self/root` or `/private` leading to one).
      if (
        config.denyCredentialFiles &&
        (isCredentialPath(path.resolve(localPath)) || isCredentialPath(realPath))
      ) {
        throw credentialDenial();
      }
      if (config.allowedRoots !== undefined && !isInsideRoots(realPath, config.allowedRoots)) {
        throw notAllowedDenial();
      }
      const bytes = readRegularFile(
        realPath,
        config.maxBytes,
        (size) => {
          if (toolkit !== undefined && total + size > toolkit.bytes) {
            const earlier = total > 0 ? ` with the ${formatBytes(total)} attached before it` : '';
            return new Denial(
              'HOOK_TOOLKIT_BUDGET_EXCEEDED',
              `the file is ${formatBytes(size)} (${size} bytes)${earlier}; this toolkit (${toolkit.name}) accepts up to ${formatBytes(toolkit.bytes)} (${toolkit.bytes} bytes) of attachments per call. Attach a smaller file or split it across calls`,
            );
          }
          if (total + size > config.maxTotalBytes) {
            return new Denial(
              'HOOK_TOTAL_TOO_LARGE',
              `the attachments of this call exceed the ${formatBytes(config.maxTotalBytes)} (${config.maxTotalBytes}-byte) budget; this file is ${formatBytes(size)}. Attach fewer or smaller files`,
            );
          }
          return undefined;
        },
        openedCheck(config),
        config.settleMs,
      );
      if (config.denyCredentialFiles && looksLikePrivateKey(bytes)) throw credentialDenial();
      total += bytes.length;
      const name = path.basename(localPath);
      const mime = detectMime(name, bytes);
      const marker = `${markerPrefix}${String(payloads.length).padStart(MARKER_INDEX_DIGITS, '0')}`;
      /** @type {JsonObject} */
      const rewritten = { ...slot.item, source: marker };
      payloads.push({ marker, prefix: `data:${mime};base64,`, bytes, target: rewritten });
      if (rewritten.filename === undefined || rewritten.filename === null) {
        rewritten.filename = name;
      }
      if (rewritten.mime_type === undefined || rewritten.mime_type === null) {
        rewritten.mime_type = mime;
      }
      replacements.set(slot, rewritten);
    } catch (error) {
      if (error instanceof Denial) {
        throw new Denial(error.code, `${slot.where}: ${error.message}`);
      }
      throw new Denial('HOOK_FILE_UNREADABLE', `${slot.where}: the file cannot be read`);
    }
  }
  /** @type {JsonObject} */
  const updated = { ...input };
  /** @type {unknown[] | undefined} */
  let list;
  for (const [slot, rewritten] of replacements) {
    if (slot.index < 0) {
      updated.attachment = rewritten;
    } else {
      list ??= [.../** @type {unknown[]} */ (input.attachments)];
      list[slot.index] = rewritten;
    }
  }
  if (list !== undefined) updated.attachments = list;
  return { updated, payloads, markerPrefix };
}

/**
 * Where each payload's marker is in `text`, in order, found in one scan (linear in the text,
 * however many markers); undefined unless every marker is there exactly once.
 * @param {string} text
 * @param {Payload[]} payloads
 * @param {string} markerPrefix
 * @returns {{ payload: Payload, at: number }[] | undefined}
 */
function findMarkers(text, payloads, markerPrefix) {
  /** @type {{ payload: Payload, at: number }[]} */
  const placed = [];
  const seen = new Uint8Array(payloads.length);
  const width = markerPrefix.length + MARKER_INDEX_DIGITS;
  for (let at = text.indexOf(markerPrefix); at >= 0; at = text.indexOf(markerPrefix, at + width)) {
    const digits = text.slice(at + markerPrefix.length, at + width);
    if (!/^[0-9]+$/.test(digits) || digits.length !== MARKER_INDEX_DIGITS) return undefined;
    const index = Number(digits);
    if (index >= payloads.length || seen[index] === 1) return undefined;
    seen[index] = 1;
    placed.push({ payload: /** @type {Payload} */ (payloads[index]), at });
  }
  return placed.length === payloads.length ? placed : undefined;
}

/**
 * Writes `text` with each payload's marker replaced by its data URI, encoding in chunks.
 * Falls back to building the whole string if a marker is not found exactly once.
 * @param {string} text
 * @param {Payload[]} payloads
 * @param {string} markerPrefix
 * @param {() => string} rebuild
 */
function answerRewrite(text, payloads, markerPrefix, rebuild) {
  const placed = findMarkers(text, payloads, markerPrefix);
  if (placed === undefined) {
    for (const payload of payloads) {
      payload.target.source = payload.prefix + payload.bytes.toString('base64');
    }
    answer(rebuild());
    return;
  }
  process.exitCode = 0;
  endQuietlyOnClosedStdout();
  let position = 0;
  for (const { payload, at } of placed) {
    if (process.stdout.destroyed) return;
    process.stdout.write(text.slice(position, at) + payload.prefix);
    for (let offset = 0; offset < payload.bytes.length; offset += ENCODE_CHUNK_BYTES) {
      if (process.stdout.destroyed) return;
      const chunk = payload.bytes.subarray(offset, offset + ENCODE_CHUNK_BYTES);
      process.stdout.write(chunk.toString('base64'), 'latin1');
    }
    position = at + payload.marker.length;
  }
  process.stdout.write(text.slice(position));
}

/**
 * @param {Dialect} dialect
 * @param {JsonObject} updatedInput
 * @returns {JsonObject}
 */
function rewriteOutput(dialect, updatedInput) {
  if (dialect === 'cursor') return { permission: 'allow', updated_input: updatedInput };
  if (dialect === 'codex') {
    return {
      hookSpecificOutput: {
        hookEventName: 'PreToolUse',
        permissionDecision: 'allow',
        updatedInput,
      },
    };
  }
  return { hookSpecificOutput: { hookEventName: 'PreToolUse', updatedInput } };
}

/**
 * @param {Dialect} dialect
 * @param {Denial} denial
 * @returns {JsonObject}
 */
function denyOutput(dialect, denial) {
  const reason = `toolfence attachment hook: ${denial.code}: ${denial.message}. The tool call was not sent.`;
  if (dialect === 'cursor') {
    return { permission: 'deny', user_message: reason, agent_message: reason };
  }
  return {
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: reason,
    },
  };
}

/**
 * A client that stops reading (closes its end of stdout) makes the next write fail with EPIPE:
 * the hook then writes nothing more and ends with exit code 2 (what every client treats as a
 * deny, should one still look) and nothing on stderr, instead of crashing on the unhandled error.
 */
function endQuietlyOnClosedStdout() {
  process.stdout.on('error', () => {
    process.exitCode = 2;
    process.stdout.destroy();
  });
}

/**
 * Writes the whole answer and lets the process end on its own once stdout has drained.
 * @param {string} text
 */
function answer(text) {
  process.exitCode = 0;
  endQuietlyOnClosedStdout();
  process.stdout.write(text);
}

/**
 * Writes Cursor's no-op answer `{}` straight to fd 1: `process.stdout` would first load Node's
 * stream and socket modules (some 30 of them, about 1 ms at every start). Falls back to the
 * stream when fd 1 is a non-blocking pipe that is full (EAGAIN); any other failure means nobody
 * reads the answer.
 */
function answerNoop() {
  process.exitCode = 0;
  const bytes = Buffer.from('{}');
  let written = 0;
  try {
    while (written < bytes.length) written += fs.writeSync(1, bytes, written);
  } catch (error) {
    if (/** @type {{ code?: unknown }} */ (error).code === 'EAGAIN') {
      endQuietlyOnClosedStdout();
      process.stdout.write(bytes.subarray(written));
    }
  }
}

/**
 * Whether the event could hold an `attachment` or `attachments` key. Looks at the bytes as read
 * (every character of the key is ASCII, and UTF-8 never hides an ASCII byte inside another
 * character), so an event without one is never decoded or parsed. JSON may spell a letter of the
 * key as a `\u00XX` escape; only escapes of those letters (a, t, c, h, m, e, n) count.
 * @param {Buffer} bytes
 * @returns {boolean}
 */
function mayHoldAttachment(bytes) {
  if (bytes.indexOf('attachment') >= 0) return true;
  if (bytes.indexOf('\\u') < 0) return false;
  return /\\u00(?:6[1358deDE]|74)/.test(bytes.toString('latin1'));
}

/**
 * @param {Buffer} bytes
 */
function handle(bytes) {
  // Fast path: most calls carry no attachment at all; answer without decoding or parsing.
  // Cursor wants `{}`: its events carry `"cursor_version"`, or its own event name `preToolUse`
  // (then parsed, so the answer depends on the event, not on where those bytes occur).
  if (!mayHoldAttachment(bytes)) {
    if (bytes.indexOf('"cursor_version"') >= 0) answerNoop();
    else if (bytes.indexOf('"preToolUse"') >= 0) {
      let event;
      try {
        event = JSON.parse(bytes.toString('utf8'));
      } catch {
        return;
      }
      if (isObject(event) && detectDialect(event) === 'cursor') answerNoop();
    }
    return;
  }
  const raw = bytes.toString('utf8');
  let event;
  try {
    event = JSON.parse(raw);
  } catch {
    return;
  }
  if (!isObject(event)) return;
  const dialect = detectDialect(event);
  if (dialect === undefined) return;
  const noop = () => {
    if (dialect === 'cursor') answerNoop();
  };
  const input = event.tool_input;
  if (!isObject(input)) return noop();
  const slots = findAttachments(input);
  const metadata = slots.find(
    (slot) => isFileUrlLike(slot.item.filename) || isFileUrlLike(slot.item.mime_type),
  );
  if (metadata !== undefined) {
    const denial = new Denial(
      'HOOK_FILE_URL_IN_METADATA',
      `${metadata.where}: a file:// URL belongs in source, never in filename or mime_type`,
    );
    return answer(JSON.stringify(denyOutput(dialect, denial)));
  }
  const work = slots.filter((slot) => hasFileScheme(slot.item.source));
  if (work.length === 0) return noop();
  let result;
  try {
    result = substitute(input, work, event.tool_name);
  } catch (error) {
    const denial =
      error instanceof Denial ? error : new Denial('HOOK_FILE_UNREADABLE', 'unexpected failure');
    return answer(JSON.stringify(denyOutput(dialect, denial)));
  }
  const { updated, payloads, markerPrefix } = result;
  const render = () => JSON.stringify(rewriteOutput(dialect, updated));
  let text;
  try {
    text = render();
  } catch {
    // Never exit 1 (a non-blocking error: the call would go on unrewritten); deny instead.
    const denial = new Denial('HOOK_INPUT_TOO_DEEP', 'the rewritten tool input cannot be encoded');
    return answer(JSON.stringify(denyOutput(dialect, denial)));
  }
  answerRewrite(text, payloads, markerPrefix, render);
}

function main() {
  const configured = process.env.TOOLFENCE_HOOK_MAX_INPUT_BYTES;
  let limit = MAX_INPUT_BYTES;
  if (configured !== undefined && configured !== '') {
    if (!/^[1-9][0-9]*$/.test(configured) || Number(configured) > LIMIT_CEILING) {
      process.stderr.write(
        'toolfence attachment hook: HOOK_CONFIG_INVALID: bad TOOLFENCE_HOOK_MAX_INPUT_BYTES\n',
      );
      process.exitCode = 2;
      return;
    }
    limit = Number(configured);
  }
  try {
    // An interactive terminal is not a hook event; do not wait for one.
    if (fs.fstatSync(0).isCharacterDevice()) return;
  } catch {
    return;
  }
  readStdin(limit, (bytes) => {
    if (bytes === undefined) {
      // Every supported client treats exit code 2 with a reason on stderr as a deny.
      process.stderr.write(
        `toolfence attachment hook: HOOK_INPUT_TOO_LARGE: the hook event is larger than ${limit} bytes. The tool call was not sent.\n`,
      );
      process.exitCode = 2;
      return;
    }
    handle(bytes);
  });
}

/**
 * @typedef {{ name: string, value: string, default: string, weakens: boolean }} ConfigSetting
 * @typedef {{ valid: true, settings: ConfigSetting[] } | { valid: false, reason: string }} ConfigReport
 */

/**
 * What a hook config file makes this hook do, read and checked exactly as the hook reads it (no
 * environment variables): `valid: false` with the hook's own reason when the hook would deny every
 * rewrite; else every setting that differs from the default, each with `weakens` when it makes the
 * hook read more than by default (credential files allowed, a limit raised, a shorter quiet time).
 * Used by the installer's `status` and `install`, which load this file from the package.
 * @param {string} configPath
 * @returns {ConfigReport}
 */
function inspectConfigFile(configPath) {
  /** @type {HookConfig} */
  let config;
  try {
    config = loadConfig({}, configPath);
  } catch (error) {
    if (error instanceof Denial) return { valid: false, reason: error.message };
    throw error;
  }
  /** @type {ConfigSetting[]} */
  const settings = [];
  if (config.rootsAsWritten !== undefined) {
    settings.push({
      name: 'allowedRoots',
      value: config.rootsAsWritten.join(', '),
      default: 'unset',
      weakens: false,
    });
  }
  if (!config.denyCredentialFiles) {
    settings.push({ name: 'denyCredentialFiles', value: 'false', default: 'true', weakens: true });
  }
  /** @type {[string, number, number, boolean][]} name, value, default, a higher value reads more */
  const limits = [
    ['maxBytes', config.maxBytes, MAX_BYTES, true],
    ['maxTotalBytes', config.maxTotalBytes, MAX_TOTAL_BYTES, true],
    ['maxDepth', config.maxDepth, MAX_DEPTH, true],
    ['maxAttachments', config.maxAttachments, MAX_ATTACHMENTS, true],
    ['settleMs', config.settleMs, SETTLE_MS, false],
  ];
  for (const [name, value, fallback, higherReadsMore] of limits) {
    if (value === fallback) continue;
    settings.push({
      name,
      value: String(value),
      default: String(fallback),
      weakens: higherReadsMore ? value > fallback : value < fallback,
    });
  }
  for (const [name, bytes] of config.toolkitBudgets) {
    settings.push({
      name: `toolkitBudgets.${name}`,
      value: String(bytes),
      default: 'unset',
      weakens: false,
    });
  }
  return { valid: true, settings };
}

// Run as a hook (`node toolfence_attachment_substitution.cjs`); loaded as a module (by the
// installer's status and install), it only lends its config reader.
if (require.main === module) main();
else module.exports = { inspectConfigFile };
