import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  link,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createToolContext,
  RuleBasedPolicy,
  SkillAccessDeniedError,
  SkillAccessPolicy,
  SkillAdapter,
  SkillArgumentError,
  SkillConfigurationError,
  SkillLimitError,
  SkillLoader,
  SkillNotFoundError,
  SkillRegistry,
  SkillTool,
  SkillUnsafeFileError,
  ToolInputError,
  ToolRegistry,
} from '../src/index.js';
import { readFileSafely } from '../src/skills/safe-read.js';

const context = createToolContext({ runId: 'skills-test' });
let root: string;
let outside: string;

function skill(
  name: string,
  front: string[] = [`name: ${name}`, `description: About ${name}`],
  body = `\n# ${name}\n\nUse it well.\n`,
) {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, 'SKILL.md'), ['---', ...front, '---', body].join('\n'));
}

beforeEach(() => {
  const base = mkdtempSync(join(tmpdir(), 'toolfence-skills-'));
  root = join(base, 'skills');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
});

afterEach(() => {
  rmSync(join(root, '..'), { recursive: true, force: true });
});

describe('SkillLoader', () => {
  it('loads each <root>/<name>/SKILL.md one level deep, sorted, with a SHA-256 of the content', async () => {
    skill('zeta');
    skill('alpha', [
      'name: alpha',
      'description: First',
      'version: 2.0.0',
      'license: MIT',
      'metadata:',
      '  owner: docs',
    ]);
    mkdirSync(join(root, 'alpha', 'nested', 'deeper'), { recursive: true });
    writeFileSync(join(root, 'alpha', 'nested', 'SKILL.md'), '---\nname: nested\n---\n');
    const skills = await new SkillLoader({ root }).load();
    expect(skills.map((s) => s.name)).toEqual(['alpha', 'zeta']);
    const [alpha] = skills;
    expect(alpha).toMatchObject({
      name: 'alpha',
      description: 'First',
      version: '2.0.0',
      license: 'MIT',
      metadata: { owner: 'docs' },
      content: '\n# alpha\n\nUse it well.\n',
    });
    expect(alpha?.sha256).toBe(
      createHash('sha256')
        .update(alpha?.content ?? '')
        .digest('hex'),
    );
    expect(Object.isFrozen(alpha)).toBe(true);
  });

  it('falls back to the first body paragraph, at most 500 characters', async () => {
    skill('short', ['name: short'], '\n# Title\n\nFirst   paragraph\nwraps here.\n\nSecond.\n');
    skill('long', ['name: long'], `\n${'word '.repeat(300)}\n`);
    const skills = await new SkillLoader({ root }).load();
    expect(skills.find((s) => s.name === 'short')?.description).toBe('First paragraph wraps here.');
    expect(skills.find((s) => s.name === 'long')?.description).toHaveLength(500);
  });

  it('ignores dot entries, plain files and folders without SKILL.md', async () => {
    skill('real');
    mkdirSync(join(root, '.git'));
    writeFileSync(join(root, 'README.md'), '# skills');
    mkdirSync(join(root, 'empty'));
    expect((await new SkillLoader({ root }).load()).map((s) => s.name)).toEqual(['real']);
  });

  it.each([
    [
      'a name that differs from its folder',
      () => skill('folder', ['name: other']),
      'folder',
      'name_mismatch',
    ],
    ['a missing name', () => skill('folder', ['description: x']), 'folder', 'missing_name'],
    ['an invalid folder name', () => skill('Bad_Name'), undefined, 'invalid_name'],
    ['a folder name with a double dash', () => skill('a--b'), undefined, 'invalid_name'],
    ['a folder name over 64 characters', () => skill('a'.repeat(65)), undefined, 'invalid_name'],
    [
      'invalid YAML',
      () => skill('yaml', ['name: yaml', 'description: "open']),
      'yaml',
      'invalid_yaml',
    ],
    ['a YAML alias', () => skill('alias', ['a: &x 1', 'name: alias', 'b: *x']), 'alias', 'alias'],
    [
      'non-UTF-8 bytes',
      () => {
        mkdirSync(join(root, 'latin'));
        writeFileSync(
          join(root, 'latin', 'SKILL.md'),
          Buffer.from([0x2d, 0x2d, 0x2d, 0x0a, 0xff, 0xfe, 0x0a]),
        );
      },
      'latin',
      undefined,
    ],
    ['a NUL character', () => skill('nul', ['name: nul'], '\nbody\u0000more\n'), 'nul', undefined],
  ])('skips and reports %s, and loads the others', async (_label, arrange, name, reason) => {
    skill('fine');
    skill('good');
    arrange();
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['fine', 'good']);
    expect(scan.problems).toHaveLength(1);
    const [problem] = scan.problems;
    expect(problem).toMatchObject({ code: 'SKILL_FORMAT', skipped: true });
    if (reason !== undefined) expect(problem?.reason).toBe(reason);
    expect(problem?.skill).toBe(name);
    expect(problem?.message).not.toMatch(/About|body|more/);
  });

  it.each([
    [
      'a symlinked root',
      () => {
        const link = join(root, '..', 'link-root');
        symlinkSync(root, link);
        return link;
      },
    ],
    [
      'a root below a symlinked folder',
      () => {
        const link = join(root, '..', 'link-parent');
        symlinkSync(join(root, '..'), link);
        return join(link, 'skills');
      },
    ],
  ])('refuses %s for the whole load', async (_label, arrange) => {
    skill('fine');
    const target = arrange();
    await expect(new SkillLoader({ root: target }).load()).rejects.toBeInstanceOf(
      SkillUnsafeFileError,
    );
  });

  it.each([
    [
      'a symlinked skill folder',
      () => {
        mkdirSync(join(outside, 'evil'));
        writeFileSync(join(outside, 'evil', 'SKILL.md'), '---\nname: evil\n---\n');
        symlinkSync(join(outside, 'evil'), join(root, 'evil'));
      },
      'evil',
    ],
    [
      'a symlinked SKILL.md',
      () => {
        writeFileSync(join(outside, 'secret.md'), '---\nname: linked\n---\n');
        mkdirSync(join(root, 'linked'));
        symlinkSync(join(outside, 'secret.md'), join(root, 'linked', 'SKILL.md'));
      },
      'linked',
    ],
    [
      'a symlinked file at the root level',
      () => {
        writeFileSync(join(outside, 'x'), 'x');
        symlinkSync(join(outside, 'x'), join(root, 'x'));
      },
      'x',
    ],
    [
      'a SKILL.md that is a folder',
      () => {
        mkdirSync(join(root, 'dir', 'SKILL.md'), { recursive: true });
      },
      'dir',
    ],
    [
      'a SKILL.md that is a FIFO',
      () => {
        mkdirSync(join(root, 'fifo'));
        execFileSync('mkfifo', [join(root, 'fifo', 'SKILL.md')]);
      },
      'fifo',
    ],
  ])('skips and reports %s, and loads the others', async (_label, arrange, name) => {
    skill('fine');
    arrange();
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['fine']);
    expect(scan.problems).toEqual([
      expect.objectContaining({ code: 'SKILL_UNSAFE_FILE', skill: name, skipped: true }),
    ]);
    // Nothing from outside the root was read.
    expect(JSON.stringify(scan.skills)).not.toMatch(/evil|linked/);
  });

  it('skips a hard-linked SKILL.md', async () => {
    skill('fine');
    writeFileSync(join(outside, 'secret.md'), '---\nname: hard\n---\n');
    mkdirSync(join(root, 'hard'));
    await promisify(link)(join(outside, 'secret.md'), join(root, 'hard', 'SKILL.md'));
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['fine']);
    expect(scan.problems).toEqual([
      expect.objectContaining({ code: 'SKILL_UNSAFE_FILE', reason: 'hard_link', skill: 'hard' }),
    ]);
  });

  it('enforces maxFileBytes per skill', async () => {
    skill('big', ['name: big'], `\n${'x'.repeat(2_000)}\n`);
    skill('small');
    const scan = await new SkillLoader({ root, maxFileBytes: 1_000 }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['small']);
    expect(scan.problems).toEqual([
      expect.objectContaining({
        code: 'SKILL_LIMIT_EXCEEDED',
        reason: 'maxFileBytes',
        skill: 'big',
      }),
    ]);
    expect(await new SkillLoader({ root, maxFileBytes: 3_000 }).load()).toHaveLength(2);
  });

  it('enforces maxScanEntries on the root folder', async () => {
    for (let i = 0; i < 6; i += 1) writeFileSync(join(root, `file${i}.txt`), '');
    await expect(new SkillLoader({ root, maxScanEntries: 5 }).load()).rejects.toMatchObject({
      code: 'SKILL_LIMIT_EXCEEDED',
      details: { limit: 'maxScanEntries' },
    });
  });

  it('enforces maxSkills: loads the first ones by name and reports the rest', async () => {
    for (const name of ['a', 'b', 'c']) skill(name);
    const scan = await new SkillLoader({ root, maxSkills: 2 }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['a', 'b']);
    expect(scan.problems).toEqual([
      expect.objectContaining({ code: 'SKILL_LIMIT_EXCEEDED', reason: 'max_skills', skill: 'c' }),
    ]);
  });

  it('enforces maxFrontmatterLines per skill', async () => {
    skill('lines', ['name: lines', 'description: d', 'version: 1']);
    skill('short', ['name: short']);
    const scan = await new SkillLoader({ root, maxFrontmatterLines: 2 }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['short']);
    expect(scan.problems[0]).toMatchObject({
      code: SkillLimitError.code,
      reason: 'maxFrontmatterLines',
    });
  });

  it('skips a 250 KB SKILL.md whose front matter is one flow map of 30,000 keys, refused by maxFrontmatterNodes before composing it', async () => {
    const keys = Array.from({ length: 30_000 }, (_, index) => `${index.toString(36)}: 0`);
    // A duplicate key at the end: had the map been composed, the refusal would be invalid_yaml.
    skill('flood', [`{name: flood, description: d, ${keys.join(', ')}, name: flood}`]);
    skill('plain');
    const loader = new SkillLoader({ root });
    expect(loader.maxFrontmatterNodes).toBe(1_000);
    const scan = await loader.scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['plain']);
    expect(scan.problems).toEqual([
      expect.objectContaining({
        skill: 'flood',
        code: 'SKILL_LIMIT_EXCEEDED',
        reason: 'maxFrontmatterNodes',
        skipped: true,
      }),
    ]);
  });

  it('enforces maxFrontmatterNodes per skill (scalars and indicators counted)', async () => {
    skill('three', ['name: three', 'description: d', 'version: 1']); // 9 counted tokens
    skill('two'); // name, :, two, description, :, About two = 6
    const scan = await new SkillLoader({ root, maxFrontmatterNodes: 8 }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['two']);
    expect(scan.problems).toEqual([
      expect.objectContaining({ skill: 'three', reason: 'maxFrontmatterNodes', skipped: true }),
    ]);
    expect(await new SkillLoader({ root, maxFrontmatterNodes: 9 }).load()).toHaveLength(2);
    expect(() => new SkillLoader({ root, maxFrontmatterNodes: 0 })).toThrow(
      SkillConfigurationError,
    );
  });

  it('loads a collection the way the clients do: spec departures warned, dot folders and the cap reported', async () => {
    // The shapes measured on public collections: a 1,068-character description, list values
    // under metadata, skills under OpenAI-style dot folders, more skills than maxSkills (128).
    skill('claude-api', ['name: claude-api', `description: ${'d'.repeat(1_068)}`]);
    skill('sci-tools', [
      'name: sci-tools',
      'description: Science',
      'metadata:',
      '  tags: [chemistry, biology]',
      '  owner: lab',
    ]);
    for (let index = 0; index < 129; index += 1)
      skill(`z-filler-${String(index).padStart(3, '0')}`);
    for (const [folder, names] of [
      ['.curated', ['gh-fix-ci', 'notion-writer']],
      ['.experimental', ['canvas']],
      ['.system', ['skill-installer']],
    ] as const) {
      for (const name of names) {
        mkdirSync(join(root, folder, name), { recursive: true });
        writeFileSync(join(root, folder, name, 'SKILL.md'), `---\nname: ${name}\n---\n`);
      }
    }
    mkdirSync(join(root, '.git', 'objects'), { recursive: true });
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills).toHaveLength(128);
    expect(scan.skills.slice(0, 2).map((s) => s.name)).toEqual(['claude-api', 'sci-tools']);
    expect(scan.skills[0]?.description).toHaveLength(1_068);
    expect(scan.skills[1]?.metadata).toEqual({ tags: '["chemistry","biology"]', owner: 'lab' });
    const summary = scan.problems.map((p) => [p.skill ?? p.folder, p.reason, p.skipped, p.count]);
    expect(summary).toEqual([
      ['.curated', 'dot_folder', true, 2],
      ['.experimental', 'dot_folder', true, 1],
      ['.system', 'dot_folder', true, 1],
      ['claude-api', 'description_too_long', false, undefined],
      ['sci-tools', 'metadata_not_text', false, undefined],
      ['z-filler-126', 'max_skills', true, undefined],
      ['z-filler-127', 'max_skills', true, undefined],
      ['z-filler-128', 'max_skills', true, undefined],
    ]);
    expect(scan.problems[4]).toMatchObject({ key: 'tags', code: 'SKILL_FORMAT', line: 4 });

    const strict = await new SkillLoader({ root, specLimits: 'refuse', maxSkills: 1_000 }).scan();
    expect(strict.skills.map((s) => s.name)).not.toContain('claude-api');
    expect(strict.skills).toHaveLength(129);
    expect(strict.problems.filter((p) => p.skill !== undefined)).toEqual([
      expect.objectContaining({
        skill: 'claude-api',
        reason: 'description_too_long',
        skipped: true,
      }),
      expect.objectContaining({ skill: 'sci-tools', reason: 'metadata_not_a_map', skipped: true }),
    ]);
  });

  it.each([
    ['unterminated front matter', ['---', 'name: a'].join('\n'), 'unterminated_front_matter'],
    ['YAML that is not a map', '---\n- a\n- b\n---\n', 'not_a_map'],
    ['an alias', '---\nx: &x 1\nname: a\ny: *x\n---\n', 'alias'],
  ])('keeps refusing %s with the default specLimits', async (_label, text, reason) => {
    mkdirSync(join(root, 'a'));
    writeFileSync(join(root, 'a', 'SKILL.md'), text);
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills).toEqual([]);
    expect(scan.problems).toEqual([expect.objectContaining({ skill: 'a', reason, skipped: true })]);
  });

  it('reports a dot folder that is itself a skill, and stays silent about dot folders without skills', async () => {
    skill('fine');
    mkdirSync(join(root, '.hidden'));
    writeFileSync(join(root, '.hidden', 'SKILL.md'), '---\nname: hidden\n---\n');
    mkdirSync(join(root, '.cache', 'x'), { recursive: true });
    writeFileSync(join(root, '.cache', 'x', 'notes.md'), 'x');
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual(['fine']);
    expect(scan.problems).toEqual([
      expect.objectContaining({ folder: '.hidden', reason: 'dot_folder', count: 1, skipped: true }),
    ]);
  });

  it('keeps unknown front matter keys as data and reports them without skipping the skill', async () => {
    skill('extra', ['name: extra', 'description: d', 'entrypoint: run.sh', 'bad key!: 1']);
    const scan = await new SkillLoader({ root }).scan();
    expect(scan.skills[0]?.extra).toEqual({ entrypoint: 'run.sh', 'bad key!': 1 });
    expect(scan.problems).toEqual([
      expect.objectContaining({ reason: 'unknown_key', key: 'entrypoint', skipped: false }),
      expect.objectContaining({ reason: 'unknown_key', skipped: false }),
    ]);
    expect(scan.problems[1]).not.toHaveProperty('key');
  });

  it('loads real-world front matter: every valid skill of the fixture folder, the bad ones reported', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/skills-real', import.meta.url));
    const scan = await new SkillLoader({ root: fixture }).scan();
    expect(scan.skills.map((s) => s.name)).toEqual([
      'brand-guidelines',
      'docx-writer',
      'pdf-forms',
      'server-builder',
      'skill-creator',
      'webapp-testing',
    ]);
    const byName = new Map(scan.skills.map((s) => [s.name, s]));
    expect(byName.get('pdf-forms')?.description).toMatch(/^Fill, flatten.*\nUse this skill/s);
    expect(byName.get('docx-writer')?.allowedToolList).toEqual([
      'Read',
      'Write',
      'Bash(python3:*)',
    ]);
    expect(byName.get('brand-guidelines')).toMatchObject({
      allowedTools: 'Read Write',
      metadata: { owner: 'design', version: '1.0', reviewed: '2026-09-01' },
    });
    expect(byName.get('server-builder')?.compatibility).toBe(
      'Requires node >= 20 or python3 >= 3.10',
    );
    expect(byName.get('webapp-testing')).toMatchObject({
      version: '0.3.1',
      extra: { tags: ['testing', 'browser'] },
    });
    expect(byName.get('skill-creator')?.description.length).toBeGreaterThan(800);
    expect(scan.problems.filter((p) => p.skipped)).toEqual([
      expect.objectContaining({ skill: 'broken-anchor', reason: 'alias' }),
      expect.objectContaining({ skill: 'wrong-name', reason: 'name_mismatch' }),
    ]);
    expect(scan.problems.filter((p) => !p.skipped)).toEqual([
      expect.objectContaining({ skill: 'webapp-testing', reason: 'unknown_key', key: 'tags' }),
    ]);
  });

  it('keeps the relative source path of each skill', async () => {
    skill('pdf-tools');
    const [document] = await new SkillLoader({ root }).load();
    expect(document?.source).toBe('pdf-tools/SKILL.md');
  });

  it.each([
    ['a relative root', { root: 'skills' }],
    ['a boolean limit', { root: '/tmp', maxSkills: true }],
    ['a zero limit', { root: '/tmp', maxFileBytes: 0 }],
    ['a string limit', { root: '/tmp', maxScanEntries: '10' }],
    ['an unknown confinement', { root: '/tmp', confinement: 'openat' }],
    ['an unknown specLimits', { root: '/tmp', specLimits: 'strict' }],
  ])('refuses %s', (_label, options) => {
    expect(() => new SkillLoader(options as never)).toThrow(SkillConfigurationError);
  });
});

describe('readFileSafely', () => {
  it.each([
    [
      'a path swapped between lstat and open',
      'afterLstat',
      (file: string) => {
        writeFileSync(`${file}.new`, 'other');
        renameSync(`${file}.new`, file);
      },
      'swapped',
    ],
    [
      'a path swapped during the read',
      'afterRead',
      (file: string) => {
        writeFileSync(`${file}.new`, 'other');
        renameSync(`${file}.new`, file);
      },
      'swapped',
    ],
    [
      'a file appended to during the read',
      'afterRead',
      (file: string) => appendFileSync(file, 'more'),
      'changed_during_read',
    ],
    [
      'a file replaced by a symlink during the read',
      'afterRead',
      (file: string) => {
        writeFileSync(join(outside, 'target'), 'x');
        rmSync(file);
        symlinkSync(join(outside, 'target'), file);
      },
      'swapped',
    ],
  ] as const)('refuses %s', async (_label, hook, swap, reason) => {
    const file = join(root, 'doc.md');
    writeFileSync(file, 'original');
    await expect(
      readFileSafely(file, { maxBytes: 1_000 }, { [hook]: async () => swap(file) }),
    ).rejects.toMatchObject({ code: 'SKILL_UNSAFE_FILE', details: { reason } });
  });

  it('reads an unchanged file', async () => {
    const file = join(root, 'doc.md');
    writeFileSync(file, 'héllo');
    expect(await readFileSafely(file, { maxBytes: 100 })).toBe('héllo');
  });
});

describe('SkillRegistry', () => {
  it('swaps the whole set atomically, reports skipped skills, and keeps the old set when the load fails', async () => {
    skill('one');
    skill('two');
    const registry = new SkillRegistry();
    const loader = new SkillLoader({ root });
    await registry.refresh(loader);
    expect(registry.names()).toEqual(['one', 'two']);
    expect(registry.problems()).toEqual([]);
    const before = registry.get('one');
    skill('three');
    skill('two', ['name: not-two']);
    await registry.refresh(loader);
    expect(registry.names()).toEqual(['one', 'three']);
    expect(registry.problems()).toEqual([
      expect.objectContaining({ skill: 'two', reason: 'name_mismatch', skipped: true }),
    ]);
    expect(registry.get('one')).not.toBe(before);
    const kept = registry.list();
    rmSync(root, { recursive: true });
    await expect(registry.refresh(loader)).rejects.toMatchObject({ code: 'SKILL_READ' });
    expect(registry.list()).toEqual(kept);
    mkdirSync(root);
    skill('two');
    await registry.refresh(loader);
    expect(registry.names()).toEqual(['two']);
  });

  it('runs concurrent refreshes one after the other', async () => {
    skill('one');
    const registry = new SkillRegistry();
    const loader = new SkillLoader({ root });
    await Promise.all([registry.refresh(loader), registry.refresh(loader)]);
    expect(registry.names()).toEqual(['one']);
  });

  it('raises SkillNotFoundError for an unknown skill', () => {
    expect(() => new SkillRegistry().get('nope')).toThrow(SkillNotFoundError);
  });
});

describe('SkillAccessPolicy and SkillTool', () => {
  async function tool(allow: string[], options: { maxContentChars?: number } = {}) {
    skill('guide', ['name: guide', 'description: How to write', 'version: 1.0.0']);
    skill('secret', ['name: secret', 'description: Hidden']);
    const registry = new SkillRegistry();
    await registry.refresh(new SkillLoader({ root }));
    return new SkillTool({
      adapter: new SkillAdapter({ registry, policy: SkillAccessPolicy.fromNames(allow, options) }),
    });
  }

  it('lists only allowed skills, as JSON marked untrusted_reference', async () => {
    const skillTool = await tool(['guide']);
    expect(skillTool.spec.name).toBe('skill_reference');
    expect(skillTool.spec.effect).toEqual({ default: 'read' });
    expect(skillTool.spec.contract).toMatchObject({ risk: 'read-only', contentTrust: 'untrusted' });
    const result = await skillTool.invoke({ operation: 'list' }, context);
    expect(result.structuredContent).toEqual({
      kind: 'untrusted_reference',
      operation: 'list',
      skills: [
        {
          name: 'guide',
          description: 'How to write',
          version: '1.0.0',
          sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        },
      ],
    });
  });

  it('gets an allowed skill with the SHA-256 of its content', async () => {
    const result = await (await tool(['guide'])).invoke(
      { operation: 'get', name: 'guide' },
      context,
    );
    const value = result.structuredContent as Record<string, string>;
    expect(value.kind).toBe('untrusted_reference');
    expect(value.content).toContain('Use it well.');
    expect(value.sha256).toBe(
      createHash('sha256')
        .update(value.content ?? '')
        .digest('hex'),
    );
  });

  it('denies everything with an empty allowlist', async () => {
    const skillTool = await tool([]);
    expect(
      (await skillTool.invoke({ operation: 'list' }, context)).structuredContent,
    ).toMatchObject({
      skills: [],
    });
    await expect(
      skillTool.invoke({ operation: 'get', name: 'guide' }, context),
    ).rejects.toBeInstanceOf(SkillAccessDeniedError);
  });

  it('denies a skill outside the allowlist before revealing whether it exists', async () => {
    const skillTool = await tool(['guide']);
    await expect(
      skillTool.invoke({ operation: 'get', name: 'secret' }, context),
    ).rejects.toBeInstanceOf(SkillAccessDeniedError);
    await expect(
      skillTool.invoke({ operation: 'get', name: 'missing' }, context),
    ).rejects.toBeInstanceOf(SkillAccessDeniedError);
  });

  it('raises SkillNotFoundError for an allowed name that is not loaded', async () => {
    const skillTool = await tool(['guide', 'missing']);
    await expect(
      skillTool.invoke({ operation: 'get', name: 'missing' }, context),
    ).rejects.toBeInstanceOf(SkillNotFoundError);
  });

  it('raises rather than truncates content over maxContentChars', async () => {
    const skillTool = await tool(['guide'], { maxContentChars: 10 });
    await expect(
      skillTool.invoke({ operation: 'get', name: 'guide' }, context),
    ).rejects.toMatchObject({
      code: 'SKILL_LIMIT_EXCEEDED',
      details: { limit: 'maxContentChars' },
    });
  });

  it.each([
    ['an unknown argument', { operation: 'list', path: '/etc/passwd' }],
    ['an unknown operation', { operation: 'run', name: 'guide' }],
    ['a missing operation', {}],
    ['get without a name', { operation: 'get' }],
    ['get with a path as name', { operation: 'get', name: '../guide' }],
    ['list with a name', { operation: 'list', name: 'guide' }],
  ])('refuses %s', async (_label, args) => {
    await expect((await tool(['guide'])).invoke(args as never, context)).rejects.toBeInstanceOf(
      SkillArgumentError,
    );
  });

  it.each<[string, unknown, unknown]>([
    ['an invalid name', ['Bad Name'], {}],
    ['a string instead of a list', 'guide', {}],
    ['a boolean maxContentChars', ['guide'], { maxContentChars: true }],
  ])('refuses a policy with %s', (_label, names, options) => {
    expect(() => SkillAccessPolicy.fromNames(names as never, options as never)).toThrow(
      SkillConfigurationError,
    );
  });

  it('works through the ToolRegistry in read-only scope and is refused bad arguments there too', async () => {
    const skillTool = await tool(['guide']);
    const registry = new ToolRegistry({
      tools: [skillTool],
      authorizer: new RuleBasedPolicy([{ tool: 'skill_reference', decision: 'allow' }]),
    });
    await registry.ready();
    const result = await registry.invoke(
      'skill_reference',
      { operation: 'get', name: 'guide' },
      { runId: 'skills', accessScope: 'read-only' },
    );
    expect(result.structuredContent).toMatchObject({ kind: 'untrusted_reference', name: 'guide' });
    await expect(
      registry.invoke('skill_reference', { operation: 'exec', name: 'guide' }, { runId: 'skills' }),
    ).rejects.toBeInstanceOf(ToolInputError);
    await registry.close();
  });
});
