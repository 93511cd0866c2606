import { lazyRequire } from '../internal/lazy-require.js';
import { SkillFormatError, SkillLimitError } from './errors.js';

/** The `yaml` library (CommonJS), loaded when the first front matter is parsed. */
const yaml = lazyRequire<typeof import('yaml')>('yaml');

/** The front matter keys with a meaning (Agent Skills format plus `version`). */
export const SKILL_FRONT_MATTER_KEYS: readonly string[] = Object.freeze([
  'name',
  'description',
  'version',
  'license',
  'compatibility',
  'allowed-tools',
  'metadata',
]);

/** A JSON value kept from front matter as data (never executed or trusted). */
export type SkillFrontMatterValue =
  | string
  | number
  | boolean
  | null
  | readonly SkillFrontMatterValue[]
  | { readonly [key: string]: SkillFrontMatterValue };

/** Parsed front matter. Every value is data: nothing in it is executed or trusted. */
export interface SkillFrontMatter {
  /** The known single-text keys (`name`, `description`, `version`, `license`, `compatibility`). */
  readonly fields: Readonly<Record<string, string>>;
  /** `allowed-tools`, written as a space-separated string or as a list; `undefined` when absent. */
  readonly allowedTools: readonly string[] | undefined;
  /** The `metadata` map: string keys, scalar values as text; `{}` when absent. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Keys outside {@link SKILL_FRONT_MATTER_KEYS}, kept as frozen JSON data and reported. */
  readonly extra: Readonly<Record<string, SkillFrontMatterValue>>;
  /** The whole front matter as frozen JSON data, exactly as YAML gives it (to compare it). */
  readonly data: Readonly<Record<string, SkillFrontMatterValue>>;
  /** The document after the closing `---`. */
  readonly body: string;
  /** Departures from the Agent Skills spec that were accepted (`specLimits: 'warn'`). */
  readonly deviations: readonly SkillDeviation[];
}

/**
 * What to do with a departure from the Agent Skills spec that the clients people use accept
 * (a description over 1,024 characters, `metadata` values that are not text): `'warn'` loads
 * the skill and reports it, `'refuse'` skips the skill.
 */
export type SkillSpecLimits = 'warn' | 'refuse';

/** One accepted departure from the spec (reported as a problem with `skipped: false`). */
export interface SkillDeviation {
  /** `description_too_long`, `metadata_not_a_map` or `metadata_not_text`. */
  readonly reason: string;
  /** The front matter line, when known. */
  readonly line?: number;
  /** For `metadata_not_text`: the metadata key, when it is made of letters, digits, `-` and `_`. */
  readonly key?: string;
}

/** Default most YAML nodes and entry indicators in one front matter (`maxFrontmatterNodes`). */
export const DEFAULT_MAX_FRONTMATTER_NODES = 1_000;

/**
 * The token types the pre-scan counts: every scalar, collection start, entry indicator
 * (`-`, `?`, `:`, `,`), anchor, alias and tag. Each YAML node or map/sequence entry yields at
 * least one of them, so their count bounds the nodes the composer would build.
 */
const COUNTED_TOKENS: ReadonlySet<string> = new Set([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'block-scalar-header',
  'flow-map-start',
  'flow-seq-start',
  'comma',
  'map-value-ind',
  'seq-item-ind',
  'explicit-key-ind',
  'anchor',
  'alias',
  'tag',
]);

/**
 * Counts the front matter's nodes with the `yaml` library's lexer (one linear pass that builds
 * no tree) and stops as soon as the count passes `maxNodes`. Composing a document checks each
 * map key against the keys before it, so its cost grows with the square of the keys: this runs
 * first, so a front matter over the limit never reaches the composer.
 */
function checkNodeCount(source: string, maxNodes: number, skill: string | undefined): void {
  let nodes = 0;
  for (const token of new (yaml().Lexer)().lex(source)) {
    const type = yaml().CST.tokenType(token);
    if (type === null || !COUNTED_TOKENS.has(type)) continue;
    nodes += 1;
    if (nodes > maxNodes) {
      throw new SkillLimitError('Skill front matter has more YAML nodes than allowed', {
        details: {
          limit: 'maxFrontmatterNodes',
          maxFrontmatterNodes: maxNodes,
          ...(skill === undefined ? {} : { skill }),
        },
      });
    }
  }
}

const SAFE_KEY = /^[A-Za-z0-9_-]{1,64}$/;
const TEXT_KEYS = new Set(['name', 'description', 'version', 'license', 'compatibility']);
/** Longest text kept for one front matter value (the description has its own, lower limit). */
const MAX_VALUE_CHARS = 8_192;

/** A front matter line, or a function that counts it only when an error is raised. */
type LineRef = number | (() => number | undefined) | undefined;

function formatError(
  reason: string,
  skill: string | undefined,
  lineRef?: LineRef,
): SkillFormatError {
  const line = typeof lineRef === 'function' ? lineRef() : lineRef;
  return new SkillFormatError(formatMessage(reason), {
    details: {
      reason,
      ...(line === undefined ? {} : { line }),
      ...(skill === undefined ? {} : { skill }),
    },
  });
}

const MESSAGES: Readonly<Record<string, string>> = {
  missing_front_matter: 'SKILL.md must start with a --- line that opens the YAML front matter',
  unterminated_front_matter: 'SKILL.md front matter has no closing --- line',
  invalid_yaml: 'SKILL.md front matter is not valid YAML',
  not_a_map: 'SKILL.md front matter must be a map of keys to values',
  alias: 'SKILL.md front matter may not use YAML anchors or aliases',
  tag: 'SKILL.md front matter may not use YAML tags',
  not_text: 'A SKILL.md front matter value must be text',
  empty_value: 'A SKILL.md front matter value is empty',
  value_too_long: 'A SKILL.md front matter value is too long',
  bad_allowed_tools: 'allowed-tools must be a string or a list of strings',
  metadata_not_a_map: 'metadata must be a map of keys to text values',
  bad_key: 'A SKILL.md front matter key must be text',
  merge_key: 'SKILL.md front matter may not use YAML merge keys (<<)',
};

function formatMessage(reason: string): string {
  return MESSAGES[reason] ?? 'SKILL.md front matter is invalid';
}

/**
 * Parses the front matter of a SKILL.md as YAML 1.2 (the `yaml` library's core schema): the
 * file starts with a `---` line and the front matter ends at the next `---` line within
 * `maxLines` lines, checked before any parsing, and holds at most `maxNodes` YAML nodes and entry
 * indicators, counted by a linear lexer pass before the document is composed. Block and flow scalars, quoting, comments and
 * lists are accepted as YAML defines them; anchors, aliases, tags, merge keys and duplicate keys
 * are refused (an alias is never expanded). `name`, `description`, `version`, `license` and `compatibility` must be scalars
 * (kept as written: `version: 1.0` is `"1.0"`), `allowed-tools` a string or a list of strings,
 * `metadata` a map of scalars (with `specLimits: 'warn'`, the default, a list or map value is
 * kept as its JSON text and reported in `deviations`). Other keys are kept in `extra` as data.
 */
export function parseSkillFrontMatter(
  text: string,
  maxLines: number,
  skill?: string,
  maxNodes: number = DEFAULT_MAX_FRONTMATTER_NODES,
  specLimits: SkillSpecLimits = 'warn',
): SkillFrontMatter {
  const normalized = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const lines = normalized.split(/\r?\n/);
  if (lines[0]?.trimEnd() !== '---') throw formatError('missing_front_matter', skill);
  let end = -1;
  for (let index = 1; index < lines.length; index += 1) {
    if ((lines[index] as string).trimEnd() === '---') {
      end = index;
      break;
    }
    if (index > maxLines) {
      throw new SkillLimitError('Skill front matter has more lines than allowed', {
        details: {
          limit: 'maxFrontmatterLines',
          maxFrontmatterLines: maxLines,
          ...(skill === undefined ? {} : { skill }),
        },
      });
    }
  }
  if (end === -1) throw formatError('unterminated_front_matter', skill);
  const source = lines.slice(1, end).join('\n');
  checkNodeCount(source, maxNodes, skill);
  const document = yaml().parseDocument(source, {
    schema: 'core',
    customTags: [],
    merge: false,
    uniqueKeys: true,
    prettyErrors: false,
    strict: true,
    stringKeys: false,
  });
  const first = document.errors[0];
  if (first !== undefined) {
    throw formatError('invalid_yaml', skill, lineOf(source, first.pos[0]));
  }
  let refused: { reason: string; offset: number | undefined } | undefined;
  yaml().visit(document, (_key, node) => {
    if (yaml().isAlias(node)) {
      refused = { reason: 'alias', offset: node.range?.[0] };
      return yaml().visit.BREAK;
    }
    if (yaml().isNode(node) && (node.anchor !== undefined || node.tag !== undefined)) {
      refused = { reason: node.anchor === undefined ? 'tag' : 'alias', offset: node.range?.[0] };
      return yaml().visit.BREAK;
    }
    return undefined;
  });
  if (refused !== undefined) {
    throw formatError(refused.reason, skill, lineOf(source, refused.offset));
  }
  const root = document.contents;
  const fields: Record<string, string> = {};
  const metadata: Record<string, string> = {};
  const extra: Record<string, SkillFrontMatterValue> = {};
  const deviations: SkillDeviation[] = [];
  let allowedTools: string[] | undefined;
  if (root !== null && !yaml().isMap(root)) throw formatError('not_a_map', skill);
  for (const pair of root?.items ?? []) {
    // The line is counted only when an error needs it (counting it for every key would scan
    // the source once per key).
    const keyOffset = yaml().isNode(pair.key) ? pair.key.range?.[0] : undefined;
    const line = lazyLine(source, keyOffset);
    if (!yaml().isScalar(pair.key) || typeof pair.key.value !== 'string') {
      throw formatError('bad_key', skill, line);
    }
    const key = pair.key.value;
    if (key === '<<') throw formatError('merge_key', skill, line);
    const value = pair.value;
    if (TEXT_KEYS.has(key)) {
      fields[key] = scalarText(value, skill, line);
    } else if (key === 'allowed-tools') {
      allowedTools = toolList(value, skill, line);
    } else if (key === 'metadata') {
      if (value === null || (yaml().isScalar(value) && value.value === null)) continue;
      const deviate = (reason: string, metadataKey?: string): void => {
        if (specLimits === 'refuse') throw formatError('metadata_not_a_map', skill, line);
        const at = typeof line === 'function' ? line() : line;
        deviations.push({
          reason,
          ...(at === undefined ? {} : { line: at }),
          ...(metadataKey !== undefined && SAFE_KEY.test(metadataKey) ? { key: metadataKey } : {}),
        });
      };
      if (!yaml().isMap(value)) {
        deviate('metadata_not_a_map');
        continue;
      }
      for (const item of value.items) {
        if (!yaml().isScalar(item.key) || typeof item.key.value !== 'string') {
          deviate('metadata_not_a_map');
          continue;
        }
        const metadataKey = item.key.value;
        if (yaml().isScalar(item.value) || item.value === null) {
          metadata[metadataKey] = scalarText(item.value, skill, line, 'metadata_not_a_map');
        } else {
          // A list or map under metadata (which the clients accept): kept as its JSON text.
          deviate('metadata_not_text', metadataKey);
          metadata[metadataKey] = JSON.stringify(
            yaml().isNode(item.value) ? item.value.toJSON() : null,
          );
        }
      }
    } else {
      extra[key] = deepFreeze(
        (yaml().isNode(value) ? value.toJSON() : null) as SkillFrontMatterValue,
      );
    }
  }
  return {
    fields: Object.freeze(fields),
    allowedTools: allowedTools === undefined ? undefined : Object.freeze(allowedTools),
    metadata: Object.freeze(metadata),
    extra: Object.freeze(extra),
    data: deepFreeze((root === null ? {} : root.toJSON()) as Record<string, SkillFrontMatterValue>),
    body: lines.slice(end + 1).join('\n'),
    deviations: Object.freeze(deviations.map((deviation) => Object.freeze(deviation))),
  };
}

/** A scalar's text as written (`1.0` stays `"1.0"`, `true` stays `"true"`); block scalars folded by YAML. */
function scalarText(
  value: unknown,
  skill: string | undefined,
  line: LineRef,
  reason = 'not_text',
): string {
  if (!yaml().isScalar(value)) throw formatError(reason, skill, line);
  const text =
    typeof value.value === 'string'
      ? value.value
      : value.value === null
        ? ''
        : typeof value.source === 'string'
          ? value.source
          : String(value.value);
  if (text.trim() === '') throw formatError('empty_value', skill, line);
  if (text.length > MAX_VALUE_CHARS) throw formatError('value_too_long', skill, line);
  return text;
}

function toolList(value: unknown, skill: string | undefined, line: LineRef): string[] {
  if (yaml().isScalar(value) && typeof value.value === 'string') {
    return value.value.split(/\s+/).filter((entry) => entry !== '');
  }
  if (yaml().isSeq(value)) {
    return value.items.map((item) => {
      if (!yaml().isScalar(item) || typeof item.value !== 'string' || item.value.trim() === '') {
        throw formatError('bad_allowed_tools', skill, line);
      }
      return item.value.trim();
    });
  }
  throw formatError('bad_allowed_tools', skill, line);
}

function lazyLine(source: string, offset: number | undefined): () => number | undefined {
  return () => lineOf(source, offset);
}

function lineOf(source: string, offset: number | undefined): number | undefined {
  if (offset === undefined) return undefined;
  let line = 2; // the opening --- is line 1
  for (let index = 0; index < offset && index < source.length; index += 1) {
    if (source.charCodeAt(index) === 10) line += 1;
  }
  return line;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
