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
  let hooksFeature: boolean | undefined;
  let codexHooksFeature: boolean | undefined;
  let table: string[] = [];
  let skipUntil: RegExp | undefined;
  const lines = text.split(/\r?\n/);
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
  lines.forEach((raw, index) => {
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
        stateHeaders.set(table[2] as string, index + 1);
        if (!states.has(table[2] as string)) states.set(table[2] as string, {});
      }
      return;
    }
    const parsed = parseKey(line);
    if (parsed === undefined || !parsed.rest.trimStart().startsWith('=')) return;
    const valueText = parsed.rest.trimStart().slice(1).trim();
    const path = [...table, ...parsed.keys];
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
  return { hookStates, hooksFeature, codexHooksFeature, stateHeaders, inlineStates };
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

/**
 * Returns `text` with `[hooks.state."<key>"] trusted_hash = "<hash>"` set: the existing table's
 * `trusted_hash` line replaced (or added under its header), or a new table appended. Every other
 * line is kept byte for byte. Returns undefined when the entry is written inline, which this
 * writer does not edit.
 */
export function withCodexTrustEntry(text: string, key: string, hash: string): string | undefined {
  const facts = readCodexConfig(text);
  if (facts.inlineStates.has(key)) return undefined;
  const entry = `trusted_hash = ${tomlString(hash)}`;
  const header = facts.stateHeaders.get(key);
  const newline = text.includes('\r\n') ? '\r\n' : '\n';
  if (header === undefined) {
    const separator = text === '' ? '' : text.endsWith('\n') ? newline : newline + newline;
    return `${text}${separator}[hooks.state.${tomlString(key)}]${newline}${entry}${newline}`;
  }
  const lines = text.split(/\r?\n/);
  let end = lines.length;
  for (let index = header; index < lines.length; index += 1) {
    if ((lines[index] ?? '').trim().startsWith('[')) {
      end = index;
      break;
    }
  }
  for (let index = header; index < end; index += 1) {
    if (/^\s*trusted_hash\s*=/.test(lines[index] ?? '')) {
      lines[index] = entry;
      return lines.join(newline);
    }
  }
  lines.splice(header, 0, entry);
  return lines.join(newline);
}
