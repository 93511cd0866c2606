import { createToolContext, type JsonObject, type ToolSpec } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import { defaultInspectPolicy, parseInspectPolicy } from './policy-file.js';
import { PolicyFileError } from './policy-file-error.js';

const context = createToolContext({ runId: 'test' });

function verdictFor(
  policy: ReturnType<typeof parseInspectPolicy>,
  name: string,
  contract?: ToolSpec['contract'],
): unknown {
  const spec: ToolSpec = {
    name,
    description: `MCP tool ${name}`,
    inputSchema: { type: 'object' },
    ...(contract === undefined ? {} : { contract }),
  };
  const decision = policy.authorizer.authorize({
    toolName: name,
    args: {} as JsonObject,
    context,
    spec,
    contract,
    effect: contract === undefined ? 'unknown' : contract.risk === 'read-only' ? 'read' : 'write',
  });
  return (decision as { verdict: string }).verdict;
}

const destructive = {
  risk: 'destructive',
  contentTrust: 'trusted',
  idempotent: true,
  version: '1.0.0',
} as const;

describe('inspect policy files', () => {
  it('defaults to RiskPolicy defaults', () => {
    const policy = defaultInspectPolicy();
    expect(policy.summary).toEqual({
      kind: 'risk',
      source: 'default',
      risk: { allowUpTo: 'read-only', askUpTo: 'destructive' },
      contentTrust: { allowUpTo: 'untrusted', askUpTo: 'prompt-injection-prone' },
      undeclared: 'heuristic',
    });
    expect(verdictFor(policy, 'delete_note', destructive as never)).toBe('ask');
  });

  it('fills thresholds a risk file leaves out from the defaults', () => {
    const policy = parseInspectPolicy({ kind: 'risk', risk: { askUpTo: 'high-risk-write' } });
    expect(policy.summary).toMatchObject({
      risk: { allowUpTo: 'read-only', askUpTo: 'high-risk-write' },
    });
    expect(verdictFor(policy, 'delete_note', destructive as never)).toBe('deny');
  });

  it('decides every undeclared tool with undeclared: deny', () => {
    const policy = parseInspectPolicy({ kind: 'risk', undeclared: 'deny' });
    expect(verdictFor(policy, 'get_weather')).toBe('deny');
  });

  it('matches rules by glob, first match first, then the default', () => {
    const policy = parseInspectPolicy({
      kind: 'rules',
      $comment: 'first match wins',
      rules: [
        { tool: 'delete_*', decision: 'deny' },
        { tool: '*_note', decision: 'allow', reason: 'notes are fine' },
      ],
    });
    expect(verdictFor(policy, 'delete_note')).toBe('deny');
    expect(verdictFor(policy, 'save_note')).toBe('allow');
    expect(verdictFor(policy, 'send_message')).toBe('deny');
    expect(policy.summary).toEqual({
      kind: 'rules',
      source: 'file',
      rules: [
        { tool: 'delete_*', decision: 'deny' },
        { tool: '*_note', decision: 'allow', reason: 'notes are fine' },
      ],
      default: 'deny',
    });
  });

  it.for([
    ['a boolean threshold', { kind: 'risk', risk: { allowUpTo: true } }],
    ['a numeric kind', { kind: 1 }],
    ['null', null],
    ['a rule list of strings', { kind: 'rules', rules: ['delete_*'] }],
    ['an empty tool pattern', { kind: 'rules', rules: [{ tool: '', decision: 'deny' }] }],
    ['a numeric reason', { kind: 'rules', rules: [{ tool: '*', decision: 'deny', reason: 1 }] }],
  ] as const)('refuses %s', ([, value]) => {
    expect(() => parseInspectPolicy(value)).toThrow(PolicyFileError);
  });

  it('does not echo an unusual unknown key', () => {
    let message = '';
    try {
      parseInspectPolicy({ kind: 'risk', 'x\u001b[2J': 1 });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('the policy has an unknown key (allowed: ');
    expect(message).not.toContain('\u001b');
  });
});
