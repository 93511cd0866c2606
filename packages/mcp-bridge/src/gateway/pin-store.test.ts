import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McpToolInfo } from '../client/tool-listing.js';
import { digestOf } from './canonical-json.js';
import {
  definitionDigest,
  PinStore,
  pinKey,
  pinnedDefinition,
  reviewServer,
  splitPinKey,
} from './pin-store.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-pins-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const entries = (...list: Record<string, unknown>[]) => list as unknown as McpToolInfo[];
const IDENTITY = 'command:["node","server.js"]';

describe('the pin digest', () => {
  // Lock files written by every earlier version hold digestOf({ identity, definition }): a review
  // that serialises the definition once must give the very same digest.
  const definitions = [
    {
      name: 'a',
      description: 'line\u2028"quoted"\ud800',
      inputSchema: { type: 'object', properties: { z: {}, a: {} } },
      annotations: { readOnlyHint: true },
      arguments: [{ name: 'b' }],
      uriTemplate: 'x://{a}',
    },
    { name: '__proto__', title: 't' },
  ] as unknown as McpToolInfo[];
  it.each(['tool', 'prompt', 'resource-template'] as const)(
    'is digestOf({ identity, definition }) for a %s, as stored before',
    (kind) => {
      for (const tool of definitions) {
        for (const identity of ['stdio:node "server.mjs"', 'plain']) {
          const expected = digestOf({ identity, definition: pinnedDefinition(tool, kind) });
          expect(definitionDigest(identity, tool, kind)).toBe(expected);
          const { pins } = reviewServer(undefined, identity, [tool], kind);
          expect(Object.values(pins.tools)[0]?.sha256).toBe(expected);
        }
      }
    },
  );
});

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

describe('PinStore limits: what a server lists cannot make the lock file unreadable', () => {
  const tool = (name: string, chars = 10) => ({
    name,
    description: 'd'.repeat(chars),
    inputSchema: { type: 'object' },
  });

  it('hides a definition over maxDefinitionBytes (definition-too-large) and stores nothing of it, at first sight and later', async () => {
    const path = join(folder, 'toolfence.lock.json');
    const store = await PinStore.open(path, { maxDefinitionBytes: 1_024 });
    const first = store.review('big', IDENTITY, entries(tool('small'), tool('huge', 2_000)));
    expect([...first.visible]).toEqual(['small']);
    expect(first.hidden.get('huge')).toEqual(['definition-too-large']);
    const later = store.review(
      'big',
      IDENTITY,
      entries(tool('small'), tool('huge', 2_000), tool('huger', 5_000)),
    );
    expect([...later.hidden]).toEqual([
      ['huge', ['definition-too-large']],
      ['huger', ['definition-too-large']],
    ]);
    expect(store.pending()).toEqual([]);
    await store.save();
    expect(await readFile(path, 'utf8')).not.toContain('ddddddddddddddddddddddddddddddddddddd');
    expect(store.accept('big', 'huge', 'sha256:x')).toBe(false);
  });

  it('keeps at most maxPendingPerServer pending definitions per server; the rest are hidden unstored', async () => {
    const store = await PinStore.open(join(folder, 'toolfence.lock.json'), {
      maxPendingPerServer: 2,
    });
    store.review('s', IDENTITY, entries(tool('a')));
    const review = store.review('s', IDENTITY, entries(tool('a'), tool('b'), tool('c'), tool('d')));
    expect([...review.visible]).toEqual(['a']);
    expect([...review.hidden.keys()]).toEqual(['b', 'c', 'd']);
    expect(store.pending().map((entry) => entry.tool)).toEqual(['b', 'c']);
  });

  it('refuses a review that would make the lock file larger than maxLockBytes, naming the server; the others and the file stay readable', async () => {
    const path = join(folder, 'toolfence.lock.json');
    const store = await PinStore.open(path, { maxLockBytes: 8_192 });
    store.review('good', IDENTITY, entries(tool('read')));
    const many = Array.from({ length: 40 }, (_, index) => tool(`t${index}`, 200));
    expect(() => store.review('bloat', IDENTITY, entries(...many))).toThrow(
      expect.objectContaining({
        code: 'GATEWAY_STATE',
        message: expect.stringMatching(
          /The pins of server "bloat" would make the pin lock file larger than maxLockBytes \(8192 bytes\)/,
        ),
      }),
    );
    expect(store.pinOf('bloat', 't0')).toBeUndefined();
    await store.save();
    const reread = await PinStore.open(path, { maxLockBytes: 8_192 });
    expect(reread.pinOf('good', 'read')).toBeDefined();
    expect((await readFile(path)).byteLength).toBeLessThanOrEqual(8_192);
  });

  it('refuses unknown option keys and limits that are not whole numbers of at least 1', async () => {
    const path = join(folder, 'toolfence.lock.json');
    await expect(PinStore.open(path, { maxLockByte: 1 } as never)).rejects.toThrow(
      /Unknown PinStore option "maxLockByte"/,
    );
    await expect(PinStore.open(path, { maxDefinitionBytes: 0 })).rejects.toThrow(
      /PinStore option maxDefinitionBytes must be a whole number of at least 1/,
    );
  });

  it('refuses to open a lock file larger than maxLockBytes, naming the limit', async () => {
    const path = join(folder, 'toolfence.lock.json');
    const store = await PinStore.open(path);
    store.review('s', IDENTITY, entries(tool('a', 2_000)));
    await store.save();
    await expect(PinStore.open(path, { maxLockBytes: 1_000 })).rejects.toThrow(
      /The pin lock file is larger than maxLockBytes \(1000 bytes\)/,
    );
  });
});
