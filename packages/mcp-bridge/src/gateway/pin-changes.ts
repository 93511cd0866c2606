import { GatewayConfigError } from './errors.js';
import { escapeInvisible, type GatewayPinStore, type PinKind } from './pin-store.js';

/** One field of a hidden definition that differs from its pin, as `pin --show` prints it. */
export interface PinFieldChange {
  /** The definition's field (`description`, `inputSchema`, ...). */
  readonly field: string;
  /** The pinned value as JSON (invisible characters shown as `\u{…}`), or `(none)`. */
  readonly before: string;
  /** The pending value as JSON (invisible characters shown as `\u{…}`), or `(none)`. */
  readonly after: string;
}

/** One hidden definition with what changed: what `pin --show` prints and the console shows. */
export interface PinChange {
  /** `SERVER__TOOL@sha256:<hex>`: the token that accepts exactly this definition. */
  readonly token: string;
  /** The server's name in the config. */
  readonly server: string;
  /** The tool's (prompt's, resource template's) name on the server. */
  readonly tool: string;
  /** A tool, a prompt or a resource template. */
  readonly kind: PinKind;
  /** The digest of the pending definition (the token's). */
  readonly digest: string;
  /** Why it is hidden. */
  readonly reasons: readonly string[];
  /** The fields that differ from the pin (every field for a new definition). */
  readonly changes: readonly PinFieldChange[];
  /** Fields holding invisible Unicode. */
  readonly flagged: readonly string[];
}

/** The namespace of each configured server (`server name -> namespace`). */
export type NamespaceOf = ReadonlyMap<string, string>;

/** The hidden definitions of `pins` with their field-by-field changes, in `pending()` order. */
export function pinChanges(pins: GatewayPinStore, namespaceOf: NamespaceOf): PinChange[] {
  return pins.pending().map(({ server, tool, kind, pin, previous }) => {
    const changes: PinFieldChange[] = [];
    for (const field of new Set([
      ...Object.keys(previous?.definition ?? {}),
      ...Object.keys(pin.definition),
    ])) {
      const before = JSON.stringify(previous?.definition[field]);
      const after = JSON.stringify(pin.definition[field]);
      if (before === after) continue;
      changes.push({
        field,
        before: escapeInvisible(before ?? '(none)'),
        after: escapeInvisible(after ?? '(none)'),
      });
    }
    return {
      token: `${namespaceOf.get(server) ?? server}__${tool}@${pin.sha256}`,
      server,
      tool,
      kind: kind ?? 'tool',
      digest: pin.sha256,
      reasons: [...pin.reasons],
      changes,
      flagged: [...pin.flagged],
    };
  });
}

/** A pin digest as `pin --show` prints it. */
const PIN_DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * Splits `SERVER__TOOL@sha256:<hex>` (the token `pin --show` prints); undefined when it is not
 * one (a bare name is not: it would accept whatever is pending, not what was reviewed).
 */
export function splitPinToken(
  token: string,
): { readonly name: string; readonly digest: string } | undefined {
  const at = token.lastIndexOf('@');
  const digest = at === -1 ? '' : token.slice(at + 1);
  if (at <= 0 || !PIN_DIGEST.test(digest)) return undefined;
  return { name: token.slice(0, at), digest };
}

/**
 * Accepts exactly the definition `name`/`digest` names (as `pin --accept` and the console do):
 * throws `PinChangedError` when another definition is pending under that name now, and a
 * {@link GatewayConfigError} when nothing is. Does not save.
 */
export async function acceptPinToken(
  pins: GatewayPinStore,
  namespaceOf: NamespaceOf,
  name: string,
  digest: string,
): Promise<{ readonly server: string; readonly tool: string }> {
  const split = name.indexOf('__');
  const namespace = split === -1 ? '' : name.slice(0, split);
  const server = [...namespaceOf].find(([, value]) => value === namespace)?.[0];
  // The token names a tool, a prompt or a resource template hidden under that name: the store
  // accepts the one pending with the token's digest, in one lookup (another digest pending:
  // PinChangedError; nothing pending: false).
  const tool = name.slice(split + 2);
  if (server === undefined || !(await pins.accept(server, tool, digest))) {
    throw new GatewayConfigError(
      `Nothing is hidden under ${JSON.stringify(name)} (see pin --show)`,
    );
  }
  return { server, tool };
}
