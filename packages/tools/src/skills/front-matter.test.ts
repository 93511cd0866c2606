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
    });
    expect(parsed.allowedTools).toEqual(['Bash(git:*)', 'Read']);
    expect(parsed.metadata).toEqual({ author: 'example-org', review: "it's fine" });
    expect(parsed.extra).toEqual({});
    expect(parsed.body).toBe('\n# Body\n');
  });

  it('keeps values such as true or 1.0 as written', () => {
    const parsed = parseSkillFrontMatter(
      wrap(['name: a', 'version: 1.0', 'license: true', 'metadata:', '  build: 007']),
      32,
    );
    expect(parsed.fields.version).toBe('1.0');
    expect(parsed.fields.license).toBe('true');
    expect(parsed.metadata.build).toBe('007');
  });

  it.each([
    [
      'a literal block scalar',
      ['name: a', 'description: |-', '  line one', '  line two'],
      'line one\nline two',
    ],
    ['a folded block scalar', ['name: a', 'description: >', '  folded', '  text'], 'folded text\n'],
    ['a comment line', ['# written by hand', 'name: a', 'description: d'], 'd'],
    ['a trailing comment', ['name: a', 'description: d # note'], 'd'],
    ['an escape in double quotes', ['name: a', 'description: "line\\nbreak"'], 'line\nbreak'],
    ['a colon inside a quoted value', ['name: a', "description: 'key: value'"], 'key: value'],
    ['a tab after the colon', ['name:\ta', 'description: d'], 'd'],
    [
      'a long multi-line plain scalar',
      ['name: a', 'description: Use this skill when', '  the user asks for PDFs.'],
      'Use this skill when the user asks for PDFs.',
    ],
  ])('accepts %s', (_label, lines, description) => {
    const parsed = parseSkillFrontMatter(wrap(lines), 32);
    expect(parsed.fields.name).toBe('a');
    expect(parsed.fields.description).toBe(description);
  });

  it.each([
    ['a block list', ['name: a', 'allowed-tools:', '  - Read', '  - Bash(git:*)']],
    ['a flow list', ['name: a', 'allowed-tools: [Read, "Bash(git:*)"]']],
    ['a space-separated string', ['name: a', 'allowed-tools: Read Bash(git:*)']],
  ])('reads allowed-tools written as %s', (_label, lines) => {
    expect(parseSkillFrontMatter(wrap(lines), 32).allowedTools).toEqual(['Read', 'Bash(git:*)']);
  });

  it('keeps unknown keys as frozen data', () => {
    const parsed = parseSkillFrontMatter(
      wrap(['name: a', 'entrypoint: run.sh', 'tags:', '  - pdf', '  - forms', 'nested: {a: 1}']),
      32,
    );
    expect(parsed.extra).toEqual({
      entrypoint: 'run.sh',
      tags: ['pdf', 'forms'],
      nested: { a: 1 },
    });
    expect(Object.isFrozen(parsed.extra.tags)).toBe(true);
    expect(Object.isFrozen(parsed.extra.nested)).toBe(true);
  });

  it.each([
    ['no front matter', '# Just markdown\n', 'missing_front_matter'],
    ['an unterminated front matter', '---\nname: a\n', 'unterminated_front_matter'],
    ['an anchor', wrap(['name: &x a']), 'alias'],
    ['an alias', wrap(['base: &b x', 'name: *b']), 'alias'],
    ['a tag', wrap(['name: !!str a']), 'tag'],
    ['a custom tag', wrap(['name: a', 'description: !shell rm -rf']), 'tag'],
    ['a merge key', wrap(['<<: {name: a}']), 'merge_key'],
    ['a duplicate key', wrap(['name: a', 'name: b']), 'invalid_yaml'],
    [
      'a duplicate metadata key',
      wrap(['name: a', 'metadata:', '  k: 1', '  k: 2']),
      'invalid_yaml',
    ],
    ['metadata with an inline value', wrap(['name: a', 'metadata: x']), 'metadata_not_a_map'],
    [
      'nested metadata',
      wrap(['name: a', 'metadata:', '  k:', '    deep: 1']),
      'metadata_not_a_map',
    ],
    ['a list as description', wrap(['name: a', 'description: [x]']), 'not_text'],
    ['an empty value', wrap(['name: a', 'description:']), 'empty_value'],
    ['an unterminated quote', wrap(['name: a', 'description: "open']), 'invalid_yaml'],
    ['a nested colon', wrap(['name: a', 'description: key: value']), 'invalid_yaml'],
    ['a sequence at the top', wrap(['- name: a']), 'not_a_map'],
    ['a plain text at the top', wrap(['name:a']), 'not_a_map'],
    ['a non-text key', wrap(['name: a', '1: one']), 'bad_key'],
    [
      'allowed-tools as a map',
      wrap(['name: a', 'allowed-tools: {Read: yes}']),
      'bad_allowed_tools',
    ],
    [
      'a value over 8,192 characters',
      wrap(['name: a', `compatibility: ${'x'.repeat(8_193)}`]),
      'value_too_long',
    ],
  ])('refuses %s', (_label, text, reason) => {
    let caught: unknown;
    try {
      parseSkillFrontMatter(text, 32, 'a', 1_000, 'refuse');
    } catch (error) {
      caught = error;
    }
    expect(SkillFormatError.isInstance(caught)).toBe(true);
    expect((caught as SkillFormatError).details).toMatchObject({ reason, skill: 'a' });
  });

  it('names the line of a refusal', () => {
    let caught: unknown;
    try {
      parseSkillFrontMatter(wrap(['name: a', 'description: d', 'license: !!str x']), 32);
    } catch (error) {
      caught = error;
    }
    expect((caught as SkillFormatError).details).toMatchObject({ reason: 'tag', line: 4 });
  });

  it('enforces the front matter line limit before parsing', () => {
    const lines = ['name: a', ...Array.from({ length: 5 }, () => '')];
    expect(() => parseSkillFrontMatter(wrap(lines), 5)).toThrow(SkillLimitError);
    expect(parseSkillFrontMatter(wrap(lines), 6).fields.name).toBe('a');
    // Invalid YAML past the limit is never parsed: the limit error comes first.
    expect(() => parseSkillFrontMatter(wrap([...lines, 'a: *undefined-alias']), 5)).toThrow(
      SkillLimitError,
    );
  });

  it('refuses an alias bomb without expanding it', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'name: a',
    ];
    expect(() => parseSkillFrontMatter(wrap(bomb), 32)).toThrow(SkillFormatError);
  });
});

describe('parseSkillFrontMatter spec departures (specLimits)', () => {
  it.each([
    [
      'a list under metadata',
      ['name: a', 'metadata:', '  tags: [x, y]', '  owner: docs'],
      { tags: '["x","y"]', owner: 'docs' },
      [{ reason: 'metadata_not_text', key: 'tags', line: 3 }],
    ],
    [
      'a map under metadata',
      ['name: a', 'metadata:', '  k:', '    deep: 1'],
      { k: '{"deep":1}' },
      [{ reason: 'metadata_not_text', key: 'k', line: 3 }],
    ],
    [
      'metadata that is not a map',
      ['name: a', 'metadata: x'],
      {},
      [{ reason: 'metadata_not_a_map', line: 3 }],
    ],
  ])(
    'accepts and reports %s by default, refuses it with specLimits refuse',
    (_label, lines, metadata, deviations) => {
      const parsed = parseSkillFrontMatter(wrap(lines), 32, 'a');
      expect(parsed.metadata).toEqual(metadata);
      expect(parsed.deviations).toEqual(deviations);
      expect(() => parseSkillFrontMatter(wrap(lines), 32, 'a', 1_000, 'refuse')).toThrow(
        expect.objectContaining({
          details: expect.objectContaining({ reason: 'metadata_not_a_map' }),
        }),
      );
    },
  );

  it('reports no departure for a front matter within the spec', () => {
    expect(parseSkillFrontMatter(wrap(['name: a', 'metadata:', '  k: v']), 32).deviations).toEqual(
      [],
    );
  });
});

describe('parseSkillFrontMatter node limit (maxFrontmatterNodes)', () => {
  const entries = 30_000;
  const keys = Array.from({ length: entries }, (_, index) => `k${index}: v`).join(', ');
  // Each flood ends in a duplicate key: composing the YAML would report `invalid_yaml`, so a
  // `maxFrontmatterNodes` refusal shows the count ran first and the document was never composed.
  const duplicate = 'name: a';
  it.each([
    ['a root flow map of 30,000 keys', [`{name: a, ${keys}}`, duplicate]],
    ['a nested flow map of 30,000 keys', ['name: a', `x: {${keys}}`, duplicate]],
    ['a flow sequence of 30,000 items', ['name: a', `x: [${'v, '.repeat(entries)}v]`, duplicate]],
    ['30,000 pairs of empty keys', ['name: a', `x: {${': , '.repeat(entries)}}`, duplicate]],
    [
      '30,000 nested flow sequences',
      ['name: a', `x: ${'['.repeat(entries)}${']'.repeat(entries)}`, duplicate],
    ],
    ['30,000 quoted scalars', ['name: a', `x: [${'"q", '.repeat(entries)}"q"]`, duplicate]],
  ])('refuses %s before composing it', (_label, lines) => {
    let caught: unknown;
    try {
      parseSkillFrontMatter(wrap(lines), 32, 'a');
    } catch (error) {
      caught = error;
    }
    expect(SkillLimitError.isInstance(caught)).toBe(true);
    expect((caught as SkillLimitError).details).toEqual({
      limit: 'maxFrontmatterNodes',
      maxFrontmatterNodes: 1_000,
      skill: 'a',
    });
  });

  it('counts scalars and indicators: a front matter of exactly maxNodes loads, one more is refused', () => {
    // name, :, a, description, :, d = 6 counted tokens (comments and spaces are not counted).
    const text = wrap(['name: a # comment', 'description: d']);
    expect(parseSkillFrontMatter(text, 32, 'a', 6).fields).toEqual({ name: 'a', description: 'd' });
    expect(() => parseSkillFrontMatter(text, 32, 'a', 5)).toThrow(SkillLimitError);
  });

  it('loads an ordinary rich front matter under the default', () => {
    const tags = Array.from({ length: 40 }, (_, index) => `tag${index}`).join(', ');
    const parsed = parseSkillFrontMatter(
      wrap([
        'name: a',
        'description: d',
        'allowed-tools: [Read, Write, Bash(python3:*)]',
        `tags: [${tags}]`,
        'metadata:',
        ...Array.from({ length: 20 }, (_, index) => `  key${index}: value ${index}`),
      ]),
      32,
      'a',
    );
    expect(Object.keys(parsed.metadata)).toHaveLength(20);
  });
});
