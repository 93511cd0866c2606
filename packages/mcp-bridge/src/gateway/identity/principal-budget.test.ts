// gateway.budget.perPrincipal: one counter per caller (issuer and subject), beside the others.
import { createToolContext, type JsonObject, type Principal } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import { gatewayBudget } from '../gateway-budget.js';
import { parseGatewayConfig } from '../gateway-config.js';

const person = (subject: string, issuer = 'https://login.example.com'): Principal => ({
  issuer,
  subject,
  claims: {},
});

function request(principal?: Principal) {
  return {
    toolName: 'tm__deploy',
    args: {},
    context: createToolContext({
      runId: 'r',
      ...(principal === undefined
        ? {}
        : { metadata: { principal: principal as unknown as JsonObject } }),
    }),
  };
}

describe('gateway.budget.perPrincipal', () => {
  it('counts each caller apart: one used up leaves the others', async () => {
    const { budget } = parseGatewayConfig({
      mcpServers: { a: { command: 'node' } },
      gateway: { budget: { perPrincipal: { maxCalls: 1 } } },
    }).gateway;
    const { reserver } = await gatewayBudget(budget ?? {}, () => 'team');
    (await reserver.reserve(request(person('alice')))).settle(true);
    await expect(async () => reserver.reserve(request(person('alice')))).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
    });
    // The same subject at another issuer is another person.
    (await reserver.reserve(request(person('alice', 'https://other.example.com')))).settle(true);
    (await reserver.reserve(request(person('bob')))).settle(true);
    // Calls without identity share one counter.
    (await reserver.reserve(request())).settle(true);
    await expect(async () => reserver.reserve(request())).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
    });
  });

  it('refuses an unknown limit key', () => {
    expect(() =>
      parseGatewayConfig({
        mcpServers: { a: { command: 'node' } },
        gateway: { budget: { perPrincipal: { calls: 1 } } },
      }),
    ).toThrow(/gateway\.budget\.perPrincipal: unknown key "calls"/);
  });
});
