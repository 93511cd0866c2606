/** What every {@link ToolsError} may carry besides its message. */
export interface ToolsErrorOptions {
  /** Overrides the class's default code; must be UPPER_SNAKE and unique across toolfence. */
  readonly code?: string;
  /** Structured, log-safe facts about the failure (never secrets, arguments or file contents). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** The underlying error, kept for debugging; never copied into the message. */
  readonly cause?: unknown;
}

/**
 * The constructor of {@link ToolsError} or of any subclass, whatever its parameters: what
 * `isInstance` is called on, so it narrows to that class.
 */
export type ToolsErrorClass = abstract new (...args: never[]) => ToolsError;

/**
 * Base class of every error `@toolfence/tools` throws.
 *
 * Each class in the hierarchy declares a static `code` (stable, UPPER_SNAKE) and a static
 * `brand` (a `Symbol.for` key). Instances carry the brand of their class and of every base
 * class, so `isInstance` works across duplicated bundles where `instanceof` does not.
 */
export class ToolsError extends Error {
  /** Cross-bundle brand of this class. */
  static readonly brand: symbol = Symbol.for('@toolfence/tools/ToolsError');
  /** Default code of this class. */
  static readonly code: string = 'TOOLS_ERROR';

  /** Stable, documented error code. */
  readonly code: string;
  /** Structured, log-safe details. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  /** Creates the error with a log-safe `message`; `options` sets the code, details and cause. */
  constructor(message: string, options: ToolsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const errorClass = new.target as typeof ToolsError;
    this.name = errorClass.name;
    this.code = options.code ?? errorClass.code;
    this.details =
      options.details === undefined ? undefined : Object.freeze({ ...options.details });
    for (
      let current: unknown = errorClass;
      typeof current === 'function' && current !== Error;
      current = Object.getPrototypeOf(current)
    ) {
      if (Object.hasOwn(current, 'brand')) {
        Object.defineProperty(this, (current as typeof ToolsError).brand, { value: true });
      }
    }
  }

  /** True for an instance of this class (or a subclass), even from another copy of the package. */
  static isInstance<T extends ToolsErrorClass>(
    this: T & { readonly brand: symbol },
    value: unknown,
  ): value is InstanceType<T> {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as Record<symbol, unknown>)[this.brand] === true
    );
  }
}
