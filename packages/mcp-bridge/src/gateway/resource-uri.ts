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

/**
 * One step of a compiled URI template: a literal run, or one or more characters of a class (the
 * value of an expression), or a comma-separated list of such runs (an exploded value).
 */
type TemplateStep =
  | { readonly literal: string }
  | { readonly plus: (char: number) => boolean; readonly list: boolean };

/** A URI template compiled for {@link uriTemplateMatches}. */
export interface CompiledUriTemplate {
  /** The template as the server wrote it. */
  readonly template: string;
  /**
   * Its expressions (`{…}`), each counted once per variable it names (`{?a,b}` counts two): the
   * steps a match takes grow with this count.
   */
  readonly expressions: number;
  readonly steps: readonly TemplateStep[];
}

const SLASH = 0x2f;
const COMMA = 0x2c;
const AMPERSAND = 0x26;

/** `[^/,]`: a simple or path value. */
const valueChar = (char: number): boolean => char !== SLASH && char !== COMMA;
/** `.` without the `s` flag: anything but a line terminator. */
const anyChar = (char: number): boolean =>
  char !== 0x0a && char !== 0x0d && char !== 0x2028 && char !== 0x2029;
/** `[^&]`: a query value. */
const queryChar = (char: number): boolean => char !== AMPERSAND;
/** `[^/]`: an operator the SDK does not know (none reaches here). */
const segmentChar = (char: number): boolean => char !== SLASH;

const OPERATORS = ['+', '#', '.', '/', '?', '&'] as const;

/**
 * Compiles an RFC 6570 URI template for matching, reading it as the MCP SDK's `UriTemplate`
 * does: literal text, and expressions `{op names}` whose value matches what the SDK's regular
 * expression for that operator matches (`{x}` one or more characters but `/` and `,`, `{x*}` a
 * comma list of them, `{+x}` and `{#x}` one or more of any character, `{.x}` a `.` then a value,
 * `{/x}` a `/` then a value, `{?a,b}` and `{&a}` `?a=…&b=…` with values without `&`). Undefined
 * for a template the SDK refuses too (an unclosed `{`).
 */
export function compileUriTemplate(template: string): CompiledUriTemplate | undefined {
  const steps: TemplateStep[] = [];
  let literal = '';
  let expressions = 0;
  const pushLiteral = (text: string): void => {
    literal += text;
  };
  const flush = (): void => {
    if (literal !== '') steps.push({ literal });
    literal = '';
  };
  const plus = (char: (code: number) => boolean, list = false): void => {
    flush();
    steps.push({ plus: char, list });
  };
  let index = 0;
  while (index < template.length) {
    if (template[index] !== '{') {
      pushLiteral(template[index] as string);
      index++;
      continue;
    }
    const end = template.indexOf('}', index);
    if (end === -1) return undefined;
    const expression = template.slice(index + 1, end);
    index = end + 1;
    const operator = OPERATORS.find((op) => expression.startsWith(op)) ?? '';
    const exploded = expression.includes('*');
    const names = expression
      .slice(operator.length)
      .split(',')
      .map((name) => name.replace('*', '').trim())
      .filter((name) => name.length > 0);
    expressions += Math.max(1, names.length);
    switch (operator) {
      case '?':
      case '&':
        for (const [at, name] of names.entries()) {
          pushLiteral(`${at === 0 ? operator : '&'}${name}=`);
          plus(queryChar);
        }
        break;
      case '':
        plus(valueChar, exploded);
        break;
      case '+':
      case '#':
        plus(anyChar);
        break;
      case '.':
        pushLiteral('.');
        plus(valueChar);
        break;
      case '/':
        pushLiteral('/');
        plus(valueChar, exploded);
        break;
      default:
        plus(segmentChar);
    }
  }
  flush();
  return { template, expressions, steps };
}

/** The positions of `uri` where `literal` starts (Knuth-Morris-Pratt: linear in both). */
function occurrences(uri: string, literal: string): Uint8Array {
  const found = new Uint8Array(uri.length + 1);
  const failure = new Int32Array(literal.length);
  for (let i = 1, k = 0; i < literal.length; i++) {
    while (k > 0 && literal.charCodeAt(i) !== literal.charCodeAt(k)) k = failure[k - 1] as number;
    if (literal.charCodeAt(i) === literal.charCodeAt(k)) k++;
    failure[i] = k;
  }
  for (let i = 0, k = 0; i < uri.length; i++) {
    while (k > 0 && uri.charCodeAt(i) !== literal.charCodeAt(k)) k = failure[k - 1] as number;
    if (uri.charCodeAt(i) === literal.charCodeAt(k)) k++;
    if (k === literal.length) {
      found[i - literal.length + 1] = 1;
      k = failure[k - 1] as number;
    }
  }
  return found;
}

/**
 * Whether `uri` matches the compiled template: the language the MCP SDK's `UriTemplate.match`
 * accepts, decided without backtracking. The set of positions of `uri` reachable after each step
 * is computed in one pass over `uri` per step, so the work is at most the URI's length times the
 * template's steps (plus their literal text), whatever the template: `x://{+a}{+b}{+c}{+d}z`,
 * which the SDK's regular expression takes polynomial time on, is as cheap as `x://{a}`.
 */
export function uriTemplateMatches(compiled: CompiledUriTemplate, uri: string): boolean {
  // Most templates start with their scheme and many end with a literal: cheap refusals first.
  const first = compiled.steps[0];
  if (first !== undefined && 'literal' in first && !uri.startsWith(first.literal)) return false;
  const last = compiled.steps.at(-1);
  if (last !== undefined && 'literal' in last && !uri.endsWith(last.literal)) return false;
  const length = uri.length;
  let reached = new Uint8Array(length + 1);
  reached[0] = 1;
  for (const step of compiled.steps) {
    const next = new Uint8Array(length + 1);
    let any = false;
    if ('literal' in step) {
      const size = step.literal.length;
      const found = occurrences(uri, step.literal);
      for (let at = 0; at + size <= length; at++) {
        if (reached[at] === 1 && found[at] === 1) {
          next[at + size] = 1;
          any = true;
        }
      }
    } else if (!step.list) {
      // One or more characters of the class from any reached position.
      let open = false;
      for (let at = 0; at < length; at++) {
        if (reached[at] === 1) open = true;
        if (open && step.plus(uri.charCodeAt(at))) {
          next[at + 1] = 1;
          any = true;
        } else open = false;
      }
    } else {
      // Runs of the class separated by single commas, ending in the class.
      let inRun = false;
      let afterComma = false;
      for (let at = 0; at < length; at++) {
        const char = uri.charCodeAt(at);
        const start = reached[at] === 1;
        if (char === COMMA) {
          afterComma = inRun;
          inRun = false;
        } else if (step.plus(char)) {
          inRun = inRun || afterComma || start;
          afterComma = false;
        } else {
          inRun = false;
          afterComma = false;
        }
        if (inRun) {
          next[at + 1] = 1;
          any = true;
        }
      }
    }
    if (!any) return false;
    reached = next;
  }
  return reached[length] === 1;
}
