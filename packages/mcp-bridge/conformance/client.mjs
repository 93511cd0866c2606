#!/usr/bin/env node
// The MCP conformance suite's client under test, built on McpClient from the built package.
// The harness appends the server URL as the last argument and names the scenario in
// MCP_CONFORMANCE_SCENARIO. Only loopback addresses are approved (the harness runs on localhost).
import { createPrivateKey } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import {
  AuthorizationRequiredError,
  authorizeConnection,
  clientCredentialsOAuth,
  completeConnection,
  crossAppAccessOAuth,
  jwtBearerOAuth,
  McpClient,
  McpSkillSource,
  MemoryConnectionStore,
  OAuthTokenProvider,
  SKILLS_EXTENSION_ID,
} from '../dist/index.js';

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const allowLoopback = (_target, address) => address.range === 'loopback';
const context = process.env.MCP_CONFORMANCE_CONTEXT
  ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT)
  : {};
const auth = scenario.startsWith('auth/');
const store = new MemoryConnectionStore();
const CONNECTION = 'conformance';
const REDIRECT_URI = 'http://localhost:3000/callback';
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';
// Grants without a user redirect, configured per server by the host: client credentials
// (SEP-1046) and enterprise-managed cross-app access (SEP-990).
// (0.2.0-alpha names the SEP-990 scenario auth/enterprise-managed-authorization.)
const crossApp =
  scenario === 'auth/cross-app-access-complete-flow' ||
  scenario === 'auth/enterprise-managed-authorization';
// Workload identity (SEP-1933): the platform's JWT is exchanged with the JWT bearer grant.
const workload = scenario === 'auth/wif-jwt-bearer';
const machine = scenario.startsWith('auth/client-credentials') || crossApp || workload;

let machineTokens;
/** McpClient's `token` function: a client-credentials token, fetched again when it expires. */
async function machineToken() {
  if (machineTokens === undefined || (machineTokens.expiresAt ?? Infinity) <= Date.now() + 5000) {
    machineTokens = workload
      ? await jwtBearerOAuth({
          url,
          assertion: context.valid_jwt,
          clientId: context.client_id,
          issuer: await listedIssuer(),
          allowNonPublic: allowLoopback,
        })
      : crossApp
        ? await crossAppAccessOAuth({
            url,
            idToken: context.idp_id_token,
            idpIssuer: context.idp_issuer,
            idpClientId: context.idp_client_id,
            clientId: context.client_id,
            clientSecret: context.client_secret,
            issuer: await pinnedIssuer(),
            allowNonPublic: allowLoopback,
          })
        : await clientCredentialsOAuth({
            url,
            clientId: context.client_id,
            ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
            ...(context.private_key_pem
              ? {
                  privateKeyJwk: createPrivateKey(context.private_key_pem).export({
                    format: 'jwk',
                  }),
                }
              : {}),
            issuer: await pinnedIssuer(),
            allowNonPublic: allowLoopback,
          });
  }
  return machineTokens.accessToken;
}

const client = new McpClient({
  url,
  allowNonPublic: allowLoopback,
  ...(machine ? { token: machineToken } : {}),
  ...(auth && !machine
    ? {
        authProvider: new OAuthTokenProvider({
          store,
          connectionId: CONNECTION,
          url,
          allowNonPublic: allowLoopback,
        }),
      }
    : {}),
  clientName: 'toolfence-conformance-client',
  readTimeoutMs: 20_000,
  // Skills over MCP (SEP-2640): the host declares the extension.
  ...(scenario.startsWith('sep-2640-client') ? { extensions: { [SKILLS_EXTENSION_ID]: {} } } : {}),
  logger: process.env.CONFORMANCE_DEBUG
    ? {
        debug: (m, d) => process.stderr.write(`${m} ${JSON.stringify(d)}\n`),
        warn: (m, d) => process.stderr.write(`${m} ${JSON.stringify(d)}\n`),
      }
    : undefined,
  // The elicitation scenarios (a legacy server's elicitation/create) and the MRTR scenario (an
  // input_required result) reach the same callback.
  ...(scenario.startsWith('elicitation') || scenario.startsWith('sep-2322')
    ? {
        elicitation: {
          applyDefaults: true,
          // Accept: the client fills in the schema's defaults (SEP-1034); MRTR confirms.
          handler: async () => ({
            action: 'accept',
            content: scenario.startsWith('sep-2322') ? { confirmed: true } : {},
          }),
        },
      }
    : {}),
});

async function run() {
  switch (scenario) {
    case 'initialize':
      await client.tools();
      break;
    case 'tools_call':
      await client.tools();
      await client.callTool('add_numbers', { a: 5, b: 3 });
      break;
    case 'elicitation-sep1034-client-defaults':
      await client.tools();
      await client.callTool('test_client_elicitation_defaults', {});
      break;
    case 'sse-retry':
      await client.tools();
      await client.callTool('test_reconnection', {});
      break;
    case 'json-schema-2020-12-preservation': {
      // Round-trip the focal tool's inputSchema, as the client received it, through the echo tool.
      const tools = await client.tools();
      const focal = tools.find((tool) => tool.name === 'json_schema_2020_12_tool');
      await client.callTool('json_schema_echo', { schema: focal?.inputSchema ?? {} });
      break;
    }
    case 'json-schema-ref-no-deref':
      await client.tools();
      break;
    case 'sep-2322-client-request-state':
      await client.tools();
      for (const name of [
        'test_mrtr_echo_state',
        'test_mrtr_unrelated',
        'test_mrtr_no_state',
        'test_mrtr_no_result_type',
      ]) {
        await client.callTool(name, {});
      }
      break;
    case 'sep-2640-client-no-prefetch': {
      // Connect, list and approve (select sees only the listed entry): no skill file is read.
      const source = new McpSkillSource({ client, select: () => true });
      const listing = await source.list();
      if (listing.entries.length === 0) throw new Error('skills/list gave no usable entry');
      break;
    }
    case 'sep-2640-client-verify-digest':
    case 'sep-2640-client-verify-size':
    case 'sep-2640-client-verify-frontmatter': {
      // The host loads every listed skill (SkillRegistry.refresh calls scan()); a skill that
      // fails verification is skipped and reported, and only a loaded skill's files are read.
      const source = new McpSkillSource({ client });
      const scan = await source.scan();
      for (const problem of scan.problems) {
        process.stderr.write(`skill refused: ${problem.code} ${problem.reason}\n`);
      }
      for (const skill of scan.skills) {
        const entry = (await source.list()).entries.find((item) => item.name === skill.name);
        for (const file of entry?.resources ?? []) {
          if (file.path !== 'SKILL.md') await source.readFile(skill.name, file.path);
        }
      }
      break;
    }
    case 'http-invalid-tool-headers': {
      // Every tool the client kept (the malformed ones are skipped and reported).
      const tools = await client.tools();
      for (const tool of tools) {
        await client.callTool(tool.name, tool.name === 'valid_tool' ? { region: 'us-west1' } : {});
      }
      break;
    }
    default: {
      await client.tools();
      if (Array.isArray(context.toolCalls)) {
        // The scenario names the calls it expects (http-custom-headers).
        for (const call of context.toolCalls)
          await client.callTool(call.name, call.arguments ?? {});
        break;
      }
      // auth/* and anything new: call the first tool the scenarios use.
      const tools = await client.tools();
      const name = tools.some((tool) => tool.name === 'test-tool') ? 'test-tool' : tools[0]?.name;
      if (name !== undefined) await client.callTool(name, {});
    }
  }
}

/**
 * Host policy, not library behaviour: the OAuth module requires a pre-registered client's exact
 * issuer. A host that holds credentials for a server pins the issuer they were issued by; 0.1.16
 * hands out credentials without one, so this client pins the single authorization server the
 * server's RFC 9728 metadata lists (path-specific well-known URL, then the root one; loopback
 * only, no redirects). The library still checks that metadata (exact resource, exact issuer).
 */
async function listedIssuer() {
  const target = new URL(url);
  const path = target.pathname.replace(/\/$/, '');
  for (const candidate of [
    `/.well-known/oauth-protected-resource${path}`,
    '/.well-known/oauth-protected-resource',
  ]) {
    const response = await fetch(new URL(candidate, target.origin), { redirect: 'manual' });
    if (response.status !== 200) continue;
    const servers = (await response.json())?.authorization_servers;
    return Array.isArray(servers) && servers.length === 1 ? servers[0] : undefined;
  }
  return undefined;
}

async function pinnedIssuer() {
  if (context.issuer) return context.issuer;
  return context.client_id ? await listedIssuer() : undefined;
}

/** Headless authorization: the mock authorization server redirects straight to the callback. */
async function authorize(required) {
  const issuer = await pinnedIssuer();
  const { authorizeUrl } = await authorizeConnection(store, CONNECTION, {
    url,
    redirectUri: REDIRECT_URI,
    allowNonPublic: allowLoopback,
    // This host opts in to the MCP 2025-03-26 fallback (servers without RFC 9728 metadata);
    // the library refuses such servers by default.
    legacyAuthorizationServer: true,
    // The scenario's own (fictional) client ID metadata document; used only where the scenario
    // expects it, since other scenarios' harness would then try to fetch that non-loopback URL.
    ...(scenario === 'auth/basic-cimd' ? { clientMetadataUrl: CIMD_URL } : {}),
    // Host policy the README documents (acceptOriginResource): this scenario's server publishes
    // only an origin-level document naming its origin as the resource; the token is then for
    // the whole origin. Off by default, and set for this scenario only.
    ...(scenario === 'auth/metadata-var2' ? { acceptOriginResource: true } : {}),
    ...(required.scope ? { scope: required.scope } : {}),
    ...(context.client_id ? { clientId: context.client_id } : {}),
    ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
    ...(issuer ? { issuer } : {}),
  });
  const response = await fetch(authorizeUrl, { redirect: 'manual' });
  const location = response.headers.get('location');
  if (!location) throw new Error('the authorization server did not redirect');
  await completeConnection(store, CONNECTION, new URL(location, authorizeUrl).href, {
    allowNonPublic: allowLoopback,
    legacyAuthorizationServer: true,
  });
}

async function runWithAuthorization() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const required = AuthorizationRequiredError.isInstance(error)
        ? error
        : AuthorizationRequiredError.isInstance(error?.cause)
          ? error.cause
          : undefined;
      if (!auth || required === undefined || attempt >= 3) throw error;
      await authorize(required);
    }
  }
}

/** Exits; CONFORMANCE_EXIT_LOG names a file that records `<scenario> <code>` (the suite scores checks only). */
function exit(code) {
  if (process.env.CONFORMANCE_EXIT_LOG) {
    appendFileSync(process.env.CONFORMANCE_EXIT_LOG, `${scenario} ${code}\n`);
  }
  process.exit(code);
}

try {
  await runWithAuthorization();
  await client.close();
  exit(0);
} catch (error) {
  process.stderr.write(
    `conformance client failed: ${error?.code ?? error?.name}: ${error?.message}\n`,
  );
  await client.close().catch(() => {});
  exit(1);
}
