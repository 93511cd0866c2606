import type { ToolContract } from '@toolfence/tool-contract';
import * as toolContract from '@toolfence/tool-contract';
import type { EffectDescriptor } from '../registry/tool.js';

/** How an MCP tool's contract was found. */
export interface McpContractReading {
  /** `declared` when the tool's annotations carry a valid tool-contract declaration. */
  readonly source: 'declared' | 'heuristic';
  /** The declared contract (only when `source` is `declared`). */
  readonly contract?: ToolContract;
  /** Log-safe problems tool-contract reported about the declaration. */
  readonly problems: readonly string[];
  /** `read` for a declared read-only tool, `write` for any other declared risk, else `unknown`. */
  readonly effect: EffectDescriptor;
}

type ReadContract = (tool: {
  readonly name: string;
  readonly description?: string;
  readonly annotations?: Readonly<Record<string, unknown>>;
}) => { source: 'declared' | 'heuristic'; contract: ToolContract; problems: readonly unknown[] };

/**
 * The one place the MCP adapter asks `@toolfence/tool-contract` for a tool's contract.
 * Undeclared tools get no contract (policies apply tool-contract's heuristic themselves) and the
 * `unknown` effect.
 */
export function readMcpToolContract(tool: {
  readonly name: string;
  readonly description?: string;
  readonly annotations?: Readonly<Record<string, unknown>>;
}): McpContractReading {
  const read = (toolContract as unknown as { readContract?: ReadContract }).readContract;
  if (typeof read !== 'function') {
    return { source: 'heuristic', problems: [], effect: { default: 'unknown' } };
  }
  const reading = read(tool);
  const problems = reading.problems.map((problem) =>
    typeof problem === 'string' ? problem : safeProblem(problem),
  );
  if (reading.source !== 'declared') {
    return { source: 'heuristic', problems, effect: { default: 'unknown' } };
  }
  return {
    source: 'declared',
    contract: reading.contract,
    problems,
    effect: { default: reading.contract.risk === 'read-only' ? 'read' : 'write' },
  };
}

function safeProblem(problem: unknown): string {
  if (typeof problem === 'object' && problem !== null) {
    const record = problem as Record<string, unknown>;
    const parts = [record.code, record.key, record.field, record.message].filter(
      (part): part is string => typeof part === 'string',
    );
    if (parts.length > 0) return parts.join(': ');
  }
  return 'invalid declaration';
}
