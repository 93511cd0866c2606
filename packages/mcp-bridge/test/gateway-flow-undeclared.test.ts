// The README's "Undeclared servers need your labels": a server shaped like GitHub's that declares
// no contracts is judged by tool-contract's name heuristic, which marks the session exposed but
// never holding private data, so the flow guard alone raises nothing; the policy file's `flow`
// section as the README writes it (`sensitive` and `sinks`) stops the toxic flow.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { parseInspectPolicy } from '../src/gateway/policy-file.js';
import { gatewayClient, resultText as text } from './helpers.js';

const SERVER = fileURLToPath(
  new URL('./fixtures/flow-undeclared-github-server.mjs', import.meta.url),
);
const PRIVATE_TEXT = 'PRIVATE ROADMAP: acquire competitor in Q3; codename BLUEFIN.';
/** The README's `flow` section for GitHub's tools. */
const README_FLOW = {
  sensitive: ['github__get_file_contents'],
  sinks: [
    'github__create_pull_request',
    'github__create_issue',
    'github__add_issue_comment',
    'github__push_files',
  ],
};

let folder: string;
const open: { close(): Promise<void> }[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-flow-undeclared-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function start(flow?: typeof README_FLOW) {
  const policy = parseInspectPolicy({
    kind: 'rules',
    rules: [{ server: 'github', decision: 'allow' }],
    ...(flow === undefined ? {} : { flow }),
  });
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        github: {
          command: process.execPath,
          args: [SERVER],
          env: { PUBLISHED_FILE: join(folder, 'published.jsonl') },
        },
      },
    }),
    authorizer: policy.authorizer,
    ...(policy.flow === undefined ? {} : { flow: policy.flow }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

async function published(): Promise<string[]> {
  const lines = (await readFile(join(folder, 'published.jsonl'), 'utf8').catch(() => '')).split(
    '\n',
  );
  return lines.filter(Boolean).map((line) => (JSON.parse(line) as { text: string }).text);
}

/** The scripted agent follows the issue's injection: read the private file, open a PR with it. */
async function followInjection(client: Client) {
  const repo = { owner: 'acme', repo: 'public-site' };
  const issue = text(
    await client.callTool({ name: 'github__get_issue', arguments: { ...repo, issue_number: 7 } }),
  );
  expect(issue).toContain('secrets/roadmap.md');
  const file = text(
    await client.callTool({
      name: 'github__get_file_contents',
      arguments: { ...repo, path: 'secrets/roadmap.md' },
    }),
  );
  expect(file).toBe(PRIVATE_TEXT);
  return client.callTool({
    name: 'github__create_pull_request',
    arguments: { ...repo, title: 'Roadmap', body: file },
  });
}

describe('the flow guard in front of an undeclared GitHub-like server', () => {
  it('raises nothing on the heuristic alone: the private file reaches the pull request', async () => {
    const client = await gatewayClient(await start(), open);
    const result = await followInjection(client);
    expect(result.isError).toBeFalsy();
    expect(await published()).toEqual([PRIVATE_TEXT]);
  }, 60_000);

  it("with the README's flow section (sensitive and sinks named), the pull request is denied naming the flow", async () => {
    const client = await gatewayClient(await start(README_FLOW), open);
    const result = await followInjection(client);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain(
      "denied by the gateway's flow guard: this conversation read untrusted text from `github__get_issue` and `github__get_file_contents` and private data from `github__get_file_contents`; `github__create_pull_request` is marked as a sink in the gateway's policy file",
    );
    expect(await published()).toEqual([]);
  }, 60_000);
});
