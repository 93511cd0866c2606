// A policy rule with `server` covers that server's prompts and resources as well as its tools:
// the gateway judges a read with the server and the read's own name (`prompt:<name>`,
// `resource:<uri>`) as its origin, for prompts/get and resources/read and for the listings a
// caller with identity is shown. Real stdio upstreams; the gateway in process.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type PolicyRule, RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  defsTool,
  firstText,
  jsonLines,
  readClient,
  readDefsServer,
  startReadGateway,
} from './fixtures/read-gateway.js';

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-read-server-rule-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function twoServers(rules: PolicyRule[], fallback: 'allow' | 'deny') {
  const server = (name: string) =>
    readDefsServer(folder, name, {
      tools: [defsTool(`${name}_tool`)],
      prompts: [{ name: 'brief', description: `The ${name} brief` }],
      resources: [{ name: 'main', uri: `${name}://main` }],
    });
  const gateway = await startReadGateway(
    folder,
    { notes: server('notes'), vault: server('vault') },
    { authorizer: new RuleBasedPolicy(rules, { default: fallback }) },
  );
  open.push(gateway);
  return gateway;
}

const servedBy = async (server: string) =>
  (await jsonLines(folder, 'reads.jsonl')).filter((read) => read.server === server);

describe('a server rule applies to the reads of that server', () => {
  it('denies the prompts and resources of a server its rule denies', async () => {
    const client = await readClient(
      await twoServers(
        [
          { server: 'vault', decision: 'deny', reason: 'vault is off limits' },
          { tool: '*', decision: 'allow' },
        ],
        'deny',
      ),
    );
    open.push(client);
    await expect(client.readResource({ uri: 'vault://main' })).rejects.toThrow(
      /denied by the gateway's policy \(vault is off limits\)/,
    );
    await expect(client.getPrompt({ name: 'vault__brief' })).rejects.toThrow(
      /denied by the gateway's policy \(vault is off limits\)/,
    );
    // The other server's reads are not affected.
    expect(firstText(await client.readResource({ uri: 'notes://main' }))).toBe(
      'content of notes://main',
    );
    expect(JSON.stringify((await client.getPrompt({ name: 'notes__brief' })).messages)).toContain(
      'prompt brief',
    );
    expect(await servedBy('vault')).toEqual([]);
    expect((await servedBy('notes')).map((read) => read.uri ?? read.name)).toEqual([
      'notes://main',
      'brief',
    ]);
    expect(
      (await jsonLines(folder, 'audit.jsonl'))
        .filter((line) => line.decision === 'deny')
        .map((line) => line.tool),
    ).toEqual(['vault__resource:vault://main', 'vault__prompt:brief']);
  }, 60_000);

  it('allows the reads of a server its rule allows, under a default deny', async () => {
    const client = await readClient(
      await twoServers([{ server: 'vault', decision: 'allow' }], 'deny'),
    );
    open.push(client);
    expect(firstText(await client.readResource({ uri: 'vault://main' }))).toBe(
      'content of vault://main',
    );
    expect(JSON.stringify((await client.getPrompt({ name: 'vault__brief' })).messages)).toContain(
      'prompt brief',
    );
    await expect(client.readResource({ uri: 'notes://main' })).rejects.toThrow(/no rule matched/);
    expect(await servedBy('notes')).toEqual([]);
  }, 60_000);

  it('names a read on its server by `prompt:<name>` or `resource:<uri>`', async () => {
    const client = await readClient(
      await twoServers(
        [
          { server: 'vault', tool: 'prompt:*', decision: 'deny', reason: 'no vault prompts' },
          { server: 'vault', tool: 'resource:vault://*', decision: 'allow' },
        ],
        'deny',
      ),
    );
    open.push(client);
    await expect(client.getPrompt({ name: 'vault__brief' })).rejects.toThrow(/no vault prompts/);
    expect(firstText(await client.readResource({ uri: 'vault://main' }))).toBe(
      'content of vault://main',
    );
  }, 60_000);

  it("filters a caller's prompt and resource listings by the server rules that apply to them", async () => {
    const gateway = await twoServers(
      [
        { server: 'vault', principal: { subject: ['bob'] }, decision: 'allow' },
        { server: 'notes', decision: 'allow' },
      ],
      'deny',
    );
    const caller = (subject: string) =>
      readClient(gateway, {
        principal: { issuer: 'https://idp.example', subject, claims: {} },
      });
    const alice = await caller('alice');
    const bob = await caller('bob');
    open.push(alice, bob);
    const prompts = async (client: typeof alice) =>
      (await client.listPrompts()).prompts.map((prompt) => prompt.name).sort();
    const resources = async (client: typeof alice) =>
      (await client.listResources()).resources.map((resource) => resource.uri).sort();
    expect(await prompts(alice)).toEqual(['notes__brief']);
    expect(await resources(alice)).toEqual(['notes://main']);
    expect(await prompts(bob)).toEqual(['notes__brief', 'vault__brief']);
    expect(await resources(bob)).toEqual(['notes://main', 'vault://main']);
    await expect(alice.readResource({ uri: 'vault://main' })).rejects.toThrow(/denied/);
    expect(firstText(await bob.readResource({ uri: 'vault://main' }))).toBe(
      'content of vault://main',
    );
  }, 60_000);
});
