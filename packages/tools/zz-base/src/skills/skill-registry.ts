import { SkillConfigurationError, SkillNotFoundError } from './errors.js';
import type { SkillDocument, SkillLoader, SkillProblem, SkillScan } from './skill-loader.js';

/** Something that loads a whole set of skills ({@link SkillLoader} or a stand-in). */
export interface SkillSource {
  /** Loads the skill documents; a rejection keeps the registry's old set. */
  load(): Promise<readonly SkillDocument[]>;
  /** When present, used instead of `load`: the documents plus what was skipped or found. */
  scan?(): Promise<SkillScan>;
}

/**
 * The loaded skills. `refresh` replaces the whole set atomically: readers see either the old
 * set or the new one, never a mix, and when any document fails to load the old set stays.
 * Concurrent refreshes run one after the other.
 */
export class SkillRegistry {
  #skills: ReadonlyMap<string, SkillDocument> = new Map();
  #problems: readonly SkillProblem[] = Object.freeze([]);
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Loads the skills from `loader` and swaps the set; skills the loader skipped are reported in
   * {@link SkillRegistry.problems}. When the load itself fails, keeps the old set and throws.
   */
  refresh(loader: SkillLoader | SkillSource): Promise<void> {
    if (typeof loader !== 'object' || loader === null || typeof loader.load !== 'function') {
      throw new SkillConfigurationError('SkillRegistry.refresh needs a loader');
    }
    const run = this.#queue.then(async () => {
      const scan: SkillScan =
        typeof loader.scan === 'function'
          ? await loader.scan()
          : { skills: await loader.load(), problems: [] };
      const documents = scan.skills;
      const next = new Map<string, SkillDocument>();
      for (const document of documents) {
        if (next.has(document.name)) {
          throw new SkillConfigurationError('Two skills share a name', {
            details: { skill: document.name },
          });
        }
        next.set(document.name, document);
      }
      this.#skills = next;
      this.#problems = Object.freeze([...scan.problems]);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** What the last successful refresh skipped or found (see {@link SkillProblem}). */
  problems(): readonly SkillProblem[] {
    return this.#problems;
  }

  /** Loaded skill names, sorted. */
  names(): string[] {
    return [...this.#skills.keys()].sort();
  }

  /** Loaded skills, sorted by name. */
  list(): SkillDocument[] {
    return this.names().map((name) => this.#skills.get(name) as SkillDocument);
  }

  /** True when a skill named `name` is in the current set. */
  has(name: string): boolean {
    return this.#skills.has(name);
  }

  /** The skill named `name`; throws {@link SkillNotFoundError} when it is not loaded. */
  get(name: string): SkillDocument {
    const skill = this.#skills.get(name);
    if (skill === undefined) {
      throw new SkillNotFoundError('Skill is not loaded');
    }
    return skill;
  }

  /** Number of skills in the current set. */
  get size(): number {
    return this.#skills.size;
  }
}
