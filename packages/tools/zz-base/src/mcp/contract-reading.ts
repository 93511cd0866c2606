import { type ContractProblem, readContract, type ToolContract } from '@toolfence/tool-contract';
import type { EffectDescriptor } from '../registry/tool.js';

/** How an MCP tool's contract was found. */
export interface McpContractReading {
  /** `declared` when the tool's annotations carry a valid tool-contract declaration. */
  readonly source: 'declared' | 'heuristic';
  /** The declared contract (only when `source` is `declared`). */
  readonly contract?: ToolContract;
  /** Log-safe problems tool-contract reported about the declaration (never trusted silently). */
  readonly problems: readonly ContractProblem[];
  /** `read` for a declared read-only tool, `write` for any other declared risk, else `unknown`. */
  readonly effect: EffectDescriptor;
}

/**
 * The one place the MCP adapter asks `@toolfence/tool-contract` for a tool's contract
 * (`readContract`, non-strict). Undeclared tools get no contract (policies apply
 * tool-contract's heuristic themselves) and the `unknown` effect.
 */
export function readMcpToolContract(tool: {
  readonly name: string;
  readonly description?: string;
  readonly annotations?: Readonly<Record<string, unknown>>;
  /** The tool's `_meta`; tool-contract reads its `io.github.toolfence/contract` copy. */
  readonly _meta?: Readonly<Record<string, unknown>>;
}): McpContractReading {
  const reading = readContract(tool);
  if (reading.source !== 'declared') {
    return { source: 'heuristic', problems: reading.problems, effect: { default: 'unknown' } };
  }
  return {
    source: 'declared',
    contract: reading.contract,
    problems: reading.problems,
    effect: { default: reading.contract.risk === 'read-only' ? 'read' : 'write' },
  };
}
