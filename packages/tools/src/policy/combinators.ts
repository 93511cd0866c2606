import {
  compareContentTrust,
  compareRisk,
  type EffectiveContract,
  type ToolContract,
} from '@toolfence/tool-contract';
import {
  type AskableTool,
  type AuthorizationRequest,
  type Authorizer,
  isPermissionDecision,
  type PermissionDecision,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { effectiveCallContract, HeuristicMemory } from './effective-call-contract.js';

function checkAuthorizers(authorizers: readonly Authorizer[], name: string): void {
  if (
    !Array.isArray(authorizers) ||
    authorizers.length === 0 ||
    authorizers.some((authorizer) => typeof authorizer?.authorize !== 'function')
  ) {
    throw new ConfigurationError(`${name} needs at least one authorizer`, {
      details: { option: 'authorizers' },
    });
  }
}

async function decide(
  authorizer: Authorizer,
  request: AuthorizationRequest,
): Promise<PermissionDecision> {
  try {
    const answer: unknown = await authorizer.authorize(request);
    return isPermissionDecision(answer) ? answer : permission('deny', 'invalid-decision');
  } catch {
    return permission('deny', 'authorizer-error');
  }
}

/**
 * Whether `authorizer` says some call of `tool` could get `ask` (`Authorizer.mayAsk`): true for
 * one without `mayAsk`, one that throws, and any answer but `false`.
 */
function partMayAsk(authorizer: Authorizer, tool: AskableTool): boolean {
  if (typeof authorizer.mayAsk !== 'function') return true;
  try {
    return authorizer.mayAsk(tool) !== false;
  } catch {
    return true;
  }
}

/**
 * The effective contract of a call as the parts see it (`Authorizer.effectiveContract`): undefined
 * when no part gives one; the one a part gives when every other part that can give one gives the
 * same; else the most cautious of the parts' views (the riskiest risk, the most cautious content
 * trust, vetoed when one is), where a part that gives none judges the call by what it declares.
 */
class PartsContract {
  readonly #parts: readonly Authorizer[];
  readonly #heuristics = new HeuristicMemory();
  /** Merged contracts by the first view's contract and the merged facts (one object per pair). */
  readonly #merged = new WeakMap<ToolContract, Map<string, EffectiveContract>>();

  constructor(authorizers: readonly Authorizer[]) {
    this.#parts = authorizers.filter((part) => typeof part.effectiveContract === 'function');
  }

  /** Whether some part can give an effective contract. */
  get any(): boolean {
    return this.#parts.length > 0;
  }

  of(request: AuthorizationRequest): EffectiveContract | undefined {
    let given: EffectiveContract | undefined;
    let views: EffectiveContract[] | undefined;
    let declaredView = false;
    for (const part of this.#parts) {
      const effective = (part.effectiveContract as NonNullable<Authorizer['effectiveContract']>)(
        request,
      );
      if (effective === undefined) declaredView = true;
      else if (given === undefined) given = effective;
      else if (effective !== given) {
        views ??= [given];
        views.push(effective);
      }
    }
    if (given === undefined) return undefined;
    if (views === undefined && !declaredView) return given;
    views ??= [given];
    if (declaredView) {
      views.push(
        effectiveCallContract(request.spec, request.contract, undefined, this.#heuristics),
      );
    }
    let risk = given.contract.risk;
    let trust = given.contract.contentTrust;
    let vetoed = false;
    for (const view of views) {
      if (compareRisk(view.contract.risk, risk) > 0) risk = view.contract.risk;
      if (compareContentTrust(view.contract.contentTrust, trust) > 0) {
        trust = view.contract.contentTrust;
      }
      if (view.vetoed) vetoed = true;
    }
    let byFacts = this.#merged.get(given.contract);
    if (byFacts === undefined) {
      byFacts = new Map();
      this.#merged.set(given.contract, byFacts);
    }
    const key = `${risk} ${trust} ${vetoed}`;
    let merged = byFacts.get(key);
    if (merged === undefined) {
      merged = Object.freeze({
        contract: Object.freeze({ ...given.contract, risk, contentTrust: trust }),
        source: 'override',
        vetoed,
      });
      byFacts.set(key, merged);
    }
    return merged;
  }
}

/**
 * Asks each authorizer in order and returns the first `allow` or `deny`; `ask` passes to the
 * next one. When all ask, the answer is `ask`. A throwing authorizer counts as `deny`. Its
 * `mayAsk` is true only when every authorizer's is (one without `mayAsk` counts as true). Its
 * `effectiveContract` (for the flow guard) is the parts' most cautious one, when a part gives one.
 */
export function firstDecisive(...authorizers: Authorizer[]): Authorizer {
  checkAuthorizers(authorizers, 'firstDecisive');
  const parts = new PartsContract(authorizers);
  return {
    ...(parts.any ? { effectiveContract: (request) => parts.of(request) } : {}),
    async authorize(request) {
      let last: PermissionDecision | undefined;
      for (const authorizer of authorizers) {
        last = await decide(authorizer, request);
        if (last.verdict !== 'ask') return last;
      }
      return last as PermissionDecision;
    },
    // The answer is `ask` only when every authorizer asks: one that never asks decides first.
    mayAsk(tool) {
      return authorizers.every((authorizer) => partMayAsk(authorizer, tool));
    },
  };
}

/**
 * Asks every authorizer and returns the strictest answer: any `deny` denies, else any `ask`
 * asks, else `allow`. A throwing authorizer counts as `deny`. Its `mayAsk` is true when any
 * authorizer's is (one without `mayAsk` counts as true). Its `effectiveContract` (for the flow
 * guard) is the parts' most cautious one, when a part gives one.
 */
export function strictest(...authorizers: Authorizer[]): Authorizer {
  checkAuthorizers(authorizers, 'strictest');
  const rank = { allow: 0, ask: 1, deny: 2 } as const;
  const parts = new PartsContract(authorizers);
  return {
    ...(parts.any ? { effectiveContract: (request) => parts.of(request) } : {}),
    async authorize(request) {
      const decisions = await Promise.all(authorizers.map((item) => decide(item, request)));
      let worst = decisions[0] as PermissionDecision;
      for (const decision of decisions) {
        if (rank[decision.verdict] > rank[worst.verdict]) worst = decision;
      }
      return worst;
    },
    // The answer is `ask` only when some authorizer asks.
    mayAsk(tool) {
      return authorizers.some((authorizer) => partMayAsk(authorizer, tool));
    },
  };
}
