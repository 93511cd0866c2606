import { describe, expect, it } from 'vitest';
import { parseToolInfo } from './tool-listing.js';

describe('parseToolInfo', () => {
  it('keeps the known keys in order, drops unknown and undefined ones, and freezes the copy', () => {
    const raw = {
      icons: [{ src: 'x' }],
      _meta: { k: 1 },
      execution: { taskSupport: 'optional' },
      annotations: { readOnlyHint: true },
      outputSchema: { type: 'object' },
      inputSchema: { type: 'object' },
      description: 'd',
      title: undefined,
      name: 'tool',
    };
    const parsed = parseToolInfo(raw);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(Object.keys(parsed.value)).toEqual([
      'name',
      'description',
      'inputSchema',
      'outputSchema',
      'annotations',
      'execution',
      '_meta',
    ]);
    expect(parsed.value).not.toBe(raw);
    expect(Object.isFrozen(parsed.value)).toBe(true);
    expect(parsed.value.inputSchema).toBe(raw.inputSchema);
  });

  it('accepts a name alone and a null inputSchema', () => {
    expect(parseToolInfo({ name: 'a' })).toEqual({ ok: true, value: { name: 'a' } });
    expect(parseToolInfo({ name: 'a', inputSchema: null })).toEqual({
      ok: true,
      value: { name: 'a', inputSchema: null },
    });
    expect(parseToolInfo({ name: 'x'.repeat(256) }).ok).toBe(true);
  });

  it.each([
    ['a string', 'tool', 'tool is not an object'],
    ['an array', [{ name: 'a' }], 'tool is not an object'],
    ['null', null, 'tool is not an object'],
    ['no name', {}, 'tool name is not a non-empty string of at most 256 characters'],
    [
      'an empty name',
      { name: '' },
      'tool name is not a non-empty string of at most 256 characters',
    ],
    [
      'a 257-character name',
      { name: 'x'.repeat(257) },
      'tool name is not a non-empty string of at most 256 characters',
    ],
    [
      'a numeric name',
      { name: 7 },
      'tool name is not a non-empty string of at most 256 characters',
    ],
    ['a numeric title', { name: 'a', title: 1 }, 'tool title is not a string'],
    ['a null description', { name: 'a', description: null }, 'tool description is not a string'],
    ['a string inputSchema', { name: 'a', inputSchema: 'x' }, 'tool inputSchema is not an object'],
    ['an array inputSchema', { name: 'a', inputSchema: [] }, 'tool inputSchema is not an object'],
    [
      'a null outputSchema',
      { name: 'a', outputSchema: null },
      'tool outputSchema is not an object',
    ],
    ['array annotations', { name: 'a', annotations: [] }, 'tool annotations is not an object'],
    ['a string execution', { name: 'a', execution: 'x' }, 'tool execution is not an object'],
    ['a numeric _meta', { name: 'a', _meta: 1 }, 'tool _meta is not an object'],
  ])('refuses a tool with %s', (_case, raw, reason) => {
    expect(parseToolInfo(raw)).toEqual({ ok: false, reason });
  });
});
