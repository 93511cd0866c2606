import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpToolInfo } from '../client/tool-listing.js';
import { PinStore, pinKey, pinnedDefinition, splitPinKey } from './pin-store.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-pins-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const entries = (...list: Record<string, unknown>[]) => list as unknown as McpToolInfo[];
const IDENTITY = 'command:["node","server.js"]';

describe('pins of prompts and resource templates', () => {
  it.each([
    ['a tool', 'files', 'tool', 'files'],
    ['a prompt', 'files', 'prompt', 'prompt:files'],
    ['a resource template', 'files', 'resource-template', 'resource-template:files'],
  ] as const)('keys %s apart from the others', (_label, server, kind, key) => {
    expect(pinKey(server, kind)).toBe(key);
    expect(splitPinKey(key)).toEqual({ server, kind });
  });

  it('pins only the fields of each kind (a tool with an `arguments` key keeps its digest)', () => {
    const tool = entries({ name: 't', description: 'd', inputSchema: {}, arguments: [1] })[0];
    expect(Object.keys(pinnedDefinition(tool as McpToolInfo))).toEqual([
      'name',
      'description',
      'inputSchema',
    ]);
    const prompt = entries({ name: 'p', description: 'd', arguments: [{ name: 'a' }], x: 1 })[0];
    expect(Object.keys(pinnedDefinition(prompt as McpToolInfo, 'prompt'))).toEqual([
      'name',
      'description',
      'arguments',
    ]);
  });

  it('reads a lock file written before prompts were pinned, then pins and reviews prompts', async () => {
    const path = join(folder, 'toolfence.lock.json');
    const first = await PinStore.open(path);
    first.review(
      'files',
      IDENTITY,
      entries({ name: 'read', description: 'Reads', inputSchema: {} }),
    );
    await first.save();
    // The file as an earlier version wrote it: tools only, under the server's name.
    const old = JSON.parse(await readFile(path, 'utf8'));
    expect(Object.keys(old.servers)).toEqual(['files']);
    await writeFile(path, JSON.stringify(old));

    const store = await PinStore.open(path);
    const tools = store.review(
      'files',
      IDENTITY,
      entries({ name: 'read', description: 'Reads', inputSchema: {} }),
    );
    expect([...tools.visible]).toEqual(['read']);
    expect(tools.changed).toBe(false);
    const key = pinKey('files', 'prompt');
    const prompt = { name: 'brief', description: 'Summary', arguments: [{ name: 'topic' }] };
    // First sight of the server's prompts: pinned as seen.
    expect([...store.review(key, IDENTITY, entries(prompt), 'prompt').visible]).toEqual(['brief']);
    const changed = store.review(
      key,
      IDENTITY,
      entries({ ...prompt, arguments: [{ name: 'topic', required: true }] }),
      'prompt',
    );
    expect(changed.hidden.get('brief')).toEqual(['definition-changed']);
    expect(store.pending().map(({ server, tool, kind }) => ({ server, tool, kind }))).toEqual([
      { server: 'files', tool: 'brief', kind: 'prompt' },
    ]);
    const [pending] = store.pending();
    expect(store.accept(key, 'brief', pending?.pin.sha256 as string)).toBe(true);
    expect(
      store
        .review(
          key,
          IDENTITY,
          entries({ ...prompt, arguments: [{ name: 'topic', required: true }] }),
          'prompt',
        )
        .visible.has('brief'),
    ).toBe(true);
  });
});

describe('PinStore.accept decides the kind itself', () => {
  it('accepts, under the server name alone, the tool or the prompt whose pending digest is named', async () => {
    const store = await PinStore.open(join(folder, 'toolfence.lock.json'));
    const tool = { name: 'brief', description: 'Tool', inputSchema: {} };
    const prompt = { name: 'brief', description: 'Prompt', arguments: [{ name: 'topic' }] };
    store.review('files', IDENTITY, entries(tool));
    store.review(pinKey('files', 'prompt'), IDENTITY, entries(prompt), 'prompt');
    // Both change: a tool and a prompt are pending under the same name, each with its digest.
    store.review('files', IDENTITY, entries({ ...tool, description: 'Tool v2' }));
    store.review(
      pinKey('files', 'prompt'),
      IDENTITY,
      entries({ ...prompt, description: 'Prompt v2' }),
      'prompt',
    );
    const digestOf = (kind: string) =>
      store.pending().find((entry) => entry.kind === kind)?.pin.sha256 as string;
    const promptDigest = digestOf('prompt');
    const toolDigest = digestOf('tool');
    expect(store.accept('files', 'brief', promptDigest)).toBe(true);
    expect(store.pending().map((entry) => entry.kind)).toEqual(['tool']);
    expect(store.pinOf(pinKey('files', 'prompt'), 'brief')?.sha256).toBe(promptDigest);
    expect(store.accept('files', 'brief', toolDigest)).toBe(true);
    expect(store.pending()).toEqual([]);
    expect(store.accept('files', 'brief', toolDigest)).toBe(false);
  });

  it('refuses a digest pending under no kind with GATEWAY_PIN_CHANGED, accepting nothing', async () => {
    const store = await PinStore.open(join(folder, 'toolfence.lock.json'));
    const prompt = { name: 'brief', description: 'Prompt', arguments: [] };
    store.review(pinKey('files', 'prompt'), IDENTITY, entries(prompt), 'prompt');
    store.review(
      pinKey('files', 'prompt'),
      IDENTITY,
      entries({ ...prompt, description: 'v2' }),
      'prompt',
    );
    expect(() => store.accept('files', 'brief', `sha256:${'0'.repeat(64)}`)).toThrow(
      expect.objectContaining({
        code: 'GATEWAY_PIN_CHANGED',
        details: expect.objectContaining({ server: 'files', tool: 'brief' }),
      }),
    );
    expect(store.pending()).toHaveLength(1);
  });
});
