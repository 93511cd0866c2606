import { SkillAccessDeniedError, SkillConfigurationError, SkillLimitError } from './errors.js';
import { isValidSkillName, type SkillDocument } from './skill-loader.js';

/** Options of {@link SkillAccessPolicy.fromNames}. */
export interface SkillAccessPolicyOptions {
  /** Longest skill content handed out, in characters; longer content raises. Default 64,000. */
  readonly maxContentChars?: number;
}

/**
 * Which skills a tool may hand out: an allowlist of names. An empty allowlist denies every
 * skill. Content longer than `maxContentChars` raises rather than being cut.
 */
export class SkillAccessPolicy {
  /** Longest skill content handed out, in characters (default 64,000); longer content raises. */
  readonly maxContentChars: number;
  readonly #allowed: ReadonlySet<string>;

  private constructor(allowed: ReadonlySet<string>, maxContentChars: number) {
    this.#allowed = allowed;
    this.maxContentChars = maxContentChars;
    Object.freeze(this);
  }

  /** An allowlist policy; every name must be a valid skill name. */
  static fromNames(
    names: Iterable<string>,
    options: SkillAccessPolicyOptions = {},
  ): SkillAccessPolicy {
    if (
      typeof names !== 'object' ||
      names === null ||
      typeof names[Symbol.iterator] !== 'function'
    ) {
      throw new SkillConfigurationError('Skill allowlist must be an iterable of names');
    }
    if (typeof names === 'string') {
      throw new SkillConfigurationError('Skill allowlist must be an iterable of names');
    }
    const allowed = new Set<string>();
    for (const name of names) {
      if (!isValidSkillName(name)) {
        throw new SkillConfigurationError('Skill allowlist holds an invalid name');
      }
      allowed.add(name);
    }
    const max = options.maxContentChars ?? 64_000;
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) {
      throw new SkillConfigurationError('maxContentChars must be a positive integer', {
        details: { option: 'maxContentChars', type: typeof max },
      });
    }
    return new SkillAccessPolicy(allowed, max);
  }

  /** Allowed names, sorted. */
  names(): string[] {
    return [...this.#allowed].sort();
  }

  /** True when `name` is on the allowlist. */
  allows(name: string): boolean {
    return this.#allowed.has(name);
  }

  /** Throws {@link SkillAccessDeniedError} unless `name` is allowed. */
  assertAllowed(name: string): void {
    if (!this.allows(name)) {
      throw new SkillAccessDeniedError('Skill is not allowed by the access policy', {
        details: isValidSkillName(name) ? { skill: name } : {},
      });
    }
  }

  /** Throws unless `skill` is allowed and its content within `maxContentChars`. */
  check(skill: SkillDocument): void {
    this.assertAllowed(skill.name);
    if (skill.content.length > this.maxContentChars) {
      throw new SkillLimitError('Skill content is longer than allowed', {
        details: {
          limit: 'maxContentChars',
          maxContentChars: this.maxContentChars,
          skill: skill.name,
        },
      });
    }
  }
}
