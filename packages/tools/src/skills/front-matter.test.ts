import { describe, expect, it } from 'vitest';
import { SkillFormatError, SkillLimitError } from './errors.js';
import { parseSkillFrontMatter } from './front-matter.js';

const wrap = (lines: string[], body = '\n# Body\n') => ['---', ...lines, '---', body].join('\n');

describe('parseSkillFrontMatter', () => {
  it('accepts the standard keys, quoted scalars and a flat metadata map', () => {
    const parsed = parseSkillFrontMatter(
      wrap([
        'name: pdf-tools',
        'description: "Fill PDF forms: \\"quoted\\" and \\\\ slashes"',
        "version: '1.2.0'",
        'license: Apache-2.0',
        'compatibility: Requires python3',
        'allowed-tools: Bash(git:*) Read',
        '',
        'metadata:',
        '  author: example-org',
        "  review: 'it''s fine'",
      ]),
      32,
    );
    expect(parsed.fields).toEqual({
      name: 'pdf-tools',
      description: 'Fill PDF forms: "quoted" and \\ slashes',
      version: '1.2.0',
      license: 'Apache-2.0',
      compatibility: 'Requires python3',
      'allowed-tools': 'Bash(git:*) Read',
    });
    expect(parsed.metadata).toEqual({ author: 'example-org', review: "it's fine" });
    expect(parsed.body).toBe('\n# Body\n');
  });

  it('keeps values such as true or 1.0 as plain strings', () => {
    expect(parseSkillFrontMatter(wrap(['name: a', 'version: 1.0']), 32).fields.version).toBe('1.0');
  });

  it.each([
    ['no front matter', '# Just markdown\n'],
    ['an unterminated front matter', '---\nname: a\n'],
    ['a block scalar', wrap(['name: a', 'description: |', '  multi'])],
    ['a folded scalar', wrap(['name: a', 'description: >'])],
    ['a flow sequence', wrap(['name: a', 'allowed-tools: [Read, Write]'])],
    ['a flow map', wrap(['name: a', 'description: {a: 1}'])],
    ['a block list', wrap(['name: a', 'allowed-tools:', '  - Read'])],
    ['an anchor', wrap(['name: &x a'])],
    ['an alias', wrap(['name: a', 'description: *x'])],
    ['a tag', wrap(['name: !!str a'])],
    ['a comment line', wrap(['# comment', 'name: a'])],
    ['a trailing comment', wrap(['name: a # trailing'])],
    ['a nested colon', wrap(['name: a', 'description: key: value'])],
    ['an unknown key', wrap(['name: a', 'entrypoint: run.sh'])],
    ['a duplicate key', wrap(['name: a', 'name: b'])],
    ['a duplicate metadata key', wrap(['name: a', 'metadata:', '  k: 1', '  k: 2'])],
    ['metadata with an inline value', wrap(['name: a', 'metadata: x'])],
    ['an indented line outside metadata', wrap(['name: a', '  stray: 1'])],
    ['deeper nesting in metadata', wrap(['name: a', 'metadata:', '    deep: 1'])],
    ['a tab', wrap(['name:\ta'])],
    ['an empty value', wrap(['name: a', 'description:'])],
    ['an unsupported escape', wrap(['name: a', 'description: "line\\nbreak"'])],
    ['an unterminated quote', wrap(['name: a', 'description: "open'])],
    ['a key without a space after the colon', wrap(['name:a'])],
    ['a merge key', wrap(['<<: *base'])],
  ])('refuses %s', (_label, text) => {
    expect(() => parseSkillFrontMatter(text, 32)).toThrow(SkillFormatError);
  });

  it('enforces the front matter line limit', () => {
    const lines = ['name: a', ...Array.from({ length: 5 }, () => '')];
    expect(() => parseSkillFrontMatter(wrap(lines), 5)).toThrow(SkillLimitError);
    expect(parseSkillFrontMatter(wrap(lines), 6).fields.name).toBe('a');
  });
});
