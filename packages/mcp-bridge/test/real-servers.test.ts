// The recorded `tools/list` answers of 20 real MCP servers from npm (test/fixtures/real-servers,
// origin, pinned version and licence in its README), replayed over stdio by the SDK's own Server
// and run through bridgeTools with default options.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AjvSchemaValidator,
  createToolContext,
  declaredSchemaDialect,
  type JsonObject,
  RiskPolicy,
  ToolRegistry,
} from '@toolfence/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type BridgedTool,
  type BridgeSkippedTool,
  bridgeTools,
} from '../src/bridge/bridge-tools.js';
import { McpClient } from '../src/client/mcp-client.js';
import { CHILD_ENV } from './helpers.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/real-servers/', import.meta.url));
const REPLAY = fileURLToPath(new URL('./fixtures/replay-server.mjs', import.meta.url));
const context = createToolContext({ runId: 'real-servers' });

interface Fixture {
  readonly package: string;
  readonly version: string;
  readonly license: string;
  readonly tools: ReadonlyArray<{
    readonly name: string;
    readonly inputSchema?: Readonly<Record<string, unknown>>;
  }>;
}

const NAMES = readdirSync(FIXTURES)
  .filter((file) => file.endsWith('.json'))
  .map((file) => file.slice(0, -'.json'.length))
  .sort();

function fixture(name: string): Fixture {
  return JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8')) as Fixture;
}

/** A registry prefix for a fixture: at most 24 of [A-Za-z0-9_-], no `__`. */
function prefixOf(name: string): string {
  return name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 24);
}

// What bridgeTools leaves out with default options, per fixture. Only server-gitlab 2025.4.25
// (whose zod schemas came out as a bare `{ "$schema": ... }`, no `type: "object"`) is skipped.
const EXPECTED_SKIPPED: Readonly<Record<string, number>> = { 'server-gitlab': 9 };

describe('bridgeTools over 20 recorded real-server listings', () => {
  const clients = new Map<string, McpClient>();
  const bridged = new Map<string, readonly BridgedTool[]>();
  const skipped = new Map<string, BridgeSkippedTool[]>();
  const printed: Array<ReturnType<typeof vi.spyOn>> = [];

  beforeAll(async () => {
    printed.push(
      vi.spyOn(console, 'log'),
      vi.spyOn(console, 'warn'),
      vi.spyOn(console, 'error'),
      vi.spyOn(console, 'info'),
    );
    await Promise.all(
      NAMES.map(async (name) => {
        const client = new McpClient({
          command: [process.execPath, REPLAY, join(FIXTURES, `${name}.json`)],
          env: CHILD_ENV,
        });
        clients.set(name, client);
        const left: BridgeSkippedTool[] = [];
        skipped.set(name, left);
        bridged.set(
          name,
          await bridgeTools(client, {
            prefix: prefixOf(name),
            onSkip: (tool) => left.push(tool),
          }),
        );
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...clients.values()].map((client) => client.close()));
  });
  afterEach(() => {
    for (const spy of printed) spy.mockClear();
  });

  it('has at least 10 fixtures, each naming its package, pinned version and licence', () => {
    expect(NAMES.length).toBeGreaterThanOrEqual(10);
    for (const name of NAMES) {
      const recorded = fixture(name);
      expect(recorded.package).toMatch(/^(@[a-z0-9-]+\/)?[a-z0-9.-]+$/);
      expect(recorded.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(typeof recorded.license).toBe('string');
      expect(recorded.tools.length).toBeGreaterThan(0);
    }
  });

  it.each(NAMES)('%s: every tool is bridged or reported with a reason', (name) => {
    const listed = fixture(name).tools.map((tool) => tool.name);
    const tools = bridged.get(name) ?? [];
    const left = skipped.get(name) ?? [];
    expect(
      [...tools.map((tool) => tool.remoteName), ...left.map((tool) => tool.name)].sort(),
    ).toEqual([...listed].sort());
    expect(left).toHaveLength(EXPECTED_SKIPPED[name] ?? 0);
    for (const tool of left) {
      expect(tool).toMatchObject({ code: 'BRIDGE_SCHEMA', reason: expect.any(String) });
      expect(tool.message).not.toContain(tool.name);
    }
  });

  it('reports the server-gitlab tools as schemas that do not describe an object', () => {
    expect(new Set(skipped.get('server-gitlab')?.map((tool) => tool.reason))).toEqual(
      new Set(['not-object-type']),
    );
  });

  it('registers every bridged tool of every server in one registry (each schema compiles in its dialect)', async () => {
    const registry = new ToolRegistry({ authorizer: new RiskPolicy() });
    try {
      const all = [...bridged.values()].flat();
      for (const tool of all) await registry.register(tool);
      expect(all).toHaveLength(290 - 9);
      expect(registry.diagnostics().tools).toBe(281);
    } finally {
      await registry.close();
    }
  });

  it('covers draft-07, 2020-12 and undeclared schemas', () => {
    const dialects = new Map<string, number>();
    for (const name of NAMES) {
      for (const tool of fixture(name).tools) {
        const dialect = declaredSchemaDialect(tool.inputSchema ?? {});
        dialects.set(dialect, (dialects.get(dialect) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(dialects)).toEqual({ 'draft-07': 127, '2020-12': 86, none: 77 });
  });

  // Arguments the real servers accept, one or more tools per declared dialect, and arguments
  // they refuse. Valid ones pass validation and reach the (replayed) server exactly as given.
  const CALLS: ReadonlyArray<{
    readonly server: string;
    readonly tool: string;
    readonly dialect: 'draft-07' | '2020-12' | 'none';
    readonly valid: JsonObject;
    readonly invalid: JsonObject;
  }> = [
    {
      server: 'server-memory',
      tool: 'open_nodes',
      dialect: 'draft-07',
      valid: { names: ['Alice', 'Bob'] },
      invalid: { names: 'Alice' },
    },
    {
      server: 'server-filesystem',
      tool: 'read_text_file',
      dialect: 'draft-07',
      valid: { path: '/srv/notes.txt', head: 5 },
      invalid: { head: 5 },
    },
    {
      server: 'server-github',
      tool: 'list_commits',
      dialect: 'draft-07',
      valid: { owner: 'modelcontextprotocol', repo: 'servers', perPage: 5 },
      invalid: { owner: 'modelcontextprotocol', repo: 'servers', per_page: 5 },
    },
    {
      // date-time without seconds: desktop-commander accepts it, and format is an annotation.
      server: 'desktop-commander',
      tool: 'get_recent_tool_calls',
      dialect: 'draft-07',
      valid: { since: '2026-01-01T00:00Z', maxResults: 10 },
      invalid: { maxResults: 0 },
    },
    {
      server: 'playwright-mcp',
      tool: 'browser_navigate',
      dialect: '2020-12',
      valid: { url: 'https://example.com/' },
      invalid: { url: 'https://example.com/', waitUntil: 'load' },
    },
    {
      server: 'mongodb-mcp-server',
      tool: 'find',
      dialect: '2020-12',
      valid: { connectionId: 'preconfigured', database: 'shop', collection: 'orders', limit: 5 },
      invalid: { database: 'shop' },
    },
    {
      // The dashless page id of a notion.so URL, under `format: "uuid"`.
      server: 'notion-mcp-server',
      tool: 'API-retrieve-page-markdown',
      dialect: 'none',
      valid: { page_id: '1f2e3d4c5b6a79881f2e3d4c5b6a7988' },
      invalid: { page_id: 42 },
    },
    {
      // $ref into $defs, inside anyOf and oneOf, in a schema that declares no dialect (2020-12).
      server: 'notion-mcp-server',
      tool: 'API-post-page',
      dialect: 'none',
      valid: { parent: { page_id: '1f2e3d4c5b6a79881f2e3d4c5b6a7988' }, properties: {} },
      invalid: { parent: { page_id: 7 }, properties: {} },
    },
    {
      server: 'mcp-server-kubernetes',
      tool: 'kubectl_get',
      dialect: 'none',
      valid: { resourceType: 'pods', namespace: 'default', output: 'json' },
      invalid: { resourceType: 'pods', output: 'toml' },
    },
  ];

  it.each(CALLS)(
    '$dialect: $server $tool accepts the arguments the server accepts',
    async ({ server, tool, dialect, valid, invalid }) => {
      const listed = fixture(server).tools.find((entry) => entry.name === tool);
      expect(declaredSchemaDialect(listed?.inputSchema ?? {})).toBe(dialect);
      const bridgedTool = bridged.get(server)?.find((entry) => entry.remoteName === tool);
      const result = (await bridgedTool?.invoke(valid, context)) ?? { content: [] };
      expect(result.isError).not.toBe(true);
      expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual({
        called: tool,
        arguments: valid,
      });
      const refused = await bridgedTool?.invoke(invalid, context);
      expect(refused).toMatchObject({
        isError: true,
        metadata: { code: 'BRIDGE_INVALID_ARGUMENTS' },
      });
    },
  );

  it('asserts formats only on request: validateFormats refuses the dashless Notion id', async () => {
    const notes: unknown[] = [];
    const validator = new AjvSchemaValidator({
      validateFormats: true,
      logger: { warn: (_message, details) => notes.push(details) },
    });
    const client = clients.get('notion-mcp-server') as McpClient;
    const tools = await bridgeTools(client, { prefix: 'notion', validator });
    const page = tools.find((tool) => tool.remoteName === 'API-retrieve-page-markdown');
    const refused = await page?.invoke({ page_id: '1f2e3d4c5b6a79881f2e3d4c5b6a7988' }, context);
    expect(refused?.isError).toBe(true);
    // Notion's `format: "json"` is unknown to ajv-formats: the note went to the logger only.
    expect(notes).toContainEqual({
      dialect: '2020-12',
      note: expect.stringContaining('unknown format "json" ignored'),
    });
    for (const spy of printed) expect(spy).not.toHaveBeenCalled();
  });

  it('adds no bridge gate by default; with approvalRisk high-risk-write gates the 66 undeclared destructiveHint tools, and only those', async () => {
    expect([...bridged.values()].flat().filter((tool) => tool.needsApproval)).toEqual([]);
    const gated = (
      await Promise.all(
        NAMES.map((name) =>
          bridgeTools(clients.get(name) as McpClient, {
            prefix: prefixOf(name),
            approvalRisk: 'high-risk-write',
          }),
        ),
      )
    )
      .flat()
      .filter((tool) => tool.needsApproval);
    expect(gated).toHaveLength(66);
    for (const tool of gated) expect(tool.spec.annotations?.destructiveHint).toBe(true);
    expect(gated.map((tool) => tool.spec.name)).toEqual(
      expect.arrayContaining([
        'mongodb-mcp-server__drop-database',
        'mcp-server-kubernetes__kubectl_delete',
        'desktop-commander__start_process',
      ]),
    );
  });

  it('lets a RiskPolicy judge undeclared tools by the riskier of heuristic and hints', () => {
    const policy = new RiskPolicy();
    const verdict = (server: string, tool: string) => {
      const found = bridged.get(server)?.find((entry) => entry.remoteName === tool) as BridgedTool;
      return policy.authorize({
        toolName: found.spec.name,
        args: {},
        context,
        spec: found.spec,
        contract: found.spec.contract,
        effect: 'unknown',
      });
    };
    expect(verdict('mongodb-mcp-server', 'find')).toMatchObject({ verdict: 'allow' });
    expect(verdict('mongodb-mcp-server', 'drop-database')).toMatchObject({
      verdict: 'ask',
      reason: 'heuristic risk destructive',
    });
    // Named like a read, hinted destructive: the hint wins.
    expect(verdict('notion-mcp-server', 'API-query-data-source')).toMatchObject({
      verdict: 'ask',
      reason: 'heuristic risk destructive',
    });
    // The memory server's open_nodes is a read (name heuristic), readOnlyHint: true agrees.
    expect(verdict('server-memory', 'open_nodes')).toMatchObject({ verdict: 'allow' });
    // The four tools the name heuristic calls reads but whose hints claim a write.
    for (const [server, tool] of [
      ['chrome-devtools-mcp', 'get_network_request'],
      ['desktop-commander', 'stop_search'],
      ['notion-mcp-server', 'API-query-data-source'],
      ['server-everything', 'simulate-research-query'],
    ] as const) {
      expect(verdict(server, tool)).toMatchObject({ verdict: 'ask' });
    }
  });
});
