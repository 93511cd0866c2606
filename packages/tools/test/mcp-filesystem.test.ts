import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  contractOf,
  McpServerConnection,
  McpServerRegistry,
  PermissionDeniedError,
  RiskPolicy,
  RuleBasedPolicy,
  resolveEffect,
  ToolInputError,
  ToolRegistry,
  type ToolSpec,
} from '../src/index.js';
import { McpSdkSessionAdapter } from '../src/mcp/sdk-session-adapter.js';
import { context } from './mcp-helpers.js';

const filesystemEntry = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url),
);

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

describe('MCP adapter with server-filesystem through the ToolRegistry and a rule policy', () => {
  let base: string;
  let allowed: string;
  let client: Client;
  let servers: McpServerRegistry;
  let registry: ToolRegistry;

  beforeAll(async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), 'toolfence-mcp-fs-')));
    allowed = join(base, 'allowed');
    mkdirSync(allowed);
    mkdirSync(join(base, 'outside'));
    writeFileSync(join(allowed, 'notes.txt'), 'inside the fence');
    writeFileSync(join(base, 'outside', 'secret.txt'), 'outside the fence');
    client = new Client({ name: 'toolfence-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [filesystemEntry, allowed],
        env: { PATH: process.env.PATH ?? '' },
        stderr: 'ignore',
      }),
    );
    servers = new McpServerRegistry();
    await servers.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client, { onClose: () => client.close() }),
        config: { name: 'fs', ownsSession: true },
      }),
    );
    const { tools, problems } = await servers.discoverTools('fs');
    expect(problems).toEqual([]);
    registry = new ToolRegistry({
      tools,
      authorizer: new RuleBasedPolicy(
        [
          { tool: 'mcp__fs__read_text_file', decision: 'allow' },
          { tool: 'mcp__fs__list_*', decision: 'allow' },
          { tool: 'mcp__fs__write_file', decision: 'deny', reason: 'no writes' },
        ],
        { default: 'deny' },
      ),
    });
    await registry.ready();
  }, 20_000);

  afterAll(async () => {
    await registry?.close();
    await servers?.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('registers every tool under the server namespace', () => {
    expect(registry.names()).toEqual(
      expect.arrayContaining([
        'mcp__fs__read_text_file',
        'mcp__fs__write_file',
        'mcp__fs__list_directory',
      ]),
    );
  });

  it('judges every tool as its hints say under a default RiskPolicy', () => {
    const verdicts = Object.fromEntries(
      registry.specs().map((spec) => [spec.name.replace('mcp__fs__', ''), riskVerdict(spec)]),
    );
    // Every read by name and hint is allowed; every write asks at least at the level its hints
    // give (destructiveHint: true is destructive).
    expect(verdicts).toEqual({
      create_directory: 'ask (heuristic risk low-risk-write)',
      directory_tree: 'allow (heuristic risk read-only)',
      edit_file: 'ask (heuristic risk destructive)',
      get_file_info: 'allow (heuristic risk read-only)',
      list_allowed_directories: 'allow (heuristic risk read-only)',
      list_directory: 'allow (heuristic risk read-only)',
      list_directory_with_sizes: 'allow (heuristic risk read-only)',
      move_file: 'ask (heuristic risk destructive)',
      read_file: 'allow (heuristic risk read-only)',
      read_media_file: 'allow (heuristic risk read-only)',
      read_multiple_files: 'allow (heuristic risk read-only)',
      read_text_file: 'allow (heuristic risk read-only)',
      search_files: 'allow (heuristic risk read-only)',
      write_file: 'ask (heuristic risk destructive)',
    });
  });

  it('runs an allowed read inside the allowed folder', async () => {
    const result = await registry.invoke(
      'mcp__fs__read_text_file',
      { path: join(allowed, 'notes.txt') },
      { runId: 'fs-read' },
    );
    expect(result.content).toEqual([{ type: 'text', text: 'inside the fence' }]);
    expect(result.structuredContent).toEqual({ content: 'inside the fence' });
    expect(result.metadata).toMatchObject({ server: 'fs', tool: 'read_text_file' });
  });

  it('keeps the server’s own refusal as an isError result', async () => {
    const result = await registry.invoke(
      'mcp__fs__read_text_file',
      { path: join(base, 'outside', 'secret.txt') },
      { runId: 'fs-outside' },
    );
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).not.toContain('outside the fence');
  });

  it('denies a write by rule before it reaches the server', async () => {
    await expect(
      registry.invoke(
        'mcp__fs__write_file',
        { path: join(allowed, 'new.txt'), content: 'x' },
        { runId: 'fs-write' },
      ),
    ).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(existsSync(join(allowed, 'new.txt'))).toBe(false);
  });

  it('denies a tool no rule allows', async () => {
    await expect(
      registry.invoke(
        'mcp__fs__create_directory',
        { path: join(allowed, 'dir') },
        { runId: 'fs-mkdir' },
      ),
    ).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(existsSync(join(allowed, 'dir'))).toBe(false);
  });

  it('validates arguments against the server’s input schema before authorization', async () => {
    await expect(
      registry.invoke('mcp__fs__read_text_file', { file: 'notes.txt' }, { runId: 'fs-invalid' }),
    ).rejects.toBeInstanceOf(ToolInputError);
  });

  it('denies undeclared MCP tools in read-only scope (their effect is unknown)', async () => {
    await expect(
      registry.invoke(
        'mcp__fs__read_text_file',
        { path: join(allowed, 'notes.txt') },
        { runId: 'fs-scope', accessScope: 'read-only' },
      ),
    ).rejects.toBeInstanceOf(PermissionDeniedError);
  });
});
