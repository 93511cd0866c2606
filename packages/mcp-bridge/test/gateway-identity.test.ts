// A team behind `toolfence-mcp serve --http` with gateway.httpAuth: a real authorization server
// (oidc-provider, resource indicators on, JWT access tokens for the gateway's resource) issues
// tokens to two people in two groups; the real CLI gateway checks them, filters each person's
// listing by the policy's principal rules, refuses what their rules deny, writes who called into
// the audit log, and never forwards a caller's token to the upstream (a real SDK HTTP server).
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { verifyAuditLog } from '../src/gateway/audit-log.js';
import {
  freePort,
  legacyClient as legacyClientFor,
  modernClient as modernClientFor,
  personToken,
  startGatewayCli,
  startSdkUpstream,
  startTeamProvider,
  teamHttpAuth,
  resultTexts as text,
} from './fixtures/team-gateway.js';
import { closeServers, stopProcess } from './fixtures/teardown.js';

const PEOPLE = { alice: ['engineering'], bob: ['finance'] } as const;
type Person = keyof typeof PEOPLE;

let folder: string;
let gateway: ChildProcess;
let gatewayUrl: string;
let issuer: string;
const servers: Server[] = [];
/** Every header and body the upstream received, as text. */
const upstreamSaw: string[] = [];
const upstreamCalls: string[] = [];
const tokens = {} as Record<Person, string>;
let otherAudienceToken: string;

function startUpstream(): Promise<string> {
  return startSdkUpstream(
    servers,
    (mcp) => {
      for (const name of ['read_docs', 'deploy', 'payroll']) {
        mcp.registerTool(
          name,
          { description: `The ${name} tool.`, inputSchema: { target: z.string() } },
          async ({ target }) => {
            upstreamCalls.push(`${name}:${target}`);
            return { content: [{ type: 'text', text: `${name} ${target}` }] };
          },
        );
      }
      for (const name of ['standup', 'payslip']) {
        mcp.registerPrompt(name, { description: `The ${name} prompt.` }, async () => ({
          messages: [{ role: 'user', content: { type: 'text', text: name } }],
        }));
      }
      for (const [name, uri] of [
        ['handbook', 'docs://handbook'],
        ['salaries', 'hr://salaries'],
      ] as const) {
        mcp.registerResource(name, uri, { description: `The ${name}.` }, async () => ({
          contents: [{ uri, text: name }],
        }));
      }
    },
    (request, body) => {
      upstreamSaw.push(JSON.stringify(request.headers), body);
      return false;
    },
  );
}

async function startAuthorizationServer(resource: string): Promise<void> {
  // Each person's groups, as their identity provider would put them in the token.
  issuer = await startTeamProvider(servers, {
    resource,
    people: Object.keys(PEOPLE),
    groups: PEOPLE,
  });
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-identity-'));
  const upstream = await startUpstream();
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}/mcp`;
  await startAuthorizationServer(gatewayUrl);
  const config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: { team: { url: upstream, namespace: 'tm' } },
      gateway: {
        httpAuth: teamHttpAuth(gatewayUrl, issuer),
      },
    }),
  );
  const policy = join(folder, 'policy.json');
  await writeFile(
    policy,
    JSON.stringify({
      kind: 'rules',
      rules: [
        { tool: 'tm__read_docs', decision: 'allow' },
        {
          tool: 'tm__deploy',
          principal: { claims: { groups: 'engineering' } },
          decision: 'allow',
        },
        {
          tool: 'tm__payroll',
          principal: { claims: { groups: 'finance' } },
          decision: 'allow',
        },
        { tool: 'tm__prompt:standup', decision: 'allow' },
        { tool: 'tm__resource:docs://handbook', decision: 'allow' },
        {
          tool: 'tm__resource:hr://*',
          principal: { claims: { groups: 'finance' } },
          decision: 'allow',
        },
        { tool: 'tm__*', decision: 'deny', reason: 'not for your group' },
      ],
    }),
  );
  gateway = await startGatewayCli(config, policy, port);
  for (const person of Object.keys(PEOPLE) as Person[]) {
    tokens[person] = await personToken(issuer, person, gatewayUrl);
  }
  otherAudienceToken = await personToken(issuer, 'alice', 'https://other.example.com/mcp');
}, 120_000);

afterAll(async () => {
  if (gateway !== undefined) await stopProcess(gateway);
  await closeServers(servers);
  await rm(folder, { recursive: true, force: true });
});

async function modernClient(person: Person) {
  const client = await modernClientFor(gatewayUrl, tokens[person], `${person}-modern`);
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

async function legacyClient(person: Person) {
  const client = await legacyClientFor(gatewayUrl, tokens[person], `${person}-legacy`);
  return { client, transport: client.transport as TransportV1 };
}

describe('serve --http with gateway.httpAuth, two people in two groups', () => {
  it('serves RFC 9728 metadata and challenges a request without a token', async () => {
    const metadata = await fetch(
      `${new URL(gatewayUrl).origin}/.well-known/oauth-protected-resource/mcp`,
    );
    expect(await metadata.json()).toMatchObject({
      resource: gatewayUrl,
      authorization_servers: [issuer],
      scopes_supported: ['mcp:tools'],
    });
    const bare = await fetch(gatewayUrl, { method: 'POST', body: '{}' });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toContain(
      `resource_metadata="${new URL(gatewayUrl).origin}/.well-known/oauth-protected-resource/mcp"`,
    );
    const wrongAudience = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${otherAudienceToken}` },
      body: '{}',
    });
    expect(wrongAudience.status).toBe(401);
    expect(wrongAudience.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('shows each person only what they may call, in 2026-07-28 (SDK v2) and 2025-11-25 (SDK 1.x)', async () => {
    const expected: Record<Person, string[]> = {
      alice: ['tm__deploy', 'tm__read_docs'],
      bob: ['tm__payroll', 'tm__read_docs'],
    };
    for (const person of Object.keys(PEOPLE) as Person[]) {
      const modern = await modernClient(person);
      const modernListing = await modern.listTools();
      // A listing filtered for this caller is never marked for shared caches.
      expect((modernListing as { cacheScope?: unknown }).cacheScope).toBe('private');
      const modernNames = modernListing.tools.map((tool) => tool.name).sort();
      await modern.close();
      const { client: legacy } = await legacyClient(person);
      const legacyNames = (await legacy.listTools()).tools.map((tool) => tool.name).sort();
      await legacy.close();
      expect({ person, modernNames, legacyNames }).toEqual({
        person,
        modernNames: expected[person],
        legacyNames: expected[person],
      });
    }
  }, 60_000);

  it('lists only the prompts and resources each person may get or read', async () => {
    const seen: Record<string, unknown> = {};
    for (const person of Object.keys(PEOPLE) as Person[]) {
      const modern = await modernClient(person);
      seen[person] = {
        prompts: (await modern.listPrompts()).prompts.map((prompt) => prompt.name).sort(),
        resources: (await modern.listResources()).resources.map((resource) => resource.uri).sort(),
      };
      await modern.close();
    }
    expect(seen).toEqual({
      alice: { prompts: ['tm__standup'], resources: ['docs://handbook'] },
      bob: { prompts: ['tm__standup'], resources: ['docs://handbook', 'hr://salaries'] },
    });
    const { client: alice } = await legacyClient('alice');
    await expect(alice.readResource({ uri: 'hr://salaries' })).rejects.toThrow(/denied/);
    await alice.close();
  }, 60_000);

  it('runs what a person may call and refuses, saying why, what they may not', async () => {
    const alice = await modernClient('alice');
    expect(text(await alice.callTool({ name: 'tm__deploy', arguments: { target: 'prod' } }))).toBe(
      'deploy prod',
    );
    const refused = await alice.callTool({ name: 'tm__payroll', arguments: { target: 'all' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain("denied by the gateway's policy (not for your group)");
    await alice.close();
    const { client: bob } = await legacyClient('bob');
    expect(text(await bob.callTool({ name: 'tm__payroll', arguments: { target: 'march' } }))).toBe(
      'payroll march',
    );
    const denied = await bob.callTool({ name: 'tm__deploy', arguments: { target: 'prod' } });
    expect(denied.isError).toBe(true);
    await bob.close();
    expect(upstreamCalls).toEqual(['deploy:prod', 'payroll:march']);
  }, 60_000);

  it.each([
    ['a listing', { jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }],
    // A plain call is served on the HTTP front's fast path (issue 41): the same owner check.
    [
      'a plain tools/call',
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'tm__deploy', arguments: {} },
      },
    ],
  ])(
    "does not let one person use another's legacy session: %s",
    async (_name, message) => {
      const { client, transport } = await legacyClient('alice');
      const session = transport.sessionId as string;
      const hijack = await fetch(gatewayUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.bob}`,
          'mcp-session-id': session,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify(message),
      });
      expect(hijack.status).toBe(404);
      expect(await hijack.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32001, message: 'Session not found' },
        id: null,
      });
      await client.close();
    },
    60_000,
  );

  it('writes who called into the audit log (issuer and subject, never the token), chain intact', async () => {
    const path = join(folder, 'toolfence-audit.jsonl');
    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const calls = lines
      .filter((line) => line.outcome !== 'started' && line.kind === undefined)
      .map((line) => [line.tool, (line.principal as { subject?: string }).subject, line.outcome]);
    expect(calls).toEqual([
      ['tm__deploy', 'alice', 'ok'],
      ['tm__payroll', 'alice', 'denied'],
      ['tm__payroll', 'bob', 'ok'],
      ['tm__deploy', 'bob', 'denied'],
    ]);
    for (const line of lines) expect(line.principal).toMatchObject({ issuer });
    expect(lines.filter((line) => line.kind === 'resource')).toMatchObject([
      { tool: 'tm__resource:hr://salaries', outcome: 'denied', principal: { subject: 'alice' } },
    ]);
    const raw = await readFile(path, 'utf8');
    for (const token of Object.values(tokens)) expect(raw).not.toContain(token);
    expect((await verifyAuditLog(path)).ok).toBe(true);
  });

  it("never passes a caller's token to the upstream", () => {
    expect(upstreamSaw.length).toBeGreaterThan(0);
    const seen = upstreamSaw.join('\n');
    for (const token of Object.values(tokens)) {
      expect(seen).not.toContain(token);
      // Not even a piece of it (the signature part).
      expect(seen).not.toContain(token.split('.')[2] as string);
    }
    expect(seen.toLowerCase()).not.toContain('"authorization"');
  });
});
