// Upstream credentials per person (RFC 8693) behind `toolfence-mcp serve --http` with
// gateway.httpAuth: a real authorization server (oidc-provider) with the token-exchange grant
// registered issues each person a token for the gateway; the real CLI gateway exchanges the
// caller's token at that server for one issued to the same person for the upstream, and the
// upstream (a real SDK HTTP server) records the Authorization header of every request it receives.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ACCESS_TOKEN,
  freePort,
  legacyClient as legacy,
  modernClient as modern,
  personToken,
  startGatewayCli,
  startSdkUpstream,
  startTeamProvider,
  TOKEN_EXCHANGE,
  teamHttpAuth,
  resultTexts as text,
} from './fixtures/team-gateway.js';
import { closeServers, stopProcess } from './fixtures/teardown.js';

/** alice and bob may get a token for the upstream; the authorization server refuses mallory's. */
const PEOPLE = ['alice', 'bob', 'mallory'] as const;
type Person = (typeof PEOPLE)[number];
const EXCHANGE_CLIENT = { id: 'toolfence-gateway', secret: 'gateway-exchange-secret-0123456789' };

let folder: string;
let gateway: ChildProcess;
let gatewayUrl: string;
let upstreamUrl: string;
let issuer: string;
const servers: Server[] = [];
const tokens = {} as Record<Person, string>;
/** The Authorization header of every request the upstream received (undefined: none). */
const upstreamAuthorizations: (string | undefined)[] = [];
/** Every header and body the upstream received, as text. */
const upstreamSaw: string[] = [];
/** Each `whoami` call the upstream ran: the `sub` of the token it was called with. */
const upstreamCalls: string[] = [];
/** Tokens the upstream refuses (401 invalid_token), as if revoked. */
const revoked = new Set<string>();
/** Token exchanges the authorization server answered, by the subject of the exchanged token. */
const exchanges: Record<string, number> = {};
/** What the authorization server saw in each exchange (grant parameters). */
const exchangeRequests: Record<string, unknown>[] = [];

async function startUpstream(): Promise<string> {
  return startSdkUpstream(
    servers,
    (mcp, request) => {
      const authorization = request.headers.authorization;
      mcp.registerTool(
        'whoami',
        { description: 'Who the upstream was called for.', inputSchema: { note: z.string() } },
        async () => {
          const sub =
            authorization === undefined
              ? 'nobody'
              : String(decodeJwt(authorization.replace(/^Bearer /, '')).sub);
          upstreamCalls.push(sub);
          return { content: [{ type: 'text', text: `called for ${sub}` }] };
        },
      );
    },
    (request, text, response) => {
      const authorization = request.headers.authorization;
      upstreamAuthorizations.push(authorization);
      upstreamSaw.push(JSON.stringify(request.headers), text);
      if (authorization !== undefined && revoked.has(authorization.replace(/^Bearer /, ''))) {
        response.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' });
        response.end();
        return true;
      }
      return false;
    },
  );
}

async function startAuthorizationServer(resource: string): Promise<void> {
  // RFC 8693 at the authorization server: the subject token must be one this server issued for
  // the gateway; the issued token names the same person (`sub`), for the requested resource.
  issuer = await startTeamProvider(servers, {
    resource,
    people: PEOPLE,
    exchange: {
      client: EXCHANGE_CLIENT,
      hooks: {
        seen: (params) => exchangeRequests.push(params),
        refuse: (subject) =>
          subject === 'mallory' ? 'mallory may not use the upstream' : undefined,
        granted: (subject) => {
          exchanges[subject] = (exchanges[subject] ?? 0) + 1;
        },
      },
    },
  });
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-token-exchange-'));
  upstreamUrl = await startUpstream();
  const port = await freePort();
  gatewayUrl = `http://127.0.0.1:${port}/mcp`;
  await startAuthorizationServer(gatewayUrl);
  const config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
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
        httpAuth: teamHttpAuth(gatewayUrl, issuer),
      },
    }),
  );
  const policy = join(folder, 'policy.json');
  await writeFile(
    policy,
    JSON.stringify({ kind: 'rules', rules: [{ tool: 'tm__*', decision: 'allow' }] }),
  );
  gateway = await startGatewayCli(config, policy, port, {
    EXCHANGE_CLIENT_ID: EXCHANGE_CLIENT.id,
    EXCHANGE_CLIENT_SECRET: EXCHANGE_CLIENT.secret,
  });
  for (const person of PEOPLE) tokens[person] = await personToken(issuer, person, gatewayUrl);
}, 120_000);

afterAll(async () => {
  if (gateway !== undefined) await stopProcess(gateway);
  await closeServers(servers);
  await rm(folder, { recursive: true, force: true });
});

async function modernClient(person: Person) {
  const client = await modern(gatewayUrl, tokens[person], `${person}-modern`);
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

const legacyClient = (person: Person) => legacy(gatewayUrl, tokens[person], `${person}-legacy`);

/** The claims of the bearer tokens the upstream received since `from` (index into its log). */
function bearerClaimsSince(from: number) {
  return upstreamAuthorizations
    .slice(from)
    .filter((header): header is string => header !== undefined)
    .map((header) => {
      const claims = decodeJwt(header.replace(/^Bearer /, ''));
      return { sub: claims.sub, aud: claims.aud, iss: claims.iss };
    });
}

describe('serve --http: an upstream with credentials receives a token exchanged for the caller', () => {
  it("calls the upstream with each person's own exchanged token (SDK v2 2026-07-28, SDK 1.x 2025-11-25)", async () => {
    const before = upstreamAuthorizations.length;
    const alice = await modernClient('alice');
    expect(text(await alice.callTool({ name: 'tm__whoami', arguments: { note: 'first' } }))).toBe(
      'called for alice',
    );
    await alice.close();
    const bob = await legacyClient('bob');
    expect(text(await bob.callTool({ name: 'tm__whoami', arguments: { note: 'first' } }))).toBe(
      'called for bob',
    );
    await bob.close();
    const claims = bearerClaimsSince(before);
    expect(new Set(claims.map((claim) => claim.sub))).toEqual(new Set(['alice', 'bob']));
    // Every per-caller request carried a token issued for the upstream, by the authorization
    // server, never one for the gateway.
    for (const claim of claims) expect(claim).toMatchObject({ aud: upstreamUrl, iss: issuer });
    expect(upstreamCalls).toEqual(['alice', 'bob']);
    // The exchange named the upstream (RFC 8707 resource, default the server's url) and the
    // caller's token as an access-token subject, from the gateway's own client.
    expect(exchangeRequests[0]).toMatchObject({
      grant_type: TOKEN_EXCHANGE,
      subject_token_type: ACCESS_TOKEN,
      requested_token_type: ACCESS_TOKEN,
      resource: upstreamUrl,
      client: EXCHANGE_CLIENT.id,
    });
  }, 60_000);

  it("never sends a caller's own token (or the exchange client's secret) to the upstream", async () => {
    const alice = await modernClient('alice');
    await alice.callTool({ name: 'tm__whoami', arguments: { note: 'again' } });
    await alice.close();
    const seen = upstreamSaw.join('\n');
    for (const person of PEOPLE) expect(seen).not.toContain(tokens[person]);
    expect(seen).not.toContain(EXCHANGE_CLIENT.secret);
    expect(seen).not.toContain(Buffer.from(EXCHANGE_CLIENT.secret).toString('base64'));
  }, 60_000);

  it('reuses a person’s exchanged token: one exchange per person for many calls', async () => {
    for (let round = 0; round < 3; round++) {
      const alice = await modernClient('alice');
      await alice.callTool({ name: 'tm__whoami', arguments: { note: `round ${round}` } });
      await alice.close();
      const bob = await legacyClient('bob');
      await bob.callTool({ name: 'tm__whoami', arguments: { note: `round ${round}` } });
      await bob.close();
    }
    expect(exchanges).toEqual({ alice: 1, bob: 1 });
    expect(upstreamCalls.filter((sub) => sub === 'alice').length).toBeGreaterThanOrEqual(5);
  }, 90_000);

  it("exchanges again once the upstream refuses a person's cached token", async () => {
    const bobHeader = upstreamAuthorizations.findLast(
      (header) => header !== undefined && decodeJwt(header.replace(/^Bearer /, '')).sub === 'bob',
    ) as string;
    revoked.add(bobHeader.replace(/^Bearer /, ''));
    const before = exchanges.bob ?? 0;
    const bob = await legacyClient('bob');
    const refused = await bob.callTool({ name: 'tm__whoami', arguments: { note: 'revoked' } });
    expect(refused.isError).toBe(true);
    expect(text(await bob.callTool({ name: 'tm__whoami', arguments: { note: 'after' } }))).toBe(
      'called for bob',
    );
    await bob.close();
    expect(exchanges.bob).toBe(before + 1);
  }, 60_000);

  it('refuses the call, saying why, when the authorization server refuses the exchange', async () => {
    const callsBefore = upstreamCalls.length;
    const mallory = await modernClient('mallory');
    const refused = await mallory.callTool({ name: 'tm__whoami', arguments: { note: 'try' } });
    await mallory.close();
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('did not run');
    expect(text(refused)).toContain(
      'The token exchange for the caller at the upstream team failed: the authorization server refused it (invalid_grant)',
    );
    // The server's own words (error_description) are not relayed.
    expect(text(refused)).not.toContain('mallory may not use the upstream');
    expect(upstreamCalls.length).toBe(callsBefore);
    expect(upstreamCalls).not.toContain('mallory');
  }, 60_000);
});
