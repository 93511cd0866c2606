import { SkillConfigurationError, SkillNotFoundError } from './errors.js';
import type { SkillDocument, SkillLoader } from './skill-loader.js';

/** Something that loads a whole set of skills ({@link SkillLoader} or a stand-in). */
export interface SkillSource {
  /** Loads every skill document; rejects when any fails, so the registry keeps its old set. */
  load(): Promise<readonly SkillDocument[]>;
}

/**
 * The loaded skills. `refresh` replaces the whole set atomically: readers see either the old
 * set or the new one, never a mix, and when any document fails to load the old set stays.
 * Concurrent refreshes run one after the other.
 */
export class SkillRegistry {
  #skills: ReadonlyMap<string, SkillDocument> = new Map();
  #queue: Promise<unknown> = Promise.resolve();

  /** Loads every skill from `loader` and swaps the set; on failure keeps the old set and throws. */
  refresh(loader: SkillLoader | SkillSource): Promise<void> {
    if (typeof loader !== 'object' || loader === null || typeof loader.load !== 'function') {
      throw new SkillConfigurationError('SkillRegistry.refresh needs a loader');
    }
    const run = this.#queue.then(async () => {
      const documents = await loader.load();
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
    });
    this.#queue = run.catch(() => undefined);
    return run;
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
