// The effective contract of a call, as every policy concept reads it: the RiskPolicy and the flow
// guard judge a tool by the same layers (operator override, declaration, tool-contract's name and
// description heuristic raised by the standard hints), computed here once.
import {
  type ContractOverride,
  type EffectiveContract,
  effectiveContract,
  heuristicContract,
  type ToolContract,
} from '@toolfence/tool-contract';
import type { ToolSpec } from '../registry/tool.js';

/**
 * How many tools' heuristic contracts one {@link HeuristicMemory} remembers (by name, for the
 * description it was judged from); the oldest is forgotten first, and a forgotten tool is judged
 * again.
 */
export const HEURISTIC_MEMORY = 1024;

/**
 * tool-contract's heuristic for undeclared tools, judged once per name and description rather
 * than on every call (it splits and matches the words of both). A pure function, so a bounded
 * memory changes only its cost.
 */
export class HeuristicMemory {
  readonly #judged = new Map<
    string,
    { readonly description: string | undefined; readonly contract: ToolContract }
  >();

  /** The heuristic contract of a tool named `name` with `description`. */
  judge(name: string, description: string | undefined): ToolContract {
    const known = this.#judged.get(name);
    if (known !== undefined && known.description === description) return known.contract;
    const contract = heuristicContract(name, description);
    if (known === undefined && this.#judged.size >= HEURISTIC_MEMORY) {
      const oldest = this.#judged.keys().next().value;
      if (oldest !== undefined) this.#judged.delete(oldest);
    }
    this.#judged.set(name, { description, contract });
    return contract;
  }
}

/**
 * The effective contract of a call to `spec`: the operator's `override`, else the `declared`
 * contract of the call, else the heuristic judged from the spec's name and description, raised by
 * its standard hints (`destructiveHint: true` is at least destructive, `readOnlyHint: false` at
 * least a write; they never lower).
 */
export function effectiveCallContract(
  spec: ToolSpec,
  declared: ToolContract | undefined,
  override: ContractOverride | undefined,
  memory: HeuristicMemory,
): EffectiveContract {
  return effectiveContract({
    declared,
    override,
    heuristic: declared === undefined ? memory.judge(spec.name, spec.description) : undefined,
    hints: spec.annotations,
  });
}
