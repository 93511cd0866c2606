import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { ToolContext } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { createAdversarialServer } from './fixtures/mcp-adversarial-server.mjs';

export const context: ToolContext = createToolContext({ runId: 'test-run' });

/** Connects an SDK client to an adversarial SDK server over an in-memory transport pair. */
export async function connectAdversarial(mode: string): Promise<{
  client: Client;
  close: () => Promise<void>;
}> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  const server = createAdversarialServer(mode);
  await server.connect(serverTransport);
  const client = new Client({ name: 'toolfence-test', version: '1.0.0' });
  await client.connect(clientTransport);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}
