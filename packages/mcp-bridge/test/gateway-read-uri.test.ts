// resources/read through the gateway: the policy judges the canonical form of the URI (WHATWG
// parse, dot segments resolved, escapes of unreserved characters decoded, runs of "/" in the
// path collapsed), and that exact form is what the upstream receives, so no other spelling of a
// denied file is read. A real stdio upstream reads file: URIs from disk as file servers do.
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuleBasedPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayPassthroughOptions } from '../src/gateway/gateway-passthrough.js';
import type { McpGateway } from '../src/gateway/mcp-gateway.js';
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
  folder = await realpath(await mkdtemp(join(tmpdir(), 'toolfence-read-uri-')));
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function fileServerGateway(): Promise<McpGateway> {
  await mkdir(join(folder, 'secret'));
  await writeFile(join(folder, 'secret', 'key.txt'), 'TOP-SECRET-KEY\n');
  await writeFile(join(folder, 'public.txt'), 'public text\n');
  const authorizer = new RuleBasedPolicy(
    [
      {
        tool: `fs__resource:file://${folder}/secret/*`,
        decision: 'deny',
        reason: 'secrets stay local',
      },
      { tool: '*', decision: 'allow' },
    ],
    { default: 'deny' },
  );
  const gateway = await startReadGateway(
    folder,
    {
      fs: readDefsServer(folder, 'fs', {
        tools: [defsTool('noop')],
        resources: [
          { name: 'public', uri: `file://${folder}/public.txt` },
          { name: 'doc', uri: 'custom://x/y' },
        ],
        templates: [{ name: 'file', uriTemplate: 'file:///{+path}', mimeType: 'text/plain' }],
      }),
    },
    { authorizer },
  );
  open.push(gateway);
  return gateway;
}

describe('resources/read judges the URI the upstream receives', () => {
  it('refuses every spelling of a denied file, and never sends one upstream', async () => {
    const client = await readClient(await fileServerGateway());
    open.push(client);
    const spellings = [
      `file://${folder}/secret/key.txt`,
      `file://${folder}/./secret/key.txt`,
      `file://${folder}/x/../secret/key.txt`,
      `file://${folder}/x/%2e%2E/secret/key.txt`,
      `file://${folder}/%73ecret/key.txt`,
      `file://${folder}/s%65cr%65t/key.txt`,
      `file:///${folder}/secret/key.txt`,
      `file://${folder}//secret/key.txt`,
      `file://localhost${folder}/secret/key.txt`,
      `FILE://${folder}/secret/key.txt`,
      `file://${folder}/sec\tret/key.txt`,
    ];
    for (const uri of spellings) {
      await expect(client.readResource({ uri }), uri).rejects.toThrow(
        /denied by the gateway's policy \(secrets stay local\)/,
      );
    }
    const reads = await jsonLines(folder, 'reads.jsonl');
    expect(reads).toEqual([]);
    // Each refusal is audited under the one canonical name.
    const audited = await jsonLines(folder, 'audit.jsonl');
    expect(audited).toHaveLength(spellings.length);
    for (const line of audited) {
      expect([line.kind, line.tool, line.decision, line.outcome]).toEqual([
        'resource',
        `fs__resource:file://${folder}/secret/key.txt`,
        'deny',
        'denied',
      ]);
    }
  }, 60_000);

  it('serves ordinary URIs as they are, and another spelling as its canonical form', async () => {
    const client = await readClient(await fileServerGateway());
    open.push(client);
    expect(firstText(await client.readResource({ uri: `file://${folder}/public.txt` }))).toBe(
      'public text\n',
    );
    expect(firstText(await client.readResource({ uri: 'custom://x/y' }))).toBe(
      'content of custom://x/y',
    );
    expect(
      firstText(await client.readResource({ uri: `file://${folder}/secret/../public.txt` })),
    ).toBe('public text\n');
    // The upstream got exactly what the policy judged.
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.uri)).toEqual([
      `file://${folder}/public.txt`,
      'custom://x/y',
      `file://${folder}/public.txt`,
    ]);
    expect((await jsonLines(folder, 'audit.jsonl')).map((line) => line.tool)).toEqual(
      expect.arrayContaining([`fs__resource:file://${folder}/public.txt`]),
    );
    expect(
      (await jsonLines(folder, 'audit.jsonl')).every((line) =>
        String(line.tool).startsWith('fs__resource:'),
      ),
    ).toBe(true);
  }, 60_000);

  it('refuses a URI that is not a URI, naming it, without sending it', async () => {
    const client = await readClient(await fileServerGateway());
    open.push(client);
    await expect(client.readResource({ uri: 'custom://a b/c' })).rejects.toThrow(/not a valid URI/);
    expect(await jsonLines(folder, 'reads.jsonl')).toEqual([]);
  }, 60_000);
});

describe('resources/read against resource templates', () => {
  // `{+x}` matches one or more of any character: the SDK's regular expression for six of them
  // backtracks polynomially in the URI's length (9.9 s for 104 characters in one run).
  const HOSTILE = 'x://{+a}{+b}{+c}{+d}{+e}{+f}z';

  async function templateGateway(passthrough?: GatewayPassthroughOptions) {
    const gateway = await startReadGateway(
      folder,
      {
        t: readDefsServer(folder, 't', {
          tools: [defsTool('noop')],
          templates: [
            { name: 'hostile', uriTemplate: HOSTILE },
            { name: 'note', uriTemplate: 'note://{id}' },
            // One expression, six variables: counted six against maxTemplateExpressions.
            { name: 'query', uriTemplate: 'q://x{?a,b,c,d,e,f}' },
          ],
        }),
      },
      {
        authorizer: new RuleBasedPolicy([{ tool: '*', decision: 'allow' }], { default: 'deny' }),
        ...(passthrough === undefined ? {} : { passthrough }),
      },
    );
    open.push(gateway);
    const client = await readClient(gateway);
    open.push(client);
    return client;
  }

  it('decides a hostile template in one pass: a call made meanwhile answers, and the read is matched', async () => {
    const client = await templateGateway();
    const long = `x://${'a'.repeat(1_000)}`;
    const [unmatched, matched, call] = await Promise.allSettled([
      client.readResource({ uri: long }),
      client.readResource({ uri: `${long}z` }),
      client.callTool({ name: 't__noop', arguments: {} }),
    ]);
    expect(unmatched.status).toBe('rejected');
    expect(String((unmatched as PromiseRejectedResult).reason)).toMatch(
      /No upstream server listed the resource/,
    );
    expect(matched.status).toBe('fulfilled');
    expect(call).toMatchObject({ status: 'fulfilled', value: { content: [{ text: 'ran noop' }] } });
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.uri)).toEqual([`${long}z`]);
  }, 20_000);

  it('refuses a URI longer than passthrough.maxReadUriChars without matching or sending it', async () => {
    const client = await templateGateway({ maxReadUriChars: 64 });
    const uri = `note://${'b'.repeat(58)}`;
    expect(firstText(await client.readResource({ uri: uri.slice(0, 64) }))).toBe(
      `content of ${uri.slice(0, 64)}`,
    );
    await expect(client.readResource({ uri: `${uri}b` })).rejects.toThrow(
      /is 66 characters, over the 64 the gateway reads \(passthrough\.maxReadUriChars\)/,
    );
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.uri)).toEqual([
      uri.slice(0, 64),
    ]);
  }, 60_000);

  it('leaves out a template of more than passthrough.maxTemplateExpressions expressions, and matches no read against it', async () => {
    const client = await templateGateway({ maxTemplateExpressions: 5 });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((entry) => entry.uriTemplate)).toEqual(['note://{id}']);
    await expect(client.readResource({ uri: 'q://x?a=1&b=2&c=3&d=4&e=5&f=6' })).rejects.toThrow(
      /No upstream server listed the resource/,
    );
    await expect(client.readResource({ uri: 'x://abcdefz' })).rejects.toThrow(
      /No upstream server listed the resource/,
    );
    expect(firstText(await client.readResource({ uri: 'note://1' }))).toBe('content of note://1');
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.uri)).toEqual(['note://1']);
  }, 60_000);

  it('refuses a read whose template matching would take more than passthrough.maxTemplateMatchWork steps', async () => {
    // Tried in order: the hostile template (8 steps), then note://{id} (2 steps), each times the
    // URI's length plus one.
    const client = await templateGateway({ maxTemplateMatchWork: 100 });
    // 8 x 12 = 96 steps: matched by the hostile template.
    expect(firstText(await client.readResource({ uri: 'x://abcdefz' }))).toBe(
      'content of x://abcdefz',
    );
    // 8 x 11 + 2 x 11 = 110 steps: refused before the second template is tried.
    await expect(client.readResource({ uri: 'note://123' })).rejects.toThrow(
      /takes more than the 100 steps the gateway spends on one read \(passthrough\.maxTemplateMatchWork\)/,
    );
    expect((await jsonLines(folder, 'reads.jsonl')).map((read) => read.uri)).toEqual([
      'x://abcdefz',
    ]);
  }, 60_000);
});
