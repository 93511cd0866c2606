// How many times one request may still ask the host for input: the multi round-trip rounds and
// the input a task asks for draw from one allowance per call, so a server cannot prompt the user
// `maxInputRounds` times the 32 requests one round may carry.
import { InputRequestError } from './input-request-error.js';

/** Default of `maxInputPrompts`: input requests (elicitation, sampling) one call may ask (32). */
export const DEFAULT_MAX_INPUT_PROMPTS = 32;

/** The prompts one call may still make. */
export class PromptAllowance {
  readonly #max: number;
  #used = 0;

  /** An allowance of `max` prompts. */
  constructor(max: number) {
    this.#max = max;
  }

  /**
   * Takes `count` prompts before they are asked, or throws {@link InputRequestError}
   * (`too-many-prompts`) and takes none: the host is never asked beyond the allowance.
   */
  take(count: number): void {
    if (this.#used + count > this.#max) {
      throw new InputRequestError('too-many-prompts', undefined, {
        details: { maxInputPrompts: this.#max, asked: this.#used, requested: count },
      });
    }
    this.#used += count;
  }
}
