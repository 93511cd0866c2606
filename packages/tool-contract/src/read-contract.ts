import { CONTRACT_META_KEY } from './annotations.js';
import { type ContractProblem, ContractReadError } from './contract-read-error.js';
import { heuristicContract } from './heuristic-contract.js';
import { withHintFloor } from './hint-floor.js';
import { isIsoDate, isLenientText, isSemver, isToolName } from './internal/rules.js';
import {
  type ContentTrustLevel,
  isContentTrustLevel,
  isRiskLevel,
  maxContentTrust,
  maxRisk,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';

/**
 * One entry of an MCP `tools/list` result, as far as this package reads it. The SDK's `Tool`
 * type is assignable to it; so is the raw JSON of the wire.
 */
export interface ToolListEntry {
  /** The tool's MCP name: identifies it in problems and findings, and feeds the heuristic. */
  readonly name: string;
  /** Human-readable display name; not read for the contract. */
  readonly title?: string | undefined;
  /** Free-text description; the heuristic reads its words when no contract is declared. */
  readonly description?: string | undefined;
  /** JSON Schema of the arguments; not read for the contract. */
  readonly inputSchema?: unknown;
  /** JSON Schema of structured results; not read for the contract. */
  readonly outputSchema?: unknown;
  /** MCP tool annotations, where a declared contract's keys are looked for. */
  readonly annotations?: unknown;
  /** MCP execution hints (e.g. task support); not read for the contract. */
  readonly execution?: unknown;
  /** Icons for display; not read for the contract. */
  readonly icons?: unknown;
  /** MCP metadata; its `CONTRACT_META_KEY` entry carries a copy of the contract's annotations. */
  readonly _meta?: unknown;
}

/** Where the contract {@link readContract} returns comes from. */
export type ContractSource = 'declared' | 'heuristic';

/** What {@link readContract} returns. */
export interface ReadContractResult {
  /** `declared` when the tool published a readable `risk_level`, else `heuristic`. */
  readonly source: ContractSource;
  /** The contract to act on; every field a problem affected holds a cautious replacement. */
  readonly contract: ToolContract;
  /** Every invalid or inconsistent declared value found (empty for a clean declaration). */
  readonly problems: readonly ContractProblem[];
}

/** Options of {@link readContract}. */
export interface ReadContractOptions {
  /** Throw a `ContractReadError` when any problem is found, instead of reporting it. Default `false`. */
  readonly strict?: boolean;
  /**
   * Aliases read at most per declaration (an integer from 0 to 100,000): more are reported as
   * one `CONTRACT_INVALID_ALIAS` and not read. Default {@link DEFAULT_MAX_ALIASES}.
   */
  readonly maxAliases?: number;
}

/** Default of {@link ReadContractOptions.maxAliases}: aliases read at most per declaration. */
export const DEFAULT_MAX_ALIASES = 256;

/** The highest `maxAliases` accepted. */
const MAX_ALIASES_LIMIT = 100_000;

const READ_OPTION_KEYS: ReadonlySet<string> = new Set(['strict', 'maxAliases']);

/** Version a declared contract carries when its own version is missing or invalid. */
export const UNKNOWN_VERSION = '0.0.0';

type Record_ = { readonly [key: string]: unknown };

function isRecord(value: unknown): value is Record_ {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasDeclaration(record: Record_): boolean {
  return Object.hasOwn(record, 'risk_level') || Object.hasOwn(record, 'content_trust_risk');
}

interface Parsed {
  readonly risk: RiskLevel | undefined;
  readonly contentTrust: ContentTrustLevel | undefined;
  readonly idempotent: boolean;
  readonly version: string;
  readonly deprecatedSince: string | undefined;
  readonly deprecatedSinceText: string | undefined;
  readonly sunset: string | undefined;
  readonly replacement: string | undefined;
  readonly aliases: readonly string[];
}

/** Reads one annotation object with the same rules `defineContract` applies, collecting problems. */
function parseDeclaration(
  record: Record_,
  at: string,
  problems: ContractProblem[],
  maxAliases: number,
): Parsed {
  const problem = (code: string, key: string, message: string): void => {
    problems.push(Object.freeze({ code, field: `${at}.${key}`, message }));
  };
  const get = (key: string): unknown => (Object.hasOwn(record, key) ? record[key] : undefined);

  let risk: RiskLevel | undefined;
  const rawRisk = get('risk_level');
  if (rawRisk === undefined)
    problem('CONTRACT_MISSING_FIELD', 'risk_level', 'risk_level is missing.');
  else if (isRiskLevel(rawRisk)) risk = rawRisk;
  else problem('CONTRACT_UNKNOWN_RISK', 'risk_level', 'risk_level is not a known risk level.');

  let contentTrust: ContentTrustLevel | undefined;
  const rawTrust = get('content_trust_risk');
  if (rawTrust === undefined) {
    problem('CONTRACT_MISSING_FIELD', 'content_trust_risk', 'content_trust_risk is missing.');
  } else if (isContentTrustLevel(rawTrust)) contentTrust = rawTrust;
  else {
    problem(
      'CONTRACT_UNKNOWN_CONTENT_TRUST',
      'content_trust_risk',
      'content_trust_risk is not a known content-trust level.',
    );
  }

  let idempotent = false;
  const rawIdempotent = get('idempotentHint');
  if (typeof rawIdempotent === 'boolean') idempotent = rawIdempotent;
  else if (rawIdempotent !== undefined) {
    problem('CONTRACT_INVALID_IDEMPOTENT', 'idempotentHint', 'idempotentHint is not a boolean.');
  }

  let version = UNKNOWN_VERSION;
  const rawVersion = get('version');
  if (rawVersion === undefined) problem('CONTRACT_MISSING_FIELD', 'version', 'version is missing.');
  else if (isSemver(rawVersion)) version = rawVersion;
  else {
    // Kept as declared when it is plain text (the original package accepts any version string).
    if (isLenientText(rawVersion)) version = rawVersion;
    problem('CONTRACT_INVALID_VERSION', 'version', 'version is not a semantic version.');
  }

  const date = (key: string): string | undefined => {
    const value = get(key);
    if (value === undefined || isIsoDate(value)) return value;
    problem('CONTRACT_INVALID_DATE', key, `${key} is not a real date written YYYY-MM-DD.`);
    return undefined;
  };
  // The original Python package accepts any text here (often a version such as `2.0.0`): plain
  // text is kept as declared, beside the typed date, and still reported.
  let deprecatedSinceText: string | undefined;
  const rawDeprecatedSince = get('deprecated_since');
  let deprecatedSince: string | undefined;
  if (rawDeprecatedSince === undefined || isIsoDate(rawDeprecatedSince)) {
    deprecatedSince = rawDeprecatedSince;
  } else if (isLenientText(rawDeprecatedSince)) {
    deprecatedSinceText = rawDeprecatedSince;
    problem(
      'CONTRACT_INVALID_DATE',
      'deprecated_since',
      'deprecated_since is not a real date written YYYY-MM-DD; kept as text in deprecatedSinceText.',
    );
  } else deprecatedSince = date('deprecated_since');
  let sunset = date('sunset');
  if (deprecatedSince !== undefined && sunset !== undefined && sunset < deprecatedSince) {
    problem('CONTRACT_INVALID_LIFECYCLE', 'sunset', 'sunset is before deprecated_since.');
    sunset = undefined;
  }

  let replacement: string | undefined;
  const rawReplacement = get('replacement');
  if (isToolName(rawReplacement)) replacement = rawReplacement;
  else if (rawReplacement !== undefined) {
    problem('CONTRACT_INVALID_REPLACEMENT', 'replacement', 'replacement is not a valid tool name.');
  }

  const aliases: string[] = [];
  const rawAliases = get('aliases');
  if (Array.isArray(rawAliases)) {
    // A set of those kept: each alias is checked once, whatever the list's length.
    const kept = new Set<string>();
    const read = Math.min(rawAliases.length, maxAliases);
    for (let index = 0; index < read; index++) {
      const alias: unknown = rawAliases[index];
      if (!isToolName(alias)) {
        problem('CONTRACT_INVALID_ALIAS', `aliases[${index}]`, 'alias is not a valid tool name.');
        // Kept as declared when it is plain text (the original package accepts any alias).
        if (isLenientText(alias) && !kept.has(alias)) {
          kept.add(alias);
          aliases.push(alias);
        }
      } else if (kept.has(alias)) {
        problem('CONTRACT_DUPLICATE_ALIAS', `aliases[${index}]`, 'alias repeats an earlier one.');
      } else {
        kept.add(alias);
        aliases.push(alias);
      }
    }
    if (rawAliases.length > maxAliases) {
      problem(
        'CONTRACT_INVALID_ALIAS',
        'aliases',
        `aliases holds more than ${maxAliases} entries (maxAliases); the rest were not read.`,
      );
    }
  } else if (rawAliases !== undefined) {
    problem('CONTRACT_INVALID_ALIAS', 'aliases', 'aliases is not an array.');
  }

  return {
    risk,
    contentTrust,
    idempotent,
    version,
    deprecatedSince,
    deprecatedSinceText,
    sunset,
    replacement,
    aliases,
  };
}

/**
 * Checks the standard MCP hints of `record` against `risk` and returns the risk to act on: a hint
 * that claims more danger than `risk_level` raises it, one that claims less is reported only.
 */
function checkHints(
  record: Record_,
  at: string,
  risk: RiskLevel,
  problems: ContractProblem[],
): RiskLevel {
  const problem = (key: string, message: string, code = 'CONTRACT_HINT_MISMATCH'): void => {
    problems.push(Object.freeze({ code, field: `${at}.${key}`, message }));
  };
  const readOnly = Object.hasOwn(record, 'readOnlyHint') ? record.readOnlyHint : undefined;
  const destructive = Object.hasOwn(record, 'destructiveHint') ? record.destructiveHint : undefined;
  for (const [key, value] of [
    ['readOnlyHint', readOnly],
    ['destructiveHint', destructive],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean') {
      problem(key, `${key} is not a boolean.`, 'CONTRACT_INVALID_HINT');
    }
  }
  let result = risk;
  if (readOnly === true && risk !== 'read-only') {
    problem('readOnlyHint', 'readOnlyHint is true but risk_level is not read-only.');
  }
  if (readOnly === false && risk === 'read-only') {
    problem('readOnlyHint', 'readOnlyHint is false but risk_level is read-only.');
    result = maxRisk(result, 'low-risk-write');
  }
  if (destructive === true && readOnly !== true && risk !== 'destructive') {
    problem('destructiveHint', 'destructiveHint is true but risk_level is not destructive.');
    result = 'destructive';
  }
  if (destructive === false && risk === 'destructive') {
    problem('destructiveHint', 'destructiveHint is false but risk_level is destructive.');
  }
  return result;
}

function sameFacts(a: Parsed, b: Parsed): boolean {
  return (
    a.risk === b.risk &&
    a.contentTrust === b.contentTrust &&
    a.idempotent === b.idempotent &&
    a.version === b.version &&
    a.deprecatedSince === b.deprecatedSince &&
    a.deprecatedSinceText === b.deprecatedSinceText &&
    a.sunset === b.sunset &&
    a.replacement === b.replacement &&
    a.aliases.length === b.aliases.length &&
    a.aliases.every((alias, index) => alias === b.aliases[index])
  );
}

function freezeContract(facts: {
  risk: RiskLevel;
  contentTrust: ContentTrustLevel;
  idempotent: boolean;
  version: string;
  deprecatedSince?: string | undefined;
  deprecatedSinceText?: string | undefined;
  sunset?: string | undefined;
  replacement?: string | undefined;
  aliases: readonly string[];
}): ToolContract {
  return Object.freeze({
    risk: facts.risk,
    contentTrust: facts.contentTrust,
    idempotent: facts.idempotent,
    version: facts.version,
    ...(facts.deprecatedSince === undefined ? {} : { deprecatedSince: facts.deprecatedSince }),
    ...(facts.deprecatedSinceText === undefined
      ? {}
      : { deprecatedSinceText: facts.deprecatedSinceText }),
    ...(facts.sunset === undefined ? {} : { sunset: facts.sunset }),
    ...(facts.replacement === undefined ? {} : { replacement: facts.replacement }),
    aliases: Object.freeze([...facts.aliases]),
  });
}

/**
 * Reads the contract a tool declares in one `tools/list` entry (the gateway side).
 *
 * The declaration is looked for in `annotations` (the original package's keys) and in
 * `_meta[CONTRACT_META_KEY]` (the copy that survives the TypeScript SDK client, which strips
 * unknown annotation keys). A declaration is present when either holds `risk_level` or
 * `content_trust_risk`.
 *
 * - No declaration: `source: 'heuristic'`, the contract from {@link heuristicContract} raised to
 *   the floor the standard hints claim (`withHintFloor`: `destructiveHint: true` without
 *   `readOnlyHint: true` gives `destructive`, `readOnlyHint: false` at least `low-risk-write`;
 *   hints raise a guess, never lower it).
 * - A declaration with a valid `risk_level`: `source: 'declared'`. Every invalid value is listed
 *   in `problems` and replaced cautiously, never trusted: an unknown content trust by the
 *   heuristic's (at least `untrusted`), a bad version by `0.0.0`, bad lifecycle dates, a bad
 *   replacement and bad aliases are dropped (a `deprecated_since` that is plain text but not a
 *   date, such as the version `2.0.0`, is kept in `deprecatedSinceText` and still reported); standard hints that claim more danger than
 *   `risk_level` raise the risk. When both places declare and disagree, each fact takes the
 *   more cautious value (`CONTRACT_SOURCES_DISAGREE`).
 * - A declaration without a valid `risk_level`: `source: 'heuristic'`, with the problems.
 *
 * @throws {ContractReadError} `CONTRACT_INVALID_TOOL` when `tool` is not an object with a string
 *   name; with `strict: true`, `CONTRACT_INVALID_DECLARATION` when any problem is found.
 */
export function readContract(
  tool: ToolListEntry,
  options: ReadContractOptions = {},
): ReadContractResult {
  if (!isRecord(tool) || typeof tool.name !== 'string') {
    throw new ContractReadError('readContract needs a tools/list entry with a string name.', {
      code: 'CONTRACT_INVALID_TOOL',
    });
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ContractReadError('readContract options must be an object.', {
      code: 'CONTRACT_INVALID_OPTION',
    });
  }
  for (const key of Object.keys(options)) {
    if (!READ_OPTION_KEYS.has(key)) {
      throw new ContractReadError(
        `readContract has no option ${JSON.stringify(key).slice(0, 80)} (accepted: strict, maxAliases).`,
        { code: 'CONTRACT_INVALID_OPTION' },
      );
    }
  }
  const strict = options.strict ?? false;
  if (typeof strict !== 'boolean') {
    throw new ContractReadError('The strict option must be a boolean.', {
      code: 'CONTRACT_INVALID_OPTION',
    });
  }
  const maxAliases: number = options.maxAliases ?? DEFAULT_MAX_ALIASES;
  if (!Number.isInteger(maxAliases) || maxAliases < 0 || maxAliases > MAX_ALIASES_LIMIT) {
    throw new ContractReadError(
      `The maxAliases option must be an integer from 0 to ${MAX_ALIASES_LIMIT.toLocaleString('en-US')} (default ${DEFAULT_MAX_ALIASES}).`,
      { code: 'CONTRACT_INVALID_OPTION' },
    );
  }
  const problems: ContractProblem[] = [];
  // The heuristic is only needed for an undeclared tool or an unreadable content trust.
  let guess: ToolContract | undefined;
  const heuristic = (): ToolContract => {
    guess ??= heuristicContract(
      tool.name,
      typeof tool.description === 'string' ? tool.description : undefined,
    );
    return guess;
  };

  const annotations = tool.annotations;
  let annotationRecord: Record_ | undefined;
  if (isRecord(annotations)) annotationRecord = annotations;
  else if (annotations !== undefined && annotations !== null) {
    problems.push({
      code: 'CONTRACT_INVALID_ANNOTATIONS',
      field: 'annotations',
      message: 'annotations is not an object.',
    });
  }
  const metaField = `_meta.${CONTRACT_META_KEY}`;
  let metaRecord: Record_ | undefined;
  if (isRecord(tool._meta) && Object.hasOwn(tool._meta, CONTRACT_META_KEY)) {
    const meta = tool._meta[CONTRACT_META_KEY];
    if (isRecord(meta)) metaRecord = meta;
    else {
      problems.push({
        code: 'CONTRACT_INVALID_ANNOTATIONS',
        field: metaField,
        message: `${metaField} is not an object.`,
      });
    }
  }

  const declarations: Array<{ parsed: Parsed; record: Record_; at: string }> = [];
  if (annotationRecord !== undefined && hasDeclaration(annotationRecord)) {
    declarations.push({
      parsed: parseDeclaration(annotationRecord, 'annotations', problems, maxAliases),
      record: annotationRecord,
      at: 'annotations',
    });
  }
  if (metaRecord !== undefined && (hasDeclaration(metaRecord) || declarations.length === 0)) {
    declarations.push({
      parsed: parseDeclaration(metaRecord, metaField, problems, maxAliases),
      record: metaRecord,
      at: metaField,
    });
  }

  const usable = declarations.filter((declaration) => declaration.parsed.risk !== undefined);
  /**
   * The most cautious content trust any declaration states readably, with or without a usable
   * `risk_level`: a source that cannot be read whole still says what it can, and a second source
   * never makes the result less cautious than the first alone.
   */
  let statedTrust: ContentTrustLevel | undefined;
  for (const declaration of declarations) {
    const trust = declaration.parsed.contentTrust;
    if (trust !== undefined) {
      statedTrust = statedTrust === undefined ? trust : maxContentTrust(statedTrust, trust);
    }
  }
  let result: ReadContractResult;
  if (usable.length === 0) {
    // The same floor effectiveContract applies: the hints raise the guess, never lower it.
    const guessed = withHintFloor(heuristic(), annotationRecord);
    const contract =
      statedTrust === undefined
        ? guessed
        : { ...guessed, contentTrust: maxContentTrust(guessed.contentTrust, statedTrust) };
    result = { source: 'heuristic', contract: freezeContract(contract), problems };
  } else {
    const first = usable[0]!;
    let risk = first.parsed.risk!;
    let contentTrust = first.parsed.contentTrust ?? heuristic().contentTrust;
    let idempotent = first.parsed.idempotent;
    for (const other of usable.slice(1)) {
      if (!sameFacts(first.parsed, other.parsed)) {
        problems.push({
          code: 'CONTRACT_SOURCES_DISAGREE',
          field: other.at,
          message: `annotations and ${other.at} declare different contracts; using the more cautious facts.`,
        });
      }
      risk = maxRisk(risk, other.parsed.risk!);
      contentTrust = maxContentTrust(
        contentTrust,
        other.parsed.contentTrust ?? heuristic().contentTrust,
      );
      idempotent = idempotent && other.parsed.idempotent;
    }
    // A declaration present without a usable `risk_level` beside one with it: the sources do not
    // agree on the contract, so the result is at least as cautious as the unreadable source
    // alone would be (the heuristic, with its stated content trust).
    for (const declaration of declarations) {
      if (declaration.parsed.risk !== undefined) continue;
      problems.push({
        code: 'CONTRACT_SOURCES_DISAGREE',
        field: declaration.at,
        message: `${declaration.at} declares no readable risk_level beside ${first.at}; using the more cautious facts.`,
      });
      risk = maxRisk(risk, heuristic().risk);
      contentTrust = maxContentTrust(contentTrust, heuristic().contentTrust);
    }
    if (statedTrust !== undefined) contentTrust = maxContentTrust(contentTrust, statedTrust);
    // Standard hints are checked wherever they are published alongside the declaration.
    const hintRecords = new Map<Record_, string>();
    for (const declaration of usable) hintRecords.set(declaration.record, declaration.at);
    if (annotationRecord !== undefined) hintRecords.set(annotationRecord, 'annotations');
    for (const [record, at] of hintRecords) risk = checkHints(record, at, risk, problems);
    result = {
      source: 'declared',
      contract: freezeContract({ ...first.parsed, risk, contentTrust, idempotent }),
      problems,
    };
  }

  if (strict && problems.length > 0) {
    throw new ContractReadError(
      `The tool's declared contract has ${problems.length} problem(s); see problems.`,
      { problems },
    );
  }
  return Object.freeze({
    ...result,
    problems: Object.freeze(problems.map((p) => Object.freeze(p))),
  });
}
