import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  McpCapabilityError,
  McpCatalogStaleError,
  McpConfigurationError,
  McpLimitError,
  McpProtocolError,
  McpRemoteError,
  McpServerConnection,
  type McpServerEvent,
  McpServerRegistry,
  McpTimeoutError,
} from '../src/index.js';
import type { McpLimits } from '../src/mcp/mcp-limits.js';
import { McpSdkSessionAdapter } from '../src/mcp/sdk-session-adapter.js';
import { connectAdversarial, context } from './mcp-helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function setup(
  mode: string,
  options: {
    limits?: Partial<McpLimits>;
    listChanged?: { rediscover?: boolean; debounceMs?: number; minIntervalMs?: number };
    onEvent?: (event: McpServerEvent) => void;
  } = {},
) {
  const peer = await connectAdversarial(mode);
  const registry = new McpServerRegistry(options.onEvent ? { onEvent: options.onEvent } : {});
  cleanups.push(async () => {
    await registry.close();
    await peer.close();
  });
  await registry.register(
    new McpServerConnection({
      session: new McpSdkSessionAdapter(peer.client),
      config: {
        name: 'adv',
        ...(options.limits ? { limits: options.limits } : {}),
        ...(options.listChanged ? { listChanged: options.listChanged } : {}),
      },
    }),
  );
  return { registry, peer };
}

async function tool(registry: McpServerRegistry, serverName: string) {
  const { tools } = await registry.discoverTools('adv');
  const found = tools.find((candidate) => candidate.serverToolName === serverName);
  if (found === undefined) throw new Error(`no tool ${serverName}`);
  return found;
}

describe('MCP adapter against adversarial SDK servers', () => {
  it('follows cursors across pages', async () => {
    const { registry } = await setup('paged');
    const { tools, problems } = await registry.discoverTools('adv');
    expect(tools.map((t) => t.spec.name)).toEqual([
      'mcp__adv__page0_tool0',
      'mcp__adv__page0_tool1',
      'mcp__adv__page1_tool0',
      'mcp__adv__page1_tool1',
      'mcp__adv__page2_tool0',
      'mcp__adv__page2_tool1',
    ]);
    expect(problems).toEqual([]);
  });

  it.each([
    ['a server that repeats its cursor', 'repeat-cursor', {}, McpProtocolError],
    ['a server whose pages never end', 'endless-pages', { maxPages: 5 }, McpLimitError],
    ['a huge page over the default item limit', 'huge-page', {}, McpLimitError],
  ])('refuses %s', async (_label, mode, limits, errorClass) => {
    const { registry } = await setup(mode, { limits });
    await expect(registry.discoverTools('adv')).rejects.toBeInstanceOf(errorClass);
  });

  it('enforces maxItems as configured', async () => {
    const { registry } = await setup('paged', { limits: { maxItems: 5 } });
    await expect(registry.discoverTools('adv')).rejects.toMatchObject({
      code: 'MCP_LIMIT_EXCEEDED',
      details: { limit: 'maxItems' },
    });
  });

  it('skips malformed tools with their reasons and keeps the good ones', async () => {
    const { registry } = await setup('malformed-tool');
    const { tools, problems } = await registry.discoverTools('adv');
    expect(tools.map((t) => t.serverToolName)).toEqual(['good_one', 'bad_declaration', 'good_two']);
    expect(problems).toEqual([
      {
        listing: 'tools',
        page: 1,
        index: 1,
        name: 'bad_schema',
        reason: 'tool inputSchema is not an object schema',
      },
      { listing: 'tools', page: 1, index: 2, reason: 'tool name is missing or too long' },
    ]);
  });

  it('reads declared contracts from annotations and never trusts an invalid one', async () => {
    const { registry } = await setup('malformed-tool');
    const { tools } = await registry.discoverTools('adv');
    const [undeclared, invalid, declared] = tools;
    expect(declared?.contractSource).toBe('declared');
    expect(declared?.spec.contract).toMatchObject({ risk: 'read-only', contentTrust: 'untrusted' });
    expect(declared?.spec.effect).toEqual({ default: 'read' });
    expect(undeclared?.contractSource).toBe('heuristic');
    expect(undeclared?.spec.contract).toBeUndefined();
    expect(undeclared?.spec.effect).toEqual({ default: 'unknown' });
    expect(invalid?.contractSource).toBe('heuristic');
    expect(invalid?.spec.effect).toEqual({ default: 'unknown' });
    expect(invalid?.contractProblems.length).toBeGreaterThan(0);
  });

  it('keeps at most maxContentBlocks blocks and says so', async () => {
    const { registry } = await setup('default');
    const result = await (await tool(registry, 'many_blocks')).invoke({}, context);
    expect(result.content).toHaveLength(256);
    expect(result.metadata).toMatchObject({
      server: 'adv',
      tool: 'many_blocks',
      blockCount: 256,
      sourceBlockCount: 1_000,
      truncated: true,
    });
  });

  it('cuts a huge text result at maxResultChars', async () => {
    const { registry } = await setup('default', { limits: { maxResultChars: 10_000 } });
    const result = await (await tool(registry, 'huge_text')).invoke({}, context);
    const [block] = result.content;
    expect(block?.type === 'text' && block.text.length).toBe(10_000);
    expect(result.metadata).toMatchObject({ truncated: true, resultChars: 10_000 });
  });

  it('times out a slow tool with a typed error', async () => {
    const { registry } = await setup('default', { limits: { requestTimeoutMs: 200 } });
    await expect((await tool(registry, 'slow')).invoke({}, context)).rejects.toBeInstanceOf(
      McpTimeoutError,
    );
  });

  it('stops a call when the caller aborts', async () => {
    const { registry } = await setup('default');
    const controller = new AbortController();
    const slow = await tool(registry, 'slow');
    const call = slow.invoke({}, { ...context, signal: controller.signal });
    controller.abort();
    await expect(call).rejects.toMatchObject({
      code: 'MCP_LIFECYCLE',
      details: { reason: 'aborted' },
    });
  });

  it('reports a remote error by code without the remote text', async () => {
    const { registry } = await setup('default');
    const error = await (await tool(registry, 'remote_error')).invoke({}, context).catch((e) => e);
    expect(error).toBeInstanceOf(McpRemoteError);
    expect(error.remoteCode).toBe(-32602);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(
      'SECRET',
    );
    expect(error.cause).toBeUndefined();
  });

  it('keeps structuredContent alongside content', async () => {
    const { registry } = await setup('default');
    const result = await (await tool(registry, 'structured')).invoke({}, context);
    expect(result.structuredContent).toEqual({ answer: 42 });
    expect(result.content).toEqual([{ type: 'text', text: '{"answer":42}' }]);
  });

  it('refuses a result whose content is not an array', async () => {
    const { registry } = await setup('default');
    await expect(
      (await tool(registry, 'not_an_object')).invoke({}, context),
    ).rejects.toBeInstanceOf(McpProtocolError);
  });

  it('raises a capability error for what the server explicitly lacks, and catalogs around it', async () => {
    const { registry } = await setup('tools-only');
    await expect(registry.listResources('adv')).rejects.toBeInstanceOf(McpCapabilityError);
    await expect(registry.listPrompts('adv')).rejects.toBeInstanceOf(McpCapabilityError);
    await expect(registry.readResource('adv', 'adv://doc')).rejects.toBeInstanceOf(
      McpCapabilityError,
    );
    const catalog = await registry.catalog('adv');
    expect(catalog.resources).toEqual([]);
    expect(catalog.prompts).toEqual([]);
    expect(catalog.tools.length).toBeGreaterThan(0);
  });

  it('lists resources, templates and prompts in one catalog, skipping a malformed resource', async () => {
    const { registry } = await setup('default');
    const catalog = await registry.catalog('adv');
    expect(catalog.resources).toEqual([{ uri: 'adv://doc', name: 'doc', mimeType: 'text/plain' }]);
    expect(catalog.resourceTemplates).toEqual([{ uriTemplate: 'adv://items/{id}', name: 'item' }]);
    expect(catalog.prompts).toEqual([
      { name: 'greet', arguments: [{ name: 'who', required: true }] },
    ]);
    expect(catalog.problems).toEqual([
      {
        listing: 'resources',
        page: 1,
        index: 1,
        name: 'bad',
        reason: 'resource uri is missing or too long',
      },
    ]);
    const read = await registry.readResource('adv', 'adv://doc');
    expect(read.contents).toHaveLength(1);
    const prompt = await registry.getPrompt('adv', 'greet', { who: 'Ada' });
    expect(prompt.messages).toEqual([
      { role: 'user', content: { type: 'text', text: 'Hello Ada' } },
    ]);
    expect(prompt.metadata).toMatchObject({ trust: 'untrusted' });
  });

  it('bounds a resource read and a prompt with the same limits', async () => {
    const { registry } = await setup('default', {
      limits: { maxResultChars: 100, maxContentBlocks: 1 },
    });
    const read = await registry.readResource('adv', 'adv://doc');
    expect(read.contents).toEqual([]);
    expect(read.metadata).toMatchObject({ truncated: true, omittedBlocks: 1 });
    const prompt = await registry.getPrompt('adv', 'greet', { who: 'x'.repeat(500) });
    const [message] = prompt.messages;
    expect(message?.content.type === 'text' && message.content.text.length).toBe(100);
    expect(prompt.metadata).toMatchObject({ truncated: true });
  });

  it('marks the catalog stale on a list_changed storm and rediscovers with debounce and rate limit', async () => {
    const events: McpServerEvent[] = [];
    let rediscovered!: () => void;
    const done = new Promise<void>((resolve) => {
      rediscovered = resolve;
    });
    const { registry } = await setup('storm', {
      listChanged: { rediscover: true, debounceMs: 50, minIntervalMs: 10_000 },
      onEvent: (event) => {
        events.push(event);
        if (event.type === 'tools_rediscovered') rediscovered();
      },
    });
    const { tools } = await registry.discoverTools('adv');
    const fire = tools.find((t) => t.serverToolName === 'fire_storm');
    const old = tools.find((t) => t.serverToolName === 'storm_gen0');
    await fire?.invoke({ count: 200 }, context);
    await expect(old?.invoke({}, context)).rejects.toBeInstanceOf(McpCatalogStaleError);
    await done;
    const changes = events.filter((event) => event.type === 'tools_list_changed').length;
    const rediscoveries = events.filter((event) => event.type === 'tools_rediscovered');
    expect(changes).toBe(200);
    expect(rediscoveries).toHaveLength(1);
    expect(rediscoveries[0]).toMatchObject({ changed: true, toolCount: 2 });
    expect(registry.get('adv').catalogStale).toBe(false);
    await expect(old?.invoke({}, context)).rejects.toBeInstanceOf(McpCatalogStaleError);
    const fresh = await registry.discoverTools('adv');
    expect(fresh.tools.map((t) => t.serverToolName)).toContain('storm_gen1');
  });

  it('does not rediscover on list_changed unless enabled, but still marks the catalog stale', async () => {
    const events: McpServerEvent[] = [];
    const { registry } = await setup('storm', { onEvent: (event) => events.push(event) });
    const { tools } = await registry.discoverTools('adv');
    await tools.find((t) => t.serverToolName === 'fire_storm')?.invoke({ count: 3 }, context);
    expect(registry.get('adv').catalogStale).toBe(true);
    expect(events.map((event) => event.type)).toEqual([
      'tools_list_changed',
      'tools_list_changed',
      'tools_list_changed',
    ]);
  });

  it('runs as a stdio process: a slow call times out and an owned session closes the client', async () => {
    const client = new Client({ name: 'toolfence-test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        fileURLToPath(new URL('./fixtures/mcp-adversarial-server.mjs', import.meta.url)),
        'default',
      ],
      env: { PATH: process.env.PATH ?? '' },
      stderr: 'ignore',
    });
    await client.connect(transport);
    let closed = 0;
    const registry = new McpServerRegistry();
    await registry.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client, {
          onClose: async () => {
            closed += 1;
            await client.close();
          },
        }),
        config: { name: 'adv', ownsSession: true, limits: { requestTimeoutMs: 300 } },
      }),
    );
    const slow = await tool(registry, 'slow');
    await expect(slow.invoke({}, context)).rejects.toBeInstanceOf(McpTimeoutError);
    const echo = await tool(registry, 'echo');
    expect((await echo.invoke({ text: 'alive' }, context)).content).toEqual([
      { type: 'text', text: 'alive' },
    ]);
    await registry.close();
    await registry.close();
    expect(closed).toBe(1);
    expect(transport.pid).toBeNull();
  });
});

describe('McpSdkSessionAdapter', () => {
  it('does not close the host client unless told to', async () => {
    const peer = await connectAdversarial('default');
    cleanups.push(peer.close);
    const session = new McpSdkSessionAdapter(peer.client);
    await session.close();
    await session.close();
    expect(await session.listTools(undefined)).toMatchObject({ tools: expect.any(Array) });
  });

  it('reports the server capabilities the client negotiated', async () => {
    const peer = await connectAdversarial('tools-only');
    cleanups.push(peer.close);
    const result = await new McpSdkSessionAdapter(peer.client).initialize();
    expect(result.capabilities).toEqual({ tools: { listChanged: true } });
    expect(result.serverInfo).toEqual({ name: 'adversarial-tools-only', version: '1.0.0' });
  });

  it('refuses something that is not a client', () => {
    expect(() => new McpSdkSessionAdapter({} as never)).toThrow(McpConfigurationError);
  });
});
