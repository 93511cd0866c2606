import {
  compareRisk,
  defineContract,
  type RiskLevel,
  type ToolContract,
} from '@toolfence/tool-contract';
import type { Dispatcher } from 'undici';
import { checkUrl } from '../net/check-url.js';
import { createGuardedDispatcher, guardedDispatcherFacts } from '../net/guarded-dispatcher.js';
import { guardedFetch } from '../net/guarded-fetch.js';
import { NetworkLimitError } from '../net/network-limit-error.js';
import { NetworkPolicyError } from '../net/network-policy-error.js';
import { NetworkResolutionError } from '../net/network-resolution-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { errorResult, jsonResult } from '../registry/tool.js';
import { HttpToolOptionsError } from './http-tool-options-error.js';

const HTTP_TOOL_METHODS_VALUES = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
] as const;

/** HTTP methods `HttpTool` knows. */
export const HTTP_TOOL_METHODS: typeof HTTP_TOOL_METHODS_VALUES =
  Object.freeze(HTTP_TOOL_METHODS_VALUES);

/** One of {@link HTTP_TOOL_METHODS}. */
export type HttpToolMethod = (typeof HTTP_TOOL_METHODS)[number];

/**
 * The risk of each method, as `HttpTool`'s per-operation contracts declare it: `GET`, `HEAD` and
 * `OPTIONS` read (and so `HttpTool` refuses a body on them); `POST`, `PUT` and `PATCH` send a body to a remote host, so they are
 * `external-publication` (the body leaves the operator's domain, whatever the remote API does
 * with it: a flow guard treats them as sinks); `DELETE` is destructive. Content is
 * `prompt-injection-prone` for every method (it comes from the web).
 */
export const HTTP_TOOL_METHOD_RISKS: Readonly<Record<HttpToolMethod, RiskLevel>> = Object.freeze({
  GET: 'read-only',
  HEAD: 'read-only',
  OPTIONS: 'read-only',
  POST: 'external-publication',
  PUT: 'external-publication',
  PATCH: 'external-publication',
  DELETE: 'destructive',
});

/** The method of a call exactly as `HttpTool.invoke` reads it: upper-cased, `GET` when absent. */
function methodOf(args: JsonObject): string {
  const raw = args.method ?? 'GET';
  return typeof raw === 'string' ? raw.toUpperCase() : '';
}

/** Options of {@link HttpTool}. */
export interface HttpToolOptions {
  /**
   * Host names allowed (lowercased, trailing dot stripped, IDNA to ASCII), each exact or a
   * wildcard `*.example.com`: any host that ends in `.example.com` on a label boundary, at any
   * depth (`api.example.com`, `a.b.example.com`), not `example.com` itself. `*` is allowed only
   * as that whole leading label, followed by at least two labels. Required, non-empty.
   */
  readonly allowedHosts: readonly string[];
  /** Allowed methods. Default `['GET']`. */
  readonly allowedMethods?: readonly HttpToolMethod[];
  /** HTTPS only. Default `true`; `false` still allows plain http only to approved loopback hosts. */
  readonly requireHttps?: boolean;
  /** Follow redirects (each hop re-checked against the allowlist and the network guard). Default `false`. */
  readonly followRedirects?: boolean;
  /** Most redirects followed. Default 5. */
  readonly maxRedirects?: number;
  /**
   * Upper bound (and default) of a call's time limit, covering the whole exchange, in
   * milliseconds. Default 20,000. The model gives its own limit as `timeoutSeconds` (at most this).
   */
  readonly maxTimeoutMs?: number;
  /** Most response body bytes returned. Default 2,000,000. */
  readonly maxResponseBytes?: number;
  /** `truncate` (default): return the first `maxResponseBytes` bytes and `truncated: true`; `error`: refuse the response. */
  readonly oversizedResponse?: 'truncate' | 'error';
  /** Most request body bytes. Default 1,000,000. */
  readonly maxRequestBytes?: number;
  /** Request headers the model may set (case-insensitive). Default `['accept', 'content-type', 'user-agent']`. */
  readonly allowedHeaders?: readonly string[];
  /** Ports allowed for https. Default `[443]`. */
  readonly allowedPorts?: readonly number[] | 'any';
  /** A dispatcher from `createGuardedDispatcher`. Default: the tool's own guarded dispatcher (public addresses only). */
  readonly dispatcher?: Dispatcher;
  /** Tool name in a registry. Default `http`. */
  readonly name?: string;
}

const optionError = (message: string, option: string): Error =>
  new HttpToolOptionsError(message, { details: { option } });

const OPTION_KEYS: readonly string[] = Object.freeze([
  'allowedHosts',
  'allowedMethods',
  'requireHttps',
  'followRedirects',
  'maxRedirects',
  'maxTimeoutMs',
  'maxResponseBytes',
  'oversizedResponse',
  'maxRequestBytes',
  'allowedHeaders',
  'allowedPorts',
  'dispatcher',
  'name',
]);

const TEXT_TYPES =
  /^(?:text\/|application\/(?:[a-z0-9.+-]*\+)?(?:json|xml|javascript|x-www-form-urlencoded))/i;

function positive(value: unknown, name: string, fallback: number, integer = true): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value <= 0 ||
    (integer && !Number.isSafeInteger(value))
  ) {
    throw new HttpToolOptionsError(
      `${name} must be a positive ${integer ? 'integer' : 'number'}.`,
      {
        details: { option: name },
      },
    );
  }
  return value;
}

function canonicalHost(host: unknown): string {
  if (typeof host !== 'string' || host === '' || /[/?#@:\\\s]/.test(host)) {
    throw new HttpToolOptionsError('allowedHosts must hold bare host names.', {
      details: { option: 'allowedHosts' },
    });
  }
  try {
    return new URL(`https://${host.replace(/\.$/, '')}/`).hostname;
  } catch (error) {
    throw new HttpToolOptionsError('allowedHosts holds an invalid host name.', {
      details: { option: 'allowedHosts' },
      cause: error,
    });
  }
}

/** An `allowedHosts` entry: an exact host, or the suffix a `*.` wildcard stands for. */
interface HostPattern {
  readonly host: string;
  readonly wildcard: boolean;
}

function hostPattern(entry: unknown): HostPattern {
  if (typeof entry === 'string' && entry.startsWith('*.')) {
    const rest = entry.slice(2);
    if (rest.includes('*')) {
      throw new HttpToolOptionsError(
        'allowedHosts: a wildcard is only allowed as the whole first label (`*.example.com`).',
        { details: { option: 'allowedHosts' } },
      );
    }
    const suffix = canonicalHost(rest);
    const labels = suffix.split('.');
    if (labels.length < 2 || /^[0-9]+$/.test(labels[labels.length - 1] as string)) {
      throw new HttpToolOptionsError(
        'allowedHosts: a wildcard needs at least two labels of a host name after `*.` (`*.example.com`, not `*.com` or an address).',
        { details: { option: 'allowedHosts' } },
      );
    }
    return { host: suffix, wildcard: true };
  }
  if (typeof entry === 'string' && entry.includes('*')) {
    throw new HttpToolOptionsError(
      'allowedHosts: a wildcard is only allowed as the whole first label (`*.example.com`).',
      { details: { option: 'allowedHosts' } },
    );
  }
  return { host: canonicalHost(entry), wildcard: false };
}

function refuse(message: string, code: string): never {
  throw Object.assign(new Error(message), { httpToolCode: code });
}

/**
 * Makes HTTP requests to an exact host allowlist, through the network guard: every connection is
 * resolved, every answer checked against the IANA special-purpose registries and the checked
 * address pinned, so DNS rebinding and private addresses are refused (unlike a host check
 * alone). Each method has its own contract ({@link HTTP_TOOL_METHOD_RISKS}: GET, HEAD and
 * OPTIONS read, DELETE is destructive, the others external publications), so a registry judges every
 * call by its method; rule policies see the method as the operation.
 */
export class HttpTool implements Tool {
  /** Name, description, input schema and risk of the tool as the registry and models see it. */
  readonly spec: ToolSpec;
  readonly #hosts: ReadonlySet<string>;
  readonly #suffixes: readonly string[];
  readonly #methods: ReadonlySet<string>;
  readonly #headers: ReadonlySet<string>;
  readonly #requireHttps: boolean;
  readonly #followRedirects: boolean;
  readonly #maxRedirects: number;
  readonly #maxTimeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #maxRequestBytes: number;
  readonly #oversized: 'truncate' | 'error';
  readonly #allowedPorts: readonly number[] | 'any';
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;

  /**
   * Checks the options and, without `dispatcher`, creates a guarded one the tool owns. Throws
   * {@link HttpToolOptionsError} for an invalid option.
   */
  constructor(options: HttpToolOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new HttpToolOptionsError('HttpTool needs an options object.');
    }
    checkOptionKeys(options, OPTION_KEYS, 'HttpTool', optionError, {
      maxTimeoutSeconds: 'maxTimeoutMs',
    });
    const {
      allowedHosts,
      allowedMethods = ['GET'],
      requireHttps = true,
      followRedirects = false,
      allowedHeaders = ['accept', 'content-type', 'user-agent'],
      allowedPorts = [443],
      oversizedResponse = 'truncate',
      name = 'http',
    } = options;
    if (!Array.isArray(allowedHosts) || allowedHosts.length === 0) {
      throw new HttpToolOptionsError('allowedHosts must be a non-empty array.', {
        details: { option: 'allowedHosts' },
      });
    }
    if (
      !Array.isArray(allowedMethods) ||
      allowedMethods.length === 0 ||
      allowedMethods.some((method) => !(HTTP_TOOL_METHODS as readonly unknown[]).includes(method))
    ) {
      throw new HttpToolOptionsError(
        `allowedMethods must hold some of ${HTTP_TOOL_METHODS.join(', ')}.`,
        {
          details: { option: 'allowedMethods' },
        },
      );
    }
    if (typeof requireHttps !== 'boolean')
      throw new HttpToolOptionsError('requireHttps must be a boolean.');
    if (typeof followRedirects !== 'boolean')
      throw new HttpToolOptionsError('followRedirects must be a boolean.');
    if (oversizedResponse !== 'truncate' && oversizedResponse !== 'error') {
      throw new HttpToolOptionsError("oversizedResponse must be 'truncate' or 'error'.");
    }
    if (
      !Array.isArray(allowedHeaders) ||
      allowedHeaders.some(
        (header) => typeof header !== 'string' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(header),
      )
    ) {
      throw new HttpToolOptionsError('allowedHeaders must be header names.', {
        details: { option: 'allowedHeaders' },
      });
    }
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) {
      throw new HttpToolOptionsError('name must be 1-64 letters, digits, _ . or -.');
    }
    const patterns = allowedHosts.map(hostPattern);
    this.#hosts = new Set(patterns.filter((item) => !item.wildcard).map((item) => item.host));
    this.#suffixes = Object.freeze(
      patterns.filter((item) => item.wildcard).map((item) => `.${item.host}`),
    );
    const shownHosts = patterns.map((item) => (item.wildcard ? `*.${item.host}` : item.host));
    this.#methods = new Set(allowedMethods);
    this.#headers = new Set(allowedHeaders.map((header) => header.toLowerCase()));
    this.#requireHttps = requireHttps;
    this.#followRedirects = followRedirects;
    this.#oversized = oversizedResponse;
    this.#maxRedirects = positive(options.maxRedirects, 'maxRedirects', 5);
    this.#maxTimeoutMs = positive(options.maxTimeoutMs, 'maxTimeoutMs', 20_000);
    this.#maxResponseBytes = positive(options.maxResponseBytes, 'maxResponseBytes', 2_000_000);
    this.#maxRequestBytes = positive(options.maxRequestBytes, 'maxRequestBytes', 1_000_000);
    try {
      checkUrl('https://example.com/', { allowedPorts });
    } catch (error) {
      throw new HttpToolOptionsError("allowedPorts must be 'any' or an array of ports.", {
        cause: error,
      });
    }
    this.#allowedPorts = allowedPorts;
    if (options.dispatcher === undefined) {
      this.#dispatcher = createGuardedDispatcher();
      this.#ownsDispatcher = true;
    } else {
      if (guardedDispatcherFacts(options.dispatcher) === undefined) {
        throw new HttpToolOptionsError('dispatcher must come from createGuardedDispatcher.', {
          details: { option: 'dispatcher' },
        });
      }
      this.#dispatcher = options.dispatcher;
      this.#ownsDispatcher = false;
    }
    // One contract per allowed method: each call is judged by its method (HTTP_TOOL_METHOD_RISKS),
    // and the static contract tools/list publishes is the riskiest allowed method's.
    const operations: Record<string, ToolContract> = {};
    let riskiest: ToolContract | undefined;
    for (const method of this.#methods) {
      const risk = HTTP_TOOL_METHOD_RISKS[method as HttpToolMethod];
      const contract = defineContract({
        risk,
        contentTrust: 'prompt-injection-prone',
        idempotent: risk === 'read-only' || method === 'PUT',
      });
      operations[method] = contract;
      if (riskiest === undefined || compareRisk(risk, riskiest.risk) > 0) riskiest = contract;
    }
    this.spec = Object.freeze({
      name,
      description: `Makes an HTTP request to an allowed host (${[...new Set(shownHosts)].join(', ')}). Methods: ${[...this.#methods].join(', ')}.`,
      inputSchema: {
        type: 'object',
        properties: {
          url: { type: 'string', description: 'Absolute https URL on an allowed host.' },
          method: { type: 'string', enum: [...this.#methods], default: 'GET' },
          headers: {
            type: 'object',
            propertyNames: { enum: [...this.#headers] },
            additionalProperties: { type: 'string' },
          },
          body: { type: 'string', description: 'Request body (not for GET, HEAD or OPTIONS).' },
          timeoutSeconds: {
            type: 'number',
            exclusiveMinimum: 0,
            maximum: this.#maxTimeoutMs / 1000,
          },
        },
        required: ['url'],
        additionalProperties: false,
      },
      contract: riskiest as ToolContract,
      // An absent method is GET; a method the tool does not allow is refused before it runs.
      operationContracts: Object.freeze({
        select: (args: JsonObject) => {
          const method = methodOf(args);
          return Object.hasOwn(operations, method) ? method : undefined;
        },
        operations: Object.freeze(operations),
      }),
      operationArgument: 'method',
      annotations: {
        readOnlyHint: [...this.#methods].every(
          (method) => HTTP_TOOL_METHOD_RISKS[method as HttpToolMethod] === 'read-only',
        ),
        openWorldHint: true,
      },
    });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  #check(url: URL): void {
    const host = url.hostname;
    if (this.#hosts.has(host.replace(/^\[|\]$/g, '')) || this.#hosts.has(host)) return;
    // A wildcard matches on a label boundary and never an IPv6 literal (`[...]`).
    if (
      !host.startsWith('[') &&
      this.#suffixes.some((suffix) => host.length > suffix.length && host.endsWith(suffix))
    ) {
      return;
    }
    refuse('The host is not allowed.', 'HTTP_TOOL_HOST_NOT_ALLOWED');
  }

  async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    const method = methodOf(args);
    const metadata = { method: method || null };
    try {
      if (!this.#methods.has(method))
        refuse('The method is not allowed.', 'HTTP_TOOL_METHOD_NOT_ALLOWED');
      if (typeof args.url !== 'string')
        refuse('url must be a string.', 'HTTP_TOOL_INVALID_ARGUMENTS');
      const facts = guardedDispatcherFacts(this.#dispatcher);
      const policy = {
        allowHttpLoopback: !this.#requireHttps,
        allowedPorts: this.#allowedPorts,
        ...(facts?.allowNonPublic === undefined ? {} : { allowNonPublic: facts.allowNonPublic }),
      };
      const url = checkUrl(args.url, policy);
      this.#check(url);
      const headers: Record<string, string> = {};
      if (args.headers !== undefined) {
        if (
          typeof args.headers !== 'object' ||
          args.headers === null ||
          Array.isArray(args.headers)
        ) {
          refuse('headers must be an object of strings.', 'HTTP_TOOL_INVALID_ARGUMENTS');
        }
        for (const [key, value] of Object.entries(args.headers)) {
          if (!this.#headers.has(key.toLowerCase()))
            refuse('A header is not allowed.', 'HTTP_TOOL_HEADER_NOT_ALLOWED');
          // biome-ignore lint/suspicious/noControlCharactersInRegex: header injection guard
          if (typeof value !== 'string' || /[\r\n\u0000]/.test(value) || value.length > 8192) {
            refuse('A header value is invalid.', 'HTTP_TOOL_INVALID_ARGUMENTS');
          }
          headers[key.toLowerCase()] = value;
        }
      }
      let body: string | undefined;
      if (args.body !== undefined) {
        if (typeof args.body !== 'string')
          refuse('body must be a string.', 'HTTP_TOOL_INVALID_ARGUMENTS');
        // A method judged read-only (HTTP_TOOL_METHOD_RISKS) carries no body: its contract
        // lets it through a read-only access scope and past the flow guard, which a body
        // sent to a remote host must not pass.
        if (HTTP_TOOL_METHOD_RISKS[method as HttpToolMethod] === 'read-only')
          refuse(
            'GET, HEAD and OPTIONS are read-only and take no body; send data with POST, PUT or PATCH.',
            'HTTP_TOOL_INVALID_ARGUMENTS',
          );
        if (Buffer.byteLength(args.body, 'utf8') > this.#maxRequestBytes) {
          refuse('The request body is larger than its limit.', 'HTTP_TOOL_REQUEST_TOO_LARGE');
        }
        body = args.body;
      }
      const timeoutSeconds = args.timeoutSeconds ?? this.#maxTimeoutMs / 1000;
      if (
        typeof timeoutSeconds !== 'number' ||
        !(timeoutSeconds > 0) ||
        timeoutSeconds > this.#maxTimeoutMs / 1000
      ) {
        refuse('timeoutSeconds is out of range.', 'HTTP_TOOL_INVALID_ARGUMENTS');
      }
      const response = await guardedFetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        redirect: this.#followRedirects ? 'follow' : 'manual',
        ...(context?.signal === undefined ? {} : { signal: context.signal }),
        guard: {
          dispatcher: this.#dispatcher,
          allowHttpLoopback: !this.#requireHttps,
          allowedPorts: this.#allowedPorts,
          maxRedirects: this.#maxRedirects,
          timeoutMs: Math.min(this.#maxTimeoutMs, Math.ceil(timeoutSeconds * 1000)),
          maxResponseBytes:
            this.#oversized === 'error' ? this.#maxResponseBytes : Number.MAX_SAFE_INTEGER,
          allowRedirect: (target) => {
            try {
              this.#check(target);
              return true;
            } catch {
              return false;
            }
          },
        },
      });
      const chunks: Uint8Array[] = [];
      let total = 0;
      let truncated = false;
      if (response.body !== null) {
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const room = this.#maxResponseBytes - total;
          if (value.byteLength > room) {
            chunks.push(value.subarray(0, room));
            total += room;
            truncated = true;
            await reader.cancel().catch(() => undefined);
            break;
          }
          chunks.push(value);
          total += value.byteLength;
        }
      }
      const bytes = Buffer.concat(chunks);
      const contentType = response.headers.get('content-type') ?? '';
      const text = contentType === '' || TEXT_TYPES.test(contentType);
      const selected: Record<string, string> = {};
      for (const header of [
        'content-type',
        'content-length',
        'location',
        'etag',
        'last-modified',
      ]) {
        const value = response.headers.get(header);
        if (value !== null) selected[header] = value;
      }
      return jsonResult(
        {
          url: response.url,
          status: response.status,
          headers: selected,
          encoding: text ? 'utf8' : 'base64',
          body: text ? bytes.toString('utf8') : bytes.toString('base64'),
          bytes: bytes.length,
          truncated,
        },
        { metadata: { ...metadata, status: response.status } },
      );
    } catch (error) {
      const code = (error as { httpToolCode?: unknown } | null)?.httpToolCode;
      if (typeof code === 'string')
        return errorResult((error as Error).message, { metadata: { ...metadata, code } });
      if (NetworkResolutionError.isInstance(error)) {
        return errorResult(error.message, {
          metadata: { ...metadata, code: 'HTTP_TOOL_DNS_FAILED', hostname: error.hostname },
        });
      }
      if (NetworkPolicyError.isInstance(error)) {
        return errorResult(`The request was blocked: ${error.message}`, {
          metadata: { ...metadata, code: 'HTTP_TOOL_BLOCKED', reason: error.reason },
        });
      }
      if (NetworkLimitError.isInstance(error)) {
        const limitCodes: Record<string, string> = {
          timeout: 'HTTP_TOOL_TIMEOUT',
          redirects: 'HTTP_TOOL_TOO_MANY_REDIRECTS',
          'response-bytes': 'HTTP_TOOL_RESPONSE_TOO_LARGE',
        };
        return errorResult(error.message, {
          metadata: { ...metadata, code: limitCodes[error.limit] ?? 'HTTP_TOOL_REQUEST_FAILED' },
        });
      }
      return errorResult('The request failed (connection error).', {
        metadata: { ...metadata, code: 'HTTP_TOOL_REQUEST_FAILED' },
      });
    }
  }
}
