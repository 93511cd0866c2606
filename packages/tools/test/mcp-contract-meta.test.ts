import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { defineContract, withContractAnnotations } from '@toolfence/tool-contract';
import { afterEach, describe, expect, it } from 'vitest';
import { McpServerConnection, McpServerRegistry, type McpSession } from '../src/index.js';
import { McpSdkSessionAdapter } from '../src/mcp/sdk-session-adapter.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

const STANDARD_HINTS = new Set([
  'title',
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
]);

/**
 * A session that lists tools the way the SDK client's `listTools()` hands them over: unknown
 * annotation keys stripped, `_meta` kept. Everything else goes to the real adapter.
 */
function strippingSession(inner: McpSession): McpSession {
  return new Proxy(inner, {
    get(target, property) {
      if (property !== 'listTools') {
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (cursor?: string) => {
        const page = (await target.listTools(cursor)) as { tools: Record<string, unknown>[] };
        return {
          ...page,
          tools: page.tools.map((tool) => ({
            ...tool,
            annotations: Object.fromEntries(
              Object.entries((tool.annotations ?? {}) as Record<string, unknown>).filter(([key]) =>
                STANDARD_HINTS.has(key),
              ),
            ),
          })),
        };
      };
    },
  });
}

async function discover(strip: boolean) {
  const server = new McpServer({ name: 'declared', version: '1.0.0' });
  server.registerTool(
    'purge_archive',
    withContractAnnotations(defineContract({ risk: 'destructive', contentTrust: 'sensitive' }), {
      description: 'Purge an archive.',
    }),
    async () => ({ content: [{ type: 'text', text: 'ok' }] }),
  );
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'toolfence-test', version: '1.0.0' });
  await client.connect(clientTransport);
  const adapter = new McpSdkSessionAdapter(client);
  const registry = new McpServerRegistry();
  cleanups.push(async () => {
    await registry.close();
    await client.close();
    await server.close();
  });
  await registry.register(
    new McpServerConnection({
      session: strip ? strippingSession(adapter) : adapter,
      config: { name: 'declared' },
    }),
  );
  const { tools } = await registry.discoverTools('declared');
  return tools[0]!;
}

describe('declared contracts of MCP tools', () => {
  it.each([
    ['annotations and _meta as the server sent them', false],
    ['_meta only, after a client stripped the custom annotation keys', true],
  ])('reads the declaration from %s', async (_label, strip) => {
    const tool = await discover(strip);
    expect(tool.contractSource).toBe('declared');
    expect(tool.spec.contract).toMatchObject({ risk: 'destructive', contentTrust: 'sensitive' });
    expect(tool.spec.effect).toEqual({ default: 'write' });
  });
});
