import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CONTENT_TRUST_LEVELS,
  CONTRACT_META_KEY,
  type ContractInput,
  catalogFingerprint,
  defineContract,
  detectDowngrades,
  RISK_LEVELS,
  readContract,
  type ToolContract,
  type ToolListEntry,
  toolAnnotations,
  withContract,
  withContractAnnotations,
} from '../src/index.js';

// Every fact at once, including the lifecycle keys.
const full: ContractInput = {
  risk: 'paid-operation',
  contentTrust: 'sensitive',
  idempotent: true,
  version: '4.5.6-beta.2+build.9',
  deprecatedSince: '2026-02-01',
  sunset: '2026-08-31',
  replacement: 'checkout_v2',
  aliases: ['buy', 'orders.place'],
};

const declared = new Map<string, ToolContract>();
declared.set('checkout', defineContract(full));
for (const risk of RISK_LEVELS) declared.set(`risk_${risk}`, defineContract({ risk }));
for (const contentTrust of CONTENT_TRUST_LEVELS) {
  declared.set(`trust_${contentTrust}`, defineContract({ risk: 'read-only', contentTrust }));
}

const echo = withContract(
  defineContract({ risk: 'read-only', idempotent: true, version: '1.1.0' }),
  async ({ text }: { text: string }) => ({ content: [{ type: 'text' as const, text }] }),
);

let server: McpServer;
let client: Client;

beforeAll(async () => {
  server = new McpServer({ name: 'contract-roundtrip', version: '1.0.0' });
  for (const [name, contract] of declared) {
    server.registerTool(
      name,
      withContractAnnotations(contract, {
        description: `Tool ${name}`,
        inputSchema: { value: z.string().optional() },
        annotations: { title: `Title of ${name}` },
      }),
      async () => ({ content: [{ type: 'text', text: name }] }),
    );
  }
  // A handler that carries its own contract.
  server.registerTool(
    'echo',
    withContractAnnotations(echo, {
      description: 'Echoes text',
      inputSchema: { text: z.string() },
    }),
    echo,
  );
  // An undeclared tool: adoption is incremental.
  server.registerTool(
    'delete_everything',
    withContractAnnotations(() => undefined, { description: 'Removes all rows.' }),
    async () => ({ content: [] }),
  );
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  client = new Client({ name: 'gateway', version: '1.0.0' });
  await server.connect(serverTransport);
  await client.connect(clientTransport);
});

afterAll(async () => {
  await client.close();
  await server.close();
});

/** tools/list through the SDK client, which parses (and strips unknown annotation keys). */
async function parsedTools(): Promise<ToolListEntry[]> {
  return (await client.listTools()).tools;
}

/** tools/list as it is on the wire, as a gateway in another language would see it. */
async function rawTools(): Promise<ToolListEntry[]> {
  const result = await client.request(
    { method: 'tools/list', params: {} },
    z.looseObject({ tools: z.array(z.looseObject({ name: z.string() })) }),
  );
  return result.tools as ToolListEntry[];
}

describe('round trip through a real SDK McpServer and Client', () => {
  it.each([
    ['the SDK client', parsedTools],
    ['the raw wire', rawTools],
  ])('reads every declared fact back exactly through %s', async (_via, list) => {
    const tools = await list();
    for (const [name, contract] of declared) {
      const tool = tools.find((candidate) => candidate.name === name);
      expect(tool, name).toBeDefined();
      const read = readContract(tool as ToolListEntry, { strict: true });
      expect(read.source, name).toBe('declared');
      expect(read.contract, name).toEqual(contract);
      expect(read.problems, name).toEqual([]);
    }
    const echoTool = tools.find((tool) => tool.name === 'echo') as ToolListEntry;
    expect(readContract(echoTool).contract).toEqual(
      defineContract({ risk: 'read-only', idempotent: true, version: '1.1.0' }),
    );
  });

  it('publishes the original keys in annotations and the standard hints the SDK keeps', async () => {
    const raw = (await rawTools()).find((tool) => tool.name === 'checkout');
    const expected = toolAnnotations(declared.get('checkout') as ToolContract);
    expect(raw?.annotations).toEqual({ title: 'Title of checkout', ...expected });
    expect(raw?._meta).toEqual({ [CONTRACT_META_KEY]: expected });

    const parsed = (await parsedTools()).find((tool) => tool.name === 'checkout');
    expect(parsed?.annotations).toEqual({
      title: 'Title of checkout',
      readOnlyHint: expected.readOnlyHint,
      destructiveHint: expected.destructiveHint,
      idempotentHint: expected.idempotentHint,
      openWorldHint: expected.openWorldHint,
    });
  });

  it('lists an undeclared tool without contract keys and reads it heuristically', async () => {
    const tool = (await rawTools()).find((candidate) => candidate.name === 'delete_everything');
    expect(tool?.annotations ?? {}).toEqual({});
    const read = readContract(tool as ToolListEntry, { strict: true });
    expect(read.source).toBe('heuristic');
    expect(read.contract.risk).toBe('destructive');
  });

  it('still calls a handler that carries a contract', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it('gives the same fingerprint to two listings and finds no downgrade between them', async () => {
    const [first, second] = [await rawTools(), await rawTools()];
    expect(catalogFingerprint(first)).toBe(catalogFingerprint(second));
    expect(detectDowngrades(first, second)).toEqual([]);
    expect(detectDowngrades(await parsedTools(), await rawTools())).toEqual([]);
  });
});
