// A person's claims are read whole or not at all (red-team, team features): the real CLI gateway
// with gateway.httpAuth and a real authorization server (oidc-provider) issuing each person's
// groups. A deny rule on a group holds for a person with many groups (the 65th value of `groups`
// was cut, so the deny missed and the call ran); a token whose kept claim is over the limits
// (`principalClaimMaxValues`, `principalClaimMaxChars`) is refused with a reason naming the
// setting, never read in part; the limits are settings.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startServeHttp } from './fixtures/serve-http.js';
import {
  freePort,
  legacyClient,
  personToken,
  startGatewayCli,
  startSdkUpstream,
  startTeamProvider,
  teamHttpAuth,
  resultTexts as text,
} from './fixtures/team-gateway.js';
import { closeServers, stopProcess } from './fixtures/teardown.js';

const teams = (count: number) => Array.from({ length: count }, (_, index) => `team-${index}`);
const GROUPS: Readonly<Record<string, readonly string[]>> = {
  carol: ['contractors'],
  // 64 other groups, then the one the deny rule names (the 65th value).
  dave: [...teams(64), 'contractors'],
  // Over the default 256 values.
  ivan: [...teams(300), 'contractors'],
  // A value over the default 256 characters beside the group the rule names.
  erin: ['x'.repeat(300), 'contractors'],
  sam: ['staff'],
};

let folder: string;
const servers: Server[] = [];
const gateways: ChildProcess[] = [];
const upstreamCalls: string[] = [];
let issuer: string;
let upstream: string;

const POLICY = {
  kind: 'rules',
  rules: [
    {
      tool: 'tm__payroll',
      principal: { claims: { groups: 'contractors' } },
      decision: 'deny',
      reason: 'contractors never see payroll',
    },
    { tool: 'tm__*', decision: 'allow' },
  ],
};

/** The files of a gateway with `httpAuth` extra settings and `policy`, and its port and URL. */
async function gatewayFiles(extra: Record<string, unknown>, policyRules: unknown = POLICY) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const name = `g${port}`;
  const config = join(folder, `${name}.json`);
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: { team: { url: upstream, namespace: 'tm' } },
      gateway: {
        httpAuth: { ...teamHttpAuth(url, issuer), ...extra },
        audit: join(folder, `${name}-audit.jsonl`),
        pins: join(folder, `${name}.lock.json`),
      },
    }),
  );
  const policy = join(folder, `${name}-policy.json`);
  await writeFile(policy, JSON.stringify(policyRules));
  return { port, url, config, policy };
}

/** A gateway with `httpAuth` extra settings; resolves with its URL. */
async function gateway(extra: Record<string, unknown>, policyRules: unknown = POLICY) {
  const { port, url, config, policy } = await gatewayFiles(extra, policyRules);
  gateways.push(await startGatewayCli(config, policy, port));
  return url;
}

let defaults: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-principal-claims-'));
  upstream = await startSdkUpstream(servers, (mcp) => {
    for (const name of ['payroll', 'wipe']) {
      mcp.registerTool(
        name,
        { description: `The ${name} tool.`, inputSchema: { target: z.string() } },
        async ({ target }) => {
          upstreamCalls.push(`${name}:${target}`);
          return { content: [{ type: 'text', text: `${name} ${target}` }] };
        },
      );
    }
  });
  // Tokens are for any resource the client asks (each gateway's own URL).
  issuer = await startTeamProvider(servers, {
    resource: 'http://127.0.0.1/unused',
    people: [...Object.keys(GROUPS), 'frank'],
    groups: GROUPS,
    claims: { frank: { department: 'sales' } },
  });
  defaults = await gateway({});
}, 120_000);

afterAll(async () => {
  for (const child of gateways) await stopProcess(child);
  await closeServers(servers);
  await rm(folder, { recursive: true, force: true });
});

/** What `person` sees and gets at `url`: `tool` (default payroll) listed, and the call's text. */
async function payroll(url: string, person: string, tool = 'payroll') {
  const client = await legacyClient(url, await personToken(issuer, person, url), person);
  try {
    const listed = (await client.listTools()).tools.map((tool) => tool.name);
    const result = await client.callTool({ name: `tm__${tool}`, arguments: { target: person } });
    return { listed: listed.includes(`tm__${tool}`), text: text(result) };
  } finally {
    await client.close();
  }
}

/** The answer to an initialize with `person`'s token at `url`. */
async function initialize(url: string, person: string) {
  const answer = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${await personToken(issuer, person, url)}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: person, version: '1' },
      },
    }),
  });
  return {
    status: answer.status,
    challenge: answer.headers.get('www-authenticate') ?? '',
    body: (await answer.json()) as Record<string, unknown>,
  };
}

describe("a person's claims are read whole or the token is refused", () => {
  it('a deny on a group holds for a person whose group is the 65th value of groups', async () => {
    const denied = 'denied by the gateway';
    expect(await payroll(defaults, 'carol')).toMatchObject({ listed: false });
    const dave = await payroll(defaults, 'dave');
    expect(dave.listed).toBe(false);
    expect(dave.text).toContain(denied);
    expect((await payroll(defaults, 'sam')).text).toBe('payroll sam');
    expect(upstreamCalls).toEqual(['payroll:sam']);
  }, 60_000);

  it.each([
    ['ivan', 'holds 301 values, more than the 256', 'principalClaimMaxValues'],
    ['erin', 'holds a value over 256 characters', 'principalClaimMaxChars'],
  ])(
    'refuses %s, over a limit, with 401 naming the limit and its setting',
    async (person, says, setting) => {
      const answer = await initialize(defaults, person);
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ error: 'invalid_token', code: 'GATEWAY_TOKEN_REFUSED' });
      expect(answer.body.error_description).toContain(`"groups" claim ${says}`);
      expect(answer.body.error_description).toContain(`gateway.httpAuth.${setting}`);
      expect(answer.challenge).toContain('error="invalid_token"');
      expect(answer.challenge).toContain(setting);
    },
    60_000,
  );

  it('with the limits raised in the config, the same people are read whole and the deny holds', async () => {
    const raised = await gateway({
      principalClaimMaxValues: 400,
      principalClaimMaxChars: 512,
    });
    for (const person of ['ivan', 'erin']) {
      const seen = await payroll(raised, person);
      expect(seen.listed).toBe(false);
      expect(seen.text).toContain('contractors never see payroll');
    }
    expect((await payroll(raised, 'sam')).text).toBe('payroll sam');
    expect(upstreamCalls).toEqual(['payroll:sam', 'payroll:sam']);
  }, 60_000);
});

/** A deny on `department: sales` for wipe, then allow. */
const DEPARTMENT_POLICY = {
  kind: 'rules',
  rules: [
    {
      tool: 'tm__wipe',
      principal: { claims: { department: 'sales' } },
      decision: 'deny',
      reason: 'sales may not wipe',
    },
    { tool: 'tm__*', decision: 'allow' },
  ],
};

describe('a rule reading a claim the principal does not keep is refused, not silently dead', () => {
  it('at start: the gateway does not start, naming the rule, the claim and the setting', async () => {
    const { port, config, policy } = await gatewayFiles({}, DEPARTMENT_POLICY);
    const started = startServeHttp([
      '--config',
      config,
      '--policy',
      policy,
      '--http',
      `127.0.0.1:${port}`,
    ]);
    const failure = await started.then(
      (served) => {
        gateways.push(served.child);
        return 'started';
      },
      (error: Error) => error.message,
    );
    expect(failure).toContain('rules[0].principal.claims names the claim "department"');
    expect(failure).toContain('add it to gateway.httpAuth.principalClaims');
    expect(failure).toContain('POLICY_FILE_INVALID');
  }, 60_000);

  it('with the claim kept (principalClaims), the deny holds for the person who carries it', async () => {
    const url = await gateway({ principalClaims: ['groups', 'department'] }, DEPARTMENT_POLICY);
    const frank = await payroll(url, 'frank', 'wipe');
    expect(frank.listed).toBe(false);
    expect(frank.text).toContain('sales may not wipe');
    expect((await payroll(url, 'sam', 'wipe')).text).toBe('wipe sam');
  }, 60_000);

  it('at reload: the new policy is refused, saying why, and the running one stays', async () => {
    const { port, url, config, policy } = await gatewayFiles({});
    const served = await startServeHttp([
      '--config',
      config,
      '--policy',
      policy,
      '--http',
      `127.0.0.1:${port}`,
    ]);
    gateways.push(served.child);
    await writeFile(policy, JSON.stringify(DEPARTMENT_POLICY));
    served.child.kill('SIGHUP');
    const deadline = Date.now() + 20_000;
    while (!/reload refused/.test(served.stderr()) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(served.stderr()).toMatch(
      /reload refused, the running config stays: .*rules\[0\]\.principal\.claims names the claim "department".*gateway\.httpAuth\.principalClaims/,
    );
    // The running policy (a deny on contractors' payroll, wipe allowed) is still the one in force.
    expect((await payroll(url, 'carol')).listed).toBe(false);
    expect((await payroll(url, 'frank', 'wipe')).text).toBe('wipe frank');
  }, 60_000);
});

/** An allow of wipe for the subject sam, without an issuer, then deny. */
const SUBJECT_POLICY = {
  kind: 'rules',
  rules: [
    { tool: 'tm__wipe', principal: { subject: 'sam' }, decision: 'allow' },
    { tool: 'tm__*', decision: 'deny' },
  ],
};

describe('with two trusted issuers, an allow rule on a subject or claim must name its issuer', () => {
  /** The second trusted issuer: never reached (the policy is judged before any token). */
  const other = 'http://127.0.0.1:9/other-issuer';

  it('at start: the gateway does not start, naming the rule, both issuers and the fix', async () => {
    const { port, config, policy } = await gatewayFiles(
      { authorizationServers: [issuer, other] },
      SUBJECT_POLICY,
    );
    const failure = await startServeHttp([
      '--config',
      config,
      '--policy',
      policy,
      '--http',
      `127.0.0.1:${port}`,
    ]).then(
      (served) => {
        gateways.push(served.child);
        return 'started';
      },
      (error: Error) => error.message,
    );
    expect(failure).toContain(
      'rules[0] (tool "tm__wipe"), decision allow, matches principal.subject without principal.issuer',
    );
    expect(failure).toContain(`trusts 2 issuers (${issuer}, ${other})`);
    expect(failure).toContain('Add "issuer" to the rule');
    expect(failure).toContain('POLICY_FILE_INVALID');
  }, 60_000);

  it('at reload: refused, and the running policy (the rule with its issuer) stays', async () => {
    const withIssuer = {
      kind: 'rules',
      rules: [
        { tool: 'tm__wipe', principal: { subject: 'sam', issuer }, decision: 'allow' },
        { tool: 'tm__*', decision: 'deny' },
      ],
    };
    const { port, url, config, policy } = await gatewayFiles(
      { authorizationServers: [issuer, other] },
      withIssuer,
    );
    const served = await startServeHttp([
      '--config',
      config,
      '--policy',
      policy,
      '--http',
      `127.0.0.1:${port}`,
    ]);
    gateways.push(served.child);
    expect((await payroll(url, 'sam', 'wipe')).text).toBe('wipe sam');
    await writeFile(policy, JSON.stringify(SUBJECT_POLICY));
    served.child.kill('SIGHUP');
    const deadline = Date.now() + 20_000;
    while (!/reload refused/.test(served.stderr()) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(served.stderr()).toMatch(
      /reload refused, the running config stays: .*rules\[0\] \(tool "tm__wipe"\), decision allow, matches principal\.subject without principal\.issuer/,
    );
    expect((await payroll(url, 'sam', 'wipe')).text).toBe('wipe sam');
  }, 60_000);
});
