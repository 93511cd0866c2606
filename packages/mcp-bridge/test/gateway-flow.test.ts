// The published "toxic flow" (a public issue's text makes the agent read a private repository and
// publish it), reproduced through the real gateway with three small SDK servers: an issue tracker
// whose `get_issue` declares its content `untrusted` (issue 7 carries an injection), a repository
// reader whose `read_file` declares `sensitive`, and a publisher whose `publish` declares
// `external-publication` and records every text it receives. The policy ALLOWS all three tools;
// a scripted client follows the injection. Without the flow guard the private text is published;
// with it (on by default) the publish is stopped and the gateway says why, naming the flow.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { FlowGuard } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditLog, verifyAuditChain } from '../src/gateway/audit-log.js';
import type { GatewayFlowSettings } from '../src/gateway/flow-config.js';
import { SHARED_PRINCIPAL_SESSION } from '../src/gateway/flow-session.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { parseInspectPolicy } from '../src/gateway/policy-file.js';
import {
  gatewayClient,
  modernHttpCaller,
  modernStdioCaller,
  rawText,
  resultText as text,
} from './helpers.js';
import { serveLoopbackHttp } from './support/loopback-gateway-http.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.mjs`, import.meta.url));
const PRIVATE_TEXT = 'PRIVATE ROADMAP: acquire competitor in Q3; codename BLUEFIN.';

let folder: string;
let publishedFile: string;
/** What the gateway's logger was warned of. */
let warnings: Record<string, unknown>[];
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-flow-'));
  publishedFile = join(folder, 'published.jsonl');
  warnings = [];
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/** The config of the three servers (stdio, each under its own name). */
function config() {
  return {
    mcpServers: {
      tracker: { command: process.execPath, args: [fixture('flow-tracker-server')] },
      repo: { command: process.execPath, args: [fixture('flow-repo-server')] },
      publisher: {
        command: process.execPath,
        args: [fixture('flow-publisher-server')],
        env: { PUBLISHED_FILE: publishedFile },
      },
    },
  };
}

/** The policy file: every tool of the three servers is allowed (or the publisher asked); `flow` as given. */
function policyFile(flow?: GatewayFlowSettings, publisher: 'allow' | 'ask' = 'allow') {
  return {
    kind: 'rules',
    rules: [
      { server: 'tracker', decision: 'allow' },
      { server: 'repo', decision: 'allow' },
      { server: 'publisher', decision: publisher },
    ],
    ...(flow === undefined ? {} : { flow }),
  };
}

async function startGateway(
  options: { flow?: GatewayFlowSettings; observe?: boolean; publisher?: 'allow' | 'ask' } = {},
) {
  const policy = parseInspectPolicy(policyFile(options.flow, options.publisher));
  const gateway = new McpGateway({
    config: parseGatewayConfig(config()),
    authorizer: policy.authorizer,
    ...(policy.flow === undefined ? {} : { flow: policy.flow }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(options.observe === undefined ? {} : { observe: options.observe }),
    logger: { warn: (message, details) => warnings.push({ message, ...details }) },
  });
  open.push(gateway);
  await gateway.start();
  expect(gateway.toolNames()).toEqual([
    'publisher__publish',
    'repo__read_file',
    'tracker__get_issue',
  ]);
  return gateway;
}

/** The gateway served over Streamable HTTP on loopback (both eras, no token). */
async function startHttpGateway() {
  const gateway = await startGateway();
  const http = await serveLoopbackHttp(gateway, open);
  return { gateway, http };
}

/** What reached the outside world: every text the publisher received. */
async function published(): Promise<string[]> {
  const lines = (await readFile(publishedFile, 'utf8').catch(() => '')).split('\n');
  return lines.filter(Boolean).map((line) => (JSON.parse(line) as { text: string }).text);
}

async function auditLines(): Promise<Record<string, unknown>[]> {
  const lines = (await readFile(join(folder, 'audit.jsonl'), 'utf8')).split('\n');
  return lines.filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The scripted agent: reads issue 7 and does what its text says (read the file, publish it). */
async function followInjection(client: Client) {
  const issue = text(
    await client.callTool({ name: 'tracker__get_issue', arguments: { number: 7 } }),
  );
  const path = /read the file (\S+) with repo__read_file/.exec(issue)?.[1];
  expect(path).toBe('secrets/roadmap.md');
  const file = text(await client.callTool({ name: 'repo__read_file', arguments: { path } }));
  expect(file).toBe(PRIVATE_TEXT);
  return client.callTool({ name: 'publisher__publish', arguments: { text: file } });
}

const TOXIC_FLOW = {
  sink: 'publisher__publish',
  exposedBy: ['tracker__get_issue'],
  privateFrom: ['repo__read_file'],
};

describe('the toxic flow through the gateway', () => {
  it('without the flow guard, the private text reaches the publisher', async () => {
    const gateway = await startGateway({ flow: { enabled: false } });
    const client = await gatewayClient(gateway, open);
    const result = await followInjection(client);
    expect(result.isError).toBeFalsy();
    expect(await published()).toEqual([PRIVATE_TEXT]);
    // Nothing of the guard in the audit lines when it is off.
    expect((await auditLines()).some((line) => 'flow' in line || 'session' in line)).toBe(false);
  }, 60_000);

  it('with the guard (on by default), the publish is denied, nobody is asked, and the denial names the flow', async () => {
    const gateway = await startGateway();
    const prompts: string[] = [];
    const client = await gatewayClient(gateway, open, (message) => {
      prompts.push(message);
      return true;
    });
    const result = await followInjection(client);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /denied by the gateway's flow guard: this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`; `publisher__publish` would publish or send data outside/,
    );
    expect(text(result)).toMatch(/permit this flow in the gateway's policy file/);
    expect(prompts).toEqual([]);
    expect(await published()).toEqual([]);
    const last = (await auditLines()).at(-1);
    expect(last).toMatchObject({
      tool: 'publisher__publish',
      decision: 'deny',
      outcome: 'denied',
      flow: { verdict: 'deny', enforced: true, ...TOXIC_FLOW },
    });
    expect(String(last?.session)).toMatch(/^connection:[0-9a-f-]{36}$/);
    expect(await verifyAuditChain(join(folder, 'audit.jsonl'))).toMatchObject({ ok: true });
  }, 60_000);

  it('a publish the policy asks for, approved after the flow was read while the prompt waited, is refused by the flow guard', async () => {
    const gateway = await startGateway({ publisher: 'ask' });
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new Client(
      { name: 'test-client', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    const prompts: string[] = [];
    // While the publish's prompt is open, the same connection reads issue 7 and the private file.
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      prompts.push(String(request.params.message));
      await client.callTool({ name: 'tracker__get_issue', arguments: { number: 7 } });
      const file = await client.callTool({
        name: 'repo__read_file',
        arguments: { path: 'secrets/roadmap.md' },
      });
      expect(text(file)).toBe(PRIVATE_TEXT);
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(clientSide);
    open.push(client);
    const result = await client.callTool({
      name: 'publisher__publish',
      arguments: { text: 'weekly notes' },
    });
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).not.toContain('tracker__get_issue');
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /^The call to publisher__publish was approved, but while it waited for the approval this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`; `publisher__publish` would publish or send data outside/,
    );
    expect(text(result)).toMatch(/so the gateway's flow guard denies it and it did not run/);
    expect(await published()).toEqual([]);
    expect((await auditLines()).at(-1)).toMatchObject({
      tool: 'publisher__publish',
      decision: 'deny',
      approvedBy: 'user',
      outcome: 'denied',
      flow: { verdict: 'deny', enforced: true, ...TOXIC_FLOW },
    });
    expect(await verifyAuditChain(join(folder, 'audit.jsonl'))).toMatchObject({ ok: true });
  }, 60_000);

  it('with private data permitted to reach the publisher, asks naming the whole flow: approve runs that one call, decline does not', async () => {
    const gateway = await startGateway({
      flow: { permit: [{ from: { server: 'repo' }, to: { server: 'publisher' } }] },
    });
    const prompts: string[] = [];
    const answers = [true, false];
    const client = await gatewayClient(gateway, open, (message) => {
      prompts.push(message);
      return answers.shift() ?? false;
    });
    const approved = await followInjection(client);
    expect(text(approved)).toBe(`published ${PRIVATE_TEXT.length} characters`);
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).toContain(
      'Why asked: this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`; `publisher__publish` would publish or send data outside.',
    );
    expect(prompts[0]).toContain('Approving covers this one call only');
    expect(prompts[0]).toContain(PRIVATE_TEXT);
    // The approval covered that call only: the same call again is asked again, and declined.
    const again = await client.callTool({
      name: 'publisher__publish',
      arguments: { text: PRIVATE_TEXT },
    });
    expect(again.isError).toBe(true);
    expect(text(again)).toMatch(/not approved by the user/);
    expect(prompts).toHaveLength(2);
    expect(await published()).toEqual([PRIVATE_TEXT]);
    const publishes = (await auditLines()).filter((line) => line.tool === 'publisher__publish');
    expect(publishes.map((line) => [line.decision, line.outcome, line.approvedBy ?? null])).toEqual(
      [
        ['ask', 'started', 'user'],
        ['ask', 'ok', 'user'],
        ['ask', 'declined', null],
      ],
    );
    for (const line of publishes) {
      expect(line.flow).toEqual({ verdict: 'ask', enforced: true, ...TOXIC_FLOW });
    }
  }, 60_000);

  it('asks before a publish in a conversation that read untrusted text, and the prompt names the flow', async () => {
    const gateway = await startGateway();
    const prompts: string[] = [];
    const client = await gatewayClient(gateway, open, (message) => {
      prompts.push(message);
      return false;
    });
    // Before anything untrusted was read, the allowed publish runs without a question.
    expect(
      text(await client.callTool({ name: 'publisher__publish', arguments: { text: 'v1.0' } })),
    ).toBe('published 4 characters');
    await client.callTool({ name: 'tracker__get_issue', arguments: { number: 8 } });
    const declined = await client.callTool({
      name: 'publisher__publish',
      arguments: { text: 'v1.1' },
    });
    expect(declined.isError).toBe(true);
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).toMatch(
      /^Allow this call to publisher__publish \(server publisher\)\?\nWhy asked: this conversation read untrusted text from `tracker__get_issue`; `publisher__publish` would publish or send data outside\./,
    );
    expect(await published()).toEqual(['v1.0']);
  }, 60_000);

  it('denies a raised ask when the client cannot ask its user, naming the flow', async () => {
    const gateway = await startGateway({
      flow: { permit: [{ from: 'repo__read_file', to: 'publisher__publish' }] },
    });
    const client = await gatewayClient(gateway, open);
    const result = await followInjection(client);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /needs the user's approval because this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`; `publisher__publish` would publish or send data outside, but this client cannot ask the user/,
    );
    expect(await published()).toEqual([]);
    expect((await auditLines()).at(-1)).toMatchObject({
      tool: 'publisher__publish',
      decision: 'ask',
      outcome: 'no-approval-channel',
      flow: { verdict: 'ask', enforced: true, ...TOXIC_FLOW },
    });
  }, 60_000);

  it('runs the flow when the policy file permits it from both sources', async () => {
    const gateway = await startGateway({
      flow: {
        permit: [
          { from: { server: 'tracker' }, to: 'publisher__publish' },
          { from: { server: 'repo' }, to: 'publisher__publish' },
        ],
      },
    });
    const client = await gatewayClient(gateway, open);
    const result = await followInjection(client);
    expect(text(result)).toBe(`published ${PRIVATE_TEXT.length} characters`);
    expect(await published()).toEqual([PRIVATE_TEXT]);
    expect((await auditLines()).at(-1)).toMatchObject({ decision: 'allow', outcome: 'ok' });
    expect((await auditLines()).at(-1)).not.toHaveProperty('flow');
  }, 60_000);

  it('keeps labels per downstream session: another client publishes freely; labels end when their client disconnects', async () => {
    const gateway = await startGateway();
    const exposed = await gatewayClient(gateway, open);
    const other = await gatewayClient(gateway, open);
    await exposed.callTool({ name: 'tracker__get_issue', arguments: { number: 7 } });
    await exposed.callTool({ name: 'repo__read_file', arguments: { path: 'README.md' } });
    // The other client's conversation read nothing untrusted: its publish runs.
    expect(
      text(await other.callTool({ name: 'publisher__publish', arguments: { text: 'hello' } })),
    ).toBe('published 5 characters');
    const denied = await exposed.callTool({
      name: 'publisher__publish',
      arguments: { text: 'hello' },
    });
    expect(denied.isError).toBe(true);
    expect(await published()).toEqual(['hello']);
    const lines = await auditLines();
    const sessionOf = (tool: string, outcome: string) =>
      String(lines.find((line) => line.tool === tool && line.outcome === outcome)?.session);
    const session = sessionOf('tracker__get_issue', 'ok');
    expect(sessionOf('publisher__publish', 'denied')).toBe(session);
    expect(sessionOf('publisher__publish', 'ok')).not.toBe(session);
    expect(gateway.flowLabels(session)).toMatchObject({
      exposedBy: [{ tool: 'tracker__get_issue', server: 'tracker', trust: 'untrusted' }],
      privateFrom: [{ tool: 'repo__read_file', server: 'repo', trust: 'sensitive' }],
    });
    await exposed.close();
    await expect
      .poll(() => gateway.flowLabels(session).exposedBy.length, { timeout: 10_000 })
      .toBe(0);
    expect(gateway.flowLabels(session).privateFrom).toEqual([]);
  }, 60_000);

  it.each([
    ['the gateway observe mode', { observe: true }, 'deny', 'observed'],
    ['flow mode observe', { flow: { mode: 'observe' as const } }, 'allow', 'ok'],
  ])(
    'in %s, runs the publish and audits what the guard would have done',
    async (_name, options, decision, outcome) => {
      const gateway = await startGateway(options);
      const client = await gatewayClient(gateway, open);
      const result = await followInjection(client);
      expect(result.isError).toBeFalsy();
      expect(await published()).toEqual([PRIVATE_TEXT]);
      const lines = (await auditLines()).filter((line) => line.tool === 'publisher__publish');
      expect(lines.map((line) => [line.decision, line.outcome])).toEqual([
        [decision, 'started'],
        [decision, outcome],
      ]);
      for (const line of lines) {
        expect(line.flow).toEqual({ verdict: 'deny', enforced: false, ...TOXIC_FLOW });
      }
      expect(warnings).toContainEqual({
        message: 'The flow guard observed a call it would raise',
        tool: 'publisher__publish',
        would: 'deny',
        enforced: false,
        ...TOXIC_FLOW,
      });
    },
    60_000,
  );

  it.each([
    ['enforcing (the toxic publish is denied)', {}, true],
    ['the gateway observe mode', { observe: true }, false],
    ['flow mode observe', { flow: { mode: 'observe' as const } }, false],
  ])(
    'in %s, consults the flow guard once per call and audits the raise the registry enforced',
    async (_name, options, denied) => {
      const gateway = await startGateway(options);
      const client = await gatewayClient(gateway, open);
      const check = vi.spyOn(FlowGuard.prototype, 'check');
      try {
        const result = await followInjection(client);
        expect(result.isError === true).toBe(denied);
        // Three tools/call: the guard judged each once (the registry's check; the gateway reads it).
        expect(check).toHaveBeenCalledTimes(3);
        const raises = check.mock.results.map((entry) => entry.value as unknown);
        expect(raises.slice(0, 2)).toEqual([undefined, undefined]);
        const last = (await auditLines()).at(-1);
        expect(last?.flow).toEqual({ verdict: 'deny', enforced: denied, ...TOXIC_FLOW });
        expect(raises[2]).toMatchObject({ verdict: 'deny', enforced: denied });
      } finally {
        check.mockRestore();
      }
    },
    60_000,
  );

  it('refuses a reload that changes the flow section, and keeps the labels', async () => {
    const gateway = await startGateway();
    const client = await gatewayClient(gateway, open);
    await client.callTool({ name: 'tracker__get_issue', arguments: { number: 7 } });
    await expect(
      gateway.reload({ config: parseGatewayConfig(config()), flow: { enabled: false } }),
    ).rejects.toMatchObject({ code: 'GATEWAY_CONFIG', message: /applies at start/ });
    await gateway.reload({ config: parseGatewayConfig(config()), flow: {} });
    const result = await client.callTool({
      name: 'publisher__publish',
      arguments: { text: 'x' },
    });
    expect(text(result)).toMatch(/needs the user's approval because this conversation read/);
  }, 60_000);
});

describe('the flow guard for MCP 2026-07-28 clients', () => {
  it('keeps stateless HTTP requests of one principal in one session, and asks through input_required naming the flow', async () => {
    const { gateway, http } = await startHttpGateway();
    const post = modernHttpCaller(http.url, { elicitation: {} });
    // Two requests, no session between them: the principal's labels join them.
    await post({ name: 'tracker__get_issue', arguments: { number: 8 } });
    const publish = { name: 'publisher__publish', arguments: { text: 'notes' } };
    const asked = await post(publish);
    expect(asked.result?.resultType).toBe('input_required');
    const requests = asked.result?.inputRequests as Record<string, { params: { message: string } }>;
    expect(requests.approval?.params.message).toContain(
      'Why asked: this conversation read untrusted text from `tracker__get_issue`; `publisher__publish` would publish or send data outside.',
    );
    expect(await published()).toEqual([]);
    const approved = await post({
      ...publish,
      inputResponses: { approval: { action: 'accept', content: { approve: true } } },
      requestState: asked.result?.requestState,
    });
    expect(rawText(approved)).toBe('published 5 characters');
    expect(await published()).toEqual(['notes']);
    const lines = await auditLines();
    expect(new Set(lines.map((line) => line.session))).toEqual(new Set([SHARED_PRINCIPAL_SESSION]));
    // Stateless requests have no end: the principal's labels stay (within flow.maxSessions).
    expect(gateway.flowLabels(SHARED_PRINCIPAL_SESSION).exposedBy.map((item) => item.tool)).toEqual(
      ['tracker__get_issue'],
    );
    expect(
      lines.filter((line) => line.tool === 'publisher__publish').map((l) => l.outcome),
    ).toEqual(['asked', 'started', 'ok']);
  }, 60_000);

  it('keeps each legacy HTTP session in its own session, and ends its labels when it is terminated', async () => {
    const { Client: ClientV1 } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const { gateway, http } = await startHttpGateway();
    const connect = async () => {
      const transport = new StreamableHTTPClientTransport(new URL(http.url));
      const client = new ClientV1({ name: 'http-client', version: '1.0.0' });
      await client.connect(transport);
      open.push(client);
      return { client, transport };
    };
    const first = await connect();
    const second = await connect();
    expect((await followInjection(first.client)).isError).toBe(true);
    expect(
      text(await second.client.callTool({ name: 'publisher__publish', arguments: { text: 'hi' } })),
    ).toBe('published 2 characters');
    expect(await published()).toEqual(['hi']);
    const session = String(
      (await auditLines()).find((line) => line.tool === 'tracker__get_issue')?.session,
    );
    expect(session).toMatch(/^connection:/);
    expect(gateway.flowLabels(session).privateFrom).toHaveLength(1);
    // The client ends its HTTP session (DELETE): the gateway forgets its labels.
    await first.transport.terminateSession();
    await expect
      .poll(() => gateway.flowLabels(session).exposedBy.length, { timeout: 10_000 })
      .toBe(0);
  }, 60_000);

  it('keeps a 2026-07-28 stdio client in its connection session', async () => {
    const gateway = await startGateway();
    const call = await modernStdioCaller(gateway, open, {});
    await call({ name: 'tracker__get_issue', arguments: { number: 7 } });
    await call({ name: 'repo__read_file', arguments: { path: 'secrets/roadmap.md' } });
    const denied = await call({ name: 'publisher__publish', arguments: { text: PRIVATE_TEXT } });
    expect(denied.result?.isError).toBe(true);
    expect(rawText(denied)).toMatch(/denied by the gateway's flow guard/);
    expect(await published()).toEqual([]);
    // A second stdio client is another session: its publish runs.
    const other = await gatewayClient(gateway, open);
    expect(
      text(await other.callTool({ name: 'publisher__publish', arguments: { text: 'ok' } })),
    ).toBe('published 2 characters');
    const sessions = new Set((await auditLines()).map((line) => line.session));
    expect(sessions.size).toBe(2);
    for (const session of sessions) expect(String(session)).toMatch(/^connection:/);
  }, 60_000);
});

describe('toolfence-mcp serve with a policy file flow section', () => {
  it('reads the flow section of --policy: the serve process denies the toxic publish', async () => {
    const { Client: ClientV1 } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const configPath = join(folder, 'toolfence.json');
    const policyPath = join(folder, 'policy.json');
    await writeFile(configPath, JSON.stringify(config()));
    // A permit from the tracker only: the private data still may not reach the publisher.
    await writeFile(
      policyPath,
      JSON.stringify(
        policyFile({ permit: [{ from: { server: 'tracker' }, to: { server: 'publisher' } }] }),
      ),
    );
    const cli = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'serve', '--config', configPath, '--policy', policyPath],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stderr: 'pipe',
    });
    const client = new ClientV1({ name: 'stdio-client', version: '1.0.0' });
    await client.connect(transport);
    open.push(client);
    const result = await followInjection(client);
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /flow guard: this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`/,
    );
    await client.close();
    expect(await published()).toEqual([]);
    const lines = (await readFile(join(folder, 'toolfence-audit.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({
      tool: 'publisher__publish',
      outcome: 'denied',
      flow: {
        verdict: 'deny',
        exposedBy: ['tracker__get_issue'],
        privateFrom: ['repo__read_file'],
      },
    });
  }, 60_000);
});
