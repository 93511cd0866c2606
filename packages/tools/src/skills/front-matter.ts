import { SkillFormatError, SkillLimitError } from './errors.js';

/** The front matter keys accepted (Agent Skills format plus `version`). */
export const SKILL_FRONT_MATTER_KEYS: readonly string[] = Object.freeze([
  'name',
  'description',
  'version',
  'license',
  'compatibility',
  'allowed-tools',
  'metadata',
]);

/** Parsed front matter: single-line string values, and `metadata` as a flat string map. */
export interface SkillFrontMatter {
  readonly fields: Readonly<Record<string, string>>;
  readonly metadata: Readonly<Record<string, string>>;
  /** The document after the closing `---`. */
  readonly body: string;
}

const KEY = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
const PLAIN_FORBIDDEN_START = /^[[\]{}&*!|>%@`'",#?:-]/;

let currentSkill: string | undefined;

function formatError(reason: string, line?: number): SkillFormatError {
  return new SkillFormatError('Skill front matter is outside the supported subset', {
    details: {
      reason,
      ...(line === undefined ? {} : { line }),
      ...(currentSkill === undefined ? {} : { skill: currentSkill }),
    },
  });
}

/** One scalar on one line: plain, 'single-quoted' or "double-quoted" (escapes \" and \\ only). */
function parseScalar(raw: string, line: number): string {
  const value = raw.trim();
  if (value === '') throw formatError('empty_value', line);
  if (value.startsWith("'")) {
    if (value.length < 2 || !value.endsWith("'")) throw formatError('unterminated_quote', line);
    const inner = value.slice(1, -1);
    if (/'(?!')/.test(inner.replaceAll("''", ''))) throw formatError('bad_single_quote', line);
    return inner.replaceAll("''", "'");
  }
  if (value.startsWith('"')) {
    if (value.length < 2 || !value.endsWith('"')) throw formatError('unterminated_quote', line);
    const inner = value.slice(1, -1);
    let out = '';
    for (let index = 0; index < inner.length; index += 1) {
      const char = inner[index];
      if (char === '\\') {
        const next = inner[index + 1];
        if (next !== '"' && next !== '\\') throw formatError('unsupported_escape', line);
        out += next;
        index += 1;
      } else if (char === '"') {
        throw formatError('bad_double_quote', line);
      } else {
        out += char;
      }
    }
    return out;
  }
  if (PLAIN_FORBIDDEN_START.test(value)) throw formatError('needs_full_yaml', line);
  if (value.includes(': ') || value.endsWith(':') || value.includes(' #')) {
    throw formatError('needs_full_yaml', line);
  }
  return value;
}

/**
 * Parses the bounded front matter subset of SKILL.md:
 *
 * - the file starts with a `---` line and the front matter ends at the next `---` line, within
 *   `maxLines` lines;
 * - each line is `key: value` with a single-line scalar (plain, single- or double-quoted);
 *   blank lines are allowed; comments, lists, flow collections, block scalars, anchors,
 *   aliases, tags, multi-line values and duplicate keys are refused;
 * - only the keys in {@link SKILL_FRONT_MATTER_KEYS}; `metadata:` (with no value) is followed by
 *   lines indented by exactly two spaces, each `key: value` with a scalar.
 */
export function parseSkillFrontMatter(
  text: string,
  maxLines: number,
  skill?: string,
): SkillFrontMatter {
  currentSkill = skill;
  try {
    return parse(text, maxLines);
  } finally {
    currentSkill = undefined;
  }
}

function parse(text: string, maxLines: number): SkillFrontMatter {
  const normalized = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const lines = normalized.split(/\r?\n/);
  if (lines[0] !== '---') throw formatError('missing_front_matter');
  const fields: Record<string, string> = {};
  const metadata: Record<string, string> = {};
  let inMetadata = false;
  let end = -1;
  for (let index = 1; index < lines.length; index += 1) {
    const line = lines[index] as string;
    if (line === '---') {
      end = index;
      break;
    }
    if (index > maxLines) {
      throw new SkillLimitError('Skill front matter has more lines than allowed', {
        details: {
          limit: 'maxFrontmatterLines',
          maxFrontmatterLines: maxLines,
          ...(currentSkill === undefined ? {} : { skill: currentSkill }),
        },
      });
    }
    if (line.trim() === '') continue;
    if (line.includes('\t')) throw formatError('tab', index + 1);
    if (line.startsWith('  ')) {
      if (!inMetadata || line.startsWith('   ')) throw formatError('unexpected_indent', index + 1);
      const [key, value] = splitKeyValue(line.slice(2), index + 1);
      if (Object.hasOwn(metadata, key)) throw formatError('duplicate_key', index + 1);
      metadata[key] = parseScalar(value, index + 1);
      continue;
    }
    inMetadata = false;
    const [key, value] = splitKeyValue(line, index + 1);
    if (!SKILL_FRONT_MATTER_KEYS.includes(key)) throw formatError('unknown_key', index + 1);
    if (Object.hasOwn(fields, key) || (key === 'metadata' && Object.keys(metadata).length > 0)) {
      throw formatError('duplicate_key', index + 1);
    }
    if (key === 'metadata') {
      if (value.trim() !== '') throw formatError('metadata_not_a_map', index + 1);
      inMetadata = true;
      fields[key] = '';
      continue;
    }
    fields[key] = parseScalar(value, index + 1);
  }
  if (end === -1) throw formatError('unterminated_front_matter');
  delete fields.metadata;
  return {
    fields: Object.freeze(fields),
    metadata: Object.freeze(metadata),
    body: lines.slice(end + 1).join('\n'),
  };
}

function splitKeyValue(line: string, lineNumber: number): [string, string] {
  const colon = line.indexOf(':');
  if (colon <= 0) throw formatError('not_key_value', lineNumber);
  const key = line.slice(0, colon);
  const rest = line.slice(colon + 1);
  if (!KEY.test(key)) throw formatError('bad_key', lineNumber);
  if (rest !== '' && !rest.startsWith(' ')) throw formatError('not_key_value', lineNumber);
  return [key, rest];
}
