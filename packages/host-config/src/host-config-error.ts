/** What every {@link HostConfigError} may carry besides its message. */
export interface HostConfigErrorOptions {
  /** Overrides the class's default code; must be UPPER_SNAKE and unique across toolfence. */
  readonly code?: string;
  /** Structured, log-safe facts about the failure (never secrets, arguments or file contents). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** The underlying error, kept for debugging; never copied into the message. */
  readonly cause?: unknown;
}

/**
 * The constructor of {@link HostConfigError} or of any subclass, whatever its parameters: what
 * `isInstance` is called on, so it narrows to that class.
 */
export type HostConfigErrorClass = abstract new (...args: never[]) => HostConfigError;

/**
 * Base class of every error `@toolfence/host-config` throws.
 *
 * Each class in the hierarchy declares a static `code` (stable, UPPER_SNAKE) and a static
 * `brand` (a `Symbol.for` key). Instances carry the brand of their class and of every base
 * class, so `isInstance` works across duplicated bundles where `instanceof` does not.
 */
export class HostConfigError extends Error {
  /** Cross-bundle brand of this class. */
  static readonly brand: symbol = Symbol.for('@toolfence/host-config/HostConfigError');
  /** Default code of this class. */
  static readonly code: string = 'HOST_CONFIG_ERROR';

  /** Stable, documented error code. */
  readonly code: string;
  /** Structured, log-safe details. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  /** Creates the error; `message` must be log-safe, the code defaults to the class's static `code`. */
  constructor(message: string, options: HostConfigErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const errorClass = new.target as typeof HostConfigError;
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
        Object.defineProperty(this, (current as typeof HostConfigError).brand, { value: true });
      }
    }
  }

  /** True for an instance of this class (or a subclass), even from another copy of the package. */
  static isInstance<T extends HostConfigErrorClass>(
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
