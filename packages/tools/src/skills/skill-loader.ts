import { createHash } from 'node:crypto';
import { isAbsolute, resolve } from 'node:path';
import { checkOptionKeys } from '../registry/option-keys.js';
import { ToolsError } from '../tools-error.js';
import { SkillConfigurationError, SkillFormatError, SkillLimitError } from './errors.js';
import {
  DEFAULT_MAX_FRONTMATTER_NODES,
  parseSkillFrontMatter,
  type SkillDeviation,
  type SkillFrontMatterValue,
  type SkillSpecLimits,
} from './front-matter.js';
import { unsafe } from './safe-read.js';
import { openSkillRoot, type SkillConfinement, type SkillRoot } from './skill-root.js';

/** A skill name: 1 to 64 of lowercase letters and digits, single `-` or `_` between them. */
export const SKILL_NAME_PATTERN: RegExp = Object.freeze(/^[a-z0-9]+(?:[-_][a-z0-9]+)*$/);

/** True for a valid skill name (see {@link SKILL_NAME_PATTERN}). */
export function isValidSkillName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= 64 && SKILL_NAME_PATTERN.test(name);
}

/** One loaded SKILL.md: reference text, never executed. */
export interface SkillDocument {
  /** Skill name: the folder name, which the front matter `name` must equal. */
  readonly name: string;
  /** From the front matter, else the body's first paragraph (at most 500 characters). */
  readonly description: string;
  /** The front matter `version`, when present. */
  readonly version?: string;
  /** The front matter `license`, when present. */
  readonly license?: string;
  /** The front matter `compatibility` note (environment requirements), when present. */
  readonly compatibility?: string;
  /**
   * The Agent Skills `allowed-tools` value as space-separated text (a YAML list is joined with
   * spaces); toolfence grants nothing from it.
   */
  readonly allowedTools?: string;
  /** `allowed-tools` as a list of entries, however it was written. */
  readonly allowedToolList?: readonly string[];
  /** The front matter `metadata` map (flat string keys and values); `{}` when absent. */
  readonly metadata: Readonly<Record<string, string>>;
  /** Front matter keys without a meaning here, kept as frozen data (reported, never trusted). */
  readonly extra: Readonly<Record<string, SkillFrontMatterValue>>;
  /** Path of the SKILL.md relative to the loader's root, such as `pdf-tools/SKILL.md`. */
  readonly source: string;
  /** The document body after the front matter. */
  readonly content: string;
  /** Hex SHA-256 of `content` (UTF-8). */
  readonly sha256: string;
  /** Size of SKILL.md in bytes. */
  readonly bytes: number;
}

/**
 * Something found while loading skills. `skipped: true`: that skill was not loaded and the others
 * were; `skipped: false`: the skill loaded and the finding is informational (an unknown key).
 */
export interface SkillProblem {
  /** The skill's folder name, when it is a valid skill name (never an unsafe name). */
  readonly skill?: string;
  /** Stable error code of the finding, such as `SKILL_FORMAT` or `SKILL_UNSAFE_FILE`. */
  readonly code: string;
  /** Fixed reason, such as `name_mismatch`, `symlink`, `invalid_yaml` or `unknown_key`. */
  readonly reason: string;
  /** A safe message that says what was wrong (never file contents). */
  readonly message: string;
  /** Whether the skill was left out of the set. */
  readonly skipped: boolean;
  /** The front matter line, when known. */
  readonly line?: number;
  /** For `dot_folder`: the folder's name (such as `.curated`), when it is made of safe characters. */
  readonly folder?: string;
  /** For `dot_folder`: how many skills it holds (itself and its sub-folders, one level). */
  readonly count?: number;
  /**
   * For `unknown_key` and `metadata_not_text`: the key, when it is made of letters, digits, `-`
   * and `_` only.
   */
  readonly key?: string;
}

/** What {@link SkillLoader.scan} returns: the skills that loaded and what was found. */
export interface SkillScan {
  /** Loaded skills, sorted by name. */
  readonly skills: readonly SkillDocument[];
  /** Skipped skills and informational findings, in folder order. */
  readonly problems: readonly SkillProblem[];
}

/** Options of {@link SkillLoader}. */
export interface SkillLoaderOptions {
  /** The skills folder: `<root>/<name>/SKILL.md`. Must be absolute and contain no symlink. */
  readonly root: string;
  /** Largest SKILL.md in bytes. Default 256,000. */
  readonly maxFileBytes?: number;
  /** Most skills loaded. Default 128. */
  readonly maxSkills?: number;
  /** Most front matter lines. Default 32. */
  readonly maxFrontmatterLines?: number;
  /**
   * Most YAML nodes and entry indicators in one front matter (scalars, `{`, `[`, `-`, `?`, `:`,
   * `,`, anchors, aliases, tags), counted by a linear pre-scan before the YAML is composed.
   * Default 1,000.
   */
  readonly maxFrontmatterNodes?: number;
  /** Most entries in the root folder. Default 1,024. */
  readonly maxScanEntries?: number;
  /**
   * `'descriptor'` (default) reads every folder and file through descriptors opened inside the
   * root's descriptor (`/proc/self/fd`, Linux): a folder swapped for a link mid-scan reaches
   * nothing outside. A scan fails without `/proc/self/fd`. `'by-path'` checks names with
   * `lstat` and identities after the read: weaker (a swap can win the race), for platforms
   * without `/proc`.
   */
  readonly confinement?: SkillConfinement;
  /**
   * Departures from the Agent Skills spec that Claude Code and other clients accept (a
   * description over 1,024 characters, list or map values under `metadata`): `'warn'` (default)
   * loads the skill and reports each one as a problem with `skipped: false`; `'refuse'` skips
   * the skill.
   */
  readonly specLimits?: SkillSpecLimits;
}

const DESCRIPTION_FALLBACK_CHARS = 500;
const MAX_DESCRIPTION_CHARS = 1_024;

function positiveInteger(value: unknown, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new SkillConfigurationError('Skill loader limit must be a positive integer', {
      details: { option, type: typeof value },
    });
  }
  return value;
}

/** `value` when it is one of `allowed`, the first of them when absent; else refused. */
function oneOf<T extends string>(value: unknown, allowed: readonly [T, ...T[]], option: string): T {
  if (value === undefined) return allowed[0];
  if (!allowed.includes(value as T)) {
    throw new SkillConfigurationError(
      `${option} must be ${allowed.map((entry) => `'${entry}'`).join(' or ')}`,
      { details: { option } },
    );
  }
  return value as T;
}

/**
 * Loads Agent Skills documents from exactly one folder level: each sub-folder of `root` whose
 * name is a valid skill name and that holds a `SKILL.md` is a skill. Entries starting with `.`
 * are ignored, other files are ignored, a folder without `SKILL.md` is ignored. A skill that is
 * malformed or unsafe (symlink, hard link, changed while read, over a limit, invalid front
 * matter, name not equal to its folder) is skipped and reported; the others load. Folders and
 * files are opened through the root's descriptor (`confinement`), never by name twice. Only a problem
 * with the root itself (missing, a symlink, swapped, too many entries) fails the whole load, so
 * `SkillRegistry.refresh` keeps its old set.
 */
export class SkillLoader {
  /** Absolute, resolved skills folder the loader reads. */
  readonly root: string;
  /** Largest SKILL.md in bytes (default 256,000). */
  readonly maxFileBytes: number;
  /** Most skills loaded (default 128). */
  readonly maxSkills: number;
  /** Most front matter lines (default 32). */
  readonly maxFrontmatterLines: number;
  /** Most YAML nodes and entry indicators in one front matter (default 1,000). */
  readonly maxFrontmatterNodes: number;
  /** Most entries in the root folder (default 1,024). */
  readonly maxScanEntries: number;
  /** How folders and files are reached (default `'descriptor'`). */
  readonly confinement: SkillConfinement;
  /** Spec departures the clients accept: reported (`'warn'`, default) or refused. */
  readonly specLimits: SkillSpecLimits;
  /** Checks the options without reading anything; throws {@link SkillConfigurationError}. */
  constructor(options: SkillLoaderOptions) {
    checkOptionKeys(
      options,
      [
        'root',
        'maxFileBytes',
        'maxSkills',
        'maxFrontmatterLines',
        'maxFrontmatterNodes',
        'maxScanEntries',
        'confinement',
        'specLimits',
      ],
      'SkillLoader',
      (message, option) => new SkillConfigurationError(message, { details: { option } }),
    );
    if (typeof options !== 'object' || options === null) {
      throw new SkillConfigurationError('SkillLoader options must be an object');
    }
    if (typeof options.root !== 'string' || !isAbsolute(options.root)) {
      throw new SkillConfigurationError('SkillLoader root must be an absolute path');
    }
    this.root = resolve(options.root);
    this.maxFileBytes = positiveInteger(options.maxFileBytes, 256_000, 'maxFileBytes');
    this.maxSkills = positiveInteger(options.maxSkills, 128, 'maxSkills');
    this.maxFrontmatterLines = positiveInteger(
      options.maxFrontmatterLines,
      32,
      'maxFrontmatterLines',
    );
    this.maxFrontmatterNodes = positiveInteger(
      options.maxFrontmatterNodes,
      DEFAULT_MAX_FRONTMATTER_NODES,
      'maxFrontmatterNodes',
    );
    this.maxScanEntries = positiveInteger(options.maxScanEntries, 1_024, 'maxScanEntries');
    this.confinement = oneOf(options.confinement, ['descriptor', 'by-path'], 'confinement');
    this.specLimits = oneOf(options.specLimits, ['warn', 'refuse'], 'specLimits');
  }

  /** Loads every skill that is valid, sorted by name; see {@link SkillLoader.scan} for the problems. */
  async load(): Promise<readonly SkillDocument[]> {
    return (await this.scan()).skills;
  }

  /**
   * Loads every valid skill and reports the others. Throws only when the root itself cannot be
   * trusted or listed, or holds more than `maxScanEntries` entries.
   */
  async scan(): Promise<SkillScan> {
    const root = await openSkillRoot(this.root, this.confinement);
    try {
      const scan = await this.#scanOpen(root);
      await root.verify();
      return scan;
    } finally {
      await root.close();
    }
  }

  async #scanOpen(root: SkillRoot): Promise<SkillScan> {
    const entries = await root.list();
    if (entries.length > this.maxScanEntries) {
      throw new SkillLimitError('Skills root has more entries than allowed', {
        details: { limit: 'maxScanEntries', maxScanEntries: this.maxScanEntries },
      });
    }
    const skills: SkillDocument[] = [];
    const problems: SkillProblem[] = [];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.')) {
        if (!entry.isDirectory()) continue;
        const held = await root.countSkillsIn(entry.name, this.maxScanEntries);
        if (held > 0) problems.push(dotFolderProblem(entry.name, held));
        continue;
      }
      const safeName = isValidSkillName(entry.name) ? entry.name : undefined;
      if (entry.isSymbolicLink()) {
        problems.push(skipped(unsafe('symlink', safeName), safeName));
        continue;
      }
      if (!entry.isDirectory()) continue;
      if (safeName === undefined) {
        problems.push(
          skipped(
            new SkillFormatError('Skill folder name is invalid', {
              details: { reason: 'invalid_name' },
            }),
            undefined,
          ),
        );
        continue;
      }
      let loaded: ParsedSkillDocument | undefined;
      try {
        loaded = await this.#loadOne(root, safeName);
      } catch (error) {
        if (!ToolsError.isInstance(error)) throw error;
        problems.push(skipped(error, safeName));
        continue;
      }
      if (loaded === undefined) continue;
      if (skills.length >= this.maxSkills) {
        problems.push({
          skill: safeName,
          code: SkillLimitError.code,
          reason: 'max_skills',
          message: `More skills than maxSkills (${this.maxSkills}): this one was not loaded`,
          skipped: true,
        });
        continue;
      }
      skills.push(loaded.document);
      for (const key of loaded.unknownKeys) {
        problems.push({
          skill: safeName,
          code: SkillFormatError.code,
          reason: 'unknown_key',
          message: 'SKILL.md front matter has a key without a meaning here; it is kept as data',
          skipped: false,
          ...(/^[A-Za-z0-9_-]{1,64}$/.test(key) ? { key } : {}),
        });
      }
      for (const deviation of loaded.deviations)
        problems.push(deviationProblem(deviation, safeName));
    }
    return Object.freeze({
      skills: Object.freeze(skills),
      problems: Object.freeze(problems.map((problem) => Object.freeze(problem))),
    });
  }

  async #loadOne(root: SkillRoot, name: string): Promise<ParsedSkillDocument | undefined> {
    const text = await root.readSkill(name, this.maxFileBytes);
    if (text === undefined) return undefined;
    const parsed = parseSkillDocument(text, {
      name,
      source: `${name}/SKILL.md`,
      maxFrontmatterLines: this.maxFrontmatterLines,
      maxFrontmatterNodes: this.maxFrontmatterNodes,
      specLimits: this.specLimits,
    });
    return parsed;
  }
}

/** What {@link parseSkillDocument} returns. */
export interface ParsedSkillDocument {
  /** The skill document, frozen. */
  readonly document: SkillDocument;
  /** The whole front matter as frozen JSON data, to compare it with a listed copy. */
  readonly frontMatter: Readonly<Record<string, SkillFrontMatterValue>>;
  /** Front matter keys without a meaning here (kept in `document.extra`). */
  readonly unknownKeys: readonly string[];
  /** Departures from the spec that were accepted (`specLimits: 'warn'`). */
  readonly deviations: readonly SkillDeviation[];
}

/**
 * Parses one SKILL.md's text (already read within a byte limit) into a {@link SkillDocument}
 * with the same rules as {@link SkillLoader}: YAML front matter within `maxFrontmatterLines`
 * lines and `maxFrontmatterNodes` nodes (default 1,000, counted before the YAML is composed), `name` equal to the expected `name`; a description over 1,024 characters and `metadata` values
 * that are not text are accepted and listed in `deviations` (`specLimits: 'warn'`, the default)
 * or refused (`'refuse'`). Throws
 * {@link SkillFormatError} or {@link SkillLimitError}. Used for skills that come from elsewhere
 * (an MCP server), so every source gets the same parsing.
 */
export function parseSkillDocument(
  text: string,
  options: {
    readonly name: string;
    readonly source: string;
    readonly maxFrontmatterLines: number;
    readonly maxFrontmatterNodes?: number;
    readonly specLimits?: SkillSpecLimits;
  },
): ParsedSkillDocument {
  const { name, source } = options;
  if (text.includes('\u0000')) {
    throw new SkillFormatError('Skill file contains a NUL character', {
      details: { reason: 'nul', skill: name },
    });
  }
  const specLimits = options.specLimits ?? 'warn';
  const parsed = parseSkillFrontMatter(
    text,
    options.maxFrontmatterLines,
    name,
    options.maxFrontmatterNodes ?? DEFAULT_MAX_FRONTMATTER_NODES,
    specLimits,
  );
  const { fields, allowedTools, metadata, extra, data, body } = parsed;
  const deviations = [...parsed.deviations];
  if (fields.name !== name) {
    throw new SkillFormatError('Skill name must equal its folder name', {
      details: {
        reason: fields.name === undefined ? 'missing_name' : 'name_mismatch',
        skill: name,
      },
    });
  }
  const description = fields.description ?? firstParagraph(body);
  if (description.length > MAX_DESCRIPTION_CHARS) {
    if (specLimits === 'refuse') {
      throw new SkillFormatError('Skill description is too long', {
        details: { reason: 'description_too_long', skill: name },
      });
    }
    deviations.push(Object.freeze({ reason: 'description_too_long' }));
  }
  const document: SkillDocument = Object.freeze({
    name,
    description,
    ...(fields.version === undefined ? {} : { version: fields.version }),
    ...(fields.license === undefined ? {} : { license: fields.license }),
    ...(fields.compatibility === undefined ? {} : { compatibility: fields.compatibility }),
    ...(allowedTools === undefined
      ? {}
      : { allowedTools: allowedTools.join(' '), allowedToolList: allowedTools }),
    metadata,
    extra,
    source,
    content: body,
    sha256: createHash('sha256').update(body, 'utf8').digest('hex'),
    bytes: Buffer.byteLength(text, 'utf8'),
  });
  return Object.freeze({
    document,
    frontMatter: data,
    unknownKeys: Object.freeze(Object.keys(extra)),
    deviations: Object.freeze(deviations),
  });
}

/**
 * A dot folder of the root that holds skills (OpenAI's collection keeps its skills under
 * `.curated`, `.experimental` and `.system`): never scanned, always reported.
 */
function dotFolderProblem(name: string, held: number): SkillProblem {
  return Object.freeze({
    code: SkillFormatError.code,
    reason: 'dot_folder',
    message: `A dot folder of the root holds ${held} skill${held === 1 ? '' : 's'}; dot folders are not scanned. To load them, make that folder the root of a SkillLoader`,
    skipped: true,
    ...(/^\.[A-Za-z0-9_-]{1,63}$/.test(name) ? { folder: name } : {}),
    count: held,
  });
}

const DEVIATION_MESSAGES: Readonly<Record<string, string>> = {
  description_too_long:
    "The description is longer than the spec's 1,024 characters; the skill loaded (specLimits: 'refuse' skips it)",
  metadata_not_a_map:
    "metadata is not a map of text keys; it was left out and the skill loaded (specLimits: 'refuse' skips it)",
  metadata_not_text:
    "A metadata value is a list or map, not text; it is kept as its JSON text and the skill loaded (specLimits: 'refuse' skips it)",
};

/** A loaded skill's accepted departure from the spec, as a problem with `skipped: false`. */
function deviationProblem(deviation: SkillDeviation, skill: string): SkillProblem {
  return Object.freeze({
    skill,
    code: SkillFormatError.code,
    reason: deviation.reason,
    message: DEVIATION_MESSAGES[deviation.reason] ?? 'The skill departs from the spec; it loaded',
    skipped: false,
    ...(deviation.line === undefined ? {} : { line: deviation.line }),
    ...(deviation.key === undefined ? {} : { key: deviation.key }),
  });
}

/** A skipped skill's problem, from the typed error that refused it (its code, reason and line). */
function skipped(error: ToolsError, skill: string | undefined): SkillProblem {
  const details = (error.details ?? {}) as { reason?: unknown; line?: unknown; limit?: unknown };
  const reason =
    typeof details.reason === 'string'
      ? details.reason
      : typeof details.limit === 'string'
        ? details.limit
        : 'invalid';
  return {
    ...(skill === undefined ? {} : { skill }),
    code: error.code,
    reason,
    message: error.message,
    skipped: true,
    ...(typeof details.line === 'number' ? { line: details.line } : {}),
  };
}

/** The body's first paragraph that is not a heading, whitespace-collapsed, at most 500 chars. */
function firstParagraph(body: string): string {
  for (const block of body.split(/\n\s*\n/)) {
    const text = block
      .split('\n')
      .filter((line) => !/^\s*#/.test(line))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    if (text !== '') return Array.from(text).slice(0, DESCRIPTION_FALLBACK_CHARS).join('');
  }
  return '';
}
