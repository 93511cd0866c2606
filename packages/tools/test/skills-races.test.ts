import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SkillLoader } from '../src/index.js';
import { type Exchanger, raceFor, startExchange } from './swap-race.js';

// A second process swaps root/a (a real skill folder) and root/a.lnk (a link to an outside
// folder holding a SKILL.md of the same name) while the loader scans, bounded in time and count.
const RACE_MILLISECONDS = 3_000;
const MAX_SCANS = 20_000;
const MARKER = 'OUTSIDE-SECRET';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function fixture(): { root: string; outside: string } {
  const base = mkdtempSync(join(tmpdir(), 'toolfence-skills-race-'));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  for (const [folder, description] of [
    [join(root, 'a'), 'Inside'],
    [outside, MARKER],
  ] as const) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'SKILL.md'), `---\nname: a\ndescription: ${description}\n---\n`);
  }
  symlinkSync(outside, join(root, 'a.lnk'));
  return { root, outside };
}

describe('SkillLoader under a folder<->symlink swap race', () => {
  it('never loads the outside SKILL.md (descriptor confinement)', async () => {
    const { root } = fixture();
    const loader = new SkillLoader({ root });
    expect(loader.confinement).toBe('descriptor');
    const exchanger: Exchanger = await startExchange(join(root, 'a'), join(root, 'a.lnk'));
    cleanups.push(() => exchanger.kill());
    let inside = 0;
    let outsideLoads = 0;
    const reasons: Record<string, number> = {};
    const scans = await raceFor(RACE_MILLISECONDS, MAX_SCANS, 2, async () => {
      const scan = await loader.scan();
      for (const skill of scan.skills) {
        if (skill.description === MARKER) outsideLoads += 1;
        else inside += 1;
      }
      for (const problem of scan.problems) {
        reasons[problem.reason] = (reasons[problem.reason] ?? 0) + 1;
      }
    });
    const swaps = await exchanger.stop();
    console.info(
      `skills race: ${scans} scans, ${swaps} swaps, ${inside} inside loads, ${outsideLoads} outside, problems ${JSON.stringify(reasons)}`,
    );
    // The race really ran: many swaps, many scans, the link seen in place of the folder.
    expect(swaps).toBeGreaterThan(1_000);
    expect(scans).toBeGreaterThan(50);
    expect(inside).toBeGreaterThan(0);
    expect(reasons.symlink ?? 0).toBeGreaterThan(0);
    expect(outsideLoads).toBe(0);
  }, 30_000);
});
