import { createHash } from 'node:crypto';
import { collectPages, McpProtocolError, ToolsError } from '@toolfence/tools/core';
import {
  parseSkillDocument,
  type SkillDocument,
  type SkillProblem,
  type SkillScan,
  type SkillSource,
} from '@toolfence/tools/skills';
import type { McpClient } from '../client/mcp-client.js';
import { isRecord } from '../is-record.js';
import { McpBridgeError } from '../mcp-bridge-error.js';
import {
  McpSkillConfigurationError,
  McpSkillNotListedError,
  McpSkillNotLoadedError,
  McpSkillVerificationError,
} from './errors.js';
import {
  differingKeys,
  type McpSkillEntry,
  type McpSkillResource,
  parseSkillEntry,
  SKILLS_EXTENSION_ID,
} from './skill-entry.js';

/** Options of {@link McpSkillSource}. */
export interface McpSkillSourceOptions {
  /** The client of one server; it must declare the skills extension (`extensions` option). */
  readonly client: McpClient;
  /**
   * The host's approval: which listed skills `scan()` loads. Sees only the listed entry, so
   * approving reads nothing. Default: every listed skill.
   */
  readonly select?: (entry: McpSkillEntry) => boolean;
  /** `skills/list` pages followed at most. Default 100. */
  readonly maxSkillPages?: number;
  /** Skills listed at most over all pages. Default 1,000. */
  readonly maxListedSkills?: number;
  /** Files one skill may list. Default 256. */
  readonly maxResourcesPerSkill?: number;
  /** Largest file read (SKILL.md or a supporting file), in bytes, checked on the listed size first. Default 256,000. */
  readonly maxFileBytes?: number;
  /** Most front matter lines in a SKILL.md. Default 32. */
  readonly maxFrontmatterLines?: number;
  /**
   * Most YAML nodes and entry indicators in a SKILL.md's front matter, counted by a linear
   * pre-scan before the YAML is composed (as `SkillLoader`'s option). Default 1,000.
   */
  readonly maxFrontmatterNodes?: number;
  /** `resources/directory/read` pages followed at most. Default 20. */
  readonly maxDirectoryPages?: number;
  /** Directory entries accepted at most over all pages. Default 1,000. */
  readonly maxDirectoryEntries?: number;
}

/** What {@link McpSkillSource.list} returns. Nothing in it was read from a skill file. */
export interface McpSkillListing {
  /** The well-formed entries, in listing order (a repeated name keeps its first entry). */
  readonly entries: readonly McpSkillEntry[];
  /** Skipped entries, with fixed reasons (never the server's text). */
  readonly problems: readonly SkillProblem[];
  /** How many `skills/list` pages were fetched. */
  readonly pages: number;
}

/** One verified file of a loaded skill. */
export interface McpSkillFile {
  /** The resource URI. */
  readonly uri: string;
  /** The path relative to the skill's folder. */
  readonly path: string;
  /** The MIME type the server gave, if any (untrusted). */
  readonly mimeType?: string;
  /** The verified bytes. */
  readonly bytes: Uint8Array;
  /** The bytes as text, when they are valid UTF-8 (untrusted reference text). */
  readonly text?: string;
  /** Hex SHA-256 of `bytes`, equal to the listed digest. */
  readonly sha256: string;
}

/** One child of a skill directory, from `resources/directory/read`. */
export interface McpSkillDirectoryEntry {
  /** The child's URI, inside the skill's folder. */
  readonly uri: string;
  /** The child's path relative to the skill's folder. */
  readonly path: string;
  /** True for a sub-directory (`mimeType: inode/directory`). */
  readonly directory: boolean;
  /** True when the file is in the skill's listed resources, so {@link McpSkillSource.readFile} can verify it. */
  readonly listed: boolean;
}

const OPTION_KEYS = new Set([
  'client',
  'select',
  'maxSkillPages',
  'maxListedSkills',
  'maxResourcesPerSkill',
  'maxFileBytes',
  'maxFrontmatterLines',
  'maxFrontmatterNodes',
  'maxDirectoryPages',
  'maxDirectoryEntries',
]);

function limit(options: McpSkillSourceOptions, key: keyof McpSkillSourceOptions, fallback: number) {
  const value = options[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new McpSkillConfigurationError(`${key} must be a positive integer`, {
      details: { option: key },
    });
  }
  return value;
}

function verificationError(reason: string, entry: McpSkillEntry, path: string, extra = {}) {
  const messages: Record<string, string> = {
    size_mismatch: 'A skill file read from the server is not the listed size; it was not used',
    digest_mismatch:
      'A skill file read from the server does not match its listed digest; it was not used',
    front_matter_mismatch:
      'The SKILL.md read from the server has front matter that differs from its listed entry; the skill was refused',
    not_listed:
      "That file is not in the skill's listed resources, so it cannot be verified; it was not read",
    dynamic:
      'The server lists this skill without digests ("dynamic"), so it cannot be verified; it was not read',
    too_large: 'A skill file is listed as larger than maxFileBytes; it was not read',
    no_content:
      'The server answered the read without exactly one content for the file; it was not used',
    not_utf8: 'The SKILL.md read from the server is not UTF-8 text; it was not used',
  };
  return new McpSkillVerificationError(messages[reason] ?? 'A skill file failed verification', {
    details: { reason, skill: entry.name, path, ...extra },
  });
}

/**
 * Skills over MCP (SEP-2640, extension `io.modelcontextprotocol/skills`), host side: a
 * `SkillSource` for `@toolfence/tools`' `SkillRegistry`, so server skills reach the same
 * `SkillTool` as local ones, as untrusted reference text.
 *
 * Lazy: connecting and {@link McpSkillSource.list} send `skills/list` only, and approval
 * (`select`) sees only the listed entry; a skill's files are read only when it is loaded
 * ({@link McpSkillSource.loadSkill}, or `scan()` for the approved skills) and a supporting file
 * only by {@link McpSkillSource.readFile} on a loaded skill. Every read is checked against the
 * listed `size` and then `digest` before anything else looks at it; a mismatch raises
 * {@link McpSkillVerificationError} and the content is dropped. The fetched SKILL.md's front
 * matter is compared field by field with the listed entry's; any difference refuses the skill.
 */
export class McpSkillSource implements SkillSource {
  /** The client this source reads through. */
  readonly client: McpClient;
  /** `skills/list` pages followed at most (default 100). */
  readonly maxSkillPages: number;
  /** Skills listed at most over all pages (default 1,000). */
  readonly maxListedSkills: number;
  /** Files one skill may list (default 256). */
  readonly maxResourcesPerSkill: number;
  /** Largest file read, in bytes (default 256,000). */
  readonly maxFileBytes: number;
  /** Most front matter lines in a SKILL.md (default 32). */
  readonly maxFrontmatterLines: number;
  /** Most YAML nodes and entry indicators in a SKILL.md's front matter (default 1,000). */
  readonly maxFrontmatterNodes: number;
  /** `resources/directory/read` pages followed at most (default 20). */
  readonly maxDirectoryPages: number;
  /** Directory entries accepted at most (default 1,000). */
  readonly maxDirectoryEntries: number;
  readonly #select: ((entry: McpSkillEntry) => boolean) | undefined;
  #listing: McpSkillListing | undefined;
  readonly #loaded = new Map<string, { entry: McpSkillEntry; document: SkillDocument }>();

  /**
   * Checks the options without sending anything.
   * @throws {McpSkillConfigurationError} for an unknown option, a bad limit, or a client that
   *   does not declare the skills extension.
   */
  constructor(options: McpSkillSourceOptions) {
    if (!isRecord(options)) {
      throw new McpSkillConfigurationError('McpSkillSource options must be an object');
    }
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.has(key)) {
        throw new McpSkillConfigurationError(
          `McpSkillSource got an unknown option; accepted: ${[...OPTION_KEYS].join(', ')}`,
          { details: { option: /^[A-Za-z0-9_]{1,64}$/.test(key) ? key : '(unsafe)' } },
        );
      }
    }
    const client = options.client;
    if (!isRecord(client) || typeof (client as { request?: unknown }).request !== 'function') {
      throw new McpSkillConfigurationError('McpSkillSource needs an McpClient');
    }
    if (client.extensions?.[SKILLS_EXTENSION_ID] === undefined) {
      throw new McpSkillConfigurationError(
        `The McpClient must declare the skills extension: extensions: { '${SKILLS_EXTENSION_ID}': {} }`,
      );
    }
    if (options.select !== undefined && typeof options.select !== 'function') {
      throw new McpSkillConfigurationError('select must be a function of the listed entry');
    }
    this.client = client;
    this.#select = options.select;
    this.maxSkillPages = limit(options, 'maxSkillPages', 100);
    this.maxListedSkills = limit(options, 'maxListedSkills', 1_000);
    this.maxResourcesPerSkill = limit(options, 'maxResourcesPerSkill', 256);
    this.maxFileBytes = limit(options, 'maxFileBytes', 256_000);
    this.maxFrontmatterLines = limit(options, 'maxFrontmatterLines', 32);
    this.maxFrontmatterNodes = limit(options, 'maxFrontmatterNodes', 1_000);
    this.maxDirectoryPages = limit(options, 'maxDirectoryPages', 20);
    this.maxDirectoryEntries = limit(options, 'maxDirectoryEntries', 1_000);
  }

  /**
   * Lists the server's skills with `skills/list` (pagination followed within `maxSkillPages`,
   * `maxListedSkills` and no repeated cursor), keeping each entry's front matter and its files'
   * digests and sizes. Reads no skill file. Cached until `refresh`; a relisted skill whose entry
   * changed must be loaded again.
   * @throws {McpSkillConfigurationError} when the server does not declare the extension.
   * @throws `McpLimitError` / `McpProtocolError` (from `@toolfence/tools`) for a listing
   *   over a limit, a repeated cursor or a malformed page.
   */
  async list(options: { readonly refresh?: boolean } = {}): Promise<McpSkillListing> {
    if (this.#listing !== undefined && options.refresh !== true) return this.#listing;
    await this.client.connect();
    const extensions = this.client.serverCapabilities?.extensions;
    if (!isRecord(extensions) || extensions[SKILLS_EXTENSION_ID] === undefined) {
      throw new McpSkillConfigurationError('The MCP server does not declare the skills extension');
    }
    const maxResources = this.maxResourcesPerSkill;
    const collected = await collectPages<McpSkillEntry>({
      itemsKey: 'skills',
      maxPages: this.maxSkillPages,
      maxItems: this.maxListedSkills,
      fetchPage: (cursor) =>
        this.client.request('skills/list', cursor === undefined ? {} : { cursor }),
      parseItem: (raw) => parseSkillEntry(raw, maxResources),
    });
    const entries: McpSkillEntry[] = [];
    const problems: SkillProblem[] = collected.problems.map((problem) =>
      Object.freeze({
        code: McpProtocolError.code,
        reason: 'malformed_entry',
        message: `skills/list entry ${problem.index} of page ${problem.page} was skipped: ${problem.reason}`,
        skipped: true,
      }),
    );
    const names = new Set<string>();
    for (const entry of collected.items) {
      if (names.has(entry.name)) {
        problems.push(
          Object.freeze({
            skill: entry.name,
            code: McpProtocolError.code,
            reason: 'duplicate_name',
            message: 'The server lists two skills of this name; only the first is kept',
            skipped: true,
          }),
        );
        continue;
      }
      names.add(entry.name);
      entries.push(entry);
    }
    for (const [name, loaded] of this.#loaded) {
      const now = entries.find((entry) => entry.name === name);
      if (now === undefined || JSON.stringify(now) !== JSON.stringify(loaded.entry)) {
        this.#loaded.delete(name);
      }
    }
    const listing: McpSkillListing = Object.freeze({
      entries: Object.freeze(entries),
      problems: Object.freeze(problems),
      pages: collected.pages,
    });
    this.#listing = listing;
    return listing;
  }

  /**
   * Loads one listed skill: reads its SKILL.md, verifies size and digest, parses it with the
   * same rules as local skills (`parseSkillDocument`) and compares its front matter with the
   * listed entry's, field by field. The document's `source` is the SKILL.md URI.
   * @throws {McpSkillNotListedError} when no listed skill has that name.
   * @throws {McpSkillVerificationError} on any mismatch (the content is not used).
   * @throws `SkillFormatError` / `SkillLimitError` (from `@toolfence/tools`) for a malformed SKILL.md.
   */
  async loadSkill(name: string): Promise<SkillDocument> {
    const entry = await this.#entry(name);
    const loaded = this.#loaded.get(name);
    if (loaded !== undefined && loaded.entry === entry) return loaded.document;
    const file = await this.#readVerified(entry, 'SKILL.md');
    if (file.text === undefined) throw verificationError('not_utf8', entry, 'SKILL.md');
    const parsed = parseSkillDocument(file.text, {
      name: entry.name,
      source: entry.uri,
      maxFrontmatterLines: this.maxFrontmatterLines,
      maxFrontmatterNodes: this.maxFrontmatterNodes,
      // Skills over MCP hold the spec's limits at both ends (the listing check refuses a
      // description over 1,024 characters, as the SDK's server does): no departure is accepted.
      specLimits: 'refuse',
    });
    const differing = differingKeys(entry.frontMatter, parsed.frontMatter);
    if (differing.length > 0) {
      throw verificationError('front_matter_mismatch', entry, 'SKILL.md', { fields: differing });
    }
    // A relist while this load was in flight may have replaced the entry: then the skill is
    // not recorded as loaded (its files stay closed until it is loaded against the new entry).
    if (this.#listing?.entries.includes(entry) === true) {
      this.#loaded.set(name, { entry, document: parsed.document });
    }
    return parsed.document;
  }

  /** Names of the skills loaded (and still listed unchanged), sorted. */
  loadedNames(): string[] {
    return [...this.#loaded.keys()].sort();
  }

  /**
   * Reads one supporting file of a loaded skill (`path` relative to its folder, as listed),
   * verified against its listed size and digest.
   * @throws {McpSkillNotLoadedError} when the skill is not loaded (nothing is sent).
   * @throws {McpSkillVerificationError} when the file is not listed or fails verification.
   */
  async readFile(name: string, path: string): Promise<McpSkillFile> {
    const loaded = this.#loaded.get(name);
    if (loaded === undefined) {
      throw new McpSkillNotLoadedError('Load the skill before reading its files', {
        details: { skill: typeof name === 'string' && name.length <= 64 ? name : '(invalid)' },
      });
    }
    if (typeof path !== 'string') throw verificationError('not_listed', loaded.entry, '');
    return this.#readVerified(loaded.entry, path);
  }

  /**
   * Lists one directory of a loaded skill with `resources/directory/read` (`path` relative to
   * the skill's folder, `''` for the folder itself), within `maxDirectoryPages` and
   * `maxDirectoryEntries`. Children outside the folder are dropped.
   * @throws {McpSkillConfigurationError} when the server does not declare `directoryRead: true`.
   * @throws {McpSkillNotLoadedError} when the skill is not loaded (nothing is sent).
   */
  async readDirectory(name: string, path = ''): Promise<readonly McpSkillDirectoryEntry[]> {
    const loaded = this.#loaded.get(name);
    if (loaded === undefined) {
      throw new McpSkillNotLoadedError('Load the skill before reading its directories', {
        details: { skill: typeof name === 'string' && name.length <= 64 ? name : '(invalid)' },
      });
    }
    const settings = (this.client.serverCapabilities?.extensions as Record<string, unknown>)?.[
      SKILLS_EXTENSION_ID
    ];
    if (!isRecord(settings) || settings.directoryRead !== true) {
      throw new McpSkillConfigurationError(
        'The MCP server does not declare directoryRead for the skills extension',
      );
    }
    const { entry } = loaded;
    if (
      path !== '' &&
      (typeof path !== 'string' || path.split('/').some((s) => s === '..' || s === '.' || s === ''))
    ) {
      throw verificationError('not_listed', entry, '');
    }
    const uri = path === '' ? entry.base : `${entry.base}${path.replace(/\/$/, '')}/`;
    const collected = await collectPages<McpSkillDirectoryEntry>({
      itemsKey: 'resources',
      maxPages: this.maxDirectoryPages,
      maxItems: this.maxDirectoryEntries,
      fetchPage: (cursor) =>
        this.client.request(
          'resources/directory/read',
          cursor === undefined
            ? { uri: uri.replace(/\/$/, '') }
            : { uri: uri.replace(/\/$/, ''), cursor },
        ),
      parseItem: (raw) => {
        if (!isRecord(raw) || typeof raw.uri !== 'string') {
          return { ok: false, reason: 'directory entry has no uri' };
        }
        const child = raw.uri;
        if (!child.startsWith(uri) || child.length === uri.length) {
          return { ok: false, reason: 'directory entry is outside the directory' };
        }
        const relative = child.slice(entry.base.length).replace(/\/$/, '');
        if (relative.split('/').some((s) => s === '..' || s === '.' || s === '')) {
          return { ok: false, reason: 'directory entry has an unsafe path' };
        }
        return {
          ok: true,
          value: Object.freeze({
            uri: child,
            path: relative,
            directory: raw.mimeType === 'inode/directory',
            listed: entry.resources?.some((file) => file.uri === child) === true,
          }),
        };
      },
    });
    return Object.freeze([...collected.items]);
  }

  /**
   * Lists, then loads every approved skill (`select`); a skill that fails to load is skipped and
   * reported in `problems` with its error's code and reason, the others load. Throws only when
   * the listing itself fails, so `SkillRegistry.refresh` keeps its old set.
   */
  async scan(): Promise<SkillScan> {
    const listing = await this.list({ refresh: true });
    const skills: SkillDocument[] = [];
    const problems: SkillProblem[] = [...listing.problems];
    for (const entry of listing.entries) {
      if (this.#select !== undefined && !this.#select(entry)) continue;
      try {
        skills.push(await this.loadSkill(entry.name));
      } catch (error) {
        if (!McpBridgeError.isInstance(error) && !ToolsError.isInstance(error)) throw error;
        const details = (error.details ?? {}) as { reason?: unknown; limit?: unknown };
        problems.push(
          Object.freeze({
            skill: entry.name,
            code: error.code,
            reason:
              typeof details.reason === 'string'
                ? details.reason
                : typeof details.limit === 'string'
                  ? details.limit
                  : 'invalid',
            message: error.message,
            skipped: true,
          }),
        );
      }
    }
    skills.sort((a, b) => (a.name < b.name ? -1 : 1));
    return Object.freeze({ skills: Object.freeze(skills), problems: Object.freeze(problems) });
  }

  /** The approved skills that load (see {@link McpSkillSource.scan}). */
  async load(): Promise<readonly SkillDocument[]> {
    return (await this.scan()).skills;
  }

  async #entry(name: string): Promise<McpSkillEntry> {
    const listing = await this.list();
    const entry = listing.entries.find((candidate) => candidate.name === name);
    if (entry === undefined) {
      throw new McpSkillNotListedError('No listed skill has that name', {
        details: { skill: typeof name === 'string' && name.length <= 64 ? name : '(invalid)' },
      });
    }
    return entry;
  }

  async #readVerified(entry: McpSkillEntry, path: string): Promise<McpSkillFile> {
    if (entry.resources === undefined) throw verificationError('dynamic', entry, path);
    const resource: McpSkillResource | undefined = entry.resources.find(
      (file) => file.path === path,
    );
    if (resource === undefined) throw verificationError('not_listed', entry, '');
    if (resource.size > this.maxFileBytes) {
      throw verificationError('too_large', entry, path, { maxFileBytes: this.maxFileBytes });
    }
    const result = await this.client.request('resources/read', { uri: resource.uri });
    const contents = Array.isArray(result.contents) ? (result.contents as unknown[]) : [];
    const matching = contents.filter((item) => isRecord(item) && item.uri === resource.uri);
    const content = matching.length === 1 ? (matching[0] as Record<string, unknown>) : undefined;
    let bytes: Uint8Array | undefined;
    if (content !== undefined && typeof content.text === 'string' && content.blob === undefined) {
      bytes = Buffer.from(content.text, 'utf8');
    } else if (
      content !== undefined &&
      typeof content.blob === 'string' &&
      content.text === undefined
    ) {
      if (content.blob.length > Math.ceil((this.maxFileBytes * 4) / 3) + 4) {
        throw verificationError('size_mismatch', entry, path);
      }
      bytes = Buffer.from(content.blob, 'base64');
    }
    if (bytes === undefined) throw verificationError('no_content', entry, path);
    // Size first (cheap, and a mismatch is a verification failure on its own), then digest.
    if (bytes.byteLength !== resource.size) throw verificationError('size_mismatch', entry, path);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (sha256 !== resource.sha256) throw verificationError('digest_mismatch', entry, path);
    let text: string | undefined;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = undefined;
    }
    return Object.freeze({
      uri: resource.uri,
      path,
      ...(typeof content?.mimeType === 'string' ? { mimeType: content.mimeType } : {}),
      bytes,
      ...(text === undefined ? {} : { text }),
      sha256,
    });
  }
}
