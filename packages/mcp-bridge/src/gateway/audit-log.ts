import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { canonicalJson, sha256Hex } from './canonical-json.js';
import { GatewayStateError } from './errors.js';

/** One audited call. Digests only: never arguments, results or tokens. */
export interface AuditEntry {
  /** ISO time the call was decided. */
  readonly time: string;
  /**
   * What was decided: absent for a tool call; `prompt` for a `prompts/get` (`tool` is then
   * `<namespace>__prompt:<name>`), `resource` for a `resources/read` (`<namespace>__resource:<uri>`).
   */
  readonly kind?: 'prompt' | 'resource';
  /** The offered name (`server__tool`). */
  readonly tool: string;
  /** The definition pin the call ran against. */
  readonly pin: string;
  /** The policy's decision: `allow`, `deny` or `ask`. */
  readonly decision: 'allow' | 'deny' | 'ask';
  /** Who approved an `ask`: `user` (the downstream user answered), or absent. */
  readonly approvedBy?: 'user';
  /** What happened: `ok`, `tool-error`, `denied`, `declined`, `ambiguous`, `failed`, `observed`. */
  readonly outcome: string;
  /** `sha256:` digest of the canonical JSON of the arguments. */
  readonly argumentsDigest: string;
  /** `sha256:` digest of the canonical JSON of the result, when there was one. */
  readonly resultDigest?: string;
  /** Set in `--observe` mode: what the decision would have enforced. */
  readonly observed?: boolean;
}

/** A line as written: the entry, the previous line's hash, and its own hash. */
export interface AuditLine extends AuditEntry {
  /** Hash of the previous line (`genesis` for the first line ever). */
  readonly previous: string;
  /** `sha256:` over `previous` and the canonical JSON of the entry. */
  readonly hash: string;
}

/** The result of {@link verifyAuditLog}. */
export interface AuditVerification {
  /** True when every line's hash matches and links to the one before. */
  readonly ok: boolean;
  /** Lines checked. */
  readonly lines: number;
  /** The first line (1-based) that does not verify, when one does not. */
  readonly brokenAt?: number;
  /** Why it does not: `not-json`, `hash-mismatch`, `chain-broken`. */
  readonly reason?: 'not-json' | 'hash-mismatch' | 'chain-broken';
}

const GENESIS = 'genesis';

function hashLine(previous: string, entry: AuditEntry): string {
  return `sha256:${sha256Hex(`${previous}\n${canonicalJson(entry)}`)}`;
}

/**
 * An append-only, hash-chained JSON-lines audit log: each line carries the hash of the previous
 * one, so a removed, reordered or edited line is detectable (`toolfence-mcp audit verify`). When
 * the file reaches `maxBytes` it is renamed to `<path>.1` (an older `.1` is replaced) and the new
 * file's first line links to the last hash of the old one. Appends are serialised.
 */
export class AuditLog {
  /** The log file. */
  readonly path: string;
  readonly #maxBytes: number;
  #last: string | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** Appends queued behind the first read of the last hash (or behind one another). */
  #waiting = 0;
  #fd: number | undefined;
  #size = 0;

  /** Opens (or will create) the log at `path`, rotating at `maxBytes`. */
  constructor(path: string, maxBytes: number) {
    this.path = path;
    this.#maxBytes = maxBytes;
  }

  /**
   * Appends one entry; resolves when it is on disk. Once the chain's last hash is known and no
   * earlier append is waiting, the line is written at once (the same synchronous write, without
   * a trip through the queue); otherwise it waits its turn behind the earlier ones.
   */
  append(entry: AuditEntry): Promise<AuditLine> {
    if (this.#last !== undefined && this.#waiting === 0) {
      try {
        return Promise.resolve(this.#write(this.#last, entry));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    this.#waiting += 1;
    const run = this.#queue.then(async () => {
      try {
        if (this.#last === undefined) this.#last = await lastHash(this.path);
        return this.#write(this.#last, entry);
      } finally {
        this.#waiting -= 1;
      }
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #write(previous: string, entry: AuditEntry): AuditLine {
    const line: AuditLine = { ...entry, previous, hash: hashLine(previous, entry) };
    const text = `${JSON.stringify(line)}\n`;
    try {
      if (this.#fd === undefined) {
        this.#fd = openSync(this.path, 'a', 0o600);
        this.#size = fstatSync(this.#fd).size;
      }
      if (this.#size >= this.#maxBytes) {
        closeSync(this.#fd);
        this.#fd = undefined;
        try {
          renameSync(this.path, `${this.path}.1`);
        } catch (error) {
          throw new GatewayStateError('Cannot rotate the audit log', { cause: error });
        }
        this.#fd = openSync(this.path, 'a', 0o600);
        this.#size = 0;
      }
      // One synchronous append of a few hundred bytes to an open descriptor: far cheaper per call
      // than a stat, open, write and close through the thread pool, and on disk before the answer.
      // The string is written as it is; only a short write (rare) needs the bytes to go on from.
      const length = Buffer.byteLength(text, 'utf8');
      let written = writeSync(this.#fd, text, null, 'utf8');
      if (written < length) {
        const bytes = Buffer.from(text, 'utf8');
        while (written < length) written += writeSync(this.#fd, bytes, written, length - written);
      }
      this.#size += length;
    } catch (error) {
      if (GatewayStateError.isInstance(error)) throw error;
      throw new GatewayStateError('Cannot write the audit log', { cause: error });
    }
    this.#last = line.hash;
    return line;
  }

  /** Waits for the appends in progress, then closes the log file (a later append opens it again). */
  async close(): Promise<void> {
    await this.#queue;
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    try {
      closeSync(fd);
    } catch {
      // Already closed: nothing to release.
    }
  }
}

async function lastHash(path: string): Promise<string> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch {
    return GENESIS;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return GENESIS;
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').trimEnd().split('\n');
    const last = JSON.parse(lines[lines.length - 1] as string) as { hash?: unknown };
    if (typeof last.hash !== 'string') throw new Error('no hash');
    return last.hash;
  } catch (error) {
    throw new GatewayStateError(
      'The audit log does not end with a valid line; verify it (toolfence-mcp audit verify) and move it aside',
      { cause: error },
    );
  } finally {
    await handle.close();
  }
}

/**
 * Verifies a log file line by line: each line's hash over its `previous` and its entry, and each
 * `previous` equal to the hash of the line before. `startsAfter` is the hash the first line must
 * link to (`genesis`, or the last hash of the rotated file before it); by default the first
 * line's own `previous` is taken.
 */
export async function verifyAuditLog(
  path: string,
  startsAfter?: string,
): Promise<AuditVerification> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new GatewayStateError('Cannot read the audit log', { cause: error });
  }
  const lines = text.split('\n').filter((line) => line !== '');
  let expected = startsAfter;
  for (const [index, raw] of lines.entries()) {
    let line: AuditLine;
    try {
      line = JSON.parse(raw) as AuditLine;
    } catch {
      return { ok: false, lines: lines.length, brokenAt: index + 1, reason: 'not-json' };
    }
    const { previous, hash, ...entry } = line;
    if (typeof previous !== 'string' || typeof hash !== 'string') {
      return { ok: false, lines: lines.length, brokenAt: index + 1, reason: 'hash-mismatch' };
    }
    if (expected !== undefined && previous !== expected) {
      return { ok: false, lines: lines.length, brokenAt: index + 1, reason: 'chain-broken' };
    }
    if (hashLine(previous, entry) !== hash) {
      return { ok: false, lines: lines.length, brokenAt: index + 1, reason: 'hash-mismatch' };
    }
    expected = hash;
  }
  return { ok: true, lines: lines.length };
}
