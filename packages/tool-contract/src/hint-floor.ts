import { maxRisk, type RiskLevel, type ToolContract } from './taxonomy.js';

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The lowest risk a tool's standard MCP hints claim, read from its `annotations`:
 *
 * - `destructiveHint: true` claims `destructive` (unless `readOnlyHint` is `true`: MCP gives
 *   `destructiveHint` meaning only for tools that are not read-only);
 * - `readOnlyHint: false` claims a write (`low-risk-write`);
 * - anything else claims nothing (`undefined`): `readOnlyHint: true` alone never lowers a risk,
 *   and a hint that is not a boolean is ignored.
 */
export function hintRiskFloor(annotations: unknown): RiskLevel | undefined {
  if (!isRecord(annotations)) return undefined;
  const readOnly = Object.hasOwn(annotations, 'readOnlyHint')
    ? annotations.readOnlyHint
    : undefined;
  const destructive = Object.hasOwn(annotations, 'destructiveHint')
    ? annotations.destructiveHint
    : undefined;
  if (destructive === true && readOnly !== true) return 'destructive';
  if (readOnly === false) return 'low-risk-write';
  return undefined;
}

/**
 * A guessed contract raised to the floor its standard hints claim ({@link hintRiskFloor}): the
 * risk is the riskier of the two, and `idempotent` stays true only for a `read-only` result. For
 * undeclared tools only; a declaration is checked against its hints by `readContract` instead.
 * Returns `contract` itself when the hints raise nothing.
 */
export function withHintFloor(contract: ToolContract, annotations: unknown): ToolContract {
  const floor = hintRiskFloor(annotations);
  if (floor === undefined) return contract;
  const risk = maxRisk(contract.risk, floor);
  if (risk === contract.risk) return contract;
  return Object.freeze({
    ...contract,
    risk,
    idempotent: contract.idempotent && risk === 'read-only',
  });
}
