import {
  type AskableTool,
  type AuthorizationRequest,
  type Authorizer,
  isPermissionDecision,
  type PermissionDecision,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';

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
 * Asks each authorizer in order and returns the first `allow` or `deny`; `ask` passes to the
 * next one. When all ask, the answer is `ask`. A throwing authorizer counts as `deny`. Its
 * `mayAsk` is true only when every authorizer's is (one without `mayAsk` counts as true).
 */
export function firstDecisive(...authorizers: Authorizer[]): Authorizer {
  checkAuthorizers(authorizers, 'firstDecisive');
  return {
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
 * authorizer's is (one without `mayAsk` counts as true).
 */
export function strictest(...authorizers: Authorizer[]): Authorizer {
  checkAuthorizers(authorizers, 'strictest');
  const rank = { allow: 0, ask: 1, deny: 2 } as const;
  return {
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
