import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { allowLoopback, type EverythingHttp, startEverythingHttp } from './helpers.js';

describe('McpClient over Streamable HTTP with server-everything', () => {
  let server: EverythingHttp;
  beforeAll(async () => {
    server = await startEverythingHttp();
  });
  afterAll(async () => {
    await server.close();
  });

  it('lists tools, calls echo, and handshakes again after close', async () => {
    const client = new McpClient({ url: server.url, allowNonPublic: allowLoopback });
    try {
      const tools = await client.tools();
      expect(tools.map((tool) => tool.name)).toContain('echo');
      const result = await client.callTool('echo', { message: 'over http' });
      expect(result.content).toEqual([{ type: 'text', text: 'Echo: over http' }]);
      await client.close();
      expect(await client.tools()).toBe(tools);
      const again = await client.callTool('echo', { message: 'again' });
      expect(again.content).toEqual([{ type: 'text', text: 'Echo: again' }]);
    } finally {
      await client.close();
    }
  });
});
