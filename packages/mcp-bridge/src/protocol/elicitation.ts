// Elicitation answers, the same in both eras: a legacy server's `elicitation/create` request and
// a modern `input_required` result's embedded elicitation reach one host callback.

import { isRecord } from '../is-record.js';
import { InputRequestError } from './input-request-error.js';

/** Fills properties the user left out with the schema's `default`s (SEP-1034), in place. */
function applyDefaults(schema: unknown, content: Record<string, unknown>, depth = 0): void {
  if (!isRecord(schema) || depth > 16) return;
  if (isRecord(schema.properties)) {
    for (const [key, property] of Object.entries(schema.properties)) {
      if (!isRecord(property)) continue;
      if (content[key] === undefined && Object.hasOwn(property, 'default')) {
        content[key] = structuredClone(property.default);
      }
      const value = content[key];
      if (isRecord(value)) applyDefaults(property, value, depth + 1);
    }
  }
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches))
      for (const branch of branches) applyDefaults(branch, content, depth + 1);
  }
}

/**
 * Asks the host's elicitation callback (form mode only: URL mode is not declared) and checks
 * its answer: `action` is `accept`, `decline` or `cancel`, `content` an object. With
 * `applyDefaults`, an accepted answer gets the requested schema's defaults for missing fields.
 * @throws {InputRequestError} for a URL-mode request or a malformed answer.
 */
export async function answerElicitation(
  params: Readonly<Record<string, unknown>>,
  handler: (params: Readonly<Record<string, unknown>>) => Promise<unknown>,
  withDefaults: boolean,
): Promise<Record<string, unknown>> {
  if (params.mode !== undefined && params.mode !== 'form') {
    throw new InputRequestError('no-handler', 'elicitation', { details: { mode: 'url' } });
  }
  const answer = await handler(params);
  if (
    !isRecord(answer) ||
    (answer.action !== 'accept' && answer.action !== 'decline' && answer.action !== 'cancel') ||
    (answer.content !== undefined && !isRecord(answer.content))
  ) {
    throw new InputRequestError('invalid', 'elicitation');
  }
  if (answer.action !== 'accept') return { action: answer.action };
  const content = isRecord(answer.content) ? structuredClone(answer.content) : {};
  if (withDefaults) applyDefaults(params.requestedSchema, content);
  return { ...answer, content };
}
