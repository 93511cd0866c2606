import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ClientConfigurationError,
  McpClient,
  McpSkillConfigurationError,
  McpSkillNotListedError,
  McpSkillNotLoadedError,
  McpSkillSource,
  McpSkillVerificationError,
  SKILLS_EXTENSION_ID,
} from '@toolfence/mcp-bridge';
import {
  McpLimitError,
  SkillAccessPolicy,
  SkillAdapter,
  SkillLimitError,
  SkillRegistry,
  SkillTool,
} from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHILD_ENV } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/skills-server.mjs', import.meta.url));
const EXTENSIONS = { [SKILLS_EXTENSION_ID]: {} };

// Skills written the way authors write them: a block scalar, a comment, a list, a metadata map.
const PDF_SKILL = `---
name: pdf-processing
description: |-
  Extract, fill, and assemble PDF documents.
  Use it when a task mentions forms.
# owned by the docs team
allowed-tools:
  - Read
  - Bash(pdftotext:*)
metadata:
  owner: docs-team
---

# PDF processing

Run pdftotext first.
`;
const NOTES_SKILL = `---
name: release-notes
description: "Writes release notes from merged changes"
version: 1.0
---
Group changes by package.
`;

let root: string;
let folder: string;

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'toolfence-skills-mcp-'));
  root = join(folder, 'skills');
  mkdirSync(join(root, 'pdf-processing', 'references'), { recursive: true });
  mkdirSync(join(root, 'release-notes'));
  writeFileSync(join(root, 'pdf-processing', 'SKILL.md'), PDF_SKILL);
  writeFileSync(join(root, 'pdf-processing', 'references', 'FORMS.md'), '# Forms\n\nFill them.\n');
  writeFileSync(join(root, 'release-notes', 'SKILL.md'), NOTES_SKILL);
});

afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

function serve(args: readonly string[], log?: string): McpClient {
  return new McpClient({
    command: [process.execPath, SERVER, ...args],
    env: { ...CHILD_ENV, ...(log === undefined ? {} : { SKILLS_LOG: log }) },
    extensions: EXTENSIONS,
  });
}

/** What the client sent: every request's method, and the URIs of its reads. */
function sent(log: string): { methods: string[]; reads: string[] } {
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [];
  const messages = lines.filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
  return {
    methods: messages.map((message) => message.method).filter(Boolean),
    reads: messages
      .filter((message) => message.method === 'resources/read')
      .map((message) => message.params.uri),
  };
}

describe('Skills over MCP (SEP-2640) against an SDK v2 server', () => {
  it('lists page by page, reads nothing until a skill is loaded, and feeds SkillRegistry and SkillTool', async () => {
    const log = join(folder, 'honest.log');
    const client = serve(['honest', root, '1'], log);
    try {
      const source = new McpSkillSource({ client, select: (entry) => entry.name !== 'nothing' });
      const listing = await source.list();
      expect(listing.pages).toBe(2);
      expect(listing.problems).toEqual([]);
      const pdf = listing.entries.find((entry) => entry.name === 'pdf-processing');
      expect(pdf?.frontMatter).toEqual({
        name: 'pdf-processing',
        description:
          'Extract, fill, and assemble PDF documents.\nUse it when a task mentions forms.',
        'allowed-tools': ['Read', 'Bash(pdftotext:*)'],
        metadata: { owner: 'docs-team' },
      });
      expect(pdf?.resources?.map((file) => [file.path, file.size])).toEqual([
        ['SKILL.md', Buffer.byteLength(PDF_SKILL)],
        ['references/FORMS.md', 20],
      ]);
      // Connect, list: no skill file read.
      expect(sent(log).reads).toEqual([]);
      expect(sent(log).methods).toContain('skills/list');

      const registry = new SkillRegistry();
      await registry.refresh(source);
      expect(registry.names()).toEqual(['pdf-processing', 'release-notes']);
      expect(registry.problems()).toEqual([]);
      const document = registry.get('pdf-processing');
      expect(document.source).toBe('skill://pdf-processing/SKILL.md');
      expect(document.allowedToolList).toEqual(['Read', 'Bash(pdftotext:*)']);
      expect(document.content).toContain('Run pdftotext first.');
      expect(registry.get('release-notes').version).toBe('1.0');
      // Loading read the two SKILL.md files and no supporting file.
      expect(sent(log).reads.sort()).toEqual([
        'skill://pdf-processing/SKILL.md',
        'skill://release-notes/SKILL.md',
      ]);

      const tool = new SkillTool({
        adapter: new SkillAdapter({
          registry,
          policy: SkillAccessPolicy.fromNames(['pdf-processing']),
        }),
      });
      const result = await tool.invoke({ operation: 'get', name: 'pdf-processing' }, {} as never);
      const body = result.structuredContent as Record<string, unknown>;
      expect(body.kind).toBe('untrusted_reference');
      expect(body.content).toEqual(expect.stringContaining('Run pdftotext first.'));

      const forms = await source.readFile('pdf-processing', 'references/FORMS.md');
      expect(forms.text).toBe('# Forms\n\nFill them.\n');
      const directory = await source.readDirectory('pdf-processing');
      expect(directory.map((entry) => [entry.path, entry.directory, entry.listed])).toEqual(
        expect.arrayContaining([
          ['SKILL.md', false, true],
          ['references', true, false],
        ]),
      );
      expect(sent(log).methods).toContain('resources/directory/read');
    } finally {
      await client.close();
    }
  });

  it('declares the extension on every modern request (2026-07-28)', async () => {
    const log = join(folder, 'declare.log');
    const client = serve(['honest', root], log);
    try {
      await new McpSkillSource({ client }).list();
      expect(client.protocolVersion).toBe('2026-07-28');
      const lines = readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line !== '');
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) {
        const meta = JSON.parse(line).params._meta;
        expect(meta['io.modelcontextprotocol/clientCapabilities'].extensions).toEqual(EXTENSIONS);
      }
    } finally {
      await client.close();
    }
  });

  it('declares the extension in initialize and loads skills over the legacy era (2025-11-25)', async () => {
    const log = join(folder, 'declare-legacy.log');
    const client = new McpClient({
      command: [process.execPath, SERVER, 'honest', root],
      env: { ...CHILD_ENV, SKILLS_LOG: log },
      extensions: EXTENSIONS,
      protocolVersions: ['2025-11-25'],
    });
    try {
      const source = new McpSkillSource({ client });
      const document = await source.loadSkill('release-notes');
      expect(document.content).toBe('Group changes by package.\n');
      const first = JSON.parse(readFileSync(log, 'utf8').split('\n')[0] as string);
      expect(first.method).toBe('initialize');
      expect(first.params.capabilities.extensions).toEqual(EXTENSIONS);
    } finally {
      await client.close();
    }
  });

  it('refuses a client that does not declare the extension, and unknown options', () => {
    const plain = new McpClient({ command: [process.execPath, SERVER, 'honest', root] });
    expect(() => new McpSkillSource({ client: plain })).toThrow(McpSkillConfigurationError);
    const client = serve(['honest', root]);
    expect(
      () => new McpSkillSource({ client, maxFiles: 3 } as unknown as { client: McpClient }),
    ).toThrow(McpSkillConfigurationError);
    expect(() => new McpSkillSource({ client, maxFileBytes: 0 })).toThrow(
      McpSkillConfigurationError,
    );
    expect(() => new McpClient({ command: ['x'], extensions: { bad: {} } })).toThrow(
      ClientConfigurationError,
    );
  });

  it.each([
    ['maxSkillPages', { maxSkillPages: 1 }, ['honest', '1']],
    ['maxListedSkills', { maxListedSkills: 1 }, ['honest']],
  ] as const)('enforces %s on the listing', async (_name, limits, args) => {
    const client = serve([args[0], root, ...args.slice(1)]);
    try {
      await expect(new McpSkillSource({ client, ...limits }).list()).rejects.toBeInstanceOf(
        McpLimitError,
      );
    } finally {
      await client.close();
    }
  });

  it('enforces maxFileBytes on the listed size before reading', async () => {
    const log = join(folder, 'max-bytes.log');
    const client = serve(['honest', root], log);
    try {
      const source = new McpSkillSource({ client, maxFileBytes: 100 });
      const error = await source.loadSkill('pdf-processing').catch((caught) => caught);
      expect(McpSkillVerificationError.isInstance(error)).toBe(true);
      expect(error.details.reason).toBe('too_large');
      expect(sent(log).reads).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('enforces maxFrontmatterLines on a fetched SKILL.md', async () => {
    const client = serve(['honest', root]);
    try {
      const source = new McpSkillSource({ client, maxFrontmatterLines: 3 });
      await expect(source.loadSkill('pdf-processing')).rejects.toBeInstanceOf(SkillLimitError);
      await expect(source.loadSkill('release-notes')).resolves.toMatchObject({
        name: 'release-notes',
      });
    } finally {
      await client.close();
    }
  });

  it('refuses a fetched SKILL.md whose front matter is a 30,000-key flow map, before composing it (maxFrontmatterNodes)', async () => {
    const log = join(folder, 'flood.log');
    const client = serve(['flood'], log);
    try {
      const source = new McpSkillSource({ client });
      expect(source.maxFrontmatterNodes).toBe(1_000);
      // Digest and size are true, so the file reaches the parser: the node count refuses it
      // (composing the map first would take seconds and end in a front matter mismatch).
      const error = await source.loadSkill('pdf-processing').catch((caught) => caught);
      expect(SkillLimitError.isInstance(error)).toBe(true);
      expect(error.details).toMatchObject({
        limit: 'maxFrontmatterNodes',
        maxFrontmatterNodes: 1_000,
        skill: 'pdf-processing',
      });
      expect(source.loadedNames()).toEqual([]);
      const scan = await source.scan();
      expect(scan.problems).toEqual([
        expect.objectContaining({
          skill: 'pdf-processing',
          code: 'SKILL_LIMIT_EXCEEDED',
          reason: 'maxFrontmatterNodes',
          skipped: true,
        }),
      ]);
      expect(() => new McpSkillSource({ client, maxFrontmatterNodes: 0 })).toThrow(
        McpSkillConfigurationError,
      );
    } finally {
      await client.close();
    }
  });

  it.each([
    ['maxDirectoryPages', { maxDirectoryPages: 1 }],
    ['maxDirectoryEntries', { maxDirectoryEntries: 1 }],
  ] as const)('enforces %s on a directory read', async (_name, limits) => {
    // One entry per page: the skill folder (SKILL.md, references/) takes two pages.
    const client = serve(['honest', root, '1']);
    try {
      const source = new McpSkillSource({ client, ...limits });
      await source.loadSkill('pdf-processing');
      await expect(source.readDirectory('pdf-processing')).rejects.toBeInstanceOf(McpLimitError);
      const roomy = new McpSkillSource({ client });
      await roomy.loadSkill('pdf-processing');
      await expect(roomy.readDirectory('pdf-processing')).resolves.toHaveLength(2);
    } finally {
      await client.close();
    }
  });

  it('sends no directory read to a server that does not declare directoryRead', async () => {
    const log = join(folder, 'no-directory.log');
    const client = serve(['no-directory'], log);
    try {
      const source = new McpSkillSource({ client });
      await source.loadSkill('pdf-processing');
      await expect(source.readDirectory('pdf-processing')).rejects.toBeInstanceOf(
        McpSkillConfigurationError,
      );
      expect(sent(log).methods).not.toContain('resources/directory/read');
    } finally {
      await client.close();
    }
  });

  it('enforces maxResourcesPerSkill: the entry is skipped and reported', async () => {
    const client = serve(['honest', root]);
    try {
      const listing = await new McpSkillSource({ client, maxResourcesPerSkill: 1 }).list();
      expect(listing.entries.map((entry) => entry.name)).toEqual(['release-notes']);
      expect(listing.problems).toHaveLength(1);
      expect(listing.problems[0]?.message).toMatch(/maxResourcesPerSkill/);
    } finally {
      await client.close();
    }
  });
});

describe('Skills over MCP against a lying server: every lie is caught', () => {
  it.each([
    ['lie-digest', 'digest_mismatch'],
    ['lie-size', 'size_mismatch'],
    ['lie-frontmatter', 'front_matter_mismatch'],
  ])(
    '%s: the skill is refused (%s), its content never used, no other file read',
    async (mode, reason) => {
      const log = join(folder, `${mode}.log`);
      const client = serve([mode], log);
      try {
        const source = new McpSkillSource({ client });
        const error = await source.loadSkill('pdf-processing').catch((caught) => caught);
        expect(McpSkillVerificationError.isInstance(error)).toBe(true);
        expect(error.code).toBe('MCP_SKILL_VERIFICATION');
        expect(error.details.reason).toBe(reason);
        expect(error.message).not.toMatch(/Evil|Exfiltrate/);
        expect(source.loadedNames()).toEqual([]);
        // The refused skill's files stay closed.
        await expect(
          source.readFile('pdf-processing', 'references/FORMS.md'),
        ).rejects.toBeInstanceOf(McpSkillNotLoadedError);
        expect(sent(log).reads).toEqual(['skill://pdf-processing/SKILL.md']);

        const registry = new SkillRegistry();
        await registry.refresh(source);
        expect(registry.names()).toEqual([]);
        expect(registry.problems()).toEqual([
          expect.objectContaining({
            skill: 'pdf-processing',
            code: 'MCP_SKILL_VERIFICATION',
            reason,
            skipped: true,
          }),
        ]);
      } finally {
        await client.close();
      }
    },
  );

  it('concurrent loads (20, 4 in flight) of a lying skill all fail and none marks it loaded', async () => {
    const client = new McpClient({
      command: [process.execPath, SERVER, 'lie-digest'],
      env: CHILD_ENV,
      extensions: EXTENSIONS,
      maxConcurrentRequests: 4,
    });
    try {
      const source = new McpSkillSource({ client });
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, () => source.loadSkill('pdf-processing')),
      );
      expect(results.every((result) => result.status === 'rejected')).toBe(true);
      for (const result of results) {
        expect(McpSkillVerificationError.isInstance((result as PromiseRejectedResult).reason)).toBe(
          true,
        );
      }
      expect(source.loadedNames()).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('lie-frontmatter: names the differing field', async () => {
    const client = serve(['lie-frontmatter']);
    try {
      const error = await new McpSkillSource({ client })
        .loadSkill('pdf-processing')
        .catch((caught) => caught);
      expect(error.details.fields).toEqual(['description']);
    } finally {
      await client.close();
    }
  });

  it('lie-file: a tampered supporting file is refused after a good SKILL.md loads', async () => {
    const client = serve(['lie-file']);
    try {
      const source = new McpSkillSource({ client });
      await source.loadSkill('pdf-processing');
      const error = await source
        .readFile('pdf-processing', 'references/FORMS.md')
        .catch((caught) => caught);
      expect(McpSkillVerificationError.isInstance(error)).toBe(true);
      expect(error.details.reason).toBe('digest_mismatch');
    } finally {
      await client.close();
    }
  });

  it('a read before load: nothing is read on connect, listing or approval, and a file asked for before its skill is loaded is refused without a request', async () => {
    const log = join(folder, 'before-load.log');
    const client = serve(['lie-file'], log);
    try {
      const seen: string[] = [];
      const source = new McpSkillSource({
        client,
        select: (entry) => {
          seen.push(entry.name);
          return false;
        },
      });
      await client.connect();
      await source.list();
      const scan = await source.scan();
      expect(seen).toEqual(['pdf-processing']);
      expect(scan.skills).toEqual([]);
      await expect(source.readFile('pdf-processing', 'references/FORMS.md')).rejects.toBeInstanceOf(
        McpSkillNotLoadedError,
      );
      await expect(source.readDirectory('pdf-processing')).rejects.toBeInstanceOf(
        McpSkillNotLoadedError,
      );
      await expect(source.loadSkill('not-listed')).rejects.toBeInstanceOf(McpSkillNotListedError);
      expect(sent(log).reads).toEqual([]);
      expect(sent(log).methods).not.toContain('resources/directory/read');
    } finally {
      await client.close();
    }
  });

  it.each([
    ['a path outside the listing', 'references/OTHER.md'],
    ['a traversal', '../other-skill/SKILL.md'],
  ])('refuses to read %s (not listed, so unverifiable) without a request', async (_name, path) => {
    const log = join(folder, `unlisted-${path.length}.log`);
    const client = serve(['lie-file'], log);
    try {
      const source = new McpSkillSource({ client });
      await source.loadSkill('pdf-processing');
      const error = await source.readFile('pdf-processing', path).catch((caught) => caught);
      expect(error.details.reason).toBe('not_listed');
      expect(sent(log).reads).toEqual(['skill://pdf-processing/SKILL.md']);
    } finally {
      await client.close();
    }
  });

  it('drops directory entries outside the skill', async () => {
    const client = serve(['lie-file']);
    try {
      const source = new McpSkillSource({ client });
      await source.loadSkill('pdf-processing');
      const entries = await source.readDirectory('pdf-processing');
      expect(entries.map((entry) => entry.uri)).toEqual([
        'skill://pdf-processing/SKILL.md',
        'skill://pdf-processing/references',
      ]);
    } finally {
      await client.close();
    }
  });
});
