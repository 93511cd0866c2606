import { type CatalogSnapshot, catalogTools } from './catalog.js';
import { ContractReadError } from './contract-read-error.js';
import {
  type ContractOverride,
  defineOverride,
  type EffectiveSource,
  effectiveContract,
  overrideDecides,
} from './effective-contract.js';
import { readContract } from './read-contract.js';
import {
  type ContentTrustLevel,
  compareContentTrust,
  compareRisk,
  type RiskLevel,
} from './taxonomy.js';

/** Operator overrides by tool name. */
export type ContractOverrides = Readonly<Record<string, ContractOverride>>;

/** Why a tool is reported by {@link detectDowngrades}. */
export type DowngradeReason = 'risk-lowered' | 'content-trust-lowered' | 'declaration-removed';

/** The facts of one tool in one snapshot, as {@link detectDowngrades} compared them. */
export interface DowngradeFacts {
  /** Which layer decided these facts: an override, the tool's declaration or the heuristic. */
  readonly source: EffectiveSource;
  /** The effective risk level in this snapshot. */
  readonly risk: RiskLevel;
  /** The effective content-trust level in this snapshot. */
  readonly contentTrust: ContentTrustLevel;
  /** The tool itself declared a (readable) contract. */
  readonly declared: boolean;
}

/** One tool whose effective facts weakened between two snapshots. */
export interface DowngradeFinding {
  /** Name of the tool, as listed in the snapshots. */
  readonly tool: string;
  /** Every way it weakened, in the order `risk-lowered`, `content-trust-lowered`, `declaration-removed`. */
  readonly reasons: readonly DowngradeReason[];
  /** The tool's facts in the earlier snapshot. */
  readonly previous: DowngradeFacts;
  /** The tool's facts in the later snapshot. */
  readonly next: DowngradeFacts;
}

function factsOf(
  tools: readonly Parameters<typeof readContract>[0][],
  overrides: ContractOverrides,
  what: string,
): Map<string, DowngradeFacts[]> {
  const byName = new Map<string, DowngradeFacts[]>();
  for (const tool of tools) {
    if (typeof tool !== 'object' || tool === null || typeof tool.name !== 'string') {
      throw new ContractReadError(`Every entry of ${what} must be a tool with a string name.`, {
        code: 'CONTRACT_INVALID_CATALOG',
      });
    }
    const read = readContract(tool);
    const override = Object.hasOwn(overrides, tool.name) ? overrides[tool.name] : undefined;
    const declared = read.source === 'declared';
    const effective = effectiveContract({
      ...(declared ? { declared: read.contract } : { heuristic: read.contract }),
      override,
    });
    const facts: DowngradeFacts = Object.freeze({
      source: effective.source,
      risk: effective.contract.risk,
      contentTrust: effective.contract.contentTrust,
      declared,
    });
    const list = byName.get(tool.name);
    if (list === undefined) byName.set(tool.name, [facts]);
    else list.push(facts);
  }
  return byName;
}

/** Combines duplicate entries of one name: the most cautious (`cautious`) or the least. */
function combine(list: readonly DowngradeFacts[], cautious: boolean): DowngradeFacts {
  const sign = cautious ? 1 : -1;
  return list.reduce((a, b) =>
    Object.freeze({
      source: a.source,
      risk: sign * compareRisk(b.risk, a.risk) > 0 ? b.risk : a.risk,
      contentTrust:
        sign * compareContentTrust(b.contentTrust, a.contentTrust) > 0
          ? b.contentTrust
          : a.contentTrust,
      declared: cautious ? a.declared || b.declared : a.declared && b.declared,
    }),
  );
}

/**
 * Compares two `tools/list` snapshots and returns one finding per tool (sorted by name) whose
 * effective contract weakened without a recorded override:
 *
 * - `risk-lowered`: the effective risk is lower than before;
 * - `content-trust-lowered`: the effective content trust demands less caution than before;
 * - `declaration-removed`: the tool declared a contract before and declares none (or none
 *   readable) now, so it runs on the heuristic guess; reported even when the guess is not lower.
 *
 * Effective contracts are computed with `overrides` on both sides (override > declaration >
 * heuristic), so an override that sets a fact records the operator's decision about it: a
 * weakening of that fact is not reported. An override that vetoes the tool, or sets both risk and
 * content trust, also covers `declaration-removed`. Tools only in one snapshot are not findings
 * (a removal weakens nothing; a new tool has no earlier facts). When a name appears more than
 * once, the previous snapshot counts its most cautious entry and the next one its least cautious.
 *
 * @throws {ContractReadError} `CONTRACT_INVALID_CATALOG` for a malformed snapshot;
 *   {@link ContractDefinitionError} for an invalid override.
 */
export function detectDowngrades(
  previous: CatalogSnapshot,
  next: CatalogSnapshot,
  overrides: ContractOverrides = {},
): readonly DowngradeFinding[] {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw new ContractReadError('overrides must be an object keyed by tool name.', {
      code: 'CONTRACT_INVALID_CATALOG',
    });
  }
  for (const name of Object.keys(overrides)) defineOverride(overrides[name] as ContractOverride);
  const before = factsOf(catalogTools(previous, 'previous'), overrides, 'previous');
  const after = factsOf(catalogTools(next, 'next'), overrides, 'next');

  const findings: DowngradeFinding[] = [];
  for (const [tool, nextList] of after) {
    const previousList = before.get(tool);
    if (previousList === undefined) continue;
    const was = combine(previousList, true);
    const now = combine(nextList, false);
    const override = Object.hasOwn(overrides, tool) ? overrides[tool] : undefined;
    if (override?.veto === true) continue;
    const reasons: DowngradeReason[] = [];
    if (compareRisk(now.risk, was.risk) < 0) reasons.push('risk-lowered');
    if (compareContentTrust(now.contentTrust, was.contentTrust) < 0) {
      reasons.push('content-trust-lowered');
    }
    if (
      was.declared &&
      !now.declared &&
      !(overrideDecides(override, 'risk') && overrideDecides(override, 'contentTrust'))
    ) {
      reasons.push('declaration-removed');
    }
    if (reasons.length > 0) {
      findings.push(
        Object.freeze({ tool, reasons: Object.freeze(reasons), previous: was, next: now }),
      );
    }
  }
  findings.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  return Object.freeze(findings);
}
