import { ToolsError, type ToolsErrorOptions } from '../tools-error.js';

/** Options of {@link NetworkResolutionError}: its facts live in `hostname` and `dnsCode`. */
export type NetworkResolutionErrorOptions = Omit<ToolsErrorOptions, 'code' | 'details'>;

const DNS_CODE = /^[A-Z][A-Z0-9_]{0,31}$/;

/**
 * The DNS lookup of a host name failed (for example `ENOTFOUND`, `EAI_AGAIN`) or gave no address.
 * Not a policy refusal: nothing was judged, the name did not resolve. No byte was sent.
 *
 * Deliberately not a `TypeError`, like {@link NetworkPolicyError}.
 */
export class NetworkResolutionError extends ToolsError {
  static override readonly code: string = 'NET_DNS_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/NetworkResolutionError');

  /** The host name that did not resolve (a canonical DNS name). */
  readonly hostname: string;
  /** The resolver's error code (`ENOTFOUND`, `EAI_AGAIN`, ...); `undefined` for an empty answer. */
  readonly dnsCode: string | undefined;

  /**
   * Creates the error for `hostname`; `dnsCode` is kept only when it looks like a system error
   * code. Both are also in `details`.
   */
  constructor(hostname: string, dnsCode: unknown, options: NetworkResolutionErrorOptions = {}) {
    const code = typeof dnsCode === 'string' && DNS_CODE.test(dnsCode) ? dnsCode : undefined;
    super(
      code === undefined
        ? `The host name ${hostname} did not resolve to any address.`
        : `The host name ${hostname} could not be resolved (${code}).`,
      { ...options, details: { hostname, dnsCode: code } },
    );
    this.hostname = hostname;
    this.dnsCode = code;
  }
}
