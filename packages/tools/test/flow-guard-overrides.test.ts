// Operator overrides reach the flow guard: RiskPolicy's `overrides` (directly and inside the
// combinators) through the registry, and the guard's own `overrides` option for other setups.
// Real registry, real tools, and a real HttpTool against a loopback server.
import { type ContractOverride, defineContract, type ToolContract } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { HttpTool } from '../src/builtin/http-tool.js';
import { type AllowNonPublic, createGuardedDispatcher } from '../src/net/index.js';
import { AllowAllAuthorizer } from '../src/policy/authorizer.js';
import { firstDecisive, strictest } from '../src/policy/combinators.js';
import { FlowGuard, type FlowGuardOptions } from '../src/policy/flow-guard.js';
import { RiskPolicy } from '../src/policy/risk-policy.js';
import { RuleBasedPolicy } from '../src/policy/rule-based-policy.js';
import { ApprovalRequiredError } from '../src/registry/approval-required-error.js';
import type { Authorizer } from '../src/registry/authorization.js';
import { ConfigurationError } from '../src/registry/configuration-error.js';
import { defineTool } from '../src/registry/define-tool.js';
import { PermissionDeniedError } from '../src/registry/permission-denied-error.js';
import { type Tool, textResult } from '../src/registry/tool.js';
import { ToolRegistry } from '../src/registry/tool-registry.js';
import { type LoopbackServer, startHttpServer } from './net-helpers.js';

/** The three GitHub-style tools, all falsely declaring themselves trusted and harmless. */
function lyingTools(log: string[]): Tool[] {
  const tool = (name: string, contract: ToolContract): Tool =>
    defineTool({
      name,
      description: name,
      input: { type: 'object' },
      contract,
      run: () => {
        log.push(name);
        return textResult(`${name} ran`);
      },
    });
  return [
    tool('get_issue', defineContract({ risk: 'read-only', contentTrust: 'trusted' })),
    tool('get_file_contents', defineContract({ risk: 'read-only', contentTrust: 'trusted' })),
    tool('open_pull_request', defineContract({ risk: 'low-risk-write', contentTrust: 'trusted' })),
  ];
}

/** The operator's corrections of the lying server. */
const CORRECTIONS: Readonly<Record<string, ContractOverride>> = {
  get_issue: { contentTrust: 'prompt-injection-prone', reason: 'public issues' },
  get_file_contents: { contentTrust: 'sensitive', reason: 'private repository' },
  open_pull_request: { risk: 'external-publication', reason: 'publishes' },
};

/** The user "always allows" the three tools. */
const permissive = (overrides?: Record<string, ContractOverride>): RiskPolicy =>
  new RiskPolicy({
    risk: { allowUpTo: 'external-publication' },
    contentTrust: { allowUpTo: 'prompt-injection-prone' },
    ...(overrides === undefined ? {} : { overrides }),
  });

const allowRules = (): RuleBasedPolicy =>
  new RuleBasedPolicy([{ tool: '*', decision: 'allow' }], { default: 'deny' });

async function toxicFlow(
  authorizer: Authorizer,
  guard: FlowGuardOptions = {},
): Promise<{ error: unknown; log: string[]; preview: unknown }> {
  const log: string[] = [];
  const registry = new ToolRegistry({
    authorizer,
    tools: lyingTools(log),
    flowGuard: new FlowGuard(guard),
  });
  const context = { runId: 'r1', session: 'c1' };
  try {
    await registry.invoke('get_issue', {}, context);
    await registry.invoke('get_file_contents', {}, context);
    const preview = await registry.authorize('open_pull_request', {}, context);
    const error = await registry
      .invoke('open_pull_request', {}, context)
      .then(() => undefined)
      .catch((caught: unknown) => caught);
    return { error, log, preview };
  } finally {
    await registry.close();
  }
}

function expectFlowDenied(outcome: Awaited<ReturnType<typeof toxicFlow>>): void {
  expect(PermissionDeniedError.isInstance(outcome.error)).toBe(true);
  const details = (outcome.error as PermissionDeniedError).details as Record<string, unknown>;
  expect(details.reason).toBe('flow-guard');
  expect(details.flow).toMatchObject({
    verdict: 'deny',
    sink: { tool: 'open_pull_request', risk: 'external-publication', basis: 'configured' },
    labels: {
      exposedBy: [{ tool: 'get_issue', trust: 'prompt-injection-prone', basis: 'configured' }],
      privateFrom: [{ tool: 'get_file_contents', trust: 'sensitive', basis: 'configured' }],
    },
  });
  expect((outcome.error as PermissionDeniedError).message).toContain(
    '"open_pull_request" can publish or send data outside and could leak it',
  );
  expect(outcome.preview).toMatchObject({ verdict: 'deny', flow: { verdict: 'deny' } });
  expect(outcome.log).toEqual(['get_issue', 'get_file_contents']);
}

describe('RiskPolicy overrides reach the flow guard through the registry', () => {
  it('denies the toxic flow the overrides describe (the declarations alone describe none)', async () => {
    expectFlowDenied(await toxicFlow(permissive(CORRECTIONS)));
    // Without the overrides the tools are what they declare: nothing to raise.
    const plain = await toxicFlow(permissive());
    expect(plain.error).toBeUndefined();
    expect(plain.log).toEqual(['get_issue', 'get_file_contents', 'open_pull_request']);
  });

  it.each([
    [
      'strictest(RiskPolicy, RuleBasedPolicy)',
      () => strictest(permissive(CORRECTIONS), allowRules()),
    ],
    [
      'strictest(RuleBasedPolicy, RiskPolicy)',
      () => strictest(allowRules(), permissive(CORRECTIONS)),
    ],
    [
      'firstDecisive(RiskPolicy, RuleBasedPolicy)',
      () => firstDecisive(permissive(CORRECTIONS), allowRules()),
    ],
    [
      'firstDecisive(asking rules, RiskPolicy)',
      () => firstDecisive(new RuleBasedPolicy([], { default: 'ask' }), permissive(CORRECTIONS)),
    ],
    [
      'nested strictest(firstDecisive(RiskPolicy))',
      () => strictest(firstDecisive(permissive(CORRECTIONS)), allowRules()),
    ],
  ])('denies it inside %s', async (_label, make) => {
    expectFlowDenied(await toxicFlow(make()));
  });

  it('takes the most cautious view when parts disagree, a part without an override reading the declaration', async () => {
    // One part vouches for the issue tracker; the other has no override and reads the
    // declaration (prompt-injection-prone): the guard keeps the session exposed.
    const log: string[] = [];
    const declaredTools = [
      defineTool({
        name: 'get_issue',
        description: 'get_issue',
        input: { type: 'object' },
        contract: defineContract({ risk: 'read-only', contentTrust: 'prompt-injection-prone' }),
        run: () => textResult('issue'),
      }),
      defineTool({
        name: 'publish',
        description: 'publish',
        input: { type: 'object' },
        contract: defineContract({ risk: 'external-publication', contentTrust: 'trusted' }),
        run: () => {
          log.push('publish');
          return textResult('published');
        },
      }),
    ];
    const vouching = permissive({ get_issue: { contentTrust: 'trusted' } });
    for (const [authorizer, raised] of [
      [vouching, false],
      [strictest(vouching, permissive()), true],
    ] as const) {
      const registry = new ToolRegistry({
        authorizer,
        tools: declaredTools,
        flowGuard: new FlowGuard(),
      });
      const context = { runId: 'r', session: 's' };
      try {
        await registry.invoke('get_issue', {}, context);
        const answer = await registry.authorize('publish', {}, context);
        expect(answer.verdict).toBe(raised ? 'ask' : 'allow');
      } finally {
        await registry.close();
      }
    }
  });

  it('an override that lowers (the operator vouches for a tool) is seen by the guard as by the policy', async () => {
    const log: string[] = [];
    const registry = new ToolRegistry({
      authorizer: permissive({
        get_issue: { contentTrust: 'trusted', reason: 'our own tracker' },
        open_pull_request: { risk: 'external-publication' },
      }),
      tools: [
        defineTool({
          name: 'get_issue',
          description: 'get_issue',
          input: { type: 'object' },
          contract: defineContract({ risk: 'read-only', contentTrust: 'prompt-injection-prone' }),
          run: () => textResult('issue'),
        }),
        ...lyingTools(log).slice(2),
      ],
      flowGuard: new FlowGuard(),
    });
    const context = { runId: 'r', session: 's' };
    try {
      await registry.invoke('get_issue', {}, context);
      await registry.invoke('open_pull_request', {}, context);
      expect(log).toEqual(['open_pull_request']);
    } finally {
      await registry.close();
    }
  });

  it('a RiskPolicy override marks the HttpTool prompt-injection-prone read and its POST sink as configured', async () => {
    // An operator who trusts the API host's content but still treats its POSTs as publication.
    const approve: AllowNonPublic = (_target, address) => address.range === 'loopback';
    const server: LoopbackServer = await startHttpServer((_incoming, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('ok');
    });
    const registry = new ToolRegistry({
      authorizer: permissive({ http: { contentTrust: 'trusted', reason: 'our own API' } }),
      tools: [
        new HttpTool({
          allowedHosts: ['127.0.0.1'],
          allowedMethods: ['GET', 'POST'],
          requireHttps: false,
          allowedPorts: 'any',
          dispatcher: createGuardedDispatcher({ allowNonPublic: approve }),
        }),
        ...lyingTools([]).slice(0, 1),
      ],
      flowGuard: new FlowGuard({ untrusted: ['get_issue'] }),
    });
    const context = { runId: 'r', session: 's' };
    try {
      // The vouched-for GET does not expose the session: the POST after it runs.
      await registry.invoke('http', { url: `${server.origin}/a` }, context);
      await registry.invoke(
        'http',
        { url: `${server.origin}/b`, method: 'POST', body: 'x' },
        context,
      );
      // After an untrusted read it is still a sink (by its per-method risk): asked about.
      await registry.invoke('get_issue', {}, context);
      const error = await registry
        .invoke('http', { url: `${server.origin}/c`, method: 'POST', body: 'y' }, context)
        .catch((caught) => caught);
      expect(ApprovalRequiredError.isInstance(error)).toBe(true);
      expect(server.seen.map((seen) => `${seen.method} ${seen.url}`)).toEqual([
        'GET /a',
        'POST /b',
      ]);
    } finally {
      await registry.close();
      await server.close();
    }
  }, 60_000);

  it('fails closed when the authorizer cannot give its effective contract', async () => {
    for (const answer of [
      () => {
        throw new Error('boom');
      },
      () => ({ contract: { risk: 'nonsense', contentTrust: 'trusted' } }),
    ]) {
      const log: string[] = [];
      const registry = new ToolRegistry({
        authorizer: {
          authorize: () => ({ verdict: 'allow' }),
          effectiveContract: answer as unknown as NonNullable<Authorizer['effectiveContract']>,
        },
        tools: lyingTools(log),
        flowGuard: new FlowGuard(),
      });
      try {
        const error = await registry
          .invoke('get_issue', {}, { runId: 'r' })
          .catch((caught) => caught);
        expect((error as PermissionDeniedError).details).toMatchObject({
          reason: 'flow-guard-error',
        });
        expect(log).toEqual([]);
      } finally {
        await registry.close();
      }
    }
  });
});

describe('FlowGuard overrides option', () => {
  it('denies the toxic flow under a policy that has no contracts (AllowAllAuthorizer, rules)', async () => {
    expectFlowDenied(await toxicFlow(new AllowAllAuthorizer(), { overrides: CORRECTIONS }));
    expectFlowDenied(await toxicFlow(allowRules(), { overrides: CORRECTIONS }));
  });

  it('accepts the object RiskPolicy takes; the same corrections in both judge alike', async () => {
    expectFlowDenied(await toxicFlow(permissive(CORRECTIONS), { overrides: CORRECTIONS }));
  });

  it('wins over the authorizer effective contract', async () => {
    // The policy's override says the issue tracker is trusted; the guard's own says otherwise.
    const outcome = await toxicFlow(
      permissive({ ...CORRECTIONS, get_issue: { contentTrust: 'trusted' } }),
      { overrides: { get_issue: { contentTrust: 'untrusted' } } },
    );
    expect(PermissionDeniedError.isInstance(outcome.error)).toBe(true);
    expect(
      ((outcome.error as PermissionDeniedError).details as { flow: unknown }).flow,
    ).toMatchObject({
      labels: { exposedBy: [{ tool: 'get_issue', trust: 'untrusted', basis: 'configured' }] },
    });
  });

  it('denies every call of a tool it vetoes, in any session', async () => {
    const log: string[] = [];
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      tools: lyingTools(log),
      flowGuard: new FlowGuard({ overrides: { open_pull_request: { veto: true, reason: 'no' } } }),
    });
    try {
      const error = await registry
        .invoke('open_pull_request', {}, { runId: 'r', session: 'clean' })
        .catch((caught) => caught);
      expect(PermissionDeniedError.isInstance(error)).toBe(true);
      expect((error as PermissionDeniedError).message).toContain(
        '"open_pull_request" is vetoed by an operator override',
      );
      await registry.invoke('get_issue', {}, { runId: 'r', session: 'clean' });
      expect(log).toEqual(['get_issue']);
    } finally {
      await registry.close();
    }
  });

  it.each([
    ['not an object', 'x', 'overrides'],
    ['an array', [], 'overrides'],
    ['an unknown override key', { get_issue: { trust: 'untrusted' } }, 'overrides.get_issue'],
    ['a bad level', { get_issue: { contentTrust: 'evil' } }, 'overrides.get_issue'],
  ])('refuses %s', (_label, overrides, option) => {
    const error = (() => {
      try {
        new FlowGuard({ overrides } as unknown as FlowGuardOptions);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as ConfigurationError).details).toMatchObject({ option });
  });

  it('still refuses unknown option keys', () => {
    expect(() => new FlowGuard({ override: {} } as unknown as FlowGuardOptions)).toThrow(
      ConfigurationError,
    );
  });
});
