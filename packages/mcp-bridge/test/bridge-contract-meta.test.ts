import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { bridgeTools, McpClient } from '../src/index.js';

const SERVER = fileURLToPath(new URL('./fixtures/contract-meta-server.mjs', import.meta.url));
const clients: McpClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

describe('bridgeTools reads declared contracts', () => {
  it('from annotations and from _meta alone, and gates either when approvalRisk is set', async () => {
    const client = new McpClient({ command: [process.execPath, SERVER] });
    clients.push(client);
    const tools = await bridgeTools(client, { prefix: 'cm', approvalRisk: 'high-risk-write' });
    const byName = Object.fromEntries(tools.map((tool) => [tool.remoteName, tool]));
    for (const name of ['both_places', 'meta_only']) {
      expect(byName[name]?.spec.contract).toMatchObject({
        risk: 'destructive',
        contentTrust: 'sensitive',
      });
      // Declared at or above the approval risk given (high-risk-write).
      expect(byName[name]?.needsApproval).toBe(true);
    }
    expect(byName.undeclared?.spec.contract).toBeUndefined();
  });
});
