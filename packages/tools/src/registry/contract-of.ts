import { readContract, type ToolContract } from '@toolfence/tool-contract';
import { operationPlanOf } from './operation-contracts.js';
import type { ToolSpec } from './tool.js';

const cache = new WeakMap<ToolSpec, ToolContract | null>();

/**
 * The static contract a tool declared: `spec.contract`, else the riskiest of its
 * `spec.operationContracts` (the most cautious content trust of them all), else a contract
 * declared in `spec.annotations` (tool-contract's `readContract`, only when its source is
 * `declared`). This is what a `tools/list` or MCP adapter publishes; the registry judges each
 * call by the contract of its operation. Undeclared tools (and invalid `operationContracts`) give
 * `undefined`; policies decide what that means (RiskPolicy uses the name heuristic). Cached per
 * spec object.
 */
export function contractOf(spec: ToolSpec): ToolContract | undefined {
  if (spec.contract !== undefined) return spec.contract;
  if (spec.operationContracts !== undefined) {
    try {
      return operationPlanOf(spec)?.worst;
    } catch {
      return undefined;
    }
  }
  if (spec.annotations === undefined) return undefined;
  const cached = cache.get(spec);
  if (cached !== undefined) return cached ?? undefined;
  let contract: ToolContract | null = null;
  try {
    const reading = readContract({
      name: spec.name,
      description: spec.description,
      annotations: spec.annotations,
    });
    if (reading.source === 'declared') contract = reading.contract;
  } catch {
    contract = null;
  }
  cache.set(spec, contract);
  return contract ?? undefined;
}
