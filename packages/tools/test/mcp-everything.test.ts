import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  contractOf,
  McpCatalogStaleError,
  McpServerConnection,
  McpServerRegistry,
  type McpToolAdapter,
  RiskPolicy,
  resolveEffect,
  type ToolSpec,
} from '../src/index.js';
import { McpSdkSessionAdapter } from '../src/mcp/sdk-session-adapter.js';
import { context } from './mcp-helpers.js';

const everythingEntry = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

async function startEverything(): Promise<Client> {
  const client = new Client({ name: 'toolfence-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [everythingEntry, 'stdio'],
      // A minimal environment: server-everything's get-env tool returns all of it.
      env: { PATH: process.env.PATH ?? '' },
      stderr: 'ignore',
    }),
  );
  return client;
}

/** What a default RiskPolicy says about a discovered tool, as the registry would ask it. */
function riskVerdict(spec: ToolSpec): string {
  const contract = contractOf(spec);
  const decision = new RiskPolicy().authorize({
    toolName: spec.name,
    args: {},
    context,
    spec,
    contract,
    effect: resolveEffect(spec, {}, contract),
  });
  return `${decision.verdict} (${decision.reason})`;
}

describe('MCP adapter against server-everything over stdio', () => {
  let client: Client;
  let registry: McpServerRegistry;
  let tools: readonly McpToolAdapter[];

  beforeAll(async () => {
    client = await startEverything();
    registry = new McpServerRegistry();
    await registry.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client),
        config: { name: 'everything' },
      }),
    );
    ({ tools } = await registry.discoverTools('everything'));
    // server-everything registers tools after `initialized` and announces each with
    // list_changed; a late announcement marks the catalog stale, so settle once more.
    if (registry.get('everything').catalogStale) {
      ({ tools } = await registry.discoverTools('everything'));
    }
  }, 20_000);

  afterAll(async () => {
    await registry?.close();
    await client?.close();
  });

  function byName(name: string): McpToolAdapter {
    const found = tools.find((tool) => tool.serverToolName === name);
    if (found === undefined) throw new Error(`server-everything has no tool ${name}`);
    return found;
  }

  it('discovers the tools under safe namespaced names with their input schemas', () => {
    const names = tools.map((tool) => tool.spec.name);
    expect(names).toContain('mcp__everything__echo');
    expect(names).toContain('mcp__everything__get-sum');
    for (const name of names) {
      expect(name).toMatch(/^mcp__everything__[A-Za-z0-9_-]+$/);
      expect(name.length).toBeLessThanOrEqual(64);
    }
    const echo = byName('echo');
    expect(echo.spec.inputSchema).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
    });
    // The declared dialect is kept, so the registry validates in it (draft-07 here).
    expect(echo.spec.inputSchema).toHaveProperty(
      '$schema',
      'http://json-schema.org/draft-07/schema#',
    );
    expect(echo.spec.effect).toEqual({ default: 'unknown' });
    expect(echo.contractSource).toBe('heuristic');
  });

  // The live server's names and hints through a default RiskPolicy: reads by name are allowed;
  // a readOnlyHint alone never lowers a guess (echo, trigger-long-running-operation still ask),
  // readOnlyHint: false raises a read-looking name to a write (simulate-research-query).
  it('judges the undeclared tools by the name heuristic raised by their hints', () => {
    const verdicts = Object.fromEntries(
      tools.map((tool) => [tool.serverToolName, riskVerdict(tool.spec)]),
    );
    expect(verdicts).toMatchObject({
      echo: 'ask (heuristic risk high-risk-write)',
      'get-annotated-message': 'ask (heuristic content trust prompt-injection-prone)',
      'get-env': 'ask (heuristic content trust sensitive)',
      'get-resource-links': 'allow (heuristic risk read-only)',
      'get-resource-reference': 'allow (heuristic risk read-only)',
      'get-structured-content': 'allow (heuristic risk read-only)',
      'get-sum': 'allow (heuristic risk read-only)',
      'get-tiny-image': 'allow (heuristic risk read-only)',
      'gzip-file-as-resource': 'ask (heuristic risk high-risk-write)',
      'toggle-simulated-logging': 'ask (heuristic risk high-risk-write)',
      'toggle-subscriber-updates': 'ask (heuristic risk low-risk-write)',
      'simulate-research-query': 'ask (heuristic risk low-risk-write)',
    });
    // No tool the server marks as a write is ever allowed.
    for (const tool of tools) {
      if (tool.spec.annotations?.readOnlyHint === false) {
        expect(riskVerdict(tool.spec), tool.serverToolName).not.toMatch(/^allow/);
      }
    }
  });

  it('calls a tool and maps its text result with metadata', async () => {
    const result = await byName('echo').invoke({ message: 'hi' }, context);
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
    expect(result.metadata).toMatchObject({
      server: 'everything',
      tool: 'echo',
      blockCount: 1,
      truncated: false,
    });
  });

  it('keeps structuredContent next to the content', async () => {
    const result = await byName('get-structured-content').invoke({ location: 'New York' }, context);
    expect(result.structuredContent).toMatchObject({ temperature: expect.any(Number) });
    expect(result.content.length).toBeGreaterThan(0);
  });

  it('maps an image block', async () => {
    const result = await byName('get-tiny-image').invoke({}, context);
    expect(result.content.some((block) => block.type === 'image')).toBe(true);
  });

  it('keeps resource links as links without fetching them', async () => {
    const result = await byName('get-resource-links').invoke({ count: 3 }, context);
    const links = result.content.filter((block) => block.type === 'resource_link');
    expect(links).toHaveLength(3);
  });

  it('maps an embedded resource', async () => {
    const result = await byName('get-resource-reference').invoke(
      { resourceType: 'Text', resourceId: 1 },
      context,
    );
    expect(result.content.some((block) => block.type === 'resource')).toBe(true);
  });

  it('lists and reads resources as data, never as tools', async () => {
    const { items } = await registry.listResources('everything');
    const uris = items.map((resource) => resource.uri);
    expect(uris).toContain('demo://resource/static/document/architecture.md');
    const read = await registry.readResource(
      'everything',
      'demo://resource/static/document/architecture.md',
    );
    expect(read.contents[0]?.resource.text?.length).toBeGreaterThan(0);
    expect(tools.some((tool) => tool.spec.name.includes('architecture'))).toBe(false);
  });

  it('lists resource templates and prompts, and fetches a prompt marked untrusted', async () => {
    const catalog = await registry.catalog('everything');
    expect(catalog.resourceTemplates.map((template) => template.uriTemplate)).toContain(
      'demo://resource/dynamic/text/{resourceId}',
    );
    expect(catalog.prompts.map((prompt) => prompt.name)).toEqual(
      expect.arrayContaining(['simple-prompt', 'args-prompt']),
    );
    const prompt = await registry.getPrompt('everything', 'args-prompt', { city: 'Paris' });
    expect(prompt.messages.length).toBeGreaterThan(0);
    expect(prompt.metadata).toMatchObject({ trust: 'untrusted', server: 'everything' });
  });

  it('bounds a listing page on the raw payload with the configured item limit', async () => {
    const limited = new McpServerRegistry();
    await limited.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client),
        config: { name: 'limited', limits: { maxItems: 3 } },
      }),
    );
    await expect(limited.discoverTools('limited')).rejects.toMatchObject({
      code: 'MCP_LIMIT_EXCEEDED',
    });
    await limited.close();
  });

  it('makes adapters of a replaced connection stale while new discovery works', async () => {
    const local = new McpServerRegistry();
    await local.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client),
        config: { name: 'everything' },
      }),
    );
    const before = await local.discoverTools('everything');
    await local.replace(
      'everything',
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client),
        config: { name: 'everything' },
      }),
    );
    const echo = before.tools.find((tool) => tool.serverToolName === 'echo');
    await expect(echo?.invoke({ message: 'x' }, context)).rejects.toBeInstanceOf(
      McpCatalogStaleError,
    );
    const after = await local.discoverTools('everything');
    const fresh = after.tools.find((tool) => tool.serverToolName === 'echo');
    expect((await fresh?.invoke({ message: 'y' }, context))?.content).toEqual([
      { type: 'text', text: 'Echo: y' },
    ]);
    await local.close();
    // The host's client was not closed by the registry (ownsSession defaults to false).
    expect((await byName('echo').invoke({ message: 'still' }, context)).content).toHaveLength(1);
  });
});
