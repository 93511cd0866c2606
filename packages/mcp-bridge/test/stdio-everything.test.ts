import { afterEach, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';

describe('McpClient over stdio with server-everything', () => {
  let client: McpClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  it('lists tools and calls echo', async () => {
    client = new McpClient({
      command: [process.execPath, EVERYTHING_ENTRY, 'stdio'],
      env: CHILD_ENV,
    });
    const tools = await client.tools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
    const result = await client.callTool('echo', { message: 'hello' });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: hello' }]);
    expect(client.serverVersion?.name).toBe('mcp-servers/everything');
  });
});
