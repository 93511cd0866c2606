/** HTML built by {@link html}: its text is already escaped (or is markup this package wrote). */
export class SafeHtml {
  /** The markup. */
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/** `text` safe in HTML text and in a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ESCAPES[char] as string);
}

/** A value placed in a template: markup is kept, arrays are joined, anything else is escaped. */
type Value = SafeHtml | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/**
 * A tagged template that escapes every interpolated value (autoescape): only {@link SafeHtml}
 * (another `html` template) is inserted as markup. Nothing remote ever reaches a page unescaped.
 */
export function html(strings: TemplateStringsArray, ...values: readonly Value[]): SafeHtml {
  let out = strings[0] as string;
  for (let index = 0; index < values.length; index += 1) {
    out += render(values[index] as Value) + (strings[index + 1] as string);
  }
  return new SafeHtml(out);
}
