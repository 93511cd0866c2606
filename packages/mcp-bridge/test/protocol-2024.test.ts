import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AllowAllAuthorizer, createToolContext, RiskPolicy, ToolRegistry } from '@toolfence/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { bridgeTools } from '../src/bridge/bridge-tools.js';
import { McpClient } from '../src/client/mcp-client.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { UnsupportedProtocolVersionError } from '../src/protocol/unsupported-protocol-version-error.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../src/protocol/versions.js';
import { CHILD_ENV, GITHUB_ENTRY, gatewayClient } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/legacy-2024-server.mjs', import.meta.url));
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
});

function client(version: string, options: { protocolVersions?: string[] } = {}) {
  const made = new McpClient({
    command: [process.execPath, SERVER],
    env: { PROTOCOL_VERSION: version },
    ...options,
  });
  open.push(made);
  return made;
}

/** A started gateway over `mcpServers` (its pins and audit in a temp folder), closed after the test. */
async function startGateway(
  mcpServers: Record<string, unknown>,
  allowUpTo: 'read-only' | 'paid-operation',
): Promise<McpGateway> {
  const folder = await mkdtemp(join(tmpdir(), 'toolfence-2024-'));
  open.push({ close: () => rm(folder, { recursive: true, force: true }) });
  const gateway = new McpGateway({
    config: parseGatewayConfig({ mcpServers }),
    authorizer: new RiskPolicy({ risk: { allowUpTo } }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

const text = (result: { content?: unknown }) =>
  (result.content as { text?: string }[]).map((block) => block.text ?? '').join('');

describe('servers on the early MCP revisions (2024-11-05, 2024-10-07)', () => {
  it.each(['2024-11-05', '2024-10-07'])(
    'lists and calls a %s server by default',
    async (version) => {
      const mcp = client(version);
      await mcp.connect();
      expect(mcp.serverDescription).toMatchObject({ protocolVersion: version, era: 'legacy' });
      expect((await mcp.tools()).map((tool) => tool.name)).toEqual(['echo']);
      const result = await mcp.callTool('echo', { text: 'hi' });
      expect(text(result)).toBe(`${version} echo: hi (offered 2025-11-25)`);
    },
    30_000,
  );

  it('offers every published revision by default', () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual([
      '2026-07-28',
      '2025-11-25',
      '2025-06-18',
      '2025-03-26',
      '2024-11-05',
      '2024-10-07',
    ]);
  });

  it('accepts 2024-11-05 in protocolVersions, and a pinned 2024-11-05 client offers it', async () => {
    const mcp = client('2024-11-05', { protocolVersions: ['2024-11-05'] });
    expect(text(await mcp.callTool('echo', { text: 'x' }))).toBe(
      '2024-11-05 echo: x (offered 2024-11-05)',
    );
  }, 30_000);

  it('never advises adding a version the option would refuse', async () => {
    const refused = client('2024-11-05', { protocolVersions: ['2025-11-25', '2025-06-18'] });
    const error = await refused.connect().catch((caught: unknown) => caught);
    expect(UnsupportedProtocolVersionError.isInstance(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('add 2024-11-05 to protocolVersions');
    // The advice is one the option accepts: following it connects.
    const followed = client('2024-11-05', {
      protocolVersions: ['2025-11-25', '2025-06-18', '2024-11-05'],
    });
    await followed.connect();
    expect(followed.protocolVersion).toBe('2024-11-05');

    const unknown = client('2023-01-01');
    const other = await unknown.connect().catch((caught: unknown) => caught);
    expect((other as Error).message).not.toContain('add ');
    expect((other as Error).message).toContain('none of which the server supports');
  }, 30_000);

  it('bridges a 2024-11-05 server into a registry', async () => {
    const mcp = client('2024-11-05');
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    open.push(registry);
    await registry.registerAll(await bridgeTools(mcp, { prefix: 'gh' }));
    const result = await registry.invoke(
      'gh__echo',
      { text: 'bridged' },
      createToolContext({ runId: 'early-revisions' }),
    );
    expect(JSON.stringify(result)).toContain('2024-11-05 echo: bridged');
  }, 30_000);

  it('serves a 2024-11-05 upstream through the gateway', async () => {
    const gateway = await startGateway(
      { github: { command: process.execPath, args: [SERVER], namespace: 'gh' } },
      'paid-operation',
    );
    const downstream = await gatewayClient(gateway, open);
    expect((await downstream.listTools()).tools.map((tool) => tool.name)).toEqual(['gh__echo']);
    const result = await downstream.callTool({ name: 'gh__echo', arguments: { text: 'through' } });
    expect(text(result as never)).toContain('2024-11-05 echo: through');
  }, 30_000);

  // The real reference server from npm. Only listings: a call would go to the GitHub API, and
  // tests never leave loopback. The token is a placeholder the server only forwards on calls.
  const github = {
    command: process.execPath,
    args: [GITHUB_ENTRY],
    env: { ...CHILD_ENV, GITHUB_PERSONAL_ACCESS_TOKEN: 'placeholder-never-sent' },
  };

  it('lists the GitHub reference server (2024-11-05) through McpClient and bridgeTools', async () => {
    const mcp = new McpClient({ command: [github.command, ...github.args], env: github.env });
    open.push(mcp);
    await mcp.connect();
    expect(mcp.protocolVersion).toBe('2024-11-05');
    const names = (await mcp.tools()).map((tool) => tool.name);
    expect(names).toContain('create_pull_request');
    expect(names.length).toBeGreaterThanOrEqual(20);
    const bridged = await bridgeTools(mcp, { prefix: 'github' });
    expect(bridged.map((tool) => tool.spec.name)).toContain('github__create_pull_request');
  }, 60_000);

  it('offers the GitHub reference server (2024-11-05) through the gateway', async () => {
    const gateway = await startGateway({ github: { ...github, namespace: 'github' } }, 'read-only');
    expect(gateway.upstreams.find((upstream) => upstream.name === 'github')).toMatchObject({
      state: 'ready',
    });
    const downstream = await gatewayClient(gateway, open);
    const names = (await downstream.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('github__search_repositories');
    expect(names.length).toBeGreaterThanOrEqual(20);
  }, 60_000);
});
