// Instructions are what the gateway knew when it answered `initialize` (README, "What passes
// through"): a client that connects while the upstreams still start gets the gateway's own
// sentence only, and keeps it (MCP has no notification for changed instructions); a client that
// connects once they are ready gets theirs too. `initialize` does not wait for upstreams.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { GATEWAY_INSTRUCTIONS } from '../src/gateway/gateway-passthrough.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';

const PASSTHROUGH = fileURLToPath(new URL('./fixtures/passthrough-server.mjs', import.meta.url));

let folder: string;
const open: { close(): Promise<void> }[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-instructions-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function connect(gateway: McpGateway): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client({ name: 'instructions-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return client;
}

describe('instructions are what was known at initialize', () => {
  it('gives a client connected before the upstreams are ready the gateway’s sentence only, and a later one theirs too', async () => {
    const gateway = new McpGateway({
      config: parseGatewayConfig({
        mcpServers: {
          notes: {
            command: process.execPath,
            args: [PASSTHROUGH],
            env: { INSTRUCTIONS: 'Use brief for a short summary.' },
            namespace: 'nt',
          },
        },
      }),
      authorizer: new RiskPolicy(),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    });
    open.push(gateway);
    // Connected before start(): initialize is answered at once, with what is known.
    const early = await connect(gateway);
    expect(early.getInstructions()).toBe(GATEWAY_INSTRUCTIONS);
    await gateway.start();
    const late = await connect(gateway);
    expect(late.getInstructions()).toContain(
      '[server notes, tools nt__*] Use brief for a short summary.',
    );
    // The early client keeps what it was given; its tools are there all the same.
    expect(early.getInstructions()).toBe(GATEWAY_INSTRUCTIONS);
    const tools = (await early.listTools()).tools.map((tool) => tool.name);
    expect(tools).toContain('nt__ping');
  }, 60_000);
});
