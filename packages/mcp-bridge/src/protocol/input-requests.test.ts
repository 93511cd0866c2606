import { describe, expect, it } from 'vitest';
import { InputRequestError } from './input-request-error.js';
import {
  answerInputRequests,
  isInputRequired,
  MAX_INPUT_REQUESTS_PER_ROUND,
} from './input-requests.js';
import { PromptAllowance } from './prompt-allowance.js';

const elicit = { method: 'elicitation/create', params: { message: 'ok?' } };

describe('answerInputRequests', () => {
  it('answers each kind through its callback, keyed as the server keyed them', async () => {
    const responses = await answerInputRequests(
      {
        resultType: 'input_required',
        inputRequests: {
          a: elicit,
          b: { method: 'sampling/createMessage', params: { messages: [] } },
          c: { method: 'roots/list' },
        },
      },
      {
        elicitation: async () => ({ action: 'accept', content: { x: 1 } }),
        sampling: async () => ({ role: 'assistant', content: { type: 'text', text: 'hi' } }),
        roots: async () => ({ roots: [{ uri: 'file:///tmp' }] }),
      },
      new PromptAllowance(32),
    );
    expect(responses).toEqual({
      a: { action: 'accept', content: { x: 1 } },
      b: { role: 'assistant', content: { type: 'text', text: 'hi' } },
      c: { roots: [{ uri: 'file:///tmp' }] },
    });
  });

  it.each([
    ['no callback for elicitation', { a: elicit }, {}, 'no-handler', 'elicitation'],
    [
      'no callback for sampling',
      { a: { method: 'sampling/createMessage' } },
      {},
      'no-handler',
      'sampling',
    ],
    ['no callback for roots', { a: { method: 'roots/list' } }, {}, 'no-handler', 'roots'],
    ['an unknown method', { a: { method: 'tools/call' } }, {}, 'invalid', undefined],
    ['a non-object entry', { a: 'x' }, {}, 'invalid', undefined],
    ['no entries', {}, {}, 'invalid', undefined],
    [
      'a declined elicitation',
      { a: elicit },
      { elicitation: async () => ({ action: 'decline' }) },
      'declined',
      'elicitation',
    ],
    [
      'a callback that answers with a non-object',
      { a: { method: 'roots/list' } },
      { roots: async () => 'nope' },
      'invalid',
      'roots',
    ],
  ])('refuses %s with a typed error', async (_name, inputRequests, handlers, reason, kind) => {
    const error = await answerInputRequests(
      { resultType: 'input_required', inputRequests },
      handlers,
      new PromptAllowance(32),
    ).catch((caught: unknown) => caught);
    expect(InputRequestError.isInstance(error)).toBe(true);
    expect((error as InputRequestError).reason).toBe(reason);
    expect((error as InputRequestError).kind).toBe(kind);
  });

  it(`refuses more than ${MAX_INPUT_REQUESTS_PER_ROUND} input requests in one round`, async () => {
    const inputRequests = Object.fromEntries(
      Array.from({ length: MAX_INPUT_REQUESTS_PER_ROUND + 1 }, (_, index) => [`k${index}`, elicit]),
    );
    let asked = 0;
    const error = await answerInputRequests(
      { resultType: 'input_required', inputRequests },
      {
        elicitation: async () => {
          asked++;
          return { action: 'accept', content: {} };
        },
      },
      new PromptAllowance(64),
    ).catch((caught: unknown) => caught);
    expect((error as InputRequestError).reason).toBe('invalid');
    expect(asked).toBe(0);
  });

  // Issue 35 item 12: one allowance per call bounds the prompts over all its rounds; roots (the
  // host's fixed list) is not a prompt. Past the allowance nobody is asked again.
  it('takes elicitation and sampling from the call allowance and refuses past it, asking nobody', async () => {
    const prompts = new PromptAllowance(5);
    let asked = 0;
    const handlers = {
      elicitation: async () => {
        asked++;
        return { action: 'accept', content: {} };
      },
      roots: async () => ({ roots: [] }),
    };
    const round = (count: number) => ({
      resultType: 'input_required',
      inputRequests: {
        ...Object.fromEntries(Array.from({ length: count }, (_, index) => [`e${index}`, elicit])),
        r: { method: 'roots/list' },
      },
    });
    await answerInputRequests(round(3), handlers, prompts);
    await answerInputRequests(round(2), handlers, prompts);
    expect(asked).toBe(5);
    const error = await answerInputRequests(round(1), handlers, prompts).catch(
      (caught: unknown) => caught,
    );
    expect(InputRequestError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: 'PROTOCOL_INPUT_REQUEST_FAILED',
      reason: 'too-many-prompts',
      details: { maxInputPrompts: 5 },
    });
    expect(asked).toBe(5);
  });

  it('treats a result without resultType as complete', () => {
    expect(isInputRequired({ content: [] })).toBe(false);
    expect(isInputRequired({ resultType: 'complete' })).toBe(false);
    expect(isInputRequired({ resultType: 'input_required' })).toBe(true);
  });
});
