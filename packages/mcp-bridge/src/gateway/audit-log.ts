import { createHash } from 'node:crypto';
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  renameSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { checkOptionKeys } from '@toolfence/tools/core';
import { printableText } from '../printable-text.js';
import {
  type AuditFileSeal,
  type AuditHead,
  AuditHeadFile,
  auditKeyId,
  lineHash,
  readAuditHead,
} from './audit-head.js';
import { AuditLogError, type AuditProblem } from './audit-log-error.js';
import { canonicalJson } from './canonical-json.js';

/**
 * The flow guard's part in a decision: what it raised the policy's decision to, and the labels
 * and sink that decided (offered tool names; `(dropped)` for labels lost at the session limit).
 */
export interface AuditFlow {
  /** What the guard raised the call to: `ask` (exposed session) or `deny` (exposed and private). */
  readonly verdict: 'ask' | 'deny';
  /** False when the guard only observed (`flow.mode: "observe"` or the gateway's observe mode). */
  readonly enforced: boolean;
  /** The sink called. */
  readonly sink: string;
  /** The tools whose untrusted (or injection-prone) results exposed the session. */
  readonly exposedBy: readonly string[];
  /** The tools whose private (sensitive) results the session holds. */
  readonly privateFrom: readonly string[];
}

/** One audited call. Digests only: never arguments, results or tokens. */
export interface AuditEntry {
  /** ISO time (to the millisecond) the line was written. */
  readonly time: string;
  /**
   * What was decided: absent for a tool call; `prompt` for a `prompts/get` (`tool` is then
   * `<namespace>__prompt:<name>`), `resource` for a `resources/read` (`<namespace>__resource:<uri>`),
   * `completion` for a `completion/complete` (`tool` names the prompt or resource template it
   * completes: `<namespace>__prompt:<name>` or `<namespace>__resource:<uri template>`),
   * `console` for a change made in the web console (`outcome` says which: `console-approved`,
   * `console-declined`, `console-pin-accepted`, `console-reload`).
   */
  readonly kind?: 'prompt' | 'resource' | 'completion' | 'console';
  /** The offered name (`server__tool`); a name over 256 characters as `auditText` bounds it. */
  readonly tool: string;
  /** The definition pin the call ran against. */
  readonly pin: string;
  /**
   * The decision: `allow`, `deny` or `ask`: the policy's, raised by the flow guard when it raised
   * the call (`flow`).
   */
  readonly decision: 'allow' | 'deny' | 'ask';
  /**
   * Who approved an `ask`: `user` (the downstream user answered), `console` (a person answered in
   * the web console), or absent.
   */
  readonly approvedBy?: 'user' | 'console';
  /**
   * What happened: `started` (written before the call goes upstream), then `ok`, `tool-error`,
   * `ambiguous`, `failed` or `observed`; or, for a call that did not run, `denied`, `declined`,
   * `no-approval-channel`, `prompt-too-long`, `audit-failed`, `over-budget`, `asked`,
   * `name-too-long` (a made-up name over `maxToolNameChars`), `pin-changed` (the definition is no
   * longer the accepted or offered one: at the call, or when its approval came),
   * `invalid-arguments` (the arguments break the tool's input schema: refused before the policy
   * judged it, with `decision: deny`),
   * `approval-unknown`, `approval-forged`, `approval-expired`, `approval-other-principal`,
   * `approval-replayed`, `approval-mismatch` or `approval-unavailable`.
   */
  readonly outcome: string;
  /** `sha256:` digest of the canonical JSON of the arguments. */
  readonly argumentsDigest: string;
  /** `sha256:` digest of the canonical JSON of the result, when there was one. */
  readonly resultDigest?: string;
  /** Set in `--observe` mode: what the decision would have enforced. */
  readonly observed?: boolean;
  /**
   * The downstream session the call belongs to, as the flow guard keys its labels:
   * `connection:<uuid>` (a stdio client, a legacy HTTP session) or `principal:<digest>` (stateless
   * requests of one principal). Absent when the flow guard is off.
   */
  readonly session?: string;
  /** Present when the flow guard raised the call (or, observing, would have): see {@link AuditFlow}. */
  readonly flow?: AuditFlow;
  /**
   * The caller, when `serve --http` checks access tokens (`gateway.httpAuth`): the token's issuer
   * and subject. Never the token.
   */
  readonly principal?: {
    /** The token's `iss`. */
    readonly issuer: string;
    /** The token's `sub`. */
    readonly subject: string;
  };
  /**
   * On a console line answering an ask (`console-approved`, `console-declined`): who made the
   * call that was answered (issuer and subject, each bounded as `auditText` writes them), when
   * the gateway knows (`gateway.httpAuth`). `principal` is then the admin who answered.
   */
  readonly caller?: {
    /** The caller's `iss`. */
    readonly issuer: string;
    /** The caller's `sub`. */
    readonly subject: string;
  };
}

/** A line as written: the entry, the previous line's hash, and its own hash. */
export interface AuditLine extends AuditEntry {
  /** Hash of the previous line (`genesis` for the first line ever). */
  readonly previous: string;
  /**
   * `sha256:` over `previous` and the canonical JSON of the entry, or `hmac-sha256:` (the same
   * input, HMAC-SHA256 with the audit key) when the log is keyed.
   */
  readonly hash: string;
}

/** The result of {@link verifyAuditLog}: one file's chain. */
export interface AuditVerification {
  /** True when every line's hash matches and links to the one before. */
  readonly ok: boolean;
  /** Lines checked. */
  readonly lines: number;
  /** The first line (1-based) that does not verify, when one does not. */
  readonly brokenAt?: number;
  /**
   * Why it does not: `not-json`, `hash-mismatch`, `chain-broken`, or `key-required` (a keyed
   * line, and no key was given).
   */
  readonly reason?: 'not-json' | 'hash-mismatch' | 'chain-broken' | 'key-required';
}

/** Options of {@link AuditLog} and {@link verifyAuditChain}. */
export interface AuditLogOptions {
  /**
   * 32 bytes: each line's hash becomes an HMAC-SHA256 with this key and the head is sealed with
   * it, so a chain recomputed without the key does not verify. Default none (SHA-256).
   */
  readonly key?: Uint8Array;
  /**
   * `fdatasync` the log after each write and the head after each seal (off the event loop), so a
   * line the call waited for survives a power loss. Default false (the line is written before the
   * call runs, and survives a crash of the gateway, not of the machine; the head is sealed right
   * after the append resolved, see {@link AuditLog.append}).
   */
  readonly fsync?: boolean;
  /**
   * Lines at most in one write (group commit): appends made while a write (with `fsync`, its
   * `fdatasync`) is in flight are chained in their order and written together in the next one:
   * one `write`, one `fdatasync` of the log, one head seal. Each append still resolves only once
   * its own line is written (and synced). `1` writes each line on its own. An integer from 1 to
   * 10,000; default {@link DEFAULT_AUDIT_MAX_BATCH_LINES} (128).
   */
  readonly maxBatchLines?: number;
}

/** The default of {@link AuditLogOptions.maxBatchLines}. */
export const DEFAULT_AUDIT_MAX_BATCH_LINES = 128;
const MAX_BATCH_LINES_LIMIT = 10_000;

/** The result of {@link verifyAuditChain}: the log, its rotated file and its head together. */
export interface AuditChainReport {
  /** True when both files verify and match what their head sealed. */
  readonly ok: boolean;
  /** What is wrong, when something is. */
  readonly problem?: AuditProblem;
  /** One line for a person: what was checked, or what is wrong. */
  readonly message: string;
  /** Lines in the current file. */
  readonly lines: number;
  /** Lines in `<log>.1`. */
  readonly rotatedLines: number;
  /** Lines after the last seal (written just before the gateway stopped), accepted. */
  readonly unsealed: number;
  /**
   * Lines the head counts that are on disk no more: rotated out with an older `<log>.1` (one
   * generation is kept). 0 when the chain is not intact.
   */
  readonly rotatedAway: number;
  /** True when the chain is keyed (HMAC). */
  readonly keyed: boolean;
  /** True when there is no log, no `.1` and no head: nothing was ever recorded there. */
  readonly fresh: boolean;
}

const GENESIS = 'genesis';
const KEYED_PREFIX = 'hmac-sha256:';

/**
 * Characters of a name a line keeps whole (a tool, a prompt, a resource URI, a principal's issuer
 * or subject): 256. A longer one is written by `auditText`.
 */
export const AUDIT_TEXT_MAX_CHARS = 256;

/**
 * A name as an audit line keeps it: as it is up to `AUDIT_TEXT_MAX_CHARS` characters;
 * longer, its first 256 characters (control and invisible characters as `\u{…}`), then
 * `… [<length> characters, sha256:<hex>]`, the SHA-256 of the whole name as UTF-8. So no name a
 * client or a server makes up can make a line long (and rotate the log's evidence away), and the
 * name can still be matched against its digest.
 */
export function auditText(text: string): string {
  if (text.length <= AUDIT_TEXT_MAX_CHARS) return text;
  let head = '';
  let kept = 0;
  for (const char of text) {
    if (kept === AUDIT_TEXT_MAX_CHARS) break;
    kept += 1;
    head += char;
  }
  const digest = createHash('sha256').update(text, 'utf8').digest('hex');
  return `${printableText(head, AUDIT_TEXT_MAX_CHARS)}… [${text.length} characters, sha256:${digest}]`;
}

/** The head file of the log at `path`. */
export function auditHeadPath(path: string): string {
  return `${path}.head`;
}

interface Scan {
  readonly exists: boolean;
  /** Bytes read. */
  readonly size: number;
  /** Each line's hash, in order. */
  readonly hashes: string[];
  /** The first line's `previous`. */
  readonly start: string | undefined;
  readonly broken?: {
    readonly line: number;
    readonly reason: NonNullable<AuditVerification['reason']>;
  };
}

/** The key of a line's link, as it follows the entry's members in a line ({@link lineText}). */
const PREVIOUS_MEMBER = '"previous":"';
/** The end of a line as {@link lineText} writes it: its link and its hash, plain strings. */
const LINK_TAIL = /^"previous":"([^"\\]*)","hash":"([^"\\]*)"\}$/;
/** Lines checked the long way after one that verified only that way, before the short way again. */
const LONG_WAY_RUN = 64;
/** A link or hash written as it is (`genesis`, `sha256:…`, `hmac-sha256:…`): nothing to escape. */
const PLAIN_LINK = /^[A-Za-z0-9:-]*$/;

/**
 * The text of one line: the canonical JSON of its entry (the very text its hash is over), with
 * `previous` and `hash` as its last members. `canonical` is `canonicalJson(entry)`; an entry with
 * an own `previous`, `hash` or `__proto__` member (never one the gateway makes), or a `previous`
 * with characters JSON escapes, is written as `JSON.stringify` gives its line instead, as every line
 * was before.
 */
function lineText(entry: AuditEntry, canonical: string, line: AuditLine): string {
  if (
    Object.hasOwn(entry, 'previous') ||
    Object.hasOwn(entry, 'hash') ||
    Object.hasOwn(entry, '__proto__') ||
    !canonical.endsWith('}') ||
    // The hash is this log's own (`sha256:` or `hmac-sha256:` and hex); the link may come from
    // the head file.
    !PLAIN_LINK.test(line.previous)
  ) {
    return JSON.stringify(line);
  }
  const link = `${PREVIOUS_MEMBER}${line.previous}","hash":"${line.hash}"}`;
  return canonical === '{}' ? `{${link}` : `${canonical.slice(0, -1)},${link}`;
}

/**
 * A line written by {@link lineText}, checked without parsing it: the bytes before its link,
 * closed, are the text its hash must be over, so a hash that matches them (HMAC with the key
 * when keyed) proves the line is the canonical JSON that was sealed. Undefined for any other
 * line (a line of an older gateway, members in another order, a damaged or edited line): the
 * caller checks it the long way (parse, canonical JSON, hash).
 */
function verifiedAsWritten(
  raw: string,
  key: Uint8Array | undefined,
): { readonly previous: string; readonly hash: string } | undefined {
  const at = raw.lastIndexOf(PREVIOUS_MEMBER);
  if (at < 1) return undefined;
  const before = raw.charCodeAt(at - 1);
  // `{` only for an empty entry (the link is the line's only members), else `,`.
  if (before === 0x7b ? at !== 1 : before !== 0x2c) return undefined;
  const tail = LINK_TAIL.exec(raw.slice(at));
  if (tail === null) return undefined;
  const previous = tail[1] as string;
  const hash = tail[2] as string;
  const canonical = at === 1 ? '{}' : `${raw.slice(0, at - 1)}}`;
  return lineHash(key, previous, canonical) === hash ? { previous, hash } : undefined;
}

function scanText(text: string, startsAfter: string | undefined, key: Uint8Array | undefined) {
  const lines = text.split('\n').filter((line) => line !== '');
  const hashes: string[] = [];
  let start: string | undefined;
  let expected = startsAfter;
  const broken = (index: number, reason: NonNullable<AuditVerification['reason']>) => ({
    hashes,
    start,
    lines: lines.length,
    broken: { line: index + 1, reason },
  });
  /** Lines before this index are checked the long way only (see below). */
  let longUntil = 0;
  for (const [index, raw] of lines.entries()) {
    // A line exactly as this log writes it has its hash over its own bytes: checked already.
    let link: { previous: string; hash: string; entry?: Record<string, unknown> } | undefined =
      index < longUntil ? undefined : verifiedAsWritten(raw, key);
    if (link === undefined) {
      let line: AuditLine;
      try {
        line = JSON.parse(raw) as AuditLine;
      } catch {
        return broken(index, 'not-json');
      }
      if (typeof line !== 'object' || line === null) return broken(index, 'not-json');
      const { previous, hash, ...entry } = line;
      if (typeof previous !== 'string' || typeof hash !== 'string') {
        return broken(index, 'hash-mismatch');
      }
      link = { previous, hash, entry };
    }
    const { previous, hash, entry } = link;
    if (index === 0) start = previous;
    if (expected !== undefined && previous !== expected) return broken(index, 'chain-broken');
    if (entry !== undefined) {
      // The long way: the hash over the entry's canonical JSON.
      if (key === undefined && hash.startsWith(KEYED_PREFIX)) return broken(index, 'key-required');
      if (lineHash(key, previous, canonicalJson(entry)) !== hash) {
        return broken(index, 'hash-mismatch');
      }
      // A line that verifies only the long way was written in another member order (by a
      // gateway before this one): the lines around it likely were too, so the next ones skip
      // the short way (its hash would be wasted on them) until it is tried again.
      if (index >= longUntil) longUntil = index + LONG_WAY_RUN;
    }
    hashes.push(hash);
    expected = hash;
  }
  return { hashes, start, lines: lines.length, broken: undefined };
}

async function scanFile(path: string, key: Uint8Array | undefined): Promise<Scan> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') {
      return { exists: false, size: 0, hashes: [], start: undefined };
    }
    throw new AuditLogError(
      `Cannot read the audit log ${path} (${(error as { code?: unknown }).code ?? 'error'}): it must be a file`,
      { details: { reason: 'log-missing', path }, cause: error },
    );
  }
  const { hashes, start, broken } = scanText(bytes.toString('utf8'), undefined, key);
  return { exists: true, size: bytes.length, hashes, start, ...(broken ? { broken } : {}) };
}

function sealOf(scan: Scan): AuditFileSeal | undefined {
  const last = scan.hashes.at(-1);
  return last === undefined
    ? undefined
    : { lines: scan.hashes.length, start: scan.start as string, last };
}

/** The scan holds exactly the sealed lines. */
function holds(scan: Scan, seal: AuditFileSeal): boolean {
  return seal.lines === 0
    ? scan.hashes.length === 0
    : scan.hashes.length === seal.lines &&
        scan.start === seal.start &&
        scan.hashes.at(-1) === seal.last;
}

/** The scan begins with the sealed lines (more may follow: written after the last seal). */
function beginsWith(scan: Scan, seal: AuditFileSeal): boolean {
  if (scan.hashes.length < seal.lines) return false;
  if (scan.hashes.length > 0 && scan.start !== seal.start) return false;
  return seal.lines === 0 || scan.hashes[seal.lines - 1] === seal.last;
}

interface Inspection {
  readonly report: AuditChainReport;
  /** The head that seals what is on disk (when `report.ok`). */
  readonly head?: AuditHead;
  readonly currentSize: number;
}

const EMPTY_SEAL: AuditFileSeal = { lines: 0, start: GENESIS, last: GENESIS };

async function inspect(path: string, key: Uint8Array | undefined): Promise<Inspection> {
  const rotatedPath = `${path}.1`;
  const keyed = key !== undefined;
  let head: AuditHead | undefined;
  let rotated: Scan;
  let current: Scan;
  try {
    head = readAuditHead(auditHeadPath(path), key);
    [rotated, current] = await Promise.all([scanFile(rotatedPath, key), scanFile(path, key)]);
  } catch (error) {
    if (!AuditLogError.isInstance(error)) throw error;
    const problem = (error.details?.reason as AuditProblem | undefined) ?? 'head-damaged';
    return {
      report: {
        ok: false,
        problem,
        message: error.message,
        lines: 0,
        rotatedLines: 0,
        unsealed: 0,
        rotatedAway: 0,
        keyed,
        fresh: false,
      },
      currentSize: 0,
    };
  }
  const counts = { lines: current.hashes.length, rotatedLines: rotated.hashes.length, keyed };
  const fail = (problem: AuditProblem, message: string): Inspection => ({
    report: { ok: false, problem, message, unsealed: 0, rotatedAway: 0, fresh: false, ...counts },
    currentSize: current.size,
  });
  for (const [scan, file] of [
    [rotated, rotatedPath],
    [current, path],
  ] as const) {
    if (scan.broken !== undefined) {
      return fail(
        scan.broken.reason,
        `${file} is broken at line ${scan.broken.line} (${scan.broken.reason}); lines from there on cannot be trusted`,
      );
    }
  }
  const rotatedSeal = sealOf(rotated);
  if (
    rotatedSeal !== undefined &&
    current.start !== undefined &&
    current.start !== rotatedSeal.last
  ) {
    return fail(
      'chain-broken',
      `${path} does not link to the last line of ${rotatedPath} (chain-broken at line 1)`,
    );
  }
  if (head === undefined) {
    if (rotated.hashes.length + current.hashes.length > 0) {
      return fail(
        'head-missing',
        `${path} holds lines, but its head ${auditHeadPath(path)} is missing: it was deleted, or the log was written by a toolfence-mcp that kept none`,
      );
    }
    return {
      report: {
        ok: true,
        message: `no audit log at ${path} yet`,
        unsealed: 0,
        rotatedAway: 0,
        fresh: true,
        ...counts,
      },
      head: { total: 0, current: EMPTY_SEAL, ...(key ? { keyId: auditKeyId(key) } : {}) },
      currentSize: current.size,
    };
  }
  let unsealed: number | undefined;
  // Sealed as it is (lines after the seal are ones the gateway wrote just before it stopped).
  const rotatedAsSealed =
    head.rotated === undefined ? rotated.hashes.length === 0 : holds(rotated, head.rotated);
  if (rotatedAsSealed && beginsWith(current, head.current)) {
    unsealed = current.hashes.length - head.current.lines;
  } else if (
    // Rotated after the last seal: `.1` holds what the head sealed as current.
    head.current.lines > 0 &&
    holds(rotated, head.current) &&
    beginsWith(current, { lines: 0, start: head.current.last, last: head.current.last })
  ) {
    unsealed = current.hashes.length;
  }
  if (unsealed === undefined) {
    const sealedRotated = head.rotated?.lines ?? 0;
    if (!current.exists && head.current.lines > 0) {
      return fail(
        'log-missing',
        `${path} is missing, but its head sealed ${head.current.lines} line(s) in it: the log was deleted`,
      );
    }
    if (!rotatedAsSealed) {
      return fail(
        'rotated-cut',
        rotated.exists
          ? `${rotatedPath} holds ${rotated.hashes.length} line(s), but its head sealed ${sealedRotated} other ones: lines were removed from it or changed`
          : `${rotatedPath} is missing, but its head sealed ${sealedRotated} line(s) in it: the rotated log was deleted`,
      );
    }
    if (current.hashes.length < head.current.lines) {
      return fail(
        'cut',
        `${path} holds ${current.hashes.length} line(s), but its head sealed ${head.current.lines}: lines were removed from its end`,
      );
    }
    return fail(
      'head-mismatch',
      `${path} does not hold the line its head sealed last: a line was changed and the chain recomputed, or lines were removed and others written`,
    );
  }
  const sealed: AuditHead = {
    total: head.total + unsealed,
    current: sealOf(current) ?? {
      lines: 0,
      start: rotatedSeal?.last ?? head.current.last,
      last: rotatedSeal?.last ?? head.current.last,
    },
    ...(rotatedSeal === undefined ? {} : { rotated: rotatedSeal }),
    ...(key ? { keyId: auditKeyId(key) } : {}),
  };
  const after =
    unsealed > 0 ? `; ${unsealed} line(s) after the last seal, written just before a stop` : '';
  const onDisk = current.hashes.length + rotated.hashes.length;
  const rotatedAway = Math.max(0, sealed.total - onDisk);
  const away =
    rotatedAway > 0
      ? `; the head counts ${rotatedAway} earlier line(s), rotated away (one .1 generation is kept)`
      : '';
  return {
    report: {
      ok: true,
      message: `${current.hashes.length + rotated.hashes.length} line(s), chain intact and sealed (${
        keyed ? `keyed, key id ${auditKeyId(key as Uint8Array)}` : 'unkeyed'
      }): ${current.hashes.length} in ${path}${
        rotated.hashes.length > 0 ? ` and ${rotated.hashes.length} in ${rotatedPath}` : ''
      }${after}${away}`,
      unsealed,
      rotatedAway,
      fresh: false,
      ...counts,
    },
    head: sealed,
    currentSize: current.size,
  };
}

/**
 * Verifies the audit log at `path` as a whole: each line of `<path>.1` and `<path>` (hashes, links,
 * the link between the two files) against what the head `<path>.head` sealed: the lines of each
 * file and the last hash. A cut at either end, a deleted file, a changed line with or without the
 * chain recomputed (keyed) are found. Pass the `key` the log was written with; a keyed log does
 * not verify without it. Never throws for a broken log (only for an unreadable one).
 */
export async function verifyAuditChain(
  path: string,
  options: Pick<AuditLogOptions, 'key'> = {},
): Promise<AuditChainReport> {
  return (await inspect(path, checkKey(options.key))).report;
}

function checkKey(key: unknown): Uint8Array | undefined {
  if (key === undefined) return undefined;
  if (!(key instanceof Uint8Array) || key.length !== 32) {
    throw new AuditLogError('The audit key must be 32 bytes', {
      code: 'AUDIT_WRITE_FAILED',
      details: { reason: 'key-mismatch' },
    });
  }
  return key;
}

function checkMaxBatchLines(value: unknown): number {
  if (value === undefined) return DEFAULT_AUDIT_MAX_BATCH_LINES;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > MAX_BATCH_LINES_LIMIT
  ) {
    throw new AuditLogError(
      `AuditLog option maxBatchLines must be an integer from 1 to ${MAX_BATCH_LINES_LIMIT.toLocaleString('en-US')} (lines at most in one write; default ${DEFAULT_AUDIT_MAX_BATCH_LINES})`,
      { code: 'AUDIT_WRITE_FAILED', details: { option: 'maxBatchLines' } },
    );
  }
  return value;
}

/** An append not yet written. */
interface Waiting {
  readonly entry: AuditEntry;
  readonly resolve: (line: AuditLine) => void;
  readonly reject: (error: unknown) => void;
}

/** `fdatasync` off the event loop: appends made meanwhile form the next batch. */
function syncData(fd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    fdatasync(fd, (error) => (error ? reject(error) : resolve()));
  });
}

/** Cuts the log back to the bytes its head seals (a batch that failed); best effort. */
function cutBack(state: OpenLog, fsync: boolean): void {
  try {
    if (state.fd < 0) return;
    ftruncateSync(state.fd, state.size);
    if (fsync) fdatasyncSync(state.fd);
  } catch {
    // The log stays as it is; the next open says what is wrong with it.
  }
}

interface OpenLog {
  fd: number;
  dev: number;
  ino: number;
  size: number;
  /** What the log holds; the head file seals it, or (`sealDue`) will before anything else. */
  head: AuditHead;
  readonly headFile: AuditHeadFile;
  /** Without `fsync`: the head file lags `head` by the last batch written (its seal is deferred). */
  sealDue: boolean;
  /** A `setImmediate` for the deferred seal is pending (one at a time). */
  sealScheduled: boolean;
}

/**
 * `{ ...entry, previous, hash }`: the same own properties in the same order (so the same JSON),
 * copied with `Object.assign`, which V8 does several times faster than a spread into a literal.
 */
function auditLine(entry: AuditEntry, previous: string, hash: string): AuditLine {
  // An own `__proto__` would set the copy's prototype instead of becoming a member.
  if (Object.hasOwn(entry, '__proto__')) return { ...entry, previous, hash };
  const line = Object.assign({}, entry) as { -readonly [K in keyof AuditLine]: AuditLine[K] };
  line.previous = previous;
  line.hash = hash;
  return line;
}

/** `head` with `lines` more written into `current` (built field by field, no spread). */
function sealedHead(head: AuditHead, lines: number, current: AuditFileSeal): AuditHead {
  const next: { -readonly [K in keyof AuditHead]: AuditHead[K] } = {
    total: head.total + lines,
    current,
  };
  if (head.rotated !== undefined) next.rotated = head.rotated;
  if (head.keyId !== undefined) next.keyId = head.keyId;
  return next;
}

/** Resolves each append of a written batch with its line. */
function settle(batch: readonly Waiting[], lines: readonly AuditLine[]): void {
  for (let index = 0; index < lines.length; index += 1) {
    (batch[index] as Waiting).resolve(lines[index] as AuditLine);
  }
}

function sameFile(stat: Stats, state: OpenLog): boolean {
  return stat.dev === state.dev && stat.ino === state.ino;
}

/**
 * An append-only, hash-chained JSON-lines audit log: each line carries the hash of the previous
 * one (HMAC-SHA256 when a key is given), and a head file beside it (`<path>.head`) seals how many
 * lines each file holds and the last hash, rewritten after every write (without `fsync`, right
 * after the write's appends resolved: see {@link AuditLog.append}). {@link AuditLog.open}
 * refuses a log that does not match its head (cut, deleted, changed); a line that cannot be
 * written rejects, and every later append rejects too, until the log is opened again. When the
 * file reaches `maxBytes` it is renamed to `<path>.1` (an older `.1` is replaced) and the new
 * file's first line links to the last hash of the old one: one chain across both files.
 * Appends are serialised, and grouped: lines appended while a write is in flight share the next
 * write (see {@link AuditLogOptions.maxBatchLines}). A write that fails rejects every append of
 * its batch and is cut from the log again (the log keeps ending at its last sealed line).
 */
export class AuditLog {
  /** The log file. */
  readonly path: string;
  /** The head file: `<path>.head`. */
  readonly headPath: string;
  readonly #maxBytes: number;
  readonly #key: Uint8Array | undefined;
  readonly #fsync: boolean;
  readonly #maxBatchLines: number;
  #opening: Promise<AuditChainReport> | undefined;
  #state: OpenLog | undefined;
  #failed: AuditLogError | undefined;
  /** Appends not yet written, in the order they were made. */
  #pending: Waiting[] = [];
  /** Set while appends are being written (or wait for the log to open). */
  #draining: Promise<void> | undefined;

  /** A log at `path`, rotating at `maxBytes`; nothing is read until the first open or append. */
  constructor(path: string, maxBytes: number, options: AuditLogOptions = {}) {
    checkOptionKeys(
      options,
      ['key', 'fsync', 'maxBatchLines'],
      'AuditLog',
      (message, option) =>
        new AuditLogError(message, { code: 'AUDIT_WRITE_FAILED', details: { option } }),
    );
    this.path = path;
    this.headPath = auditHeadPath(path);
    this.#maxBytes = maxBytes;
    this.#key = checkKey(options.key);
    this.#fsync = options.fsync === true;
    this.#maxBatchLines = checkMaxBatchLines(options.maxBatchLines);
  }

  /**
   * Checks the log, its `.1` and its head, seals what is on disk, and opens the log for appends.
   * Rejects with `AUDIT_LOG_BROKEN` when they disagree (the message says what to run and how to
   * start a new chain). Called by `McpGateway.start()`; the first append calls it too.
   */
  open(): Promise<AuditChainReport> {
    if (this.#opening === undefined) {
      this.#opening = this.#open();
      this.#opening.catch(() => {
        this.#opening = undefined;
      });
    }
    return this.#opening;
  }

  async #open(): Promise<AuditChainReport> {
    const { report, head, currentSize } = await inspect(this.path, this.#key);
    if (!report.ok || head === undefined) {
      throw new AuditLogError(
        `The audit log cannot be continued: ${report.message}. See it with "toolfence-mcp audit verify --log ${this.path}"; to start a new chain, move ${this.path}, ${this.path}.1 and ${this.headPath} aside (keep them) and start again`,
        { details: { reason: report.problem, path: this.path } },
      );
    }
    let fd: number | undefined;
    let headFile: AuditHeadFile | undefined;
    try {
      fd = openSync(this.path, 'a', 0o600);
      const stat = fstatSync(fd);
      if (stat.size !== currentSize) throw new Error('the log changed while it was read');
      headFile = new AuditHeadFile(this.headPath, this.#key, this.#fsync);
      headFile.write(head);
      this.#state = {
        fd,
        dev: stat.dev,
        ino: stat.ino,
        size: stat.size,
        head,
        headFile,
        sealDue: false,
        sealScheduled: false,
      };
      this.#failed = undefined;
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      headFile?.close();
      throw new AuditLogError(`Cannot open the audit log ${this.path} for writing`, {
        code: 'AUDIT_WRITE_FAILED',
        details: { reason: 'write-failed', path: this.path },
        cause: error,
      });
    }
    return report;
  }

  /**
   * Appends one entry; resolves when its line is written: in the file (checked to be the one
   * opened, with the size this log wrote) and, with `fsync`, synced and sealed in the head.
   * Without `fsync` the head is sealed right after, off the caller's path: in a `setImmediate`
   * (once the callbacks of the turn have run), or sooner when the next batch is written, a
   * rotation comes or {@link AuditLog.close} is called, each of which seals first; so the head
   * lags the file by the last batch at most (what `audit verify` accepts as lines written just
   * before a stop). Appends made while a write is in flight are written together in the next
   * one, in the order they were made. Rejects with `AUDIT_WRITE_FAILED` when it cannot be
   * written, or when an earlier line or seal could not be.
   */
  append(entry: AuditEntry): Promise<AuditLine> {
    return new Promise<AuditLine>((resolve, reject) => {
      this.#pending.push({ entry, resolve, reject });
      this.#draining ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    try {
      // Appends made in this same turn join the first write.
      await Promise.resolve();
      while (this.#pending.length > 0) {
        if (this.#state === undefined) {
          try {
            await this.open();
          } catch (error) {
            for (const waiting of this.#pending.splice(0)) waiting.reject(error);
            continue;
          }
        }
        // Without fsync a batch is written at once (no promise of its own; its seal is deferred),
        // but the callbacks of the appends it settled run before the next batch, or close(), goes
        // on.
        const syncing = this.#writeBatch(this.#state as OpenLog);
        await syncing;
      }
    } finally {
      this.#draining = undefined;
    }
  }

  /**
   * Writes the next batch of pending lines: all of them, or none (every append rejects). Returns
   * the promise of the `fdatasync`s with `fsync`; without it the batch is settled on return.
   */
  #writeBatch(state: OpenLog): Promise<void> | undefined {
    if (this.#failed !== undefined) {
      for (const waiting of this.#pending.splice(0)) waiting.reject(this.#failed);
      return undefined;
    }
    const batch = this.#pending.splice(0, this.#maxBatchLines);
    const lines: AuditLine[] = [];
    /** Bytes of this batch may be in the log, and the head does not seal them. */
    let unsealed = false;
    try {
      // The last batch's deferred seal first: the head never lags by more than one batch, and
      // seals what this log wrote (a cut since then stays a cut: the check below fails on it).
      if (state.sealDue) this.#seal(state);
      let stat: Stats;
      try {
        stat = statSync(this.path);
      } catch (error) {
        throw new Error('the log file is gone', { cause: error });
      }
      // The file must be the one opened, as long as this gateway wrote it: deleted, moved,
      // replaced, cut or written by another process, it no longer holds the chain.
      if (!sameFile(stat, state)) throw new Error('the log file was replaced or moved');
      if (stat.size !== state.size) throw new Error('the log file was cut or written by another');
      if (state.size >= this.#maxBytes && state.head.current.lines > 0) this.#rotate(state);
      const first = state.head.current.last;
      let previous = first;
      let size = state.size;
      let text = '';
      for (const waiting of batch) {
        // A file goes over maxBytes by one line at most: the rest waits for the next write,
        // which rotates first.
        if (lines.length > 0 && size >= this.#maxBytes) break;
        const canonical = canonicalJson(waiting.entry);
        const line = auditLine(waiting.entry, previous, lineHash(this.#key, previous, canonical));
        const own = `${lineText(waiting.entry, canonical, line)}\n`;
        size += Buffer.byteLength(own, 'utf8');
        text += own;
        lines.push(line);
        previous = line.hash;
      }
      if (lines.length < batch.length) this.#pending.unshift(...batch.splice(lines.length));
      // One append of the whole batch to the open descriptor; only a short write (rare) needs
      // the bytes to go on from.
      const length = size - state.size;
      unsealed = true;
      let written = writeSync(state.fd, text, null, 'utf8');
      if (written < length) {
        const bytes = Buffer.from(text, 'utf8');
        while (written < length) written += writeSync(state.fd, bytes, written, length - written);
      }
      const current = state.head.current;
      const head = sealedHead(state.head, lines.length, {
        lines: current.lines + lines.length,
        start: current.lines === 0 ? first : current.start,
        last: previous,
      });
      if (this.#fsync) return this.#syncBatch(state, batch, lines, head, size);
      // Written: the batch's appends resolve now; its seal follows (see append()).
      unsealed = false;
      state.size = size;
      state.head = head;
      state.sealDue = true;
      if (!state.sealScheduled) {
        state.sealScheduled = true;
        setImmediate(this.#sealDeferred, state);
      }
    } catch (error) {
      this.#fail(state, batch, error, unsealed);
      return undefined;
    }
    settle(batch, lines);
    return undefined;
  }

  /** With `fsync`: syncs the batch's lines, seals them in the head and syncs it, then settles. */
  async #syncBatch(
    state: OpenLog,
    batch: Waiting[],
    lines: AuditLine[],
    head: AuditHead,
    size: number,
  ): Promise<void> {
    let unsealed = true;
    try {
      await syncData(state.fd);
      state.headFile.seal(head);
      unsealed = false;
      state.size = size;
      state.head = head;
      await state.headFile.sync();
    } catch (error) {
      this.#fail(state, batch, error, unsealed);
      return;
    }
    settle(batch, lines);
  }

  /** Seals the head the log holds now (the deferred seal of the last batch). Throws on failure. */
  #seal(state: OpenLog): void {
    // Due no more, even when it throws: the log is failed then, and nothing is sealed again.
    state.sealDue = false;
    try {
      state.headFile.seal(state.head);
    } catch (error) {
      throw new Error(
        `its head ${this.headPath} could not be sealed (${(error as { code?: unknown }).code ?? 'error'})`,
        { cause: error },
      );
    }
  }

  /**
   * The deferred seal, in a `setImmediate` after the batches it seals were written (they were
   * sealed already when the next batch, a rotation or close() came first). A seal that fails
   * fails the log: the lines stay (their appends resolved, their calls ran; `audit verify`
   * accepts them as written after the last seal) and every later append rejects.
   */
  readonly #sealDeferred = (state: OpenLog): void => {
    state.sealScheduled = false;
    if (this.#state !== state || !state.sealDue) return;
    try {
      this.#seal(state);
    } catch {
      this.#failLog();
    }
  };

  /** No line is written again until the log is opened again. */
  #failLog(): void {
    this.#failed = new AuditLogError(
      `An earlier audit line could not be written to ${this.path}, or not sealed in its head; no line is written (and the gateway runs no call) until the log is opened again: restart the gateway after "toolfence-mcp audit verify --log ${this.path}"`,
      { code: 'AUDIT_WRITE_FAILED', details: { reason: 'failed-before', path: this.path } },
    );
  }

  /** A batch failed: cut it from the log again, reject its appends and every later one. */
  #fail(state: OpenLog, batch: Waiting[], error: unknown, unsealed: boolean): void {
    // Cut the batch from the log again, so it ends at the last sealed line and verifies.
    if (unsealed) cutBack(state, this.#fsync);
    this.#failLog();
    const failure = new AuditLogError(
      `Cannot write the audit log ${this.path}: ${(error as Error).message ?? 'write failed'}`,
      {
        code: 'AUDIT_WRITE_FAILED',
        details: { reason: 'write-failed', path: this.path },
        cause: error,
      },
    );
    for (const waiting of batch) waiting.reject(failure);
  }

  #rotate(state: OpenLog): void {
    closeSync(state.fd);
    state.fd = -1;
    renameSync(this.path, `${this.path}.1`);
    // A new file, never one that appeared at the path in between.
    state.fd = openSync(this.path, 'ax', 0o600);
    const stat = fstatSync(state.fd);
    state.dev = stat.dev;
    state.ino = stat.ino;
    state.size = 0;
    const sealed = state.head.current;
    state.head = {
      ...state.head,
      rotated: sealed,
      current: { lines: 0, start: sealed.last, last: sealed.last },
    };
  }

  /**
   * Resolves once every append made before it resolves (in flight when called, or made while it
   * waits) has settled, written in order or rejected with `AUDIT_WRITE_FAILED`, and the head
   * seals every line written, then closes the files (a later append opens them again). A last
   * seal that fails leaves the lines unsealed (accepted by `audit verify`, sealed by the next
   * open) and is not thrown: the appends settled already.
   */
  async close(): Promise<void> {
    await this.#opening?.catch(() => undefined);
    // Then nothing awaits before the files close: an append made meanwhile is written first.
    while (this.#draining !== undefined) await this.#draining;
    const state = this.#state;
    this.#state = undefined;
    this.#opening = undefined;
    if (state === undefined) return;
    if (state.sealDue) {
      try {
        this.#seal(state);
      } catch {
        // The lines stay, after the last seal; the next open checks and seals them.
      }
    }
    try {
      if (state.fd >= 0) closeSync(state.fd);
    } catch {
      // Already closed: nothing to release.
    }
    state.headFile.close();
  }
}

/**
 * Verifies one log file line by line: each line's hash over its `previous` and its entry, and each
 * `previous` equal to the hash of the line before. `startsAfter` is the hash the first line must
 * link to (`genesis`, or the last hash of the rotated file before it); by default the first
 * line's own `previous` is taken. Pass the `key` of a keyed log. A file alone says nothing of
 * lines cut from its end: {@link verifyAuditChain} checks the head too.
 */
export async function verifyAuditLog(
  path: string,
  startsAfter?: string,
  options: Pick<AuditLogOptions, 'key'> = {},
): Promise<AuditVerification> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new AuditLogError(`Cannot read the audit log ${path}`, {
      details: { reason: 'log-missing', path },
      cause: error,
    });
  }
  const { lines, broken } = scanText(text, startsAfter, checkKey(options.key));
  return broken === undefined
    ? { ok: true, lines }
    : { ok: false, lines, brokenAt: broken.line, reason: broken.reason };
}
