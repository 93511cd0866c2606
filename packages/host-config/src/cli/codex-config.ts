// Codex keeps hook trust and feature flags in `$CODEX_HOME/config.toml`. This package has no
// runtime dependencies, so this is a small reader for the few facts the installer needs (table
// headers, `key = value` lines with string and boolean values) and a line-preserving writer for
// one trust entry. Anything else in the file is skipped, never rewritten.
import { createHash } from 'node:crypto';

/** One `[hooks.state."<key>"]` entry. */
export interface CodexHookState {
  /** `trusted_hash`, as Codex wrote it (`sha256:<hex>`). */
  readonly trustedHash: string | undefined;
  /** `enabled`, when set (`false` disables the hook). */
  readonly enabled: boolean | undefined;
}

/** What the installer reads from Codex's `config.toml`. */
export interface CodexConfigFacts {
  /** Hook trust entries by key (`<hooks file>:pre_tool_use:<group>:<handler>`). */
  readonly hookStates: ReadonlyMap<string, CodexHookState>;
  /** `[features] hooks`, when set. */
  readonly hooksFeature: boolean | undefined;
  /** `[features] codex_hooks` (the deprecated alias), when set. */
  readonly codexHooksFeature: boolean | undefined;
  /** 1-based line of the `[hooks.state."<key>"]` header, by key, for entries written as tables. */
  readonly stateHeaders: ReadonlyMap<string, number>;
  /** Keys whose entry is written inline (`"<key>" = { ... }`), which the writer does not edit. */
  readonly inlineStates: ReadonlySet<string>;
  /**
   * Where each key's `trusted_hash` string value is, as character offsets into the text (start
   * inclusive, end exclusive), in whatever form it is written: under its own table, or as a
   * dotted key (`"<key>".trusted_hash = ...` under `[hooks.state]`, `state."<key>".trusted_hash`
   * under `[hooks]`, ...). More than one span means the file defines it twice.
   */
  readonly trustedHashSpans: ReadonlyMap<string, readonly { start: number; end: number }[]>;
  /** How many `[hooks.state."<key>"]` headers each key has (more than one is invalid TOML). */
  readonly stateHeaderCounts: ReadonlyMap<string, number>;
  /** Keys whose table is (also) defined by dotted keys from another table. */
  readonly dottedStates: ReadonlySet<string>;
  /** `hooks` or `hooks.state` is an inline table, to which no `[hooks.state."<key>"]` may be added. */
  readonly inlineHooksTable: boolean;
  /** Offset just after each `[hooks.state."<key>"]` header line's text, and that line's ending. */
  readonly stateHeaderEnds: ReadonlyMap<string, { end: number; ending: string }>;
}

/** One line of the text: its content without the line ending, where it starts, its ending. */
interface Line {
  readonly raw: string;
  readonly start: number;
  readonly ending: string;
}

/** The text's lines with their offsets; endings (`\n`, `\r\n`) are kept apart, never changed. */
function linesOf(text: string): Line[] {
  const lines: Line[] = [];
  let position = 0;
  for (;;) {
    const newline = text.indexOf('\n', position);
    if (newline < 0) {
      lines.push({ raw: text.slice(position), start: position, ending: '' });
      return lines;
    }
    const end = newline > position && text[newline - 1] === '\r' ? newline - 1 : newline;
    lines.push({
      raw: text.slice(position, end),
      start: position,
      ending: text.slice(end, newline + 1),
    });
    position = newline + 1;
  }
}

/** Length of the single-line TOML string literal at the start of `text`; undefined if none. */
function stringLiteralLength(text: string): number | undefined {
  if (text.startsWith('"') && !text.startsWith('"""')) {
    for (let index = 1; index < text.length; index += 1) {
      if (text[index] === '\\') index += 1;
      else if (text[index] === '"') return index + 1;
    }
    return undefined;
  }
  if (text.startsWith("'") && !text.startsWith("'''")) {
    const end = text.indexOf("'", 1);
    return end < 0 ? undefined : end + 1;
  }
  return undefined;
}

type Token = { readonly keys: string[]; readonly rest: string };

/** Parses a dotted TOML key (bare, "basic" and 'literal' parts) at the start of `text`. */
function parseKey(text: string): Token | undefined {
  const keys: string[] = [];
  let index = 0;
  const skipSpace = () => {
    while (text[index] === ' ' || text[index] === '\t') index += 1;
  };
  for (;;) {
    skipSpace();
    const char = text[index];
    if (char === '"') {
      let value = '';
      index += 1;
      for (;;) {
        const next = text[index];
        if (next === undefined) return undefined;
        if (next === '"') break;
        if (next === '\\') {
          const escaped = text[index + 1];
          const simple: Record<string, string> = {
            '"': '"',
            '\\': '\\',
            b: '\b',
            t: '\t',
            n: '\n',
            f: '\f',
            r: '\r',
          };
          if (escaped !== undefined && simple[escaped] !== undefined) {
            value += simple[escaped];
            index += 2;
            continue;
          }
          const hex = escaped === 'u' ? 4 : escaped === 'U' ? 8 : 0;
          if (hex === 0) return undefined;
          const code = Number.parseInt(text.slice(index + 2, index + 2 + hex), 16);
          if (!Number.isFinite(code)) return undefined;
          value += String.fromCodePoint(code);
          index += 2 + hex;
          continue;
        }
        value += next;
        index += 1;
      }
      index += 1;
      keys.push(value);
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1);
      if (end < 0) return undefined;
      keys.push(text.slice(index + 1, end));
      index = end + 1;
    } else {
      const match = /^[A-Za-z0-9_-]+/.exec(text.slice(index));
      if (match === null) return undefined;
      keys.push(match[0]);
      index += match[0].length;
    }
    skipSpace();
    if (text[index] !== '.') break;
    index += 1;
  }
  return { keys, rest: text.slice(index) };
}

/** A string or boolean TOML value at the start of `text`; undefined for anything else. */
function parseScalar(text: string): string | boolean | undefined {
  const trimmed = text.trim();
  if (/^true\b/.test(trimmed)) return true;
  if (/^false\b/.test(trimmed)) return false;
  if (trimmed.startsWith('"') && !trimmed.startsWith('"""')) {
    return parseKey(trimmed)?.keys.length === 1 ? parseKey(trimmed)?.keys[0] : undefined;
  }
  if (trimmed.startsWith("'") && !trimmed.startsWith("'''")) {
    const end = trimmed.indexOf("'", 1);
    return end < 0 ? undefined : trimmed.slice(1, end);
  }
  return undefined;
}

function same(path: readonly string[], expected: readonly string[]): boolean {
  return path.length === expected.length && path.every((part, index) => part === expected[index]);
}

/** Reads hook trust entries and the hooks feature flags from a Codex `config.toml` text. */
export function readCodexConfig(text: string): CodexConfigFacts {
  const states = new Map<string, { trustedHash?: string; enabled?: boolean }>();
  const stateHeaders = new Map<string, number>();
  const inlineStates = new Set<string>();
  const trustedHashSpans = new Map<string, { start: number; end: number }[]>();
  const stateHeaderCounts = new Map<string, number>();
  const stateHeaderEnds = new Map<string, { end: number; ending: string }>();
  const dottedStates = new Set<string>();
  let inlineHooksTable = false;
  let hooksFeature: boolean | undefined;
  let codexHooksFeature: boolean | undefined;
  let table: string[] = [];
  let skipUntil: RegExp | undefined;
  const lines = linesOf(text);
  const record = (path: readonly string[], value: string | boolean | undefined) => {
    if (path.length === 4 && path[0] === 'hooks' && path[1] === 'state') {
      const key = path[2] as string;
      const entry = states.get(key) ?? {};
      if (path[3] === 'trusted_hash' && typeof value === 'string') entry.trustedHash = value;
      if (path[3] === 'enabled' && typeof value === 'boolean') entry.enabled = value;
      states.set(key, entry);
    }
    if (same(path, ['features', 'hooks']) && typeof value === 'boolean') hooksFeature = value;
    if (same(path, ['features', 'codex_hooks']) && typeof value === 'boolean') {
      codexHooksFeature = value;
    }
  };
  lines.forEach(({ raw, start, ending }, index) => {
    if (skipUntil !== undefined) {
      if (skipUntil.test(raw)) skipUntil = undefined;
      return;
    }
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (line.startsWith('[[')) {
      const parsed = parseKey(line.slice(2));
      table = parsed === undefined ? ['\0'] : parsed.keys;
      return;
    }
    if (line.startsWith('[')) {
      const parsed = parseKey(line.slice(1));
      if (parsed === undefined || !parsed.rest.trimStart().startsWith(']')) {
        table = ['\0'];
        return;
      }
      table = parsed.keys;
      if (table.length === 3 && table[0] === 'hooks' && table[1] === 'state') {
        const key = table[2] as string;
        stateHeaders.set(key, index + 1);
        stateHeaderCounts.set(key, (stateHeaderCounts.get(key) ?? 0) + 1);
        stateHeaderEnds.set(key, { end: start + raw.length, ending });
        if (!states.has(key)) states.set(key, {});
      }
      return;
    }
    const parsed = parseKey(line);
    if (parsed === undefined || !parsed.rest.trimStart().startsWith('=')) return;
    const afterEquals = parsed.rest.trimStart().slice(1);
    const valueText = afterEquals.trim();
    const path = [...table, ...parsed.keys];
    if (
      path.length >= 4 &&
      path[0] === 'hooks' &&
      path[1] === 'state' &&
      table.length < 3 &&
      parsed.keys.length > 1
    ) {
      dottedStates.add(path[2] as string);
    }
    if (valueText.startsWith('{') && (same(path, ['hooks']) || same(path, ['hooks', 'state']))) {
      inlineHooksTable = true;
    }
    if (
      path.length === 4 &&
      path[0] === 'hooks' &&
      path[1] === 'state' &&
      path[3] === 'trusted_hash'
    ) {
      const length = stringLiteralLength(valueText);
      if (length !== undefined) {
        // Offsets: the line's start, its leading blanks, the key, `=` and the blanks after it.
        const valueStart =
          start +
          (raw.length - raw.trimStart().length) +
          (line.length - afterEquals.length) +
          (afterEquals.length - afterEquals.trimStart().length);
        const spans = trustedHashSpans.get(path[2] as string) ?? [];
        spans.push({ start: valueStart, end: valueStart + length });
        trustedHashSpans.set(path[2] as string, spans);
      }
    }
    if (valueText.startsWith('"""') && valueText.indexOf('"""', 3) < 0) skipUntil = /"""/;
    else if (valueText.startsWith("'''") && valueText.indexOf("'''", 3) < 0) skipUntil = /'''/;
    else if (valueText.startsWith('[') && !/\]\s*(#.*)?$/.test(valueText)) skipUntil = /\]\s*$/;
    if (valueText.startsWith('{')) {
      if (path.length === 3 && path[0] === 'hooks' && path[1] === 'state') {
        inlineStates.add(path[2] as string);
        const hash = /\btrusted_hash\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')/.exec(valueText);
        const enabled = /\benabled\s*=\s*(true|false)\b/.exec(valueText);
        record(
          [...path, 'trusted_hash'],
          hash?.[1] === undefined ? undefined : parseScalar(hash[1]),
        );
        record(
          [...path, 'enabled'],
          enabled?.[1] === undefined ? undefined : enabled[1] === 'true',
        );
      }
      return;
    }
    record(path, parseScalar(valueText));
  });
  const hookStates = new Map<string, CodexHookState>();
  for (const [key, entry] of states) {
    hookStates.set(key, { trustedHash: entry.trustedHash, enabled: entry.enabled });
  }
  return {
    hookStates,
    hooksFeature,
    codexHooksFeature,
    stateHeaders,
    inlineStates,
    trustedHashSpans,
    stateHeaderCounts,
    dottedStates,
    inlineHooksTable,
    stateHeaderEnds,
  };
}

/** Sorts object keys recursively, as Codex does before hashing a hook's identity. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      sorted[key] = canonical((value as Record<string, unknown>)[key]);
    }
    return sorted;
  }
  return value;
}

/** The one command handler of a registration, as Codex normalizes it before hashing. */
export interface CodexHandlerIdentity {
  /** The shell command. */
  readonly command: string;
  /** Timeout in seconds (Codex fills in 600 when unset). */
  readonly timeout?: number;
  /** The status line, when the registration sets one. */
  readonly statusMessage?: string;
}

/**
 * The hash Codex stores as `trusted_hash` for a command hook: `sha256:` and the hex SHA-256 of
 * the compact, key-sorted JSON of `{ event_name, matcher, hooks: [{ type, command, timeout,
 * async }] }` (Codex's `version_for_toml`), with its defaults filled in (timeout 600, async
 * false) and unset fields left out.
 */
export function codexHookTrustHash(
  eventName: string,
  matcher: string | undefined,
  handler: CodexHandlerIdentity,
): string {
  const normalized: Record<string, unknown> = {
    type: 'command',
    command: handler.command,
    timeout: handler.timeout ?? 600,
    async: false,
  };
  if (handler.statusMessage !== undefined) normalized.statusMessage = handler.statusMessage;
  const identity: Record<string, unknown> = { event_name: eventName, hooks: [normalized] };
  if (matcher !== undefined) identity.matcher = matcher;
  const digest = createHash('sha256')
    .update(JSON.stringify(canonical(identity)))
    .digest('hex');
  return `sha256:${digest}`;
}

/** A TOML basic string (JSON's escapes are all valid TOML escapes). */
function tomlString(value: string): string {
  return JSON.stringify(value);
}

/** Why {@link withCodexTrustEntry} left a file alone. */
export type CodexTrustRefusal =
  | 'inline'
  | 'defined-twice'
  | 'dotted-without-hash'
  | 'inline-hooks-table'
  | 'not-verified';

/**
 * Returns `text` with `trusted_hash = "<hash>"` set for `[hooks.state."<key>"]`, edited by
 * character offsets so every other byte (line endings included, `\n` and `\r\n` mixed) stays as
 * it was: an existing `trusted_hash`, in whatever form it is written (its own table, or a dotted
 * key such as `"<key>".trusted_hash` under `[hooks.state]`), has only its string value replaced;
 * a table without one gets the line under its header; a key not there gets a new table at the
 * end. Before returning, the result is read again and must define the key's `trusted_hash` once,
 * with the new value, and the key's table once. Returns a refusal reason instead when the entry is
 * inline (`"<key>" = { ... }`), defined twice already, defined by dotted keys without a
 * `trusted_hash`, under an inline `hooks` table, or the result does not pass that check.
 */
export function editCodexTrustEntry(
  text: string,
  key: string,
  hash: string,
): { readonly text: string } | { readonly refused: CodexTrustRefusal } {
  const facts = readCodexConfig(text);
  if (facts.inlineStates.has(key)) return { refused: 'inline' };
  const spans = facts.trustedHashSpans.get(key) ?? [];
  const headers = facts.stateHeaderCounts.get(key) ?? 0;
  if (spans.length > 1 || headers > 1 || (headers > 0 && facts.dottedStates.has(key))) {
    return { refused: 'defined-twice' };
  }
  const value = tomlString(hash);
  let result: string;
  const [span] = spans;
  const header = facts.stateHeaderEnds.get(key);
  if (span !== undefined) {
    result = `${text.slice(0, span.start)}${value}${text.slice(span.end)}`;
  } else if (header !== undefined) {
    const ending = header.ending === '' ? '\n' : header.ending;
    const rest = text.slice(header.end + header.ending.length);
    result = `${text.slice(0, header.end)}${ending}trusted_hash = ${value}${header.ending === '' ? '' : ending}${rest}`;
  } else if (facts.dottedStates.has(key)) {
    return { refused: 'dotted-without-hash' };
  } else if (facts.inlineHooksTable) {
    return { refused: 'inline-hooks-table' };
  } else {
    // The file's own line ending: the last one it uses, else `\n`.
    const last = /(\r?\n)[^\n]*$/.exec(text);
    const newline = last?.[1] ?? '\n';
    const separator = text === '' ? '' : text.endsWith('\n') ? newline : newline + newline;
    result = `${text}${separator}[hooks.state.${tomlString(key)}]${newline}trusted_hash = ${value}${newline}`;
  }
  const check = readCodexConfig(result);
  if (
    check.hookStates.get(key)?.trustedHash !== hash ||
    (check.trustedHashSpans.get(key) ?? []).length !== 1 ||
    (check.stateHeaderCounts.get(key) ?? 0) > 1 ||
    ((check.stateHeaderCounts.get(key) ?? 0) > 0 && check.dottedStates.has(key))
  ) {
    return { refused: 'not-verified' };
  }
  return { text: result };
}

/**
 * {@link editCodexTrustEntry}'s text, or undefined when it refused (an inline entry, a key
 * defined twice, ...).
 */
export function withCodexTrustEntry(text: string, key: string, hash: string): string | undefined {
  const edited = editCodexTrustEntry(text, key, hash);
  return 'text' in edited ? edited.text : undefined;
}
