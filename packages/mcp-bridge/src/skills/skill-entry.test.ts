import { sameJsonValue } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import { differingKeys, parseSkillEntry } from './skill-entry.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;

function entry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uri: 'skill://acme/pdf-processing/SKILL.md',
    frontmatter: { name: 'pdf-processing', description: 'Works with PDFs' },
    resources: [
      { uri: 'skill://acme/pdf-processing/SKILL.md', digest: DIGEST, size: 10 },
      { uri: 'skill://acme/pdf-processing/references/A.md', digest: DIGEST, size: 3 },
    ],
    ...overrides,
  };
}

describe('parseSkillEntry', () => {
  it('keeps the front matter and each file with its digest and size', () => {
    const parsed = parseSkillEntry(entry(), 256);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.name).toBe('pdf-processing');
    expect(parsed.value.base).toBe('skill://acme/pdf-processing/');
    expect(parsed.value.resources?.map((file) => [file.path, file.sha256, file.size])).toEqual([
      ['SKILL.md', 'a'.repeat(64), 10],
      ['references/A.md', 'a'.repeat(64), 3],
    ]);
    expect(Object.isFrozen(parsed.value.frontMatter)).toBe(true);
  });

  it('keeps a "dynamic" entry without files (it can never be verified, so never loaded)', () => {
    const parsed = parseSkillEntry(entry({ resources: 'dynamic' }), 256);
    expect(parsed.ok && parsed.value.resources).toBeUndefined();
  });

  const file = (uri: string, extra: Record<string, unknown> = {}) => ({
    uri,
    digest: DIGEST,
    size: 1,
    ...extra,
  });
  const skillMd = file('skill://acme/pdf-processing/SKILL.md');
  it.each([
    ['not an object', 'x'],
    ['a uri that is not a SKILL.md', entry({ uri: 'skill://acme/pdf-processing/README.md' })],
    ['a uri without a scheme', entry({ uri: 'pdf-processing/SKILL.md' })],
    ['a traversal in the uri', entry({ uri: 'skill://acme/../pdf-processing/SKILL.md' })],
    ['an encoded path in the uri', entry({ uri: 'skill://acme/%2e%2e/pdf-processing/SKILL.md' })],
    [
      'a name that differs from the final segment',
      entry({ frontmatter: { name: 'other', description: 'x' } }),
    ],
    [
      'an invalid skill name',
      entry({
        uri: 'skill://acme/PDF/SKILL.md',
        frontmatter: { name: 'PDF', description: 'x' },
      }),
    ],
    ['no description', entry({ frontmatter: { name: 'pdf-processing' } })],
    [
      'a description over 1,024 characters',
      entry({ frontmatter: { name: 'pdf-processing', description: 'x'.repeat(1025) } }),
    ],
    ['front matter that is a list', entry({ frontmatter: [] })],
    ['resources that are neither a list nor "dynamic"', entry({ resources: 'static' })],
    ['SKILL.md missing from its resources', entry({ resources: [] })],
    [
      'a file outside the skill folder',
      entry({ resources: [skillMd, file('skill://acme/other/SKILL.md')] }),
    ],
    [
      'a file path with a traversal',
      entry({ resources: [skillMd, file('skill://acme/pdf-processing/../other/SKILL.md')] }),
    ],
    [
      'a file path with a backslash',
      entry({ resources: [skillMd, file('skill://acme/pdf-processing/a\\b.md')] }),
    ],
    ['a file listed twice', entry({ resources: [skillMd, skillMd] })],
    [
      'a digest that is not sha256',
      entry({ resources: [file(skillMd.uri, { digest: `md5:${'a'.repeat(32)}` })] }),
    ],
    ['a digest too short', entry({ resources: [file(skillMd.uri, { digest: 'sha256:abc' })] })],
    ['a negative size', entry({ resources: [file(skillMd.uri, { size: -1 })] })],
    ['a fractional size', entry({ resources: [file(skillMd.uri, { size: 1.5 })] })],
    ['a size given as text', entry({ resources: [file(skillMd.uri, { size: '1' })] })],
  ])('skips an entry with %s', (_name, raw) => {
    expect(parseSkillEntry(raw, 256).ok).toBe(false);
  });

  it('skips an entry listing more files than maxResourcesPerSkill', () => {
    expect(parseSkillEntry(entry(), 1)).toEqual({
      ok: false,
      reason: 'entry lists more resources than maxResourcesPerSkill',
    });
  });
});

describe('front matter comparison', () => {
  it.each([
    ['equal maps in another key order', { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, []],
    ['a changed value', { description: 'x' }, { description: 'y' }, ['description']],
    ['an added key', { name: 'a' }, { name: 'a', license: 'MIT' }, ['license']],
    ['a removed key', { name: 'a', license: 'MIT' }, { name: 'a' }, ['license']],
    ['a list in another order', { tools: ['a', 'b'] }, { tools: ['b', 'a'] }, ['tools']],
    ['a number written as text', { version: 1 }, { version: '1' }, ['version']],
    ['a nested change', { metadata: { a: '1' } }, { metadata: { a: '2' } }, ['metadata']],
    ['an absent key against null', { name: 'a', license: null }, { name: 'a' }, []],
    ['a nested absent key against null', { metadata: { a: null } }, { metadata: {} }, []],
    ['a key named like an Object member', { constructor: null }, {}, []],
  ])('%s', (_name, listed, fetched, differing) => {
    expect(differingKeys(listed, fetched)).toEqual(differing);
    expect(sameJsonValue(listed, fetched, { absentIsNull: true })).toBe(differing.length === 0);
  });
});
