import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the built package in a bubblewrap sandbox whose /proc is an empty tmpfs: SkillLoader's
// default descriptor confinement refuses to scan there, and 'by-path' loads with the same rules.
const DIST = new URL('../dist/index.js', import.meta.url).href;
let base: string;
let lines: Record<string, unknown>;

const SCRIPT = `
import { SkillLoader } from ${JSON.stringify(DIST)};
const root = process.argv[2];
const out = {};
out.procVisible = (await import('node:fs')).existsSync('/proc/self/fd');
try {
  await new SkillLoader({ root }).scan();
  out.descriptor = 'scanned';
} catch (error) {
  out.descriptor = { code: error.code, option: error.details?.option, message: error.message };
}
const scan = await new SkillLoader({ root, confinement: 'by-path' }).scan();
out.byPath = { skills: scan.skills.map((s) => s.name), problems: scan.problems.map((p) => p.reason) };
console.log(JSON.stringify(out));
`;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-skills-platform-'));
  const root = join(base, 'root');
  mkdirSync(join(root, 'fine'), { recursive: true });
  writeFileSync(join(root, 'fine', 'SKILL.md'), '---\nname: fine\ndescription: d\n---\n');
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(base, 'outside', 'SKILL.md'), '---\nname: evil\ndescription: d\n---\n');
  symlinkSync(join(base, 'outside'), join(root, 'evil'));
  const script = join(base, 'probe.mjs');
  writeFileSync(script, SCRIPT);
  const output = execFileSync(
    'bwrap',
    ['--ro-bind', '/', '/', '--dev', '/dev', '--tmpfs', '/proc', '--bind', base, base, '--'].concat(
      [process.execPath, script, root],
    ),
    { encoding: 'utf8', timeout: 30_000 },
  );
  lines = JSON.parse(output.trim().split('\n').at(-1) as string) as Record<string, unknown>;
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('SkillLoader without /proc/self/fd', () => {
  it('refuses to scan in descriptor confinement and names the opt-in', () => {
    expect(lines.procVisible).toBe(false);
    expect(lines.descriptor).toMatchObject({ code: 'SKILL_CONFIGURATION', option: 'confinement' });
    expect((lines.descriptor as { message: string }).message).toContain("confinement: 'by-path'");
  });

  it("loads in the documented weaker 'by-path' mode, links still refused", () => {
    expect(lines.byPath).toEqual({ skills: ['fine'], problems: ['symlink'] });
  });
});
