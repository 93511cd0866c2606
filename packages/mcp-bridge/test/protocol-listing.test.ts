import { AmbiguousDeliveryError, McpClient } from '@toolfence/mcp-bridge';
import { describe, expect, it } from 'vitest';
import { allowLoopback, type RecordedBody, scripted } from './helpers.js';

const MODERN = '2026-07-28';

/** A modern endpoint whose tools/list result carries `ttlMs` (SEP-2549). */
function ttlServer(ttlMs: number | undefined) {
  return scripted((body: RecordedBody) => {
    if (body.method === 'server/discover') {
      return {
        status: 200,
        body: {
          jsonrpc: '2.0',
          id: body.id,
          result: { supportedVersions: [MODERN], capabilities: { tools: {} } },
        },
      };
    }
    return {
      status: 200,
      body: {
        jsonrpc: '2.0',
        id: body.id,
        result: {
          resultType: 'complete',
          ...(ttlMs === undefined ? {} : { ttlMs }),
          tools: [{ name: 'a', inputSchema: { type: 'object' } }],
        },
      },
    };
  });
}

async function listings(
  ttlMs: number | undefined,
  maxListingTtlMs: number | undefined,
  run: (client: McpClient) => Promise<void>,
): Promise<number> {
  const endpoint = await ttlServer(ttlMs);
  const client = new McpClient({
    url: endpoint.url,
    allowNonPublic: allowLoopback,
    ...(maxListingTtlMs === undefined ? {} : { maxListingTtlMs }),
  });
  try {
    await run(client);
    return endpoint.requests.filter((request) => request.body?.method === 'tools/list').length;
  } finally {
    await client.close();
    await endpoint.close();
  }
}

describe('list TTL (SEP-2549)', () => {
  const twice = async (client: McpClient) => {
    await client.tools();
    await client.tools();
  };

  it('reuses a listing within the server’s ttlMs', async () => {
    expect(await listings(60_000, undefined, twice)).toBe(1);
  });

  it('relists every time for ttlMs 0 (immediately stale)', async () => {
    expect(await listings(0, undefined, twice)).toBe(2);
  });

  it('caps the server’s TTL with maxListingTtlMs (0: never reuse)', async () => {
    expect(await listings(60_000, 0, twice)).toBe(2);
  });

  it('relists after the capped TTL ran out', async () => {
    const count = await listings(60_000, 50, async (client) => {
      await client.tools();
      await new Promise((resolve) => setTimeout(resolve, 80));
      await client.tools();
    });
    expect(count).toBe(2);
  });

  it('keeps a listing without ttlMs until refresh, and refresh bypasses any TTL', async () => {
    expect(await listings(undefined, undefined, twice)).toBe(1);
    expect(
      await listings(60_000, undefined, async (client) => {
        await client.tools();
        await client.tools({ refresh: true });
      }),
    ).toBe(2);
  });

  it('refuses an invalid maxListingTtlMs', () => {
    expect(
      () =>
        new McpClient({
          url: 'http://127.0.0.1:1/mcp',
          allowNonPublic: allowLoopback,
          maxListingTtlMs: -1,
        }),
    ).toThrow(/maxListingTtlMs/);
  });
});

describe('notifications/tools/list_changed', () => {
  it.each([
    ['modern', true],
    ['legacy', false],
  ])('marks the cached listing stale (%s)', async (_era, modern) => {
    const endpoint = await scripted((body: RecordedBody) => {
      const reply = (result: unknown) => ({
        status: 200,
        body: { jsonrpc: '2.0', id: body.id, result },
      });
      if (body.method === 'server/discover') {
        return modern
          ? reply({ supportedVersions: [MODERN], capabilities: { tools: { listChanged: true } } })
          : { status: 404 };
      }
      if (body.method === 'initialize') {
        return reply({
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 's', version: '1' },
        });
      }
      if (body.method === 'tools/call') {
        // A batch: the change notification, then the call's result.
        return {
          status: 200,
          body: [
            { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
            { jsonrpc: '2.0', id: body.id, result: { content: [] } },
          ],
        };
      }
      if (body.method === 'tools/list') return reply({ tools: [{ name: 'a' }] });
      return { status: 202 };
    });
    const client = new McpClient({
      url: endpoint.url,
      allowNonPublic: allowLoopback,
      standaloneStream: false,
    });
    try {
      await client.tools();
      await client.tools();
      await client.callTool('a', {});
      await client.tools();
      const lists = endpoint.requests.filter((request) => request.body?.method === 'tools/list');
      expect(lists).toHaveLength(2);
      expect(client.protocolVersion).toBe(modern ? MODERN : '2025-11-25');
    } finally {
      await client.close();
      await endpoint.close();
    }
  });
});

describe('tools/call result shape', () => {
  it.each([
    ['content that is not an array', { content: 'x' }],
    ['structuredContent that is an array', { content: [], structuredContent: [1] }],
    ['isError that is not a boolean', { content: [], isError: 'yes' }],
  ])('reports %s as ambiguous (invalid response)', async (_name, result) => {
    const endpoint = await scripted((body: RecordedBody) =>
      body.method === 'server/discover'
        ? {
            status: 200,
            body: {
              jsonrpc: '2.0',
              id: body.id,
              result: { supportedVersions: [MODERN], capabilities: { tools: {} } },
            },
          }
        : { status: 200, body: { jsonrpc: '2.0', id: body.id, result } },
    );
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      const error = await client.callTool('a', {}).catch((caught: unknown) => caught);
      expect(AmbiguousDeliveryError.isInstance(error)).toBe(true);
      expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    } finally {
      await client.close();
      await endpoint.close();
    }
  });
});
