import { createHmac } from 'node:crypto';
import { closeSync, fdatasync, fdatasyncSync, openSync, readSync, writeSync } from 'node:fs';
import { AuditLogError } from './audit-log-error.js';
import { canonicalJson, sha256Hex } from './canonical-json.js';

/** Lines of one log file as sealed: how many, what the first links to, the last line's hash. */
export interface AuditFileSeal {
  /** Lines in the file. */
  readonly lines: number;
  /** The `previous` of its first line (`genesis`, or the last hash of the file before it). */
  readonly start: string;
  /** The hash of its last line (`start` when it holds none). */
  readonly last: string;
}

/** What the head file seals: the current file, the rotated `.1`, and the lines ever written. */
export interface AuditHead {
  /** Lines written in this chain since its first line, rotated-away ones included. */
  readonly total: number;
  /** The current log file. */
  readonly current: AuditFileSeal;
  /** The rotated file `<log>.1`, when there is one. */
  readonly rotated?: AuditFileSeal;
  /** Present when the chain is keyed: an identifier of the key (never the key). */
  readonly keyId?: string;
}

const FORMAT = 'toolfence-audit-head/1';
/** The head is one record of this many bytes at offset 0, always written whole, in place. */
export const AUDIT_HEAD_BYTES = 1024;
const READ_ATTEMPTS = 5;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** The hash of one line: HMAC-SHA256 with the key, else SHA-256. */
export function lineHash(key: Uint8Array | undefined, previous: string, canonical: string): string {
  const text = `${previous}\n${canonical}`;
  return key === undefined
    ? `sha256:${sha256Hex(text)}`
    : `hmac-sha256:${createHmac('sha256', key).update(text).digest('hex')}`;
}

/** A short identifier of a key, written in the head so a wrong key is told from a forged head. */
export function auditKeyId(key: Uint8Array): string {
  return createHmac('sha256', key).update('toolfence-audit-key-id').digest('hex').slice(0, 16);
}

function headCheck(key: Uint8Array | undefined, body: Readonly<Record<string, unknown>>): string {
  return lineHash(key, 'toolfence-audit-head', canonicalJson(body));
}

/** A seal's canonical JSON (keys sorted: `last`, `lines`, `start`). */
function sealJson(seal: AuditFileSeal): string {
  return `{"last":${canonicalJson(seal.last)},"lines":${canonicalJson(seal.lines)},"start":${canonicalJson(seal.start)}}`;
}

const FORMAT_JSON = canonicalJson(FORMAT);

/**
 * What a head file's records share from one seal to the next: the rotated seal's JSON (the same
 * until the next rotation) and the key id's, kept with the values they were made from and
 * compared by value before each reuse.
 */
interface HeadMemo {
  rotated?: AuditFileSeal;
  rotatedJson?: string;
  keyId?: string;
  keyIdJson?: string;
}

function rotatedJson(seal: AuditFileSeal, memo: HeadMemo | undefined): string {
  const kept = memo?.rotated;
  if (
    kept !== undefined &&
    kept.lines === seal.lines &&
    kept.start === seal.start &&
    kept.last === seal.last
  ) {
    return memo?.rotatedJson as string;
  }
  const json = sealJson(seal);
  if (memo !== undefined) {
    memo.rotated = { lines: seal.lines, start: seal.start, last: seal.last };
    memo.rotatedJson = json;
  }
  return json;
}

function keyIdJson(keyId: string, memo: HeadMemo | undefined): string {
  if (memo?.keyId === keyId) return memo.keyIdJson as string;
  const json = canonicalJson(keyId);
  if (memo !== undefined) {
    memo.keyId = keyId;
    memo.keyIdJson = json;
  }
  return json;
}

/**
 * The head's record text: the body (`format` and the head's fields) and its `check`. The check is
 * over the canonical JSON of the body, built here field by field (what `canonicalJson` gives for
 * it, without the copies and the sort: the keys are written in their sorted order).
 */
function headText(head: AuditHead, key: Uint8Array | undefined, memo?: HeadMemo): string {
  const current = sealJson(head.current);
  const rotated = head.rotated === undefined ? undefined : rotatedJson(head.rotated, memo);
  const format = FORMAT_JSON;
  const keyId = head.keyId === undefined ? undefined : keyIdJson(head.keyId, memo);
  const total = canonicalJson(head.total);
  const canonical = `{"current":${current},"format":${format}${
    keyId === undefined ? '' : `,"keyId":${keyId}`
  }${rotated === undefined ? '' : `,"rotated":${rotated}`},"total":${total}}`;
  const check = lineHash(key, 'toolfence-audit-head', canonical);
  return `{"format":${format},"total":${total},"current":${current}${
    rotated === undefined ? '' : `,"rotated":${rotated}`
  }${keyId === undefined ? '' : `,"keyId":${keyId}`},"check":"${check}"}`;
}

/** Writes the head's record into `record` ({@link AUDIT_HEAD_BYTES} bytes, reused). */
function encodeInto(
  record: Buffer,
  head: AuditHead,
  key: Uint8Array | undefined,
  memo?: HeadMemo,
): Buffer {
  const text = headText(head, key, memo);
  record.fill(0x20);
  const length = record.write(text, 0, 'utf8');
  if (length !== Buffer.byteLength(text) || length >= AUDIT_HEAD_BYTES) {
    throw new AuditLogError('The audit head does not fit its record', {
      code: 'AUDIT_WRITE_FAILED',
      details: { reason: 'write-failed' },
    });
  }
  record[AUDIT_HEAD_BYTES - 1] = 0x0a;
  return record;
}

/** The head's record: JSON padded with spaces to {@link AUDIT_HEAD_BYTES}, ending in a newline. */
export function encodeAuditHead(head: AuditHead, key: Uint8Array | undefined): Buffer {
  return encodeInto(Buffer.allocUnsafe(AUDIT_HEAD_BYTES), head, key);
}

type Decoded =
  | { readonly head: AuditHead }
  | { readonly torn: true }
  | { readonly problem: 'head-damaged' | 'key-required' | 'key-mismatch' | 'key-unexpected' };

function decode(bytes: Buffer, key: Uint8Array | undefined): Decoded {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { torn: true };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { problem: 'head-damaged' };
  }
  const { check, ...body } = parsed as Record<string, unknown>;
  const keyId = body.keyId;
  if (key === undefined && keyId !== undefined) return { problem: 'key-required' };
  if (key !== undefined && keyId === undefined) return { problem: 'key-unexpected' };
  if (key !== undefined && keyId !== auditKeyId(key)) return { problem: 'key-mismatch' };
  if (body.format !== FORMAT || check !== headCheck(key, body) || !isHead(body)) {
    return { problem: 'head-damaged' };
  }
  const { format: _format, ...head } = body;
  return { head: head as unknown as AuditHead };
}

function isSeal(value: unknown): value is AuditFileSeal {
  const seal = value as Record<string, unknown> | null;
  return (
    typeof seal === 'object' &&
    seal !== null &&
    Number.isSafeInteger(seal.lines) &&
    (seal.lines as number) >= 0 &&
    typeof seal.start === 'string' &&
    typeof seal.last === 'string'
  );
}

function isHead(body: Record<string, unknown>): boolean {
  return (
    Number.isSafeInteger(body.total) &&
    isSeal(body.current) &&
    (body.rotated === undefined || isSeal(body.rotated))
  );
}

/**
 * Reads the head at `path`: undefined when there is none. A record read while the gateway writes
 * it may be torn; it is read again (a few times) before it counts as damaged.
 */
export function readAuditHead(path: string, key: Uint8Array | undefined): AuditHead | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw new AuditLogError(`Cannot read the audit head ${path}`, {
      details: { reason: 'head-damaged', path },
      cause: error,
    });
  }
  try {
    for (let attempt = 1; ; attempt += 1) {
      const bytes = Buffer.alloc(AUDIT_HEAD_BYTES + 1);
      let length: number;
      try {
        length = readSync(fd, bytes, 0, bytes.length, 0);
      } catch (error) {
        throw new AuditLogError(`Cannot read the audit head ${path}: it must be a file`, {
          details: { reason: 'head-damaged', path },
          cause: error,
        });
      }
      const decoded =
        length === AUDIT_HEAD_BYTES
          ? decode(bytes.subarray(0, length), key)
          : ({ problem: 'head-damaged' } as const);
      if ('head' in decoded) return decoded.head;
      if ('torn' in decoded && attempt < READ_ATTEMPTS) {
        // Caught mid-write: the writer is done within microseconds; wait a millisecond.
        Atomics.wait(PAUSE, 0, 0, 1);
        continue;
      }
      const problem = 'problem' in decoded ? decoded.problem : 'head-damaged';
      throw new AuditLogError(headMessage(problem, path), { details: { reason: problem, path } });
    }
  } finally {
    closeSync(fd);
  }
}

function headMessage(problem: string, path: string): string {
  switch (problem) {
    case 'key-required':
      return `The audit log is keyed (see ${path}): set TOOLFENCE_AUDIT_KEY (or gateway.auditKey) to the key it was written with`;
    case 'key-mismatch':
      return `The audit log was written with another key than the one given (see ${path})`;
    case 'key-unexpected':
      return `A key is set (TOOLFENCE_AUDIT_KEY or gateway.auditKey), but the audit log was written without one (see ${path})`;
    default:
      return `The audit head ${path} is damaged, or was edited (it does not verify)`;
  }
}

/** The open head file, rewritten in place (one write of one whole record) after every write. */
export class AuditHeadFile {
  readonly #fd: number;
  readonly #key: Uint8Array | undefined;
  readonly #fsync: boolean;
  /** The record written by each seal (one buffer for the file's life, filled anew each time). */
  readonly #record = Buffer.allocUnsafe(AUDIT_HEAD_BYTES);
  /** What consecutive records share (see {@link HeadMemo}). */
  readonly #memo: HeadMemo = {};

  constructor(path: string, key: Uint8Array | undefined, fsync: boolean) {
    let fd: number;
    try {
      fd = openSync(path, 'r+');
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
      fd = openSync(path, 'wx', 0o600);
    }
    this.#fd = fd;
    this.#key = key;
    this.#fsync = fsync;
  }

  /** Seals `head` (synced when fsync is on); throws when the record cannot be written whole. */
  write(head: AuditHead): void {
    this.seal(head);
    if (this.#fsync) fdatasyncSync(this.#fd);
  }

  /** Writes `head`'s record in place, not synced; throws when it cannot be written whole. */
  seal(head: AuditHead): void {
    const record = encodeInto(this.#record, head, this.#key, this.#memo);
    let written = 0;
    while (written < record.length) {
      written += writeSync(this.#fd, record, written, record.length - written, written);
    }
  }

  /** `fdatasync` of the head file, off the event loop. */
  sync(): Promise<void> {
    return new Promise((resolve, reject) => {
      fdatasync(this.#fd, (error) => (error ? reject(error) : resolve()));
    });
  }

  close(): void {
    try {
      closeSync(this.#fd);
    } catch {
      // Already closed.
    }
  }
}
