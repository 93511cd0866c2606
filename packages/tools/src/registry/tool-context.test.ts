import { describe, expect, it } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { createToolContext, deriveToolContext, isCreatedToolContext } from './tool-context.js';

describe('createToolContext', () => {
  it('freezes a snapshot of the metadata', () => {
    const metadata = { user: { id: 'u1' } };
    const context = createToolContext({ runId: 'r', metadata });
    metadata.user.id = 'changed';
    expect(context.metadata).toEqual({ user: { id: 'u1' } });
    expect(Object.isFrozen(context.metadata.user)).toBe(true);
    expect(context.accessScope).toBe('full');
  });

  it('gives a context without metadata a frozen empty plain object, and keeps the key order', () => {
    const signal = new AbortController().signal;
    const context = createToolContext({ runId: 'r', stepId: 's', session: 'c', signal });
    expect(Object.keys(context)).toEqual([
      'runId',
      'stepId',
      'session',
      'metadata',
      'accessScope',
      'signal',
    ]);
    expect(context.metadata).toEqual({});
    expect(Object.getPrototypeOf(context.metadata)).toBe(Object.prototype);
    expect(Object.isFrozen(context.metadata)).toBe(true);
    expect(context.signal).toBe(signal);
    expect(Object.keys(createToolContext({ runId: 'r' }))).toEqual([
      'runId',
      'session',
      'metadata',
      'accessScope',
    ]);
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

describe('the mark of a created context', () => {
  const run = createToolContext({ runId: 'r', metadata: { team: 'a' } });
  const derived = deriveToolContext(run, 'call-1', undefined);

  it('marks what createToolContext and deriveToolContext build, frozen plain objects', () => {
    for (const context of [run, derived]) {
      expect(isCreatedToolContext(context)).toBe(true);
      expect(Object.isFrozen(context)).toBe(true);
      expect(Object.getPrototypeOf(context)).toBe(Object.prototype);
      expect(Reflect.ownKeys(context)).toEqual(Object.keys(context));
    }
    expect(derived).toEqual({
      runId: 'r',
      stepId: 'call-1',
      session: 'r',
      metadata: { team: 'a' },
      accessScope: 'full',
    });
  });

  it.each([
    ['a spread copy', () => ({ ...run })],
    ['a frozen spread copy', () => Object.freeze({ ...derived })],
    ['a structured clone', () => structuredClone(derived)],
    ['an object with its prototype', () => Object.create(Object.getPrototypeOf(derived))],
    ['a proxy of it', () => new Proxy(derived, {})],
    ['a JSON copy', () => JSON.parse(JSON.stringify(derived))],
  ])('does not count %s as created (the registry checks it again)', (_label, copy) => {
    expect(isCreatedToolContext(copy())).toBe(false);
  });

  it('derives from a look-alike by checking it in full', () => {
    const lookAlike = { ...run, metadata: { at: new Date() } } as never;
    expect(() => deriveToolContext(lookAlike, 'call-2', undefined)).toThrow(ConfigurationError);
  });
});
