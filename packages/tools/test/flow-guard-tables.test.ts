import { generateText, type ModelMessage, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiSdkTools } from '../src/adapters/ai-sdk/ai-sdk-tools.js';
import { AllowAllAuthorizer } from '../src/policy/authorizer.js';
import { FlowGuard } from '../src/policy/flow-guard.js';
import { ToolRegistry } from '../src/registry/tool-registry.js';
import {
  BENIGN,
  type CallLog,
  type FlowRow,
  flowTools,
  runThroughAiSdk,
  runThroughRegistry,
  type StepOutcome,
  TOXIC,
  usage,
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

describe('flow guard approvals through the AI SDK adapter', () => {
  it('an approved raised call runs once; the next call to a sink asks again', async () => {
    const log: CallLog = [];
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      tools: flowTools(log),
      flowGuard: new FlowGuard(),
    });
    await registry.ready();
    const turns = ['get_issue', 'send_email', 'send_email'];
    let index = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        const tool = turns[index];
        index += 1;
        return tool === undefined
          ? {
              content: [{ type: 'text', text: 'done' }],
              finishReason: { unified: 'stop', raw: undefined },
              usage,
              warnings: [],
            }
          : {
              content: [
                { type: 'tool-call', toolCallId: `call-${index}`, toolName: tool, input: '{}' },
              ],
              finishReason: { unified: 'tool-calls', raw: undefined },
              usage,
              warnings: [],
            };
      },
    });
    const context = { runId: 'run', session: 'chat' };
    const first = await generateText({
      model,
      tools: aiSdkTools(registry, { context }),
      prompt: 'go',
      stopWhen: stepCountIs(6),
    });
    const request = first.content.find((part) => part.type === 'tool-approval-request');
    expect(log).toEqual(['chat:get_issue']);
    const messages: ModelMessage[] = [
      { role: 'user', content: 'go' },
      ...first.response.messages,
      {
        role: 'tool',
        content: [
          {
            type: 'tool-approval-response',
            approvalId: (request as { approvalId: string }).approvalId,
            approved: true,
          },
        ],
      },
    ];
    const second = await generateText({
      model,
      tools: aiSdkTools(registry, { context }),
      messages,
      stopWhen: stepCountIs(6),
    });
    // The approved call ran once; the model's next call to a sink is a new approval request.
    expect(log).toEqual(['chat:get_issue', 'chat:send_email']);
    expect(second.content.filter((part) => part.type === 'tool-approval-request')).toHaveLength(1);
    await registry.close();
  });
});
