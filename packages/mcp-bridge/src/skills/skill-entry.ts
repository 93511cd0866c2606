import { type SameJsonValueOptions, sameJsonValue } from '@toolfence/tools/core';
import { isValidSkillName, type SkillFrontMatterValue } from '@toolfence/tools/skills';
import { isRecord } from '../is-record.js';

/** The extension identifier of Skills over MCP (SEP-2640). */
export const SKILLS_EXTENSION_ID = 'io.modelcontextprotocol/skills';

/** One file of a skill as the server listed it: what every read of it is verified against. */
export interface McpSkillResource {
  /** The file's resource URI, inside the skill's folder (such as `skill://pdf/references/A.md`). */
  readonly uri: string;
  /** The file's path relative to the skill's folder (such as `references/A.md`). */
  readonly path: string;
  /** Lowercase hex SHA-256 of the file's bytes, from the listed `sha256:<hex>` digest. */
  readonly sha256: string;
  /** The listed `digest`, as sent (`sha256:<64 hex>`). */
  readonly digest: string;
  /** The file's size in bytes, as listed. */
  readonly size: number;
}

/** One skill as `skills/list` described it. Nothing in it has been read from the skill's files. */
export interface McpSkillEntry {
  /** The skill's name: the front matter `name`, equal to the final segment of its path. */
  readonly name: string;
  /** The SKILL.md resource URI (`skill://<skill-path>/SKILL.md`). */
  readonly uri: string;
  /** The skill's folder URI, ending in `/` (the SKILL.md URI without `SKILL.md`). */
  readonly base: string;
  /** The listed front matter, verbatim as frozen JSON data (untrusted). */
  readonly frontMatter: Readonly<Record<string, SkillFrontMatterValue>>;
  /** The listed `description` (untrusted text). */
  readonly description: string;
  /**
   * The listed files with their digests and sizes, SKILL.md included; `undefined` for a skill
   * the server lists as `"dynamic"` (no manifest, so nothing of it can be verified or loaded).
   */
  readonly resources: readonly McpSkillResource[] | undefined;
}

const DIGEST = /^sha256:([0-9a-fA-F]{64})$/;
const MAX_URI_LENGTH = 2_048;
const MAX_DESCRIPTION_CHARS = 1_024;

/** Freezes a JSON value deeply (the value came from JSON.parse, so it has no cycles). */
function frozenJson<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) frozenJson(item);
    Object.freeze(value);
  }
  return value;
}

/** A relative file path inside a skill: no empty, `.` or `..` segment, no backslash or NUL. */
function safeRelativePath(path: string): boolean {
  if (path === '' || path.includes('\\') || path.includes('\u0000') || path.includes('%')) {
    return false;
  }
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

type Parsed =
  | { readonly ok: true; readonly value: McpSkillEntry }
  | { readonly ok: false; readonly reason: string };

/**
 * Checks one `skills/list` entry; never throws. The entry is skipped (with a fixed reason) when
 * its URI is not a `.../SKILL.md` URI whose final folder segment equals the front matter `name`
 * (a valid skill name), the front matter has no text `description` (at most 1,024 characters),
 * or a listed file is outside the skill's folder, repeated, or lacks a `sha256:` digest and a
 * whole-number size, or SKILL.md itself is not listed.
 */
export function parseSkillEntry(raw: unknown, maxResources: number): Parsed {
  if (!isRecord(raw)) return { ok: false, reason: 'entry is not an object' };
  const { uri, frontmatter, resources } = raw;
  if (typeof uri !== 'string' || uri.length > MAX_URI_LENGTH || !uri.endsWith('/SKILL.md')) {
    return { ok: false, reason: 'entry uri is not a SKILL.md URI' };
  }
  const base = uri.slice(0, -'SKILL.md'.length);
  const scheme = base.indexOf('://');
  if (scheme < 1) return { ok: false, reason: 'entry uri has no scheme' };
  const skillPath = base.slice(scheme + 3, -1);
  if (!safeRelativePath(skillPath)) return { ok: false, reason: 'entry uri has an unsafe path' };
  if (!isRecord(frontmatter)) return { ok: false, reason: 'entry frontmatter is not an object' };
  const name = frontmatter.name;
  if (!isValidSkillName(name)) return { ok: false, reason: 'entry name is not a valid skill name' };
  if (skillPath.split('/').at(-1) !== name) {
    return { ok: false, reason: 'entry name differs from the final segment of its uri' };
  }
  const description = frontmatter.description;
  if (
    typeof description !== 'string' ||
    description.trim() === '' ||
    description.length > MAX_DESCRIPTION_CHARS
  ) {
    return { ok: false, reason: 'entry description is not text of 1 to 1,024 characters' };
  }
  let files: McpSkillResource[] | undefined;
  if (resources === 'dynamic') {
    files = undefined;
  } else if (Array.isArray(resources)) {
    if (resources.length > maxResources) {
      return { ok: false, reason: 'entry lists more resources than maxResourcesPerSkill' };
    }
    files = [];
    const seen = new Set<string>();
    for (const resource of resources as unknown[]) {
      if (!isRecord(resource)) return { ok: false, reason: 'entry resource is not an object' };
      const fileUri = resource.uri;
      if (
        typeof fileUri !== 'string' ||
        !fileUri.startsWith(base) ||
        !safeRelativePath(fileUri.slice(base.length))
      ) {
        return { ok: false, reason: 'entry resource is outside the skill folder' };
      }
      if (seen.has(fileUri)) return { ok: false, reason: 'entry resource is listed twice' };
      seen.add(fileUri);
      const digest = resource.digest;
      const match = typeof digest === 'string' ? DIGEST.exec(digest) : null;
      if (match === null) return { ok: false, reason: 'entry resource digest is not sha256:<hex>' };
      const size = resource.size;
      if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
        return { ok: false, reason: 'entry resource size is not a whole number of bytes' };
      }
      files.push(
        Object.freeze({
          uri: fileUri,
          path: fileUri.slice(base.length),
          sha256: (match[1] as string).toLowerCase(),
          digest: digest as string,
          size,
        }),
      );
    }
    if (!seen.has(uri)) return { ok: false, reason: 'entry resources do not list its SKILL.md' };
  } else {
    return { ok: false, reason: 'entry resources is neither a list nor "dynamic"' };
  }
  return {
    ok: true,
    value: Object.freeze({
      name,
      uri,
      base,
      frontMatter: frozenJson(structuredClone(frontmatter)) as Readonly<
        Record<string, SkillFrontMatterValue>
      >,
      description,
      resources: files === undefined ? undefined : Object.freeze(files),
    }),
  };
}

/**
 * How front matter values compare: an absent key equals `null` (SEP-2640). No depth bound of its
 * own, as before: the front matter was already walked whole when it was parsed and frozen, and
 * the transport's `maxRecordDepth` bounds the listing it came in.
 */
const FRONT_MATTER_COMPARE: SameJsonValueOptions = Object.freeze({
  absentIsNull: true,
  maxDepth: Number.MAX_SAFE_INTEGER,
});

/** Top-level front matter keys whose values differ (only short, safe key names are returned). */
export function differingKeys(
  listed: Readonly<Record<string, unknown>>,
  fetched: Readonly<Record<string, unknown>>,
): string[] {
  const keys = new Set([...Object.keys(listed), ...Object.keys(fetched)]);
  return [...keys]
    .filter(
      (key) =>
        !sameJsonValue(
          Object.hasOwn(listed, key) ? listed[key] : null,
          Object.hasOwn(fetched, key) ? fetched[key] : null,
          FRONT_MATTER_COMPARE,
        ),
    )
    .map((key) => (/^[A-Za-z0-9_-]{1,64}$/.test(key) ? key : '(unsafe key)'));
}
