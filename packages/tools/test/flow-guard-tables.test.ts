import { describe, expect, it } from 'vitest';
import {
  BENIGN,
  type FlowRow,
  runThroughAiSdk,
  runThroughRegistry,
  type StepOutcome,
  TOXIC,
} from './flow-fixtures.js';

/** The outcome each call of a row must have: `ran`, or the raise it is marked with. */
function expected(row: FlowRow): StepOutcome['outcome'][] {
  return row.steps.flatMap((step) =>
    'end' in step ? [] : [step.expect === undefined ? 'ran' : step.expect],
  );
}

/** The calls a row runs up to (and with) its first raised call. */
function upToFirstRaise(row: FlowRow): StepOutcome['outcome'][] {
  const all = expected(row);
  const first = all.findIndex((outcome) => outcome !== 'ran');
  return first === -1 ? all : all.slice(0, first + 1);
}

describe('flow guard tables', () => {
  it('has at least 30 benign and 30 toxic rows', () => {
    expect(BENIGN.length).toBeGreaterThanOrEqual(30);
    expect(TOXIC.length).toBeGreaterThanOrEqual(30);
    expect(TOXIC.every((row) => row.steps.some((step) => 'expect' in step))).toBe(true);
  });
});

describe('flow guard through ToolRegistry.invoke', () => {
  it.each(BENIGN.map((row) => [row.name, row] as const))(
    'benign: %s raises nothing',
    async (_name, row) => {
      const { outcomes, approvals } = await runThroughRegistry(row);
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(expected(row));
      expect(approvals).toEqual([]);
    },
    60_000,
  );

  it.each(TOXIC.map((row) => [row.name, row] as const))(
    'toxic: %s is raised, never run silently',
    async (_name, row) => {
      const { outcomes, log } = await runThroughRegistry(row);
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(expected(row));
      for (const outcome of outcomes) {
        // A raised call's reason names its sink.
        if (outcome.outcome !== 'ran')
          expect(outcome.reason).toContain(JSON.stringify(outcome.tool));
      }
      // Every call that ran reached its tool once; no raised call reached its tool.
      expect(log).toHaveLength(outcomes.filter((outcome) => outcome.outcome === 'ran').length);
    },
    60_000,
  );
});

describe('flow guard through the AI SDK adapter (generateText with the SDK mock model)', () => {
  it.each(BENIGN.map((row) => [row.name, row] as const))(
    'benign: %s raises nothing',
    async (_name, row) => {
      const { outcomes } = await runThroughAiSdk(row);
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(expected(row));
    },
    60_000,
  );

  it.each(TOXIC.map((row) => [row.name, row] as const))(
    'toxic: %s is raised, never run silently',
    async (_name, row) => {
      const { outcomes, log } = await runThroughAiSdk(row);
      expect(outcomes.map((outcome) => outcome.outcome)).toEqual(upToFirstRaise(row));
      const raised = outcomes.at(-1);
      expect(raised?.outcome).not.toBe('ran');
      expect(raised?.reason).toContain(JSON.stringify(raised?.tool).slice(1, -1));
      // Every call that ran reached its tool once; the raised call never reached its tool.
      expect(log).toHaveLength(outcomes.length - 1);
    },
    60_000,
  );
});
