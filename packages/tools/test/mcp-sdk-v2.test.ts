// McpSdkSessionAdapter with an SDK v2 Client (@modelcontextprotocol/client 2.x), in both eras,
// beside the SDK 1.x Client the other MCP tests use.
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { McpServerConnection, McpServerRegistry } from '../src/index.js';
import { McpSdkSessionAdapter } from '../src/mcp/sdk-session-adapter.js';
import { context } from './mcp-helpers.js';

const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-stdio-server.mjs', import.meta.url));
const EVERYTHING = fileURLToPath(
  new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const env = { PATH: process.env.PATH ?? '' };

async function v2Client(args: readonly string[], mode: 'auto' | 'legacy'): Promise<Client> {
  const client = new Client(
    { name: 'toolfence-test', version: '1.0.0' },
    { versionNegotiation: { mode } },
  );
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [...args], env, stderr: 'ignore' }),
  );
  return client;
}

async function discoverAndCall(client: object, server: string): Promise<unknown> {
  const registry = new McpServerRegistry();
  try {
    await registry.register(
      new McpServerConnection({
        session: new McpSdkSessionAdapter(client as never),
        config: { name: server },
      }),
    );
    const { tools } = await registry.discoverTools(server);
    const echo = tools.find((tool) => tool.serverToolName === 'echo');
    expect(echo?.spec.name).toBe(`mcp__${server}__echo`);
    expect(echo?.spec.origin).toEqual({ server, tool: 'echo' });
    return (await echo?.invoke({ message: 'v2' }, context))?.content;
  } finally {
    await registry.close();
  }
}

describe('McpSdkSessionAdapter with an SDK v2 Client', () => {
  it('works over a 2026-07-28 connection (SDK v2 server)', async () => {
    const client = await v2Client([V2_SERVER], 'auto');
    try {
      expect(client.getNegotiatedProtocolVersion?.()).toBe('2026-07-28');
      expect(await discoverAndCall(client, 'modern')).toEqual([{ type: 'text', text: 'Echo: v2' }]);
      // A list_changed listener installs through the 2.x method-name form.
      const session = new McpSdkSessionAdapter(client);
      const stop = session.onToolsListChanged(() => undefined);
      stop();
    } finally {
      await client.close();
    }
  });

  it('works over a legacy connection (server-everything, SDK 1.x server)', async () => {
    const client = await v2Client([EVERYTHING, 'stdio'], 'legacy');
    try {
      expect(client.getNegotiatedProtocolVersion?.()).toBe('2025-11-25');
      expect(await discoverAndCall(client, 'legacy')).toEqual([{ type: 'text', text: 'Echo: v2' }]);
    } finally {
      await client.close();
    }
  });

  it('maps a v2 JSON-RPC error, a v2 timeout and a closed v2 client to typed errors', async () => {
    const client = await v2Client([V2_SERVER], 'auto');
    const session = new McpSdkSessionAdapter(client);
    try {
      const result = (await session.callTool({ name: 'fail', arguments: {} })) as {
        isError?: boolean;
      };
      expect(result.isError).toBe(true);
      await expect(session.callTool({ name: 'no-such-tool', arguments: {} })).rejects.toMatchObject(
        { code: 'MCP_REMOTE_ERROR' },
      );
      // SDK 2.x reports its own timeout as SdkError('REQUEST_TIMEOUT'): a typed timeout here.
      await expect(
        session.callTool({ name: 'slow', arguments: {} }, { timeoutMs: 100 }),
      ).rejects.toMatchObject({ code: 'MCP_TIMEOUT' });
    } finally {
      await client.close();
    }
    await expect(session.listTools(undefined)).rejects.toMatchObject({ code: 'MCP_TRANSPORT' });
  });

  it('the same adapter still works with an SDK 1.x Client', async () => {
    const client = new ClientV1({ name: 'toolfence-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransportV1({
        command: process.execPath,
        args: [V2_SERVER],
        env,
        stderr: 'ignore',
      }),
    );
    try {
      expect(await discoverAndCall(client, 'v1client')).toEqual([
        { type: 'text', text: 'Echo: v2' },
      ]);
      const stop = new McpSdkSessionAdapter(client).onToolsListChanged(() => undefined);
      stop();
    } finally {
      await client.close();
    }
  });
});
