// What a caller is shown: only what some rule could let them call. Computed per request from the
// caller's own principal, never cached or shared between callers.
import type { Authorizer, Principal, ToolIdentity } from '@toolfence/tools';

/** An authorizer that can tell whether a caller could ever be let call a tool (`RuleBasedPolicy`). */
export interface ListingJudge {
  mayPermit(tool: ToolIdentity, principal?: Principal): boolean;
}

/** True when `authorizer` can judge listings (has `mayPermit`). */
export function judgesListings(authorizer: Authorizer): authorizer is Authorizer & ListingJudge {
  return typeof (authorizer as Partial<ListingJudge>).mayPermit === 'function';
}

/**
 * The entries of a listing `principal` may see: those whose policy identity (`identify`: the
 * name the policy judges it by; an entry without one is kept out) some rule could allow or ask for that caller. An authorizer that
 * cannot judge listings (a risk policy decides per call) keeps the listing whole.
 */
export function listingFor<T extends Readonly<Record<string, unknown>>>(
  entries: readonly T[],
  authorizer: Authorizer,
  principal: Principal,
  identify: (entry: T) => ToolIdentity | undefined,
): readonly T[] {
  if (!judgesListings(authorizer)) return entries;
  return entries.filter((entry) => {
    const identity = identify(entry);
    if (identity === undefined) return false;
    try {
      return authorizer.mayPermit(identity, principal) === true;
    } catch {
      return false;
    }
  });
}
