import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { compareRisk, type RiskLevel, readContract } from '@toolfence/tool-contract';
import { checkOptionKeys } from '@toolfence/tools/core';
import type { McpToolInfo } from '../client/tool-listing.js';
import { hasInvisibleUnicode } from '../printable-text.js';
import { canonicalJson, digestOf, sha256Hex } from './canonical-json.js';
import { GatewayConfigError, GatewayStateError, PinChangedError } from './errors.js';

export { escapeInvisible, hasInvisibleUnicode } from '../printable-text.js';

/** Why a tool is hidden until the user accepts it again. */
export type PinReason =
  | 'new-tool'
  | 'definition-changed'
  | 'risk-lowered'
  | 'server-changed'
  | 'invisible-unicode'
  | 'definition-too-large';

/**
 * What a pin covers: a `tool`, a `prompt` or a `resource-template` (prompts and resource
 * templates are definitions a model reads, so they are pinned like tools).
 */
export type PinKind = 'tool' | 'prompt' | 'resource-template';

/**
 * The key a definition of `kind` is stored under: the server's name for tools (as always), and
 * `<kind>:<server>` for the other kinds. A server name cannot hold `:`, so the keys never meet,
 * and a lock file or table written before prompts were pinned reads as it is.
 */
export function pinKey(server: string, kind: PinKind = 'tool'): string {
  return kind === 'tool' ? server : `${kind}:${server}`;
}

/** A pin store key read back: the server's name and the kind of definition it holds. */
export interface PinKeyParts {
  /** The server's name in the config. */
  readonly server: string;
  /** What the key's definitions are: tools, prompts or resource templates. */
  readonly kind: PinKind;
}

/** The server and kind a {@link pinKey} names. */
export function splitPinKey(key: string): PinKeyParts {
  for (const kind of ['prompt', 'resource-template'] as const) {
    if (key.startsWith(`${kind}:`)) return { server: key.slice(kind.length + 1), kind };
  }
  return { server: key, kind: 'tool' };
}

/** One pinned (or pending) tool definition. */
export interface PinRecord {
  /** `sha256:` digest of the canonical JSON of the server's identity and the whole definition. */
  readonly sha256: string;
  /** The server's identity when pinned: its command line or URL. */
  readonly identity: string;
  /** The definition as listed: name, title, description, schemas, annotations, declared contract. */
  readonly definition: Readonly<Record<string, unknown>>;
  /** The effective risk read from the definition (declared contract or heuristic). */
  readonly risk: RiskLevel;
  /** Fields holding invisible or bidirectional Unicode, flagged at first sight. */
  readonly flagged: readonly string[];
}

/** One hidden tool, as `PinStore.pending()` lists it. */
export interface PendingTool {
  /** The server's name in the config. */
  readonly server: string;
  /** The tool's (or prompt's, or resource template's) name on the server. */
  readonly tool: string;
  /** What is hidden: a tool, a prompt or a resource template. Absent means a tool. */
  readonly kind?: PinKind;
  /** The definition waiting for acceptance. */
  readonly pin: PendingPin;
  /** The pinned definition it differs from, when the tool was pinned before. */
  readonly previous: PinRecord | undefined;
}

/** A tool waiting for `toolfence-mcp pin --accept`. */
export interface PendingPin extends PinRecord {
  /** Why it is hidden. */
  readonly reasons: readonly PinReason[];
}

/** What the gateway should do with one server's listing. */
export interface PinReview {
  /** Remote names that may be offered (pinned and unchanged). */
  readonly visible: ReadonlySet<string>;
  /** Remote names hidden until accepted, with the reasons. */
  readonly hidden: ReadonlyMap<string, readonly PinReason[]>;
  /** True when the lock file changed and should be saved. */
  readonly changed: boolean;
}

interface LockFile {
  version: 1;
  servers: Record<string, ServerPins>;
}

/**
 * Limits of what a pin back end stores, so no server's listing can make the pins unreadable
 * (`PinStore.open`'s options; `reviewServer` applies the per-definition and per-server ones).
 * Unknown keys are refused.
 */
export interface PinStoreLimits {
  /**
   * Bytes of one definition's canonical JSON (the fields a pin covers) that are stored. A
   * definition over it is hidden (reason `definition-too-large`) and stored neither as a pin nor
   * as pending, so it cannot be accepted: raise the limit to offer it. Default 131,072 (128 KiB).
   */
  readonly maxDefinitionBytes?: number;
  /**
   * Pending definitions kept per server and kind; a new or changed definition beyond them is
   * hidden and not stored (it is stored once earlier ones are accepted). Default 1,000.
   */
  readonly maxPendingPerServer?: number;
  /**
   * Bytes of the lock file read and written (16 MiB). A file over it is refused at open; a review
   * that would make the file larger is refused (`GATEWAY_STATE` naming the server: that server
   * fails to load, the others are not affected), and the file is never written over it.
   */
  readonly maxLockBytes?: number;
}

/** The defaults of {@link PinStoreLimits}. */
export const DEFAULT_PIN_LIMITS: Readonly<Required<PinStoreLimits>> = Object.freeze({
  maxDefinitionBytes: 128 * 1024,
  maxPendingPerServer: 1_000,
  maxLockBytes: 16 * 1024 * 1024,
});

const LIMIT_KEYS = Object.keys(DEFAULT_PIN_LIMITS);

/** The limits checked, defaults filled in; a bad value is a `GatewayConfigError` naming it. */
export function pinStoreLimits(value: unknown): Readonly<Required<PinStoreLimits>> {
  if (value === undefined) return DEFAULT_PIN_LIMITS;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GatewayConfigError('PinStore options must be an object', {
      details: { option: 'options' },
    });
  }
  const given = value as Record<string, unknown>;
  checkOptionKeys(
    given,
    LIMIT_KEYS,
    'PinStore',
    (message, option) => new GatewayConfigError(message, { details: { option } }),
  );
  const out: Record<string, number> = { ...DEFAULT_PIN_LIMITS };
  for (const key of LIMIT_KEYS) {
    const limit = given[key];
    if (limit === undefined) continue;
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
      throw new GatewayConfigError(`PinStore option ${key} must be a whole number of at least 1`, {
        details: { option: key },
      });
    }
    out[key] = limit;
  }
  return Object.freeze(out) as Required<PinStoreLimits>;
}

/** The fields of a listed definition a pin covers, per kind (tools: see {@link pinnedDefinition}). */
const PINNED_FIELDS: Readonly<Record<PinKind, readonly string[]>> = {
  tool: ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'],
  prompt: ['name', 'title', 'description', 'arguments'],
  'resource-template': ['name', 'title', 'description', 'uriTemplate', 'mimeType'],
};

/**
 * The part of a listing entry a pin covers: for a tool its name, title, description, schemas,
 * annotations and declared contract; for a prompt its name, title, description and arguments;
 * for a resource template its name, title, description, URI template and MIME type.
 */
export function pinnedDefinition(
  tool: McpToolInfo,
  kind: PinKind = 'tool',
): Readonly<Record<string, unknown>> {
  const info = tool as unknown as Record<string, unknown>;
  const definition: Record<string, unknown> = {};
  for (const key of PINNED_FIELDS[kind]) {
    if (info[key] !== undefined) definition[key] = info[key];
  }
  const meta = info._meta;
  if (kind === 'tool' && typeof meta === 'object' && meta !== null) {
    const contract = (meta as Record<string, unknown>)['io.github.toolfence/contract'];
    if (contract !== undefined) definition.contract = contract;
  }
  return definition;
}

function flaggedFields(definition: Readonly<Record<string, unknown>>): string[] {
  const flagged: string[] = [];
  for (const [key, value] of Object.entries(definition)) {
    if (hasInvisibleUnicode(JSON.stringify(value) ?? '')) flagged.push(key);
  }
  // JSON.stringify escapes nothing invisible, so the raw characters are what is tested above.
  return flagged;
}

/**
 * The pin digest of one listed definition of a server (`sha256:` over the canonical JSON of the
 * server's identity and {@link pinnedDefinition}): what `PinRecord.sha256` holds, and what the
 * gateway compares with the accepted pin before a tool built from that definition runs.
 */
export function definitionDigest(
  identity: string,
  tool: McpToolInfo,
  kind: PinKind = 'tool',
): string {
  return pinDigest(identity, canonicalJson(pinnedDefinition(tool, kind)));
}

/**
 * `digestOf({ identity, definition })` from the definition's canonical JSON (`canonical`), so the
 * text a review measures against `maxDefinitionBytes` is the text hashed, serialised once: the
 * canonical JSON of that record is its two members in key order.
 */
function pinDigest(identity: string, canonical: string): string {
  return `sha256:${sha256Hex(`{"definition":${canonical},"identity":${canonicalJson(identity)}}`)}`;
}

/** A listed definition as a review reads it: what is pinned of it, and its canonical JSON. */
interface PinnedForm {
  readonly definition: Readonly<Record<string, unknown>>;
  readonly canonical: string;
}

function pinnedForm(tool: McpToolInfo, kind: PinKind): PinnedForm {
  const definition = pinnedDefinition(tool, kind);
  return { definition, canonical: canonicalJson(definition) };
}

function recordFor(
  tool: McpToolInfo,
  { definition, canonical }: PinnedForm,
  identity: string,
  kind: PinKind,
): PinRecord {
  return {
    sha256: pinDigest(identity, canonical),
    identity,
    definition,
    // A prompt or a resource template runs nothing: its risk is a read's.
    risk: kind === 'tool' ? readContract(tool as never).contract.risk : 'read-only',
    flagged: flaggedFields(definition),
  };
}

// Tool names come from the server: "__proto__" must be a key like any other. Plain `obj[name] = v`
// on an ordinary object would set its prototype instead (the pin would never be saved), and a
// plain read would find Object.prototype, so pins are written and read as own properties only.
/**
 * `record[key]` when it is the record's own property, else undefined: how every pin back end
 * reads a pin or a pending entry by a name a server chose (`__proto__`, `constructor`).
 */
export function ownOf<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** One server's pins and pending tools, as a pin back end stores them. */
export interface ServerPins {
  /** Pinned definitions by remote tool name. */
  tools: Record<string, PinRecord>;
  /** Definitions waiting for acceptance by remote tool name. */
  pending: Record<string, PendingPin>;
}

/** What {@link reviewServer} decides for one server's listing. */
export interface ServerReview {
  /** The server's pins after the review (a new object; store it when `review.changed`). */
  readonly pins: ServerPins;
  /** Which tools may be offered, which are hidden and why. */
  readonly review: PinReview;
}

/**
 * The pin decision for one server's listing, shared by every pin back end: `known` is what is
 * stored for the server (undefined at first sight, when the whole listing is pinned as seen).
 * Returns the server's pins after the review (a new object when anything changed) and the review.
 */
export function reviewServer(
  known: ServerPins | undefined,
  identity: string,
  tools: readonly McpToolInfo[],
  kind: PinKind = 'tool',
  limits: Readonly<Required<PinStoreLimits>> = DEFAULT_PIN_LIMITS,
): ServerReview {
  const visible = new Set<string>();
  const hidden = new Map<string, PinReason[]>();
  // A definition too large to store is hidden and stored nowhere (the lock stays readable).
  const tooLarge = (form: PinnedForm): boolean =>
    Buffer.byteLength(form.canonical) > limits.maxDefinitionBytes;
  if (known === undefined) {
    const pins: ServerPins = { tools: {}, pending: {} };
    for (const tool of tools) {
      const form = pinnedForm(tool, kind);
      if (tooLarge(form)) {
        hidden.set(tool.name, ['definition-too-large']);
        continue;
      }
      setOwn(pins.tools, tool.name, recordFor(tool, form, identity, kind));
      visible.add(tool.name);
    }
    return { pins, review: { visible, hidden, changed: true } };
  }
  const pins: ServerPins = { tools: { ...known.tools }, pending: { ...known.pending } };
  let changed = false;
  let pendingCount = Object.keys(pins.pending).length;
  for (const tool of tools) {
    const form = pinnedForm(tool, kind);
    if (tooLarge(form)) {
      hidden.set(tool.name, ['definition-too-large']);
      if (ownOf(pins.pending, tool.name) !== undefined) {
        delete pins.pending[tool.name];
        pendingCount--;
        changed = true;
      }
      continue;
    }
    const record = recordFor(tool, form, identity, kind);
    const pinned = ownOf(pins.tools, tool.name);
    const reasons: PinReason[] = [];
    if (pinned === undefined) reasons.push('new-tool');
    else if (pinned.sha256 !== record.sha256) {
      if (pinned.identity !== identity) reasons.push('server-changed');
      if (digestOf(pinned.definition) !== digestOf(record.definition)) {
        reasons.push('definition-changed');
      }
      if (compareRisk(record.risk, pinned.risk) < 0) reasons.push('risk-lowered');
    }
    if (reasons.length === 0) {
      visible.add(tool.name);
      if (ownOf(pins.pending, tool.name) !== undefined) {
        delete pins.pending[tool.name];
        pendingCount--;
        changed = true;
      }
      continue;
    }
    if (record.flagged.length > 0) reasons.push('invisible-unicode');
    hidden.set(tool.name, reasons);
    const pending = ownOf(pins.pending, tool.name);
    if (pending === undefined && pendingCount >= limits.maxPendingPerServer) continue;
    if (pending === undefined || pending.sha256 !== record.sha256) {
      if (pending === undefined) pendingCount++;
      setOwn(pins.pending, tool.name, { ...record, reasons });
      changed = true;
    }
  }
  return { pins, review: { visible, hidden, changed } };
}

/** What {@link acceptPending} did: accepted, nothing pending, or another definition pending. */
export type AcceptOutcome = 'accepted' | 'none' | 'changed';

/**
 * Moves a pending tool to the pins when the definition pending is exactly the one the user was
 * shown (`sha256`, as `pin --show` printed it): that definition becomes the pin. `none` when
 * nothing is pending under that name, `changed` when another definition is pending now (then
 * nothing changes).
 */
export function acceptPending(
  pins: ServerPins | undefined,
  tool: string,
  sha256: string,
): AcceptOutcome {
  const pending = pins === undefined ? undefined : ownOf(pins.pending, tool);
  if (pins === undefined || pending === undefined) return 'none';
  if (pending.sha256 !== sha256) return 'changed';
  const { reasons: _reasons, ...record } = pending;
  setOwn(pins.tools, tool, record);
  delete pins.pending[tool];
  return 'accepted';
}

/** The kinds a pin covers, in the order an acceptance looks at them. */
const PIN_KINDS: readonly PinKind[] = ['tool', 'prompt', 'resource-template'];

/**
 * The store keys an acceptance under `server` looks at: a {@link pinKey} of a kind (`prompt:x`)
 * names that key alone; a server's own name (which cannot hold `:`) names its tools, prompts and
 * resource templates, so the caller need not know which kind is hidden under a name.
 */
export function acceptKeys(server: string): readonly string[] {
  return server.includes(':') ? [server] : PIN_KINDS.map((kind) => pinKey(server, kind));
}

/** What {@link acceptAcross} decided: the outcome, the key accepted under, the digest pending. */
export interface AcceptDecision {
  readonly outcome: AcceptOutcome;
  /** The key whose pins were changed (when `accepted`). */
  readonly key?: string;
  /** A digest pending under the name (when `changed`). */
  readonly pending?: string;
}

/**
 * Accepts, among the pins of `keys` (one server's tools, prompts and resource templates, as read
 * in one lookup), the definition pending under `tool` whose digest is `sha256`; `changed` when
 * something else is pending under that name, `none` when nothing is. The accepted key's pins are
 * changed in place.
 */
export function acceptAcross(
  found: ReadonlyMap<string, ServerPins | undefined>,
  tool: string,
  sha256: string,
): AcceptDecision {
  let pending: string | undefined;
  for (const [key, pins] of found) {
    const entry = pins === undefined ? undefined : ownOf(pins.pending, tool);
    if (entry === undefined) continue;
    if (entry.sha256 !== sha256) {
      pending ??= entry.sha256;
      continue;
    }
    return { outcome: acceptPending(pins, tool, sha256), key };
  }
  return pending === undefined ? { outcome: 'none' } : { outcome: 'changed', pending };
}

/** The error for an acceptance whose digest is not the definition pending now. */
export function pinChangedError(
  server: string,
  tool: string,
  shown: string,
  pending: string | undefined,
): PinChangedError {
  return new PinChangedError(
    'The definition waiting for acceptance changed since pin --show printed it, so nothing was accepted. Run toolfence-mcp pin --show again, review it, and accept the SERVER__TOOL@DIGEST it prints.',
    { details: { server, tool, shown, ...(pending === undefined ? {} : { pending }) } },
  );
}

/**
 * What the gateway needs of a pin back end: the lock file ({@link PinStore}) or a shared
 * PostgreSQL table (`PostgresPinStore`, for replicas).
 */
export interface GatewayPinStore {
  /**
   * Decides which of a server's listed tools may be offered, recording new and pending pins.
   * `server` is a {@link pinKey}; `kind` (default `tool`) picks the fields a pin covers.
   */
  review(
    server: string,
    identity: string,
    tools: readonly McpToolInfo[],
    kind?: PinKind,
  ): PinReview | Promise<PinReview>;
  /** The pin of one tool as of the last review or open, if it is pinned. */
  pinOf(server: string, tool: string): PinRecord | undefined;
  /** Tools waiting for acceptance, per server, as of the last review or open. */
  pending(): PendingTool[];
  /**
   * Accepts a pending definition when `sha256` is the digest of the definition pending now (the
   * one `pin --show` printed); false when nothing is pending under that name. `server` is the
   * server's name (its tools, prompts and resource templates are looked at in one lookup, and
   * the one pending under `tool` with that digest is accepted) or a {@link pinKey} of one kind.
   * Throws {@link PinChangedError} when another definition is pending now (nothing is accepted).
   */
  accept(server: string, tool: string, sha256: string): boolean | Promise<boolean>;
  /** Makes the reviews and acceptances durable (a file back end writes here). */
  save(): Promise<void>;
  /** Releases the back end's resources (a database pool). */
  close?(): Promise<void>;
}

/** Bytes of the lock file around its server entries (`{"version": 1, "servers": {…}}`), at most. */
const LOCK_FRAME_BYTES = 64;

/**
 * Bytes one server key's entry takes in the lock file as `save` writes it (two-space JSON nested
 * two levels, a comma and a newline after it), at most.
 */
function entryBytes(key: string, pins: ServerPins | undefined): number {
  const text = JSON.stringify(pins ?? null, null, 2);
  let lines = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  return Buffer.byteLength(JSON.stringify(key)) + Buffer.byteLength(text) + 4 * lines + 8;
}

/**
 * The pin lock file: for each server its identity (command or URL) and, per tool, a SHA-256 over
 * the canonical JSON of the whole definition. The first listing of a server is pinned as seen
 * (trust on first use; invisible Unicode is flagged). Afterwards a tool that is new, renamed,
 * changed in any field, or whose risk went down, and every tool of a server whose identity
 * changed, is hidden until the user accepts it. Written atomically (temporary file, rename).
 */
export class PinStore implements GatewayPinStore {
  /** Where the lock file lives. */
  readonly path: string;
  #lock: LockFile;
  readonly #limits: Readonly<Required<PinStoreLimits>>;
  /** Bytes each server key takes in the written file (at most), computed when first needed. */
  readonly #sizes = new Map<string, number>();

  private constructor(path: string, lock: LockFile, limits: Readonly<Required<PinStoreLimits>>) {
    this.path = path;
    this.#lock = lock;
    this.#limits = limits;
  }

  /**
   * Reads the lock file (a missing file is an empty one). `options`: the limits of what is stored
   * ({@link PinStoreLimits}); unknown keys and bad values are refused with `GATEWAY_CONFIG`.
   */
  static async open(path: string, options?: PinStoreLimits): Promise<PinStore> {
    const limits = pinStoreLimits(options);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') {
        throw new GatewayStateError('Cannot read the pin lock file', { cause: error });
      }
    }
    if (text === undefined) return new PinStore(path, { version: 1, servers: {} }, limits);
    if (Buffer.byteLength(text) > limits.maxLockBytes) {
      throw new GatewayStateError(
        `The pin lock file is larger than maxLockBytes (${limits.maxLockBytes} bytes), so it was not read. Raise the PinStore option maxLockBytes, or move the file away and review the servers' definitions again.`,
        { details: { maxLockBytes: limits.maxLockBytes } },
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new GatewayStateError('The pin lock file is not valid JSON', { cause: error });
    }
    const lock = parsed as LockFile;
    if (
      typeof lock !== 'object' ||
      lock === null ||
      lock.version !== 1 ||
      typeof lock.servers !== 'object' ||
      lock.servers === null
    ) {
      throw new GatewayStateError('The pin lock file is not a toolfence lock file (version 1)');
    }
    return new PinStore(path, lock, limits);
  }

  /** Decides which of a server's listed tools may be offered, recording new pins and pending ones. */
  review(
    server: string,
    identity: string,
    tools: readonly McpToolInfo[],
    kind: PinKind = 'tool',
  ): PinReview {
    const known = ownOf(this.#lock.servers, server);
    const { pins, review } = reviewServer(known, identity, tools, kind, this.#limits);
    if (review.changed) {
      // The file must stay readable: a server whose pins would make it too large is refused
      // (its load fails), and nothing of it is kept.
      const size = entryBytes(server, pins);
      let total = LOCK_FRAME_BYTES + size;
      for (const key of Object.keys(this.#lock.servers)) {
        if (key !== server) total += this.#sizeOf(key);
      }
      if (total > this.#limits.maxLockBytes) {
        throw new GatewayStateError(
          `The pins of server ${JSON.stringify(splitPinKey(server).server)} would make the pin lock file larger than maxLockBytes (${this.#limits.maxLockBytes} bytes), so its listing was not pinned and its tools are not offered. The server lists too many or too large definitions; raise the PinStore option maxLockBytes if you trust it.`,
          {
            details: {
              server: splitPinKey(server).server,
              maxLockBytes: this.#limits.maxLockBytes,
            },
          },
        );
      }
      this.#sizes.set(server, size);
    }
    setOwn(this.#lock.servers, server, pins);
    return review;
  }

  /** The bytes a server key's pins take in the file (cached until they change). */
  #sizeOf(key: string): number {
    let size = this.#sizes.get(key);
    if (size === undefined) {
      size = entryBytes(key, ownOf(this.#lock.servers, key));
      this.#sizes.set(key, size);
    }
    return size;
  }

  /** Tools waiting for acceptance, per server. */
  pending(): PendingTool[] {
    const out: PendingTool[] = [];
    for (const [key, pins] of Object.entries(this.#lock.servers)) {
      const { server, kind } = splitPinKey(key);
      for (const [tool, pin] of Object.entries(pins.pending)) {
        out.push({ server, tool, kind, pin, previous: ownOf(pins.tools, tool) });
      }
    }
    return out.sort((a, b) => `${a.server}/${a.tool}`.localeCompare(`${b.server}/${b.tool}`));
  }

  /** The pin of one tool, if it is pinned. */
  pinOf(server: string, tool: string): PinRecord | undefined {
    const pins = this.#lock.servers[server];
    return pins === undefined ? undefined : ownOf(pins.tools, tool);
  }

  /**
   * Accepts a pending definition (`server`'s name, or a {@link pinKey} of one kind, and the
   * remote name) when `sha256` is the digest of the definition pending now, whatever its kind:
   * that definition becomes the pin. Returns false when nothing is pending under that name;
   * throws {@link PinChangedError} when another definition is pending.
   */
  accept(server: string, tool: string, sha256: string): boolean {
    const found = new Map(
      acceptKeys(server).map((key) => [key, ownOf(this.#lock.servers, key)] as const),
    );
    const decision = acceptAcross(found, tool, sha256);
    if (decision.key !== undefined) this.#sizes.delete(decision.key);
    if (decision.outcome === 'changed') {
      throw pinChangedError(splitPinKey(server).server, tool, sha256, decision.pending);
    }
    return decision.outcome === 'accepted';
  }

  /**
   * Writes the lock file atomically (a temporary file in the same folder, then a rename). A file
   * that would be larger than `maxLockBytes` (which the gateway could not read back) is not
   * written: the previous file stays, and `GATEWAY_STATE` says why.
   */
  async save(): Promise<void> {
    const text = `${JSON.stringify(this.#lock, null, 2)}\n`;
    if (Buffer.byteLength(text) > this.#limits.maxLockBytes) {
      throw new GatewayStateError(
        `The pin lock file would be larger than maxLockBytes (${this.#limits.maxLockBytes} bytes), so it was not written and the previous file is kept.`,
        { details: { maxLockBytes: this.#limits.maxLockBytes } },
      );
    }
    const temporary = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw new GatewayStateError('Cannot write the pin lock file', { cause: error });
    }
  }
}
