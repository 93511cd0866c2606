// The team gateway end to end (issue 39's proof): a real authorization server (oidc-provider,
// resource indicators so `aud` is the gateway, the RFC 8693 token-exchange grant) issues tokens to
// two people in two groups; two real `toolfence-mcp serve --http` replicas (same config, same
// TOOLFENCE_SEAL_KEY, PostgreSQL pins and a Redis approval store shared) sit behind a round-robin
// proxy; an SDK upstream over HTTP with `credentials` token exchange records what it receives. The
// SDK v2 client (2026-07-28) and the SDK 1.x client (2025-11-25) use it as alice and bob.
// Everything runs on 127.0.0.1.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modernToolCaller } from './fixtures/modern-call.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';
import { type RoundRobinProxy, startRoundRobinProxy } from './fixtures/round-robin-proxy.js';
import {
  freePort,
  legacyClient,
  modernClient,
  personToken,
  startGatewayCli,
  startSdkUpstream,
  startTeamProvider,
  teamHttpAuth,
  resultTexts as text,
} from './fixtures/team-gateway.js';
import { closeServers, stopProcess } from './fixtures/teardown.js';

const GROUPS = { alice: ['engineering'], bob: ['finance'] } as const;
type Person = keyof typeof GROUPS;
const PEOPLE = Object.keys(GROUPS) as Person[];
const EXCHANGE_CLIENT = { id: 'toolfence-gateway', secret: 'gateway-exchange-secret-0123456789' };
const SEAL_KEY = randomBytes(32).toString('hex');
const MODERN = '2026-07-28';

let postgres: PostgresServer;
let redis: RedisServer;
let folder: string;
let proxy: RoundRobinProxy;
let issuer: string;
let upstreamUrl: string;
const replicaUrls: string[] = [];
const replicas: ChildProcess[] = [];
const servers: Server[] = [];
const tokens = {} as Record<Person, string>;
/** The JSON-RPC method and Authorization header of every request the upstream received. */
const upstreamRequests: { method: string | undefined; authorization: string | undefined }[] = [];
/** Every header and body the upstream received, as text. */
const upstreamSaw: string[] = [];
/** Each tool run at the upstream: `<tool>:<sub of its bearer token>:<target>`. */
const upstreamRuns: string[] = [];

async function startAuthorizationServer(resource: string): Promise<void> {
  issuer = await startTeamProvider(servers, {
    resource,
    people: PEOPLE,
    groups: GROUPS,
    exchange: { client: EXCHANGE_CLIENT },
  });
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-team-e2e-'));
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  const database = await postgres.createDatabase();
  upstreamUrl = await startSdkUpstream(
    servers,
    (mcp, request) => {
      const bearer = request.headers.authorization?.replace(/^Bearer /, '');
      const sub = bearer === undefined ? 'nobody' : String(decodeJwt(bearer).sub);
      for (const name of ['whoami', 'deploy', 'publish']) {
        mcp.registerTool(
          name,
          { description: `The ${name} tool.`, inputSchema: { target: z.string() } },
          async ({ target }) => {
            upstreamRuns.push(`${name}:${sub}:${target}`);
            return { content: [{ type: 'text', text: `${name} ${target} for ${sub}` }] };
          },
        );
      }
    },
    (request, body) => {
      let method: string | undefined;
      try {
        method = (JSON.parse(body) as { method?: string }).method;
      } catch {
        method = undefined;
      }
      upstreamRequests.push({ method, authorization: request.headers.authorization });
      upstreamSaw.push(JSON.stringify(request.headers), body);
      return false;
    },
  );
  const ports = [await freePort(), await freePort()];
  replicaUrls.push(...ports.map((port) => `http://127.0.0.1:${port}/mcp`));
  // Every tools/call (tools/list) goes to the replica the previous one did not: an ask and its
  // retry always land on different replicas; everything else goes round robin.
  proxy = await startRoundRobinProxy(replicaUrls, (before, body) => {
    const method = (body as { method?: unknown }).method;
    if (method !== 'tools/call' && method !== 'tools/list') return undefined;
    const last = before.filter((entry) => entry.method === method).at(-1);
    return last === undefined ? undefined : 1 - last.target;
  });
  // The gateway, as the people see it, is the balancer's URL: their tokens' audience.
  await startAuthorizationServer(proxy.url);
  const policy = join(folder, 'policy.json');
  await writeFile(
    policy,
    JSON.stringify({
      kind: 'rules',
      rules: [
        { tool: 'tm__whoami', decision: 'allow' },
        { tool: 'tm__deploy', principal: { claims: { groups: 'engineering' } }, decision: 'allow' },
        { tool: 'tm__publish', decision: 'ask' },
        { tool: 'tm__*', decision: 'deny', reason: 'not for your group' },
      ],
    }),
  );
  const config = {
    mcpServers: {
      team: {
        url: upstreamUrl,
        namespace: 'tm',
        credentials: {
          mode: 'token-exchange',
          /* biome-ignore-start lint/suspicious/noTemplateCurlyInString: config variables the gateway expands */
          clientId: '${EXCHANGE_CLIENT_ID}',
          clientSecret: '${EXCHANGE_CLIENT_SECRET}',
          /* biome-ignore-end lint/suspicious/noTemplateCurlyInString: config variables the gateway expands */
        },
      },
    },
    gateway: {
      httpAuth: teamHttpAuth(proxy.url, issuer),
      pins: database,
      approvals: redis.url,
    },
  };
  // The same config in one folder per replica (each writes its own audit log there).
  for (const [index, port] of ports.entries()) {
    const home = join(folder, `replica-${index}`);
    await mkdir(home);
    await writeFile(join(home, 'toolfence.json'), JSON.stringify(config));
    replicas.push(
      await startGatewayCli(join(home, 'toolfence.json'), policy, port, {
        TOOLFENCE_SEAL_KEY: SEAL_KEY,
        EXCHANGE_CLIENT_ID: EXCHANGE_CLIENT.id,
        EXCHANGE_CLIENT_SECRET: EXCHANGE_CLIENT.secret,
      }),
    );
  }
  for (const person of PEOPLE) tokens[person] = await personToken(issuer, person, proxy.url);
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => stopProcess(replica)));
  await proxy?.close();
  await closeServers(servers);
  await Promise.all([postgres?.stop(), redis?.stop()]);
  await rm(folder, { recursive: true, force: true });
}, 60_000);

const modern = async (person: Person) => {
  const client = await modernClient(proxy.url, tokens[person], `${person}-modern`, {
    elicitation: {},
  });
  expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
  return client;
};
const legacy = (person: Person) => legacyClient(proxy.url, tokens[person], `${person}-legacy`);
const rawCaller = (person: Person) =>
  modernToolCaller(proxy.url, { authorization: `Bearer ${tokens[person]}` });
const approve = { approval: { action: 'accept', content: { approve: true } } };
const publish = (target: string) => ({ name: 'tm__publish', arguments: { target } });
const textOf = (result: Record<string, unknown> | undefined): string => text(result ?? {});
/** The replicas the proxy sent each request of `method` to, since `from`. */
const targetsOf = (method: string, from = 0) =>
  proxy.routed
    .slice(from)
    .filter((entry) => entry.method === method)
    .map((entry) => entry.target);

describe('the team gateway: two replicas, two people, one authorization server', () => {
  it('lists for each person only what they may call (SDK v2 2026-07-28; SDK 1.x 2025-11-25 across both replicas)', async () => {
    const expected: Record<Person, string[]> = {
      alice: ['tm__deploy', 'tm__publish', 'tm__whoami'],
      bob: ['tm__publish', 'tm__whoami'],
    };
    for (const person of PEOPLE) {
      const client = await modern(person);
      const modernNames = (await client.listTools()).tools.map((tool) => tool.name).sort();
      await client.close();
      const from = proxy.routed.length;
      const session = await legacy(person);
      const legacyNames: string[][] = [];
      for (let round = 0; round < 2; round += 1) {
        legacyNames.push((await session.listTools()).tools.map((tool) => tool.name).sort());
        expect(
          text(await session.callTool({ name: 'tm__whoami', arguments: { target: `r${round}` } })),
        ).toBe(`whoami r${round} for ${person}`);
      }
      await session.close();
      expect({ person, modernNames, legacyNames }).toEqual({
        person,
        modernNames: expected[person],
        legacyNames: [expected[person], expected[person]],
      });
      // One legacy session, its listings and calls served by both replicas.
      expect(new Set(targetsOf('tools/list', from))).toEqual(new Set([0, 1]));
      expect(new Set(targetsOf('tools/call', from))).toEqual(new Set([0, 1]));
    }
  }, 90_000);

  it('refuses, saying why, a call outside a person’s rights, in both protocol versions', async () => {
    const alice = await modern('alice');
    expect(text(await alice.callTool({ name: 'tm__deploy', arguments: { target: 'prod' } }))).toBe(
      'deploy prod for alice',
    );
    await alice.close();
    const bob = await modern('bob');
    const refused = await bob.callTool({ name: 'tm__deploy', arguments: { target: 'prod' } });
    await bob.close();
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain("denied by the gateway's policy (not for your group)");
    const bobLegacy = await legacy('bob');
    const denied = await bobLegacy.callTool({ name: 'tm__deploy', arguments: { target: 'stage' } });
    await bobLegacy.close();
    expect(denied.isError).toBe(true);
    expect(text(denied)).toContain('not for your group');
    expect(upstreamRuns.filter((run) => run.startsWith('deploy:'))).toEqual(['deploy:alice:prod']);
  }, 60_000);

  it('runs an ask approved through a retry on the other replica exactly once; the same requestState again is refused', async () => {
    const alice = await modern('alice');
    const prompts: string[] = [];
    alice.setRequestHandler('elicitation/create', async (request) => {
      prompts.push(String(request.params.message));
      return { action: 'accept', content: { approve: true } };
    });
    const from = proxy.routed.length;
    const result = await alice.callTool(publish('notes'));
    await alice.close();
    expect(text(result)).toBe('publish notes for alice');
    expect(prompts).toHaveLength(1);
    const [asked, retried] = targetsOf('tools/call', from);
    expect(targetsOf('tools/call', from)).toHaveLength(2);
    expect(asked).not.toBe(retried);
    expect(upstreamRuns.filter((run) => run.startsWith('publish:'))).toEqual([
      'publish:alice:notes',
    ]);

    // A raw requestState, honoured on one replica, then refused on both.
    const call = rawCaller('alice');
    const first = await call(publish('raw'));
    expect(first.result?.resultType).toBe('input_required');
    const state = first.result?.requestState as string;
    const honoured = await call({
      ...publish('raw'),
      inputResponses: approve,
      requestState: state,
    });
    expect(textOf(honoured.result)).toBe('publish raw for alice');
    const replayedFrom = proxy.routed.length;
    for (let round = 0; round < 2; round += 1) {
      const again = await call({ ...publish('raw'), inputResponses: approve, requestState: state });
      expect(again.result?.isError).toBe(true);
      expect(textOf(again.result)).toMatch(/already used.*did not run/);
    }
    expect(new Set(targetsOf('tools/call', replayedFrom))).toEqual(new Set([0, 1]));
    expect(upstreamRuns.filter((run) => run.startsWith('publish:'))).toEqual([
      'publish:alice:notes',
      'publish:alice:raw',
    ]);
  }, 60_000);

  it("refuses alice's requestState presented with bob's token (other principal), on either replica", async () => {
    const asked = await rawCaller('alice')(publish('stolen'));
    expect(asked.result?.resultType).toBe('input_required');
    const state = asked.result?.requestState as string;
    const from = proxy.routed.length;
    for (let round = 0; round < 2; round += 1) {
      const stolen = await rawCaller('bob')({
        ...publish('stolen'),
        inputResponses: approve,
        requestState: state,
      });
      expect(stolen.result?.isError).toBe(true);
      expect(textOf(stolen.result)).toMatch(/given to another caller.*did not run/);
    }
    expect(new Set(targetsOf('tools/call', from))).toEqual(new Set([0, 1]));
    expect(upstreamRuns.filter((run) => run.includes(':stolen'))).toEqual([]);
    // Bob's attempts did not use it up: alice's own retry still runs, once.
    const own = await rawCaller('alice')({
      ...publish('stolen'),
      inputResponses: approve,
      requestState: state,
    });
    expect(textOf(own.result)).toBe('publish stolen for alice');
    expect(upstreamRuns.filter((run) => run.includes(':stolen'))).toEqual(['publish:alice:stolen']);
  }, 60_000);

  it("answers 404 on both replicas to bob presenting alice's legacy session (held there or not)", async () => {
    // Alice's session is opened at replica 0 only: replica 1 has never held it.
    const alice = await legacyClient(replicaUrls[0] as string, tokens.alice, 'alice-legacy');
    const session = (alice.transport as TransportV1).sessionId as string;
    expect(session).toMatch(/^tfs1\./);
    const list = async (person: Person, replica: number, method = 'POST') => {
      const answer = await fetch(replicaUrls[replica] as string, {
        method,
        headers: {
          authorization: `Bearer ${tokens[person]}`,
          'mcp-session-id': session,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        ...(method === 'POST'
          ? { body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }) }
          : {}),
      });
      await answer.body?.cancel();
      return `${method} ${person}@${replica}: ${answer.status}`;
    };
    const seen = [
      await list('bob', 1), // replica 1 would resume it from its sealed id
      await list('bob', 0), // replica 0 holds it
      await list('alice', 1), // alice resumes it at replica 1
      await list('bob', 1), // now held at replica 1 too
      // Nor may bob end it or open its listening stream, on either replica.
      await list('bob', 0, 'DELETE'),
      await list('bob', 1, 'DELETE'),
      await list('bob', 0, 'GET'),
      await list('alice', 0),
      await list('alice', 1),
    ];
    await alice.close();
    expect(seen).toEqual([
      'POST bob@1: 404',
      'POST bob@0: 404',
      'POST alice@1: 200',
      'POST bob@1: 404',
      'DELETE bob@0: 404',
      'DELETE bob@1: 404',
      'GET bob@0: 404',
      'POST alice@0: 200',
      'POST alice@1: 200',
    ]);
  }, 60_000);

  it("sends the upstream each person's exchanged token, never a caller's own", () => {
    expect(upstreamRuns).toContain('publish:alice:notes');
    // Each call reached the upstream with a bearer token; requests without one are the
    // gateway's own (discovery at start, before any caller).
    const calls = upstreamRequests.filter((request) => request.method === 'tools/call');
    expect(calls.length).toBe(upstreamRuns.length);
    for (const request of calls) expect(request.authorization).toMatch(/^Bearer /);
    const headers = upstreamRequests
      .map((request) => request.authorization)
      .filter((header) => header !== undefined);
    const claims = headers.map((header) => decodeJwt(header.replace(/^Bearer /, '')));
    for (const claim of claims) {
      expect(claim).toMatchObject({
        iss: issuer,
        aud: upstreamUrl,
        act: { sub: EXCHANGE_CLIENT.id },
      });
    }
    expect(new Set(claims.map((claim) => claim.sub))).toEqual(new Set(PEOPLE));
    // Every tool alice ran at the upstream ran under a token naming alice.
    expect(upstreamRuns.filter((run) => run.includes(':alice:')).length).toBeGreaterThanOrEqual(4);
    expect(upstreamRuns.every((run) => /^\w+:(alice|bob):/.test(run))).toBe(true);
    const seen = upstreamSaw.join('\n');
    for (const person of PEOPLE) {
      expect(seen).not.toContain(tokens[person]);
      expect(seen).not.toContain(tokens[person].split('.')[2] as string);
    }
    expect(seen).not.toContain(EXCHANGE_CLIENT.secret);
  });
});
