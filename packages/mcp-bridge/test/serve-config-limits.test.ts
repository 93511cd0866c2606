// `toolfence-mcp serve` takes the library's limits from the config: gateway.maxToolNameChars
// (McpGateway's maxToolNameChars) and gateway.pinsMaxDefinitionBytes (the pin store's
// maxDefinitionBytes) reach the running gateway. A real `serve` (dist/cli/main.js) over stdio in
// front of a real read-defs-server.mjs, with a downstream SDK client.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defsTool, jsonLines, readDefsServer } from './fixtures/read-gateway.js';

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let folder: string;
const clients: Client[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-serve-limits-'));
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/** `serve` with `gateway` settings over one read-defs-server `defs` offering `tools`. */
async function serve(
  gateway: Record<string, unknown>,
  tools: readonly Record<string, unknown>[],
): Promise<Client> {
  const config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: { defs: readDefsServer(folder, 'defs', { tools }) },
      gateway: { audit: join(folder, 'audit.jsonl'), pins: join(folder, 'lock.json'), ...gateway },
    }),
  );
  const client = new Client({ name: 'serve-limits-client', version: '1.0.0' });
  clients.push(client);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'serve', '--config', config],
      stderr: 'ignore',
    }),
  );
  return client;
}

function text(result: object): string {
  return ((result as { content?: { text?: string }[] }).content ?? [])
    .map((part) => part.text)
    .join('');
}

describe('serve reads the library limits from the config', () => {
  it('gateway.maxToolNameChars: a made-up name over it is refused (name-too-long), one under it is not', async () => {
    const client = await serve({ maxToolNameChars: 40 }, [defsTool('search')]);
    const long = `defs__${'x'.repeat(40)}`;
    const refused = await client.callTool({ name: long, arguments: {} });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe(
      `The tool name of this call is ${long.length} characters long, over the 40 a tool name may have (McpGateway option maxToolNameChars), and no offered tool has it, so the call did not run. List the tools (tools/list) and use one of their names.`,
    );
    // Under the limit an unknown name is judged as an unknown tool, not as too long.
    const short = await client.callTool({ name: 'defs__nope', arguments: {} });
    expect(text(short)).not.toContain('maxToolNameChars');
    await client.close();
    const lines = await jsonLines(folder, 'audit.jsonl');
    expect(lines.filter((line) => line.outcome === 'name-too-long')).toHaveLength(1);
  }, 60_000);

  it('gateway.pinsMaxDefinitionBytes: a tool over it is hidden as definition-too-large and a call says why', async () => {
    const big = { ...defsTool('huge'), description: 'A'.repeat(8_000) };
    const client = await serve({ pinsMaxDefinitionBytes: 4_096 }, [defsTool('search'), big]);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['defs__search']);
    const refused = await client.callTool({ name: 'defs__huge', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain(
      "is hidden, so the call did not run: its definition is larger than the pin store's maxDefinitionBytes",
    );
  }, 60_000);

  it('the defaults offer the same big tool (the key, not the fixture, hides it)', async () => {
    const big = { ...defsTool('huge'), description: 'A'.repeat(8_000) };
    const client = await serve({}, [defsTool('search'), big]);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['defs__huge', 'defs__search']);
  }, 60_000);
});
