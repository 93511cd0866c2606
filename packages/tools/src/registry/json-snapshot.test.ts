import { describe, expect, it } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import {
  DEFAULT_SNAPSHOT_LIMITS,
  type JsonSnapshotLimits,
  resolveSnapshotLimits,
  snapshotJsonObject,
} from './json-snapshot.js';
import { ToolInputError } from './tool-input-error.js';

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < depth; level += 1) value = { a: value };
  return value;
}

function reasonOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolInputError);
    return (error as ToolInputError).details?.reason;
  }
  return 'accepted';
}

describe('snapshotJsonObject', () => {
  it('copies and deep-freezes, reading every property once', () => {
    let reads = 0;
    const source = {
      get changing() {
        reads += 1;
        return reads === 1 ? 'first' : 'second';
      },
      list: [1, { b: null }],
    };
    const snapshot = snapshotJsonObject(source);
    expect(snapshot).toEqual({ changing: 'first', list: [1, { b: null }] });
    expect(reads).toBe(1);
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(Object.isFrozen(snapshot.list)).toBe(true);
    expect(snapshot.list).not.toBe(source.list);
  });

  // Objects are walked with for-in (no key list is allocated): only own enumerable keys may
  // enter the snapshot, in Object.keys order, and every container comes out frozen and detached.
  it.each([
    ['flat primitives', { a: 's', b: 1, c: true, d: null }],
    ['empty object', {}],
    ['nested object and array', { o: { p: 'x', q: [1, 'y', { r: false }] }, t: ['a', 'b'] }],
    ['array of arrays', { m: [[1, 2], [], [[3]]] }],
    ['integer-like and string keys', { 2: 'two', b: 'b', 1: 'one', a: 'a' }],
  ])('deep-freezes and detaches %s', (_label, source: Record<string, unknown>) => {
    const before = JSON.stringify(source);
    const snapshot = snapshotJsonObject(source);
    expect(snapshot).toEqual(source);
    expect(Object.keys(snapshot)).toEqual(Object.keys(source));
    const sourceContainers: unknown[] = [];
    const containers = (value: unknown, out: unknown[]): void => {
      if (typeof value !== 'object' || value === null) return;
      out.push(value);
      for (const child of Object.values(value)) containers(child, out);
    };
    containers(source, sourceContainers);
    const copied: unknown[] = [];
    containers(snapshot, copied);
    expect(copied).toHaveLength(sourceContainers.length);
    for (const container of copied) {
      expect(Object.isFrozen(container)).toBe(true);
      expect(sourceContainers).not.toContain(container);
      expect([Object.prototype, Array.prototype]).toContain(Object.getPrototypeOf(container));
    }
    // Mutating the source afterwards does not reach the snapshot.
    for (const container of sourceContainers) {
      if (Array.isArray(container)) container.push('late');
      else (container as Record<string, unknown>).late = 'late';
    }
    expect(JSON.stringify(snapshot)).toBe(before);
  });

  it('leaves out enumerable keys inherited from a polluted Object.prototype', () => {
    Object.defineProperty(Object.prototype, 'inheritedFlag', {
      value: 'polluted',
      enumerable: true,
      configurable: true,
      writable: true,
    });
    try {
      const snapshot = snapshotJsonObject({ own: { deep: 1 } });
      expect(Object.keys(snapshot)).toEqual(['own']);
      expect(Object.hasOwn(snapshot, 'inheritedFlag')).toBe(false);
      expect(Object.hasOwn(snapshot.own as object, 'inheritedFlag')).toBe(false);
    } finally {
      delete (Object.prototype as Record<string, unknown>).inheritedFlag;
    }
  });

  it('leaves out non-enumerable own keys and reads a proxy through its traps once per key', () => {
    const source = { shown: 1 };
    Object.defineProperty(source, 'hidden', { value: 2, enumerable: false });
    expect(snapshotJsonObject(source)).toEqual({ shown: 1 });
    const gets: string[] = [];
    const proxy = new Proxy(
      { a: 'x', b: { c: 'y' } },
      {
        get(target, key, receiver) {
          gets.push(String(key));
          return Reflect.get(target, key, receiver);
        },
      },
    );
    const snapshot = snapshotJsonObject({ proxy });
    expect(snapshot).toEqual({ proxy: { a: 'x', b: { c: 'y' } } });
    expect(gets).toEqual(['a', 'b']);
    expect(Object.isFrozen(snapshot.proxy)).toBe(true);
  });

  it('reports a key deleted by an earlier getter as missing, never a stale value', () => {
    const source: Record<string, unknown> = {
      get first() {
        delete source.second;
        return 1;
      },
      second: 'gone',
    };
    const snapshot = snapshotJsonObject(source);
    expect(snapshot).toEqual({ first: 1 });
  });

  it('keeps a __proto__ key as data without changing the prototype', () => {
    const snapshot = snapshotJsonObject(JSON.parse('{"__proto__": {"polluted": true}}'));
    expect(Object.getPrototypeOf(snapshot)).toBe(Object.prototype);
    expect(Object.keys(snapshot)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('turns a throwing getter or proxy trap into a ToolInputError', () => {
    const getter = {
      get boom(): never {
        throw new Error('secret inside');
      },
    };
    const trap = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap');
        },
      },
    );
    for (const [value, path] of [
      [getter, '$.boom'],
      [{ nested: trap }, '$.nested'],
    ] as const) {
      try {
        snapshotJsonObject(value);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ToolInputError);
        expect((error as Error).message).not.toContain('secret');
        expect((error as Error).cause).toBeInstanceOf(Error);
        expect((error as ToolInputError).details?.issues).toEqual([
          { path, message: 'reading the value threw' },
        ]);
      }
    }
  });

  it('leaves symbol-keyed properties out of the snapshot', () => {
    const snapshot = snapshotJsonObject({ a: 1, [Symbol('hidden')]: 2 });
    expect(Reflect.ownKeys(snapshot)).toEqual(['a']);
  });

  it('accepts shared (non-cyclic) references', () => {
    const shared = { x: 1 };
    expect(snapshotJsonObject({ a: shared, b: shared })).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const sparse = [1, undefined, 3];
  class Point {
    x = 1;
  }
  it.each([
    ['a root array', [], 'not-object'],
    ['a root string', 'x', 'not-object'],
    ['undefined value', { a: undefined }, 'not-json'],
    ['NaN', { a: Number.NaN }, 'not-json'],
    ['Infinity', { a: Number.POSITIVE_INFINITY }, 'not-json'],
    ['bigint', { a: 1n }, 'not-json'],
    ['function', { a: () => 1 }, 'not-json'],
    ['symbol value', { a: Symbol('s') }, 'not-json'],
    ['Date', { a: new Date(0) }, 'not-json'],
    ['Map', { a: new Map() }, 'not-json'],
    ['class instance', { a: new Point() }, 'not-json'],
    ['sparse array', { a: sparse }, 'not-json'],
    ['cycle', cyclic, 'cycle'],
    ['depth 65', nested(65), 'depth'],
    ['10,001 nodes', { a: new Array(10_000).fill(0) }, 'nodes'],
    ['over 8 MiB', { a: 'x'.repeat(8 * 1024 * 1024) }, 'bytes'],
    ['over 8 MiB in multi-byte text', { a: 'é'.repeat(4 * 1024 * 1024) }, 'bytes'],
  ])('rejects %s', (_label, value, reason) => {
    expect(reasonOf(() => snapshotJsonObject(value))).toBe(reason);
  });

  it('accepts values right at the default limits', () => {
    expect(reasonOf(() => snapshotJsonObject(nested(64)))).toBe('accepted');
    expect(reasonOf(() => snapshotJsonObject({ a: new Array(9_998).fill(0) }))).toBe('accepted');
    expect(reasonOf(() => snapshotJsonObject({ a: 'x'.repeat(8 * 1024 * 1024 - 100) }))).toBe(
      'accepted',
    );
  });

  it('reports the JSON path of the problem, never the value', () => {
    try {
      snapshotJsonObject({ outer: [{ 'odd key': Number.NaN }] });
      expect.unreachable();
    } catch (error) {
      expect((error as ToolInputError).details?.issues).toEqual([
        { path: '$.outer[0]["odd key"]', message: 'numbers must be finite' },
      ]);
    }
  });

  const loop: Record<string, unknown> = { name: 'loop' };
  loop.self = loop;
  const holey = [1, 2, 3];
  delete holey[1];
  const pathCases: readonly (readonly [string, unknown, Partial<JsonSnapshotLimits>, string])[] = [
    ['a cycle', { a: [1, loop] }, {}, '$.a[1].self'],
    ['too deep', { a: [{ b: [[]] }] }, { maxDepth: 4 }, '$.a[0].b[0]'],
    ['too many values', { a: ['x', 'y', { z: 1 }] }, { maxNodes: 5 }, '$.a[2].z'],
    ['too many bytes', { a: [{ long: 'x'.repeat(300) }] }, { maxBytes: 100 }, '$.a[0].long'],
    ['a hole', { a: [holey] }, {}, '$.a[0][1]'],
    ['a function', { a: { 'odd key': [() => 1] } }, {}, '$.a["odd key"][0]'],
  ];
  it.each(pathCases)('reports the path of %s at any depth', (_label, value, limits, path) => {
    try {
      snapshotJsonObject(value, resolveSnapshotLimits(limits));
      expect.unreachable();
    } catch (error) {
      expect(ToolInputError.isInstance(error)).toBe(true);
      expect((error as ToolInputError).details?.issues).toEqual([
        expect.objectContaining({ path }),
      ]);
    }
  });

  it('enforces custom limits', () => {
    const depth = resolveSnapshotLimits({ maxDepth: 2 });
    expect(reasonOf(() => snapshotJsonObject({ a: { b: 1 } }, depth))).toBe('accepted');
    expect(reasonOf(() => snapshotJsonObject({ a: { b: {} } }, depth))).toBe('depth');
    const bytes = resolveSnapshotLimits({ maxBytes: 20 });
    expect(reasonOf(() => snapshotJsonObject({ a: 'x'.repeat(10) }, bytes))).toBe('accepted');
    expect(reasonOf(() => snapshotJsonObject({ a: 'x'.repeat(20) }, bytes))).toBe('bytes');
    // Short strings: ASCII within the limit passes although three bytes per unit would not...
    const hundred = resolveSnapshotLimits({ maxBytes: 100 });
    expect(reasonOf(() => snapshotJsonObject({ a: 'x'.repeat(60) }, hundred))).toBe('accepted');
    // ...and multi-byte text over the limit fails although one byte per unit would pass.
    expect(reasonOf(() => snapshotJsonObject({ a: 'é'.repeat(60) }, hundred))).toBe('bytes');
    expect(reasonOf(() => snapshotJsonObject({ a: '😀'.repeat(30) }, hundred))).toBe('bytes');
    expect(reasonOf(() => snapshotJsonObject({ a: '😀'.repeat(20) }, hundred))).toBe('accepted');
  });

  it.each([
    ['a boolean', { maxDepth: true }],
    ['a string', { maxNodes: '10' }],
    ['zero', { maxBytes: 0 }],
    ['a fraction', { maxDepth: 1.5 }],
  ])('rejects a limit that is %s', (_label, limits) => {
    expect(() => resolveSnapshotLimits(limits as never)).toThrow(ConfigurationError);
  });

  it('has the documented defaults', () => {
    expect(DEFAULT_SNAPSHOT_LIMITS).toEqual({
      maxDepth: 64,
      maxNodes: 10_000,
      maxBytes: 8_388_608,
    });
  });
});

describe('cycles without an ancestor list', () => {
  it('still tells a cycle from deep nesting without keeping ancestors', () => {
    const loop: Record<string, unknown> = { x: 1 };
    loop.self = { again: loop };
    expect(() => snapshotJsonObject({ top: loop })).toThrow(
      expect.objectContaining({
        details: expect.objectContaining({
          reason: 'cycle',
          issues: [expect.objectContaining({ path: '$.top.self.again' })],
        }),
      }),
    );
    expect(() => snapshotJsonObject(nested(70))).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ reason: 'depth' }) }),
    );
  });
});
