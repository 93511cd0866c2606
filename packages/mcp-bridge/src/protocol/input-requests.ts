// Multi round-trip requests (SEP-2322, MCP 2026-07-28): a result of `resultType:
// "input_required"` asks the client for input; the client answers each input request through
// the host's callback and repeats the original request with `inputResponses` and the exact
// `requestState`, under a new JSON-RPC id.

import { isRecord } from '../is-record.js';
import { InputRequestError, type McpInputKind } from './input-request-error.js';
import type { PromptAllowance } from './prompt-allowance.js';

/** The host's answers to the kinds of input a server may ask for. */
export interface InputHandlers {
  /** Elicitation (`elicitation/create`): the answer goes back as the server's `ElicitResult`. */
  readonly elicitation?: (params: Readonly<Record<string, unknown>>) => Promise<unknown>;
  /** Sampling (`sampling/createMessage`): the answer goes back as a `CreateMessageResult`. */
  readonly sampling?: (params: Readonly<Record<string, unknown>>) => Promise<unknown>;
  /** Roots (`roots/list`): the host's fixed list. */
  readonly roots?: () => Promise<unknown>;
}

const METHOD_KINDS: Readonly<Record<string, McpInputKind>> = Object.freeze({
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
});

/** Input requests one `input_required` result may carry. */
export const MAX_INPUT_REQUESTS_PER_ROUND = 32;

/** True when a result asks for input (`resultType: "input_required"`); a missing type is complete. */
export function isInputRequired(result: Readonly<Record<string, unknown>>): boolean {
  return result.resultType === 'input_required';
}

/**
 * Answers every input request of one `input_required` result through `handlers`. A missing
 * callback, a declined or cancelled elicitation, or a malformed request raises
 * {@link InputRequestError}: the original request is then not repeated. The elicitation and
 * sampling requests are taken from `prompts` (the call's allowance) before any is asked.
 */
export async function answerInputRequests(
  result: Readonly<Record<string, unknown>>,
  handlers: InputHandlers,
  prompts: PromptAllowance,
): Promise<Record<string, unknown>> {
  const requests = result.inputRequests;
  if (!isRecord(requests)) throw new InputRequestError('invalid', undefined);
  const entries = Object.entries(requests);
  if (entries.length === 0 || entries.length > MAX_INPUT_REQUESTS_PER_ROUND) {
    throw new InputRequestError('invalid', undefined, {
      details: { inputRequests: entries.length },
    });
  }
  // Roots is the host's fixed list, not a prompt; elicitation and sampling ask someone.
  prompts.take(
    entries.filter(
      ([, request]) =>
        isRecord(request) &&
        (request.method === 'elicitation/create' || request.method === 'sampling/createMessage'),
    ).length,
  );
  const responses: Record<string, unknown> = {};
  for (const [key, request] of entries) {
    if (!isRecord(request) || typeof request.method !== 'string') {
      throw new InputRequestError('invalid', undefined);
    }
    const kind = Object.hasOwn(METHOD_KINDS, request.method)
      ? METHOD_KINDS[request.method]
      : undefined;
    if (kind === undefined) throw new InputRequestError('invalid', undefined);
    const params = isRecord(request.params) ? request.params : {};
    let answer: unknown;
    if (kind === 'elicitation' && handlers.elicitation !== undefined) {
      answer = await handlers.elicitation(params);
      if (isRecord(answer) && (answer.action === 'decline' || answer.action === 'cancel')) {
        throw new InputRequestError(answer.action === 'decline' ? 'declined' : 'cancelled', kind);
      }
    } else if (kind === 'sampling' && handlers.sampling !== undefined) {
      answer = await handlers.sampling(params);
    } else if (kind === 'roots' && handlers.roots !== undefined) {
      answer = await handlers.roots();
    } else {
      throw new InputRequestError('no-handler', kind);
    }
    if (!isRecord(answer)) throw new InputRequestError('invalid', kind);
    responses[key] = answer;
  }
  return responses;
}
