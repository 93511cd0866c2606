import { ContractDefinitionError } from './contract-definition-error.js';
import { describeType, isIsoDate, isSemver, isToolName } from './internal/rules.js';
import { findUnknownFields } from './internal/unknown-fields.js';
import {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  isContentTrustLevel,
  isRiskLevel,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';

/** A version literal the compiler can check: `1.0.0`, `2.1.0-beta.1`, `1.0.0+build.5`. */
export type SemverLiteral =
  | `${number}.${number}.${number}`
  | `${number}.${number}.${number}-${string}`
  | `${number}.${number}.${number}+${string}`;

/** A date literal the compiler can check: `2026-01-31` (the calendar is checked at runtime). */
export type IsoDateLiteral = `${number}-${number}-${number}`;

/** What a tool's author passes to {@link defineContract}. */
export interface ContractInput {
  /** How much harm a call can do; required, since only the author knows it. */
  readonly risk: RiskLevel;
  /** How much caution the tool's output demands. Default `'trusted'`. */
  readonly contentTrust?: ContentTrustLevel;
  /** Calling twice with the same arguments has no further effect. Default `false`. */
  readonly idempotent?: boolean;
  /** Semantic version of the tool's contract. Default `'1.0.0'`. */
  readonly version?: SemverLiteral;
  /** Date (`YYYY-MM-DD`) from which the tool is deprecated. */
  readonly deprecatedSince?: IsoDateLiteral;
  /** Date (`YYYY-MM-DD`) after which the tool may be removed; not before `deprecatedSince`. */
  readonly sunset?: IsoDateLiteral;
  /** Name of the tool that replaces this one (an MCP tool name). */
  readonly replacement?: string;
  /** Other names the tool answers to: unique MCP tool names. Default `[]`. */
  readonly aliases?: readonly string[];
}

/** Defaults {@link defineContract} applies to omitted fields. */
export const CONTRACT_DEFAULTS: {
  /** Applied when `contentTrust` is omitted: `'trusted'`. */
  readonly contentTrust: ContentTrustLevel;
  /** Applied when `idempotent` is omitted: `false`. */
  readonly idempotent: boolean;
  /** Applied when `version` is omitted: `'1.0.0'`. */
  readonly version: string;
} = Object.freeze({ contentTrust: 'trusted', idempotent: false, version: '1.0.0' });

const KNOWN_FIELDS: ReadonlySet<string> = new Set([
  'risk',
  'contentTrust',
  'idempotent',
  'version',
  'deprecatedSince',
  'sunset',
  'replacement',
  'aliases',
]);

/** Contracts this copy of the package created (and so already validated). */
const created = new WeakSet<object>();

function fail(
  code: string,
  field: string | undefined,
  message: string,
  ...received: [] | [unknown]
): never {
  throw new ContractDefinitionError(message, {
    code,
    ...(field === undefined ? {} : { field }),
    ...(received.length > 0 ? { details: { receivedType: describeType(received[0]) } } : {}),
  });
}

function readAliases(value: unknown): readonly string[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) {
    fail('CONTRACT_INVALID_ALIAS', 'aliases', 'aliases must be an array of tool names.', value);
  }
  const seen = new Set<string>();
  for (const [index, alias] of value.entries()) {
    if (!isToolName(alias)) {
      fail(
        'CONTRACT_INVALID_ALIAS',
        'aliases',
        `aliases[${index}] is not a valid MCP tool name (1-128 characters of A-Z a-z 0-9 _ - .).`,
        alias,
      );
    }
    if (seen.has(alias)) {
      fail('CONTRACT_DUPLICATE_ALIAS', 'aliases', `aliases[${index}] repeats an earlier alias.`);
    }
    seen.add(alias);
  }
  return Object.freeze([...seen]);
}

/**
 * Validates a tool author's declaration and returns it as a frozen {@link ToolContract} with the
 * defaults filled in. Every field is checked here, at definition time, so a typo fails the
 * author's own build or CI instead of a gateway's judgement:
 *
 * - `risk` must be one of `RISK_LEVELS` (`CONTRACT_UNKNOWN_RISK`), `contentTrust` one of
 *   `CONTENT_TRUST_LEVELS` (`CONTRACT_UNKNOWN_CONTENT_TRUST`), `idempotent` a boolean
 *   (`CONTRACT_INVALID_IDEMPOTENT`), `version` a semantic version (`CONTRACT_INVALID_VERSION`),
 * - `deprecatedSince` and `sunset` real `YYYY-MM-DD` dates (`CONTRACT_INVALID_DATE`), with the
 *   sunset not before the deprecation (`CONTRACT_INVALID_LIFECYCLE`),
 * - `replacement` and every alias an MCP tool name (`CONTRACT_INVALID_REPLACEMENT`,
 *   `CONTRACT_INVALID_ALIAS`), aliases unique (`CONTRACT_DUPLICATE_ALIAS`),
 * - no unknown field (`CONTRACT_UNKNOWN_FIELD`, naming each unknown field and the nearest known
 *   one: `found unknown field "contenTrust" (did you mean "contentTrust"?)`), and the input an object
 *   (`CONTRACT_INVALID_INPUT`).
 *
 * @throws {ContractDefinitionError} with the code of the first rule that fails.
 */
export function defineContract(input: ContractInput): ToolContract {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    fail('CONTRACT_INVALID_INPUT', undefined, 'A contract must be a plain object.', input);
  }
  if (created.has(input)) return input as unknown as ToolContract;
  refuseUnknownFields(input, KNOWN_FIELDS, 'A contract', 'CONTRACT_UNKNOWN_FIELD');
  const source = input as unknown as Record<string, unknown>;
  const { risk, deprecatedSince, sunset, replacement } = source;
  // Only `undefined` means "omitted": a `null` is a mistake and is rejected below.
  const orDefault = (value: unknown, fallback: unknown): unknown =>
    value === undefined ? fallback : value;
  const contentTrust = orDefault(source.contentTrust, CONTRACT_DEFAULTS.contentTrust);
  const idempotent = orDefault(source.idempotent, CONTRACT_DEFAULTS.idempotent);
  const version = orDefault(source.version, CONTRACT_DEFAULTS.version);

  if (!isRiskLevel(risk)) {
    fail('CONTRACT_UNKNOWN_RISK', 'risk', `risk must be one of: ${RISK_LEVELS.join(', ')}.`, risk);
  }
  if (!isContentTrustLevel(contentTrust)) {
    fail(
      'CONTRACT_UNKNOWN_CONTENT_TRUST',
      'contentTrust',
      `contentTrust must be one of: ${CONTENT_TRUST_LEVELS.join(', ')}.`,
      contentTrust,
    );
  }
  if (typeof idempotent !== 'boolean') {
    fail('CONTRACT_INVALID_IDEMPOTENT', 'idempotent', 'idempotent must be a boolean.', idempotent);
  }
  if (!isSemver(version)) {
    fail(
      'CONTRACT_INVALID_VERSION',
      'version',
      'version must be a semantic version such as 1.0.0.',
      version,
    );
  }
  for (const [field, value] of [
    ['deprecatedSince', deprecatedSince],
    ['sunset', sunset],
  ] as const) {
    if (value !== undefined && !isIsoDate(value)) {
      fail(
        'CONTRACT_INVALID_DATE',
        field,
        `${field} must be a real date written YYYY-MM-DD.`,
        value,
      );
    }
  }
  if (
    typeof deprecatedSince === 'string' &&
    typeof sunset === 'string' &&
    sunset < deprecatedSince
  ) {
    fail('CONTRACT_INVALID_LIFECYCLE', 'sunset', 'sunset must not be before deprecatedSince.');
  }
  if (replacement !== undefined && !isToolName(replacement)) {
    fail(
      'CONTRACT_INVALID_REPLACEMENT',
      'replacement',
      'replacement must be a valid MCP tool name (1-128 characters of A-Z a-z 0-9 _ - .).',
      replacement,
    );
  }
  const aliases = readAliases(source.aliases);

  const contract: ToolContract = Object.freeze({
    risk,
    contentTrust,
    idempotent,
    version,
    ...(deprecatedSince === undefined ? {} : { deprecatedSince: deprecatedSince as string }),
    ...(sunset === undefined ? {} : { sunset: sunset as string }),
    ...(replacement === undefined ? {} : { replacement }),
    aliases,
  });
  created.add(contract);
  return contract;
}

/**
 * Throws a {@link ContractDefinitionError} with `code` when `value` has a field `known` lacks: the
 * message (`A contract has only the fields ...; found unknown field "x" (did you mean "y"?).`)
 * names them, `field` is the first and `details.unknownFields` lists them all.
 */
export function refuseUnknownFields(
  value: object,
  known: ReadonlySet<string>,
  owner: string,
  code: string,
): void {
  const unknown = findUnknownFields(value, known);
  if (unknown === undefined) return;
  throw new ContractDefinitionError(
    `${owner} has only the fields ${[...known].join(', ')}; found ${unknown.description}.`,
    { code, field: unknown.fields[0], details: { unknownFields: unknown.fields } },
  );
}
