// The one spelling of a resource URI the gateway judges, audits and sends upstream. Without it a
// rule on `fs__resource:file:///home/u/secret/*` would miss `file:///home/u/./secret/key`,
// `…/%73ecret/key` or `file:////home/u/secret/key`, which a file server reads as the same file.

/** Characters RFC 3986 calls unreserved: an escape of one means the character itself. */
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** Times the steps are applied before a form must be stable (each step can only shorten it). */
const MAX_ROUNDS = 8;

/** An escaped "/", backslash or NUL: a file path holds none (Node's fileURLToPath refuses them). */
const FILE_PATH_ESCAPE = /%(?:2F|5C|00)/i;

/** One round: WHATWG parse, unreserved escapes decoded, other escapes upper-cased, `//` collapsed. */
function round(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  // A hierarchical path (after an authority, or starting with "/"): runs of "/" are one.
  if (url.pathname.startsWith('/') && url.pathname.includes('//')) {
    url.pathname = url.pathname.replace(/\/{2,}/g, '/');
  }
  return url.href.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/**
 * The canonical form of a resource URI, or undefined when it is not a URI the WHATWG URL parser
 * accepts: parsed and serialized by it (scheme and a special scheme's host lower-cased, `.` and
 * `..` segments resolved, also when escaped, `file://localhost/` as `file:///`, tabs and
 * newlines removed, characters outside URIs percent-encoded), escapes of unreserved characters
 * (`%73` → `s`) decoded and the others' hex digits upper-cased, and runs of `/` in a
 * hierarchical path collapsed to one, repeated until nothing changes. The query and fragment are
 * kept. A `file:` URI whose path holds an escaped `/`, backslash or NUL (`%2F`, `%5C`, `%00`) has no
 * canonical form: a file server that decodes its path itself would read `..%2F` as `../`. A
 * canonical form is its own canonical form.
 */
export function canonicalResourceUri(uri: string): string | undefined {
  let current = uri;
  for (let rounds = 0; rounds < MAX_ROUNDS; rounds++) {
    const next = round(current);
    if (next === undefined) return undefined;
    if (next === current) {
      // A file server that decodes the path itself would read `..%2F` as `../`.
      return next.startsWith('file:') && FILE_PATH_ESCAPE.test(new URL(next).pathname)
        ? undefined
        : next;
    }
    current = next;
  }
  return undefined;
}
