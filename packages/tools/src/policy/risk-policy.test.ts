import {
  CONTENT_TRUST_LEVELS,
  defineContract,
  RISK_LEVELS,
  type ToolContract,
} from '@toolfence/tool-contract';
import { describe, expect, it, vi } from 'vitest';
import {
  type AuthorizationRequest,
  type Authorizer,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { TOOL_EFFECTS, type ToolEffect, type ToolSpec } from '../registry/tool.js';
import { createToolContext } from '../registry/tool-context.js';
import { AllowAllAuthorizer } from './authorizer.js';
import { firstDecisive, strictest } from './combinators.js';
import { RiskPolicy, type RiskPolicyOptions } from './risk-policy.js';

// The heuristic itself, counted: the policy should judge a tool once, not on every call.
const heuristicCalls = vi.hoisted(() => ({ count: 0 }));
vi.mock('@toolfence/tool-contract', async (importOriginal) => {
  const original = await importOriginal<typeof import('@toolfence/tool-contract')>();
  return {
    ...original,
    heuristicContract: (name: string, description?: string) => {
      heuristicCalls.count += 1;
      return original.heuristicContract(name, description);
    },
  };
});

function request(
  name: string,
  contract: ToolContract | undefined,
  effect: ToolEffect = 'unknown',
  description = '',
): AuthorizationRequest {
  const spec: ToolSpec = { name, description, inputSchema: { type: 'object' } };
  return {
    toolName: name,
    args: {},
    context: createToolContext({ runId: 'r' }),
    spec,
    contract,
    effect,
  };
}

const contract = (
  risk: ToolContract['risk'],
  contentTrust: ToolContract['contentTrust'] = 'trusted',
) => defineContract({ risk, contentTrust, idempotent: risk === 'read-only', version: '1.0.0' });

describe('RiskPolicy', () => {
  it.each([
    ['read-only', 'allow'],
    ['low-risk-write', 'ask'],
    ['destructive', 'ask'],
  ] as const)('by default decides declared %s as %s', (risk, verdict) => {
    expect(new RiskPolicy().authorize(request('t', contract(risk))).verdict).toBe(verdict);
  });

  it('applies configured thresholds: allow, ask, deny', () => {
    const policy = new RiskPolicy({
      risk: { allowUpTo: 'low-risk-write', askUpTo: 'external-publication' },
    });
    expect(policy.authorize(request('t', contract('low-risk-write'))).verdict).toBe('allow');
    expect(policy.authorize(request('t', contract('external-publication'))).verdict).toBe('ask');
    expect(policy.authorize(request('t', contract('paid-operation'))).verdict).toBe('deny');
  });

  it('takes the stricter of risk and content trust', () => {
    const policy = new RiskPolicy({
      contentTrust: { allowUpTo: 'untrusted', askUpTo: 'sensitive' },
    });
    expect(policy.authorize(request('t', contract('read-only', 'sensitive'))).verdict).toBe('ask');
    const decision = policy.authorize(
      request('t', contract('read-only', 'prompt-injection-prone')),
    );
    expect(decision.verdict).toBe('deny');
    expect(decision.reason).toContain('content trust');
  });

  it('uses the heuristic for undeclared tools, cautious when it cannot classify', () => {
    const policy = new RiskPolicy();
    expect(policy.authorize(request('get_weather', undefined)).verdict).toBe('allow');
    expect(policy.authorize(request('delete_repo', undefined)).verdict).toBe('ask');
    expect(policy.authorize(request('frobnicate', undefined)).reason).toBe(
      'heuristic risk high-risk-write',
    );
    expect(
      new RiskPolicy({ undeclared: 'deny' }).authorize(request('get_weather', undefined)).verdict,
    ).toBe('deny');
  });

  it('judges an undeclared tool once per name and description, not on every call', () => {
    const policy = new RiskPolicy();
    const before = heuristicCalls.count;
    for (let call = 0; call < 5; call += 1) {
      expect(policy.authorize(request('get_weather', undefined)).verdict).toBe('allow');
    }
    expect(heuristicCalls.count - before).toBe(1);
    // A tool replaced under the same name with another description is judged again.
    expect(
      policy.authorize(request('get_weather', undefined, 'unknown', 'Deletes the repository'))
        .verdict,
    ).toBe('ask');
    expect(heuristicCalls.count - before).toBe(2);
    // The memory is bounded: after 1024 other tools the first one is judged again.
    for (let tool = 0; tool < 1024; tool += 1) policy.authorize(request(`tool_${tool}`, undefined));
    const afterFill = heuristicCalls.count;
    policy.authorize(request('get_weather', undefined, 'unknown', 'Deletes the repository'));
    expect(heuristicCalls.count - afterFill).toBe(1);
  });

  it.each([
    ['get_weather', { destructiveHint: true }, 'ask', 'heuristic risk destructive'],
    ['get_weather', { readOnlyHint: false }, 'ask', 'heuristic risk low-risk-write'],
    ['get_weather', { readOnlyHint: true }, 'allow', 'heuristic risk read-only'],
    ['frobnicate', { readOnlyHint: true }, 'ask', 'heuristic risk high-risk-write'],
    ['drop-database', { readOnlyHint: true, title: 'Drop' }, 'ask', 'heuristic risk destructive'],
  ] as const)(
    'raises an undeclared %s by its hints %j (never lowers)',
    (name, annotations, verdict, reason) => {
      const policy = new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'destructive' } });
      const base = request(name, undefined);
      const decision = policy.authorize({ ...base, spec: { ...base.spec, annotations } });
      expect(decision).toMatchObject({ verdict, reason });
    },
  );

  it('judges a destructiveHint tool by the floor where a write is allowed', () => {
    const policy = new RiskPolicy({
      risk: { allowUpTo: 'high-risk-write', askUpTo: 'destructive' },
    });
    const base = request('start_process', undefined);
    expect(policy.authorize(base).verdict).toBe('allow');
    expect(
      policy.authorize({ ...base, spec: { ...base.spec, annotations: { destructiveHint: true } } }),
    ).toMatchObject({ verdict: 'ask', reason: 'heuristic risk destructive' });
  });

  it('lets operator overrides win, and a veto deny', () => {
    const policy = new RiskPolicy({
      overrides: {
        wiper: { risk: 'destructive', reason: 'it wipes' },
        banned: { veto: true },
        trusted_writer: { risk: 'read-only' },
      },
      risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' },
    });
    expect(policy.authorize(request('wiper', contract('read-only'))).verdict).toBe('deny');
    expect(policy.authorize(request('banned', contract('read-only')))).toEqual({
      verdict: 'deny',
      reason: 'vetoed by an operator override',
    });
    expect(policy.authorize(request('trusted_writer', undefined)).reason).toBe(
      'override risk read-only',
    );
    expect(() => new RiskPolicy({ overrides: { t: { risk: 'huge' as never } } })).toThrow(
      ConfigurationError,
    );
  });

  it('treats a read effect as read-only risk unless told not to', () => {
    expect(
      new RiskPolicy().authorize(request('http', contract('external-publication'), 'read')).verdict,
    ).toBe('allow');
    expect(
      new RiskPolicy({ readEffectIsReadOnly: false }).authorize(
        request('http', contract('external-publication'), 'read'),
      ).verdict,
    ).toBe('ask');
  });

  it.each([
    ['unknown risk level', { risk: { allowUpTo: 'safe' as never } }],
    ['ask below allow', { risk: { allowUpTo: 'destructive', askUpTo: 'read-only' } }],
    ['bad content trust', { contentTrust: { askUpTo: 'weird' as never } }],
    ['bad undeclared', { undeclared: 'allow' as never }],
    ['non-boolean readEffectIsReadOnly', { readEffectIsReadOnly: 1 as never }],
  ] as const)('rejects %s', (_label, options) => {
    expect(() => new RiskPolicy(options)).toThrow(ConfigurationError);
  });
});

describe('policy combinators', () => {
  const fixed = (verdict: 'allow' | 'deny' | 'ask'): Authorizer => ({
    authorize: () => permission(verdict, verdict),
  });
  const throwing: Authorizer = {
    authorize: () => {
      throw new Error('x');
    },
  };
  const req = request('t', undefined);

  it('firstDecisive returns the first allow or deny, passing over ask', async () => {
    expect(
      (await firstDecisive(fixed('ask'), fixed('allow'), fixed('deny')).authorize(req)).verdict,
    ).toBe('allow');
    expect((await firstDecisive(fixed('ask'), fixed('ask')).authorize(req)).verdict).toBe('ask');
    expect((await firstDecisive(throwing, fixed('allow')).authorize(req)).verdict).toBe('deny');
  });

  it('strictest returns deny over ask over allow', async () => {
    expect((await strictest(fixed('allow'), fixed('ask')).authorize(req)).verdict).toBe('ask');
    expect(
      (await strictest(fixed('allow'), fixed('deny'), fixed('ask')).authorize(req)).verdict,
    ).toBe('deny');
    expect((await strictest(fixed('allow'), throwing).authorize(req)).verdict).toBe('deny');
    expect((await strictest(fixed('allow')).authorize(req)).verdict).toBe('allow');
  });

  it('needs at least one authorizer', () => {
    expect(() => strictest()).toThrow(ConfigurationError);
    expect(() => firstDecisive({} as never)).toThrow(ConfigurationError);
  });
});

describe('effectiveContract (what the registry hands the flow guard)', () => {
  const declared = contract('low-risk-write');
  const policy = new RiskPolicy({
    overrides: {
      pr: { risk: 'external-publication', reason: 'publishes' },
      noted: { reason: 'only a note' },
      banned: { veto: true },
    },
  });

  it('is the override over the declaration, one object per declared contract', () => {
    const first = policy.effectiveContract(request('pr', declared));
    expect(first).toMatchObject({
      source: 'override',
      vetoed: false,
      contract: { risk: 'external-publication', contentTrust: 'trusted' },
    });
    expect(policy.effectiveContract(request('pr', declared))).toBe(first);
    // Undeclared: over the heuristic (same object for the same spec).
    const spec = request('pr', undefined);
    expect(policy.effectiveContract(spec)?.contract.risk).toBe('external-publication');
    expect(policy.effectiveContract(spec)).toBe(policy.effectiveContract(spec));
    expect(policy.effectiveContract(request('banned', declared))?.vetoed).toBe(true);
  });

  it('is undefined when no override of the tool sets a fact', () => {
    expect(policy.effectiveContract(request('other', declared))).toBeUndefined();
    expect(policy.effectiveContract(request('noted', declared))).toBeUndefined();
  });

  it('combinators: none without a part that gives one; the most cautious view otherwise', () => {
    const fixed: Authorizer = { authorize: () => permission('allow') };
    expect(strictest(fixed).effectiveContract).toBeUndefined();
    expect(firstDecisive(fixed, new AllowAllAuthorizer()).effectiveContract).toBeUndefined();
    const lowers = new RiskPolicy({ overrides: { t: { contentTrust: 'trusted' } } });
    const raises = new RiskPolicy({ overrides: { t: { risk: 'destructive' } } });
    const req = request('t', contract('read-only', 'prompt-injection-prone'));
    // One part with a view: its view, as it is.
    expect(strictest(lowers, fixed).effectiveContract?.(req)).toBe(lowers.effectiveContract(req));
    // Two views: the riskiest risk and the most cautious trust, the same object every call.
    const both = firstDecisive(lowers, raises);
    const merged = both.effectiveContract?.(req);
    expect(merged?.contract).toMatchObject({
      risk: 'destructive',
      contentTrust: 'prompt-injection-prone',
    });
    expect(both.effectiveContract?.(req)).toBe(merged);
    // A part without an override of the tool reads the declaration.
    expect(strictest(lowers, new RiskPolicy()).effectiveContract?.(req)?.contract).toMatchObject({
      risk: 'read-only',
      contentTrust: 'prompt-injection-prone',
    });
    expect(strictest(new RiskPolicy(), new RiskPolicy()).effectiveContract?.(req)).toBeUndefined();
  });
});

describe('RiskPolicy.mayAsk', () => {
  /** Every call of `name` a registry could make: each contract (or none) on every effect. */
  function anyCallAsks(policy: RiskPolicy, name: string): boolean {
    const contracts: (ToolContract | undefined)[] = [undefined];
    for (const risk of RISK_LEVELS) {
      for (const trust of CONTENT_TRUST_LEVELS) contracts.push(contract(risk, trust));
    }
    for (const declared of contracts) {
      for (const effect of TOOL_EFFECTS) {
        for (const description of ['', 'Deletes every file', 'Reads a note']) {
          if (policy.authorize(request(name, declared, effect, description)).verdict === 'ask') {
            return true;
          }
        }
      }
    }
    return false;
  }

  const noAskBand: RiskPolicyOptions = {
    risk: { allowUpTo: 'low-risk-write', askUpTo: 'low-risk-write' },
    contentTrust: { allowUpTo: 'untrusted', askUpTo: 'untrusted' },
  };
  it.each<[string, RiskPolicyOptions, boolean]>([
    ['the defaults (every write asks)', {}, true],
    ['no ask band on either scale', noAskBand, false],
    ['no ask band, but undeclared tools ask', { ...noAskBand, undeclared: 'ask' }, true],
    ['no ask band, undeclared tools denied', { ...noAskBand, undeclared: 'deny' }, false],
    ['an ask band on content trust only', { ...noAskBand, contentTrust: {} }, true],
    ['the tool vetoed by an override', { overrides: { t: { veto: true } } }, false],
    [
      'an override fixing both levels in the allow band',
      { overrides: { t: { risk: 'read-only', contentTrust: 'trusted' } } },
      false,
    ],
    [
      'an override fixing both levels, the risk in the ask band',
      { overrides: { t: { risk: 'destructive', contentTrust: 'trusted' } } },
      true,
    ],
    [
      'an override fixing the risk only (a declared content trust may ask)',
      { overrides: { t: { risk: 'read-only' } } },
      true,
    ],
    [
      'an override fixing both levels, with undeclared tools asking (no call is undeclared)',
      { undeclared: 'ask', overrides: { t: { risk: 'read-only', contentTrust: 'trusted' } } },
      false,
    ],
    [
      'an override with a reason only, with undeclared tools asking',
      { ...noAskBand, undeclared: 'ask', overrides: { t: { reason: 'reviewed' } } },
      true,
    ],
    ["another tool's veto", { overrides: { other: { veto: true } } }, true],
  ])('%s: mayAsk agrees with every call of the tool', (_name, options, expected) => {
    const policy = new RiskPolicy(options);
    const spec: ToolSpec = { name: 't', description: '', inputSchema: { type: 'object' } };
    expect(policy.mayAsk({ toolName: 't', spec })).toBe(expected);
    // Sound (false only when no call asks), and no coarser than the calls tried.
    expect(anyCallAsks(policy, 't')).toBe(expected);
  });
});

describe('policy combinators: mayAsk', () => {
  const spec: ToolSpec = { name: 't', description: '', inputSchema: { type: 'object' } };
  const tool = { toolName: 't', spec };
  const part = (mayAsk?: () => boolean): Authorizer => ({
    authorize: () => permission('allow'),
    ...(mayAsk === undefined ? {} : { mayAsk }),
  });
  const never = part(() => false);
  const may = part(() => true);
  const unknown = part();
  const throwing = part(() => {
    throw new Error('x');
  });
  const silentRisk = new RiskPolicy({
    risk: { allowUpTo: 'destructive', askUpTo: 'destructive' },
    contentTrust: { askUpTo: 'untrusted' },
  });
  it.each<[string, Authorizer, boolean]>([
    [
      'firstDecisive: one part never asks (it decides first or last)',
      firstDecisive(may, never),
      false,
    ],
    ['firstDecisive: every part may ask', firstDecisive(may, may), true],
    ['firstDecisive: parts without mayAsk count as may-ask', firstDecisive(unknown, unknown), true],
    ['firstDecisive: a throwing mayAsk counts as may-ask', firstDecisive(throwing, may), true],
    [
      'firstDecisive: RiskPolicy, then AllowAllAuthorizer',
      firstDecisive(new RiskPolicy(), new AllowAllAuthorizer()),
      false,
    ],
    ['strictest: no part asks', strictest(never, never), false],
    ['strictest: one part may ask', strictest(never, may), true],
    ['strictest: a part without mayAsk', strictest(never, unknown), true],
    ['strictest: a throwing mayAsk', strictest(never, throwing), true],
    [
      'strictest: a RiskPolicy without an ask band, and AllowAllAuthorizer',
      strictest(silentRisk, new AllowAllAuthorizer()),
      false,
    ],
    [
      'strictest: the default RiskPolicy, and AllowAllAuthorizer',
      strictest(new RiskPolicy(), new AllowAllAuthorizer()),
      true,
    ],
    [
      'nested: strictest of firstDecisive parts',
      strictest(firstDecisive(may, never), never),
      false,
    ],
  ])('%s: %s', (_name, authorizer, expected) => {
    expect(authorizer.mayAsk?.(tool)).toBe(expected);
  });

  it('never answers false where a call of the tool gets ask (fixed verdicts, every combination)', async () => {
    const verdicts = ['allow', 'deny', 'ask'] as const;
    const fixedPart = (verdict: (typeof verdicts)[number]): Authorizer => ({
      authorize: () => permission(verdict),
      mayAsk: () => verdict === 'ask',
    });
    const req = request('t', undefined);
    for (const first of verdicts) {
      for (const second of verdicts) {
        for (const combine of [firstDecisive, strictest]) {
          const combined = combine(fixedPart(first), fixedPart(second));
          const asks = (await combined.authorize(req)).verdict === 'ask';
          if (asks) expect(combined.mayAsk?.(tool)).toBe(true);
        }
      }
    }
  });
});
