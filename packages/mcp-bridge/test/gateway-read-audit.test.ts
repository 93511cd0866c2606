// No line, no read: a prompts/get or resources/read goes upstream only once its `started` line is
// in the audit log, like a tools/call; when the log cannot be written, the read is refused and
// the upstream never sees it. Real stdio upstream; the gateway in process with a real AuditLog.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  defsTool,
  firstText,
  jsonLines,
  readClient,
  readDefsServer,
  startReadGateway,
} from './fixtures/read-gateway.js';

let folder: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-read-audit-'));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function docsGateway() {
  const gateway = await startReadGateway(
    folder,
    {
      docs: readDefsServer(folder, 'docs', {
        tools: [defsTool('read_note')],
        prompts: [{ name: 'brief', description: 'A brief' }],
        resources: [{ name: 'doc', uri: 'docs://doc' }],
      }),
    },
    { authorizer: new RuleBasedPolicy([{ tool: '*', decision: 'allow' }]) },
  );
  open.push(gateway);
  const client = await readClient(gateway);
  open.push(client);
  return client;
}

describe('prompts/get and resources/read are written to the audit log before they are sent', () => {
  it('writes a started line, then the outcome, for each read', async () => {
    const client = await docsGateway();
    expect(firstText(await client.readResource({ uri: 'docs://doc' }))).toBe(
      'content of docs://doc',
    );
    await client.getPrompt({ name: 'docs__brief' });
    const lines = await jsonLines(folder, 'audit.jsonl');
    expect(lines.map((line) => [line.kind, line.tool, line.outcome])).toEqual([
      ['resource', 'docs__resource:docs://doc', 'started'],
      ['resource', 'docs__resource:docs://doc', 'ok'],
      ['prompt', 'docs__prompt:brief', 'started'],
      ['prompt', 'docs__prompt:brief', 'ok'],
    ]);
    // The started line carries the decision and the arguments' digest, not the result's.
    expect(lines[0]).toMatchObject({
      decision: 'allow',
      argumentsDigest: lines[1]?.argumentsDigest,
    });
    expect(lines[0]?.resultDigest).toBeUndefined();
  }, 60_000);

  it('refuses a read it cannot write to the audit log, and never sends it', async () => {
    const client = await docsGateway();
    await client.readResource({ uri: 'docs://doc' });
    // The log is removed and a folder put in its place while the gateway runs.
    await rm(join(folder, 'audit.jsonl'));
    await mkdir(join(folder, 'audit.jsonl'));
    await expect(client.readResource({ uri: 'docs://doc' })).rejects.toThrow(
      /resources\/read of docs__resource:docs:\/\/doc was not sent: the gateway could not write it to its audit log \(AUDIT_WRITE_FAILED\)/,
    );
    await expect(client.getPrompt({ name: 'docs__brief' })).rejects.toThrow(
      /prompts\/get of docs__prompt:brief was not sent: .*AUDIT_WRITE_FAILED.*toolfence-mcp audit verify/,
    );
    // Only the first read reached the server.
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.method)).toEqual([
      'resources/read',
    ]);
  }, 60_000);
});
