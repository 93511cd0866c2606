import { ContractDefinitionError } from './contract-definition-error.js';
import { type ContractInput, defineContract } from './define-contract.js';
import type { ContentTrustLevel, RiskLevel, ToolContract } from './taxonomy.js';

/**
 * The annotation object a contract is published as. The snake_case keys are those of the original
 * Python package, so a gateway written against it reads our tools unchanged; the four camelCase
 * hints are the standard MCP tool annotations, derived from the contract (never set by hand).
 */
export interface ContractAnnotations {
  /** The contract's `risk`. */
  readonly risk_level: RiskLevel;
  /** The contract's `contentTrust`. */
  readonly content_trust_risk: ContentTrustLevel;
  /** The contract's `version` (semver). */
  readonly version: string;
  /** Present only when the contract has `deprecatedSince`. */
  readonly deprecated_since?: string;
  /** Present only when the contract has `sunset`. */
  readonly sunset?: string;
  /** Present only when the contract has `replacement`. */
  readonly replacement?: string;
  /** Present only when the contract has at least one alias. */
  readonly aliases?: readonly string[];
  /** `risk === 'read-only'`. */
  readonly readOnlyHint: boolean;
  /** `risk === 'destructive'`. */
  readonly destructiveHint: boolean;
  /** `idempotent`. */
  readonly idempotentHint: boolean;
  /** See {@link openWorldFor}. */
  readonly openWorldHint: boolean;
}

/** What {@link toolAnnotations} returns for a function without a contract. */
export type NoAnnotations = Readonly<Record<string, never>>;

/**
 * The `_meta` key under which {@link withContractAnnotations} repeats the contract's annotation
 * object. Needed because the TypeScript SDK's client strips unknown keys from `annotations` when
 * it parses `tools/list`, while it keeps `_meta` intact. The prefix follows MCP's `_meta` naming
 * rule (reverse DNS of github.com/toolfence, then a slash).
 */
export const CONTRACT_META_KEY = 'io.github.toolfence/contract';

// The annotation keys, under the original Python package's (mcp-tool-contract) constant names.

/** Annotation key of the risk level (`risk_level`). */
export const ANNOTATION_RISK_LEVEL = 'risk_level';
/** Annotation key of the content-trust level (`content_trust_risk`). */
export const ANNOTATION_CONTENT_TRUST_RISK = 'content_trust_risk';
/** Annotation key of the contract version (`version`). */
export const ANNOTATION_VERSION = 'version';
/** Annotation key of the deprecation date (`deprecated_since`). */
export const ANNOTATION_DEPRECATED_SINCE = 'deprecated_since';
/** Annotation key of the alias list (`aliases`). */
export const ANNOTATION_ALIASES = 'aliases';
/** Annotation key of the sunset date (`sunset`, a toolfence addition in the same style). */
export const ANNOTATION_SUNSET = 'sunset';
/** Annotation key of the replacement tool (`replacement`, a toolfence addition in the same style). */
export const ANNOTATION_REPLACEMENT = 'replacement';

/** Where a contract is attached to a handler: a registered symbol, so every bundle sees it. */
const CONTRACT_SYMBOL: unique symbol = Symbol.for('@toolfence/tool-contract/contract') as never;

/**
 * The `openWorldHint` rule: a tool reaches an open world of external entities when its effect
 * leaves the operator's domain (`external-publication`, `paid-operation`) or when what it returns
 * comes from parties the operator does not control (`untrusted`, `prompt-injection-prone`).
 * A `trusted` or `sensitive` tool with a local effect is closed-world.
 */
export function openWorldFor(contract: Pick<ToolContract, 'risk' | 'contentTrust'>): boolean {
  return (
    contract.risk === 'external-publication' ||
    contract.risk === 'paid-operation' ||
    contract.contentTrust === 'untrusted' ||
    contract.contentTrust === 'prompt-injection-prone'
  );
}

function asContract(value: unknown): ToolContract {
  return defineContract(value as ContractInput);
}

/**
 * Attaches `contract` to `handler` and returns the same function (like the original package's
 * decorator). The contract is validated first, and is stored under a registered symbol as a
 * read-only, non-enumerable property, so {@link getContract} finds it from any copy of this
 * package.
 *
 * @throws {ContractDefinitionError} `CONTRACT_INVALID_HANDLER` when `handler` is not a function
 *   or cannot take a property (frozen), `CONTRACT_ALREADY_ATTACHED` when it already carries a
 *   different contract, or a validation code when `contract` is invalid.
 * @typeParam F - The handler's own function type, returned unchanged.
 */
export function withContract<F extends (...args: never[]) => unknown>(
  contract: ToolContract,
  handler: F,
): F {
  const checked = asContract(contract);
  if (typeof handler !== 'function') {
    throw new ContractDefinitionError('withContract needs a function as its handler.', {
      code: 'CONTRACT_INVALID_HANDLER',
    });
  }
  if (Object.hasOwn(handler, CONTRACT_SYMBOL)) {
    if ((handler as unknown as Record<symbol, unknown>)[CONTRACT_SYMBOL] === checked)
      return handler;
    throw new ContractDefinitionError('This handler already carries a different contract.', {
      code: 'CONTRACT_ALREADY_ATTACHED',
    });
  }
  if (!Object.isExtensible(handler)) {
    throw new ContractDefinitionError(
      'withContract cannot attach a contract to a frozen or sealed function.',
      { code: 'CONTRACT_INVALID_HANDLER' },
    );
  }
  Object.defineProperty(handler, CONTRACT_SYMBOL, {
    value: checked,
    enumerable: false,
    writable: false,
    configurable: false,
  });
  return handler;
}

/**
 * The contract attached to `handler` by {@link withContract}, or `undefined` when there is none
 * (or `handler` is not a function).
 *
 * @throws {ContractDefinitionError} when the attached value is not a valid contract (for example
 *   one attached by hand).
 */
export function getContract(handler: unknown): ToolContract | undefined {
  if (typeof handler !== 'function' || !Object.hasOwn(handler, CONTRACT_SYMBOL)) return undefined;
  return asContract((handler as unknown as Record<symbol, unknown>)[CONTRACT_SYMBOL]);
}

function annotationsOf(contract: ToolContract): ContractAnnotations {
  return Object.freeze({
    risk_level: contract.risk,
    content_trust_risk: contract.contentTrust,
    version: contract.version,
    ...(contract.deprecatedSince === undefined
      ? {}
      : { deprecated_since: contract.deprecatedSince }),
    ...(contract.sunset === undefined ? {} : { sunset: contract.sunset }),
    ...(contract.replacement === undefined ? {} : { replacement: contract.replacement }),
    ...(contract.aliases.length === 0 ? {} : { aliases: Object.freeze([...contract.aliases]) }),
    readOnlyHint: contract.risk === 'read-only',
    destructiveHint: contract.risk === 'destructive',
    idempotentHint: contract.idempotent,
    openWorldHint: openWorldFor(contract),
  });
}

/**
 * The annotation object for a contract, or for a function carrying one (see
 * {@link withContract}). A function without a contract gives `{}`, so adoption can be
 * incremental: undeclared tools publish no facts and gateways fall back to their heuristics.
 *
 * @throws {ContractDefinitionError} when given an invalid contract, or a value that is neither a
 *   function nor a contract (`CONTRACT_INVALID_INPUT`).
 */
export function toolAnnotations(contract: ToolContract): ContractAnnotations;
export function toolAnnotations(
  handler: (...args: never[]) => unknown,
): ContractAnnotations | NoAnnotations;
export function toolAnnotations(
  source: ToolContract | ((...args: never[]) => unknown),
): ContractAnnotations | NoAnnotations;
export function toolAnnotations(
  source: ToolContract | ((...args: never[]) => unknown),
): ContractAnnotations | NoAnnotations {
  if (typeof source === 'function') {
    const contract = getContract(source);
    return contract === undefined ? Object.freeze({}) : annotationsOf(contract);
  }
  return annotationsOf(asContract(source));
}

/** The part of `McpServer.registerTool`'s config this package writes. */
export interface AnnotatedToolConfig {
  /** The contract's annotation object, merged over the config's own annotations. */
  readonly annotations: { [key: string]: unknown };
  /** The config's `_meta`, plus the annotation object under {@link CONTRACT_META_KEY}. */
  readonly _meta: { [key: string]: unknown };
}

/**
 * Merges a contract's annotations into the config object passed to `McpServer.registerTool` of
 * `@modelcontextprotocol/sdk` (this package never imports the SDK):
 *
 * ```ts
 * server.registerTool('delete_file', withContractAnnotations(contract, { inputSchema }), handler);
 * ```
 *
 * The contract's keys go into `annotations` (where the original package's readers look) and,
 * as a copy, into `_meta[CONTRACT_META_KEY]` (which survives the SDK client's parsing). The
 * config's own `title` and other keys are kept; the contract's keys and the four standard hints
 * win over values the config sets, so the published hints always match the contract. A function
 * without a contract leaves the config's annotations and `_meta` as they were.
 */
export function withContractAnnotations<C extends object>(
  source: ToolContract | ((...args: never[]) => unknown),
  config: C,
): C & AnnotatedToolConfig {
  if (typeof config !== 'object' || config === null) {
    throw new ContractDefinitionError('withContractAnnotations needs a config object.', {
      code: 'CONTRACT_INVALID_INPUT',
    });
  }
  const annotations = toolAnnotations(source);
  const existing = config as { annotations?: unknown; _meta?: unknown };
  const ownAnnotations = isRecord(existing.annotations) ? existing.annotations : {};
  const ownMeta = isRecord(existing._meta) ? existing._meta : {};
  const declared = Object.keys(annotations).length > 0;
  const copy = (): { [key: string]: unknown } => {
    const plain: { [key: string]: unknown } = { ...annotations };
    if (Array.isArray(plain.aliases)) plain.aliases = [...plain.aliases];
    return plain;
  };
  return {
    ...config,
    annotations: { ...ownAnnotations, ...copy() },
    _meta: declared ? { ...ownMeta, [CONTRACT_META_KEY]: copy() } : { ...ownMeta },
  };
}

function isRecord(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
