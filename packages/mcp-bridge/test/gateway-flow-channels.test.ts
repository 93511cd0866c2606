// The flow guard on the channels besides tools/call: after a conversation read untrusted text and
// private data, a prompts/get with arguments, a resources/read of a template's expansion and a
// completion/complete carry that data to a server as surely as a tool call does. The gateway
// judges them as a call to that server would be, and completions answer to the policy's read
// decision of what they complete (audited, the client's `_meta` kept at the gateway). Real stdio
// servers: the toxic flow's tracker and repo, and a publisher that logs every request it gets.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import type { GatewayFlowSettings } from '../src/gateway/flow-config.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { parseInspectPolicy } from '../src/gateway/policy-file.js';
import { gatewayClient, resultText as text } from './helpers.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.mjs`, import.meta.url));
const PRIVATE_TEXT = 'PRIVATE ROADMAP: acquire competitor in Q3; codename BLUEFIN.';

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-flow-channels-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function startGateway(
  options: {
    flow?: GatewayFlowSettings;
    rules?: Record<string, unknown>[];
    publishRisk?: string;
    observe?: boolean;
  } = {},
) {
  const policy = parseInspectPolicy({
    kind: 'rules',
    rules: options.rules ?? [
      { server: 'tracker', decision: 'allow' },
      { server: 'repo', decision: 'allow' },
      { server: 'publisher', decision: 'allow' },
    ],
    ...(options.flow === undefined ? {} : { flow: options.flow }),
  });
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        tracker: { command: process.execPath, args: [fixture('flow-tracker-server')] },
        repo: { command: process.execPath, args: [fixture('flow-repo-server')] },
        publisher: {
          command: process.execPath,
          args: [fixture('flow-channels-server')],
          env: {
            RECEIVED: join(folder, 'received.jsonl'),
            ...(options.publishRisk === undefined ? {} : { PUBLISH_RISK: options.publishRisk }),
          },
        },
      },
    }),
    authorizer: policy.authorizer,
    ...(policy.flow === undefined ? {} : { flow: policy.flow }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...(options.observe === undefined ? {} : { observe: options.observe }),
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

/** The requests the publisher received (method and params whole). */
async function received(): Promise<{ method: string; params: Record<string, unknown> }[]> {
  const lines = (await readFile(join(folder, 'received.jsonl'), 'utf8').catch(() => '')).split(
    '\n',
  );
  return lines.filter(Boolean).map((line) => JSON.parse(line));
}

async function auditLines(): Promise<Record<string, unknown>[]> {
  const lines = (await readFile(join(folder, 'audit.jsonl'), 'utf8')).split('\n');
  return lines.filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Makes the conversation exposed (a public issue) and private (a private file); the file's text. */
async function readIssueAndSecret(client: Client): Promise<string> {
  await client.callTool({ name: 'tracker__get_issue', arguments: { number: 7 } });
  const secret = text(
    await client.callTool({ name: 'repo__read_file', arguments: { path: 'secrets/roadmap.md' } }),
  );
  expect(secret).toBe(PRIVATE_TEXT);
  return secret;
}

/** Every channel besides tools/call that carries `secret` to the publisher. */
function channels(client: Client, secret: string) {
  return {
    'prompts/get': () =>
      client.getPrompt({ name: 'publisher__announce', arguments: { text: secret } }),
    'resources/read': () =>
      client.readResource({ uri: `pub://note/${encodeURIComponent(secret)}` }),
    'completion/complete (prompt)': () =>
      client.complete({
        ref: { type: 'ref/prompt', name: 'publisher__announce' },
        argument: { name: 'text', value: secret },
      }),
    'completion/complete (resource)': () =>
      client.complete({
        ref: { type: 'ref/resource', uri: 'pub://note/{text}' },
        argument: { name: 'text', value: secret },
      }),
  } as const;
}

describe('the flow guard on prompts, resources and completions', () => {
  it('denies every channel that carries the private text to a server offering a sink tool, sending nothing', async () => {
    const gateway = await startGateway();
    const client = await gatewayClient(gateway, open);
    const secret = await readIssueAndSecret(client);
    for (const [channel, send] of Object.entries(channels(client, secret))) {
      await expect(send(), channel).rejects.toThrow(
        /is denied by the gateway's flow guard: it carries data to server publisher, and this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`/,
      );
    }
    expect(await received()).toEqual([]);
    const refused = (await auditLines()).filter((line) => line.kind !== undefined);
    expect(refused.map((line) => [line.kind, line.tool, line.decision, line.outcome])).toEqual([
      ['prompt', 'publisher__prompt:announce', 'deny', 'denied'],
      [
        'resource',
        `publisher__resource:pub://note/${encodeURIComponent(secret)}`,
        'deny',
        'denied',
      ],
      ['completion', 'publisher__prompt:announce', 'deny', 'denied'],
      ['completion', 'publisher__resource:pub://note/{text}', 'deny', 'denied'],
    ]);
    for (const line of refused) {
      expect(line.session).toMatch(/^connection:/);
      expect(line.flow).toMatchObject({
        verdict: 'deny',
        enforced: true,
        exposedBy: ['tracker__get_issue'],
        privateFrom: ['repo__read_file'],
      });
    }
  }, 60_000);

  it('lets through what carries no client data: a listed resource and a prompt without arguments', async () => {
    const gateway = await startGateway();
    const client = await gatewayClient(gateway, open);
    await readIssueAndSecret(client);
    const about = await client.readResource({ uri: 'pub://about' });
    expect(about.contents[0]).toMatchObject({ text: 'content of pub://about' });
    await client.getPrompt({ name: 'publisher__announce' });
    expect((await received()).map((request) => request.method)).toEqual([
      'resources/read',
      'prompts/get',
    ]);
  }, 60_000);

  it('sends every channel in a conversation that read nothing untrusted', async () => {
    const gateway = await startGateway();
    const client = await gatewayClient(gateway, open);
    for (const send of Object.values(channels(client, 'hello'))) await send();
    expect((await received()).map((request) => request.method)).toEqual([
      'prompts/get',
      'resources/read',
      'completion/complete',
      'completion/complete',
    ]);
  }, 60_000);

  it('judges a server with no sink tool as a sink when flow.sinks names it, and not otherwise', async () => {
    const named = await startGateway({
      publishRisk: 'read-only',
      flow: { sinks: [{ server: 'publisher' }] },
    });
    const client = await gatewayClient(named, open);
    const secret = await readIssueAndSecret(client);
    for (const [channel, send] of Object.entries(channels(client, secret))) {
      await expect(send(), channel).rejects.toThrow(/denied by the gateway's flow guard/);
    }
    expect(await received()).toEqual([]);
    await named.close();
    const unnamed = await startGateway({ publishRisk: 'read-only' });
    const other = await gatewayClient(unnamed, open);
    for (const send of Object.values(channels(other, await readIssueAndSecret(other)))) {
      await send();
    }
    expect(await received()).toHaveLength(4);
  }, 60_000);

  it("lets flow.notSinks and flow.permit name a server's reads", async () => {
    const gateway = await startGateway({
      flow: {
        notSinks: [{ server: 'publisher', tool: 'prompt:*' }],
        permit: [{ from: { server: 'repo' }, to: { server: 'publisher', tool: 'resource:*' } }],
      },
    });
    const client = await gatewayClient(gateway, open);
    const secret = await readIssueAndSecret(client);
    const sent = channels(client, secret);
    await sent['prompts/get']();
    // Private data permitted, untrusted text not: asked, and this client cannot be asked.
    await expect(sent['resources/read']()).rejects.toThrow(
      /needs the user's approval because it carries data to server publisher/,
    );
    expect((await received()).map((request) => request.method)).toEqual(['prompts/get']);
  }, 60_000);
});

describe('a raised read is asked, or observed, as a raised call is', () => {
  it('refuses a prompt the policy asked for when, while the prompt waited, the conversation read the flow', async () => {
    const gateway = await startGateway({
      rules: [
        { tool: 'publisher__prompt:*', decision: 'ask', reason: 'announcements are reviewed' },
        { server: 'tracker', decision: 'allow' },
        { server: 'repo', decision: 'allow' },
        { server: 'publisher', decision: 'allow' },
      ],
    });
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await gateway.connect(serverSide);
    const client = new Client(
      { name: 'test-client', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    const shown: string[] = [];
    // While the prompt is open, the same connection reads the public issue and the private file.
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      shown.push(String(request.params.message));
      await readIssueAndSecret(client);
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(clientSide);
    open.push(client);
    await expect(
      client.getPrompt({ name: 'publisher__announce', arguments: { text: 'weekly notes' } }),
    ).rejects.toThrow(
      /prompts\/get of publisher__prompt:announce was approved, but while it waited for the approval this conversation read untrusted text from `tracker__get_issue` and private data from `repo__read_file`;.* the gateway's flow guard denies it and it was not sent/,
    );
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatch(/Why asked: announcements are reviewed/);
    expect(await received()).toEqual([]);
    const prompts = (await auditLines()).filter((line) => line.kind === 'prompt');
    expect(prompts.map((line) => [line.decision, line.approvedBy, line.outcome])).toEqual([
      ['deny', 'user', 'denied'],
    ]);
    expect(prompts[0]?.flow).toMatchObject({
      verdict: 'deny',
      enforced: true,
      exposedBy: ['tracker__get_issue'],
      privateFrom: ['repo__read_file'],
    });
  }, 60_000);

  it('asks a client that can be asked, naming the flow, and sends the prompt only when approved', async () => {
    const gateway = await startGateway({
      flow: { permit: [{ from: { server: 'repo' }, to: { server: 'publisher' } }] },
    });
    const shown: string[] = [];
    let approve = false;
    const client = await gatewayClient(gateway, open, (message) => {
      shown.push(message);
      return approve;
    });
    const secret = await readIssueAndSecret(client);
    const get = () =>
      client.getPrompt({ name: 'publisher__announce', arguments: { text: secret } });
    await expect(get()).rejects.toThrow(/was not approved by the user, so it was not sent/);
    approve = true;
    await get();
    expect(shown).toHaveLength(2);
    expect(shown[0]).toMatch(
      /^Allow this prompt: publisher__prompt:announce \(server publisher\)\?/,
    );
    expect(shown[0]).toMatch(
      /Why asked: this conversation read untrusted text from `tracker__get_issue`/,
    );
    expect((await received()).map((request) => request.method)).toEqual(['prompts/get']);
    const prompts = (await auditLines()).filter((line) => line.kind === 'prompt');
    expect(prompts.map((line) => [line.decision, line.outcome, line.approvedBy])).toEqual([
      ['ask', 'declined', undefined],
      ['ask', 'started', 'user'],
      ['ask', 'ok', 'user'],
    ]);
    expect(prompts[0]?.flow).toMatchObject({ verdict: 'ask', enforced: true });
  }, 60_000);

  it('in observe mode sends every channel and audits what the guard would have done', async () => {
    const gateway = await startGateway({ observe: true });
    const client = await gatewayClient(gateway, open);
    const secret = await readIssueAndSecret(client);
    for (const send of Object.values(channels(client, secret))) await send();
    expect(await received()).toHaveLength(4);
    const outcomes = (await auditLines()).filter(
      (line) => line.kind !== undefined && line.outcome !== 'started',
    );
    expect(outcomes).toHaveLength(4);
    for (const line of outcomes) {
      expect(line).toMatchObject({ decision: 'deny', outcome: 'observed', observed: true });
      expect(line.flow).toMatchObject({ verdict: 'deny', enforced: false });
    }
  }, 60_000);
});

describe('completion/complete answers to the read decision of what it completes', () => {
  it('is refused for a server the policy denies, unsent, and audited as a completion', async () => {
    const gateway = await startGateway({
      rules: [{ server: 'publisher', decision: 'deny', reason: 'no publishing' }],
    });
    const client = await gatewayClient(gateway, open);
    await expect(
      client.complete({
        ref: { type: 'ref/prompt', name: 'publisher__announce' },
        argument: { name: 'text', value: 'a' },
      }),
    ).rejects.toThrow(
      /completion\/complete of publisher__prompt:announce is denied by the gateway's policy \(no publishing\)/,
    );
    expect(await received()).toEqual([]);
    expect((await auditLines()).map((line) => [line.kind, line.tool, line.outcome])).toEqual([
      ['completion', 'publisher__prompt:announce', 'denied'],
    ]);
  }, 60_000);

  it('is refused when a rule denies the prompt or the resource it completes', async () => {
    const gateway = await startGateway({
      rules: [
        { server: 'publisher', tool: 'prompt:announce', decision: 'deny' },
        { server: 'publisher', tool: 'resource:pub://note/*', decision: 'ask' },
        { server: 'publisher', decision: 'allow' },
      ],
    });
    const client = await gatewayClient(gateway, open, () => true);
    const sent = channels(client, 'a');
    await expect(sent['completion/complete (prompt)']()).rejects.toThrow(
      /denied by the gateway's policy/,
    );
    // A completion is never put to the user, even one who could be asked.
    await expect(sent['completion/complete (resource)']()).rejects.toThrow(
      /its completions are never put to the user/,
    );
    expect(await received()).toEqual([]);
    expect((await auditLines()).map((line) => [line.kind, line.decision, line.outcome])).toEqual([
      ['completion', 'deny', 'denied'],
      ['completion', 'ask', 'no-approval-channel'],
    ]);
  }, 60_000);

  it('forwards only ref, argument and context, and audits the completion before and after', async () => {
    const gateway = await startGateway();
    const client = await gatewayClient(gateway, open);
    const answer = await client.request(
      {
        method: 'completion/complete',
        params: {
          ref: { type: 'ref/prompt', name: 'publisher__announce', extra: 'x' },
          argument: { name: 'text', value: 'he' },
          context: { arguments: { other: 'v' } },
          _meta: { progressToken: 'tok-1', 'example.com/trace': 'secret-trace' },
        },
      },
      (await import('@modelcontextprotocol/sdk/types.js')).CompleteResultSchema,
    );
    expect(answer.completion.values).toEqual(['one', 'two']);
    expect(await received()).toEqual([
      {
        method: 'completion/complete',
        params: {
          ref: { type: 'ref/prompt', name: 'announce' },
          argument: { name: 'text', value: 'he' },
          context: { arguments: { other: 'v' } },
        },
      },
    ]);
    expect((await auditLines()).map((line) => [line.kind, line.tool, line.outcome])).toEqual([
      ['completion', 'publisher__prompt:announce', 'started'],
      ['completion', 'publisher__prompt:announce', 'ok'],
    ]);
  }, 60_000);
});
