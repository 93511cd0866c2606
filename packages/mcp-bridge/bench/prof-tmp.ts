import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startToolfenceHttp } from './fixtures/peer-hops.js';

const folder = await mkdtemp(join(tmpdir(), 'tf-prof-'));
const hop = await startToolfenceHttp(folder, [
  '--cpu-prof',
  '--cpu-prof-dir=/tmp/perf/prof3',
  '--cpu-prof-interval',
  '200',
]);
const client = new Client({ name: 'p', version: '1' });
await client.connect(new StreamableHTTPClientTransport(new URL(hop.url)));
for (;;) {
  const { tools } = await client.listTools();
  if (tools.some((t) => t.name === hop.echo)) break;
  await new Promise((r) => setTimeout(r, 50));
}
const t = performance.now();
for (let i = 0; i < 1500; i++)
  await client.callTool({ name: hop.echo, arguments: { message: 'x' } });
for (let b = 0; b < 20; b++)
  await Promise.all(
    Array.from({ length: 64 }, () =>
      client.callTool({ name: hop.echo, arguments: { message: 'y' } }),
    ),
  );
console.log('calls done', ((performance.now() - t) / 1000).toFixed(1), 's');
await client.close();
await hop.stop();
