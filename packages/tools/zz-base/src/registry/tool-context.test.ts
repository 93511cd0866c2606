import { describe, expect, it } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { createToolContext } from './tool-context.js';

describe('createToolContext', () => {
  it('freezes a snapshot of the metadata', () => {
    const metadata = { user: { id: 'u1' } };
    const context = createToolContext({ runId: 'r', metadata });
    metadata.user.id = 'changed';
    expect(context.metadata).toEqual({ user: { id: 'u1' } });
    expect(Object.isFrozen(context.metadata.user)).toBe(true);
    expect(context.accessScope).toBe('full');
  });

  it.each([
    ['empty runId', { runId: ' ' }],
    ['missing runId', {}],
    ['bad scope', { runId: 'r', accessScope: 'admin' }],
    ['non-JSON metadata', { runId: 'r', metadata: { at: new Date() } }],
    ['bad signal', { runId: 'r', signal: {} }],
    ['numeric stepId', { runId: 'r', stepId: 1 }],
  ])('rejects %s', (_label, init) => {
    expect(() => createToolContext(init as never)).toThrow(ConfigurationError);
  });
});
