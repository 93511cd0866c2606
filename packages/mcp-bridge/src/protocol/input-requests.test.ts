import { describe, expect, it } from 'vitest';
import { InputRequestError } from './input-request-error.js';
import {
  answerInputRequests,
  isInputRequired,
  MAX_INPUT_REQUESTS_PER_ROUND,
} from './input-requests.js';

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
    ).catch((caught: unknown) => caught);
    expect((error as InputRequestError).reason).toBe('invalid');
    expect(asked).toBe(0);
  });

  it('treats a result without resultType as complete', () => {
    expect(isInputRequired({ content: [] })).toBe(false);
    expect(isInputRequired({ resultType: 'complete' })).toBe(false);
    expect(isInputRequired({ resultType: 'input_required' })).toBe(true);
  });
});
