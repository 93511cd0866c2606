import { JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { parseJSONRPCMessage } from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeRecord } from './decode-record.js';
import { TransportProtocolError } from './errors.js';
import { isMarkedPlainRecord, isPlainMessage, isPlainRecord } from './plain-message.js';
import { DEFAULT_RECORD_LIMITS } from './record-limits.js';

const notification = '{"jsonrpc":"2.0","method":"notifications/progress","params":{}}';

describe('decodeRecord', () => {
  it.each([
    ['a plain result', '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', true],
    [
      'a plain error without an id',
      '{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"}}',
      true,
    ],
    ['a plain notification', notification, true],
    [
      'an error with an extra key (the schema drops it)',
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","extra":1}}',
      false,
    ],
    [
      'a result whose _meta has a related task',
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}',
      false,
    ],
  ])('marks %s plain exactly when isPlainMessage accepts it', (_name, text, plain) => {
    const [message] = decodeRecord(text, DEFAULT_RECORD_LIMITS);
    expect(isMarkedPlainRecord(message as object)).toBe(plain);
    expect(isPlainRecord(message)).toBe(isPlainMessage(message));
    expect(isMarkedPlainRecord(JSON.parse(text) as object)).toBe(false);
  });

  it('decodes one message and a batch of two', () => {
    expect(decodeRecord(notification, DEFAULT_RECORD_LIMITS)).toHaveLength(1);
    expect(decodeRecord(`[${notification},${notification}]`, DEFAULT_RECORD_LIMITS)).toHaveLength(
      2,
    );
  });

  it.each([
    ['an empty batch', '[]'],
    ['an empty batch with whitespace', ' [ \r\n\t] '],
  ])('refuses %s', (_name, text) => {
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(TransportProtocolError);
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(/empty batch/);
  });

  it.each([
    ['a batch holding a non-message', `[${notification},1]`],
    ['a nested empty batch', '[[]]'],
    ['a string', '"[]"'],
  ])('refuses %s as not JSON-RPC', (_name, text) => {
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(TransportProtocolError);
  });
});

describe('the plain-message fast path', () => {
  // The shapes nearly every record has skip the SDK's schema; each must be one the schema takes.
  it.each([
    ['a result', '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'],
    ['a result with a string id', '{"id":"a","result":{},"jsonrpc":"2.0"}'],
    ['an error', '{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}'],
    [
      'an error with data and no id',
      '{"jsonrpc":"2.0","error":{"code":1,"message":"m","data":[1]}}',
    ],
    ['a request', '{"jsonrpc":"2.0","id":3,"method":"ping"}'],
    ['a request with params', '{"jsonrpc":"2.0","id":3,"method":"roots/list","params":{"a":1}}'],
    ['a notification', notification],
    ['a result with _meta', '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"progressToken":1}}}'],
    ['params with an empty _meta', '{"jsonrpc":"2.0","method":"m","params":{"_meta":{}}}'],
    [
      'a modern result with _meta of other keys',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"io.example/x":{"a":[1]},"progressToken":"t"}}}',
    ],
  ])('takes %s without the schema, as the schema would', (_name, text) => {
    const value: unknown = JSON.parse(text);
    expect(isPlainMessage(value)).toBe(true);
    expect(JSONRPCMessageSchema.safeParse(value).success).toBe(true);
  });

  it.each([
    [
      'a _meta with a related task (the schema rebuilds it)',
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}',
    ],
    [
      'a _meta with a fractional progress token',
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"progressToken":1.5}}}',
    ],
    [
      'a _meta with a null progress token',
      '{"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":null}}}',
    ],
    [
      'a _meta with an own __proto__',
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"__proto__":{"x":1}}}}',
    ],
    ['a _meta that is an array', '{"jsonrpc":"2.0","id":1,"result":{"_meta":[]}}'],
    ['a _meta that is null', '{"jsonrpc":"2.0","id":1,"result":{"_meta":null}}'],
    ['a result with an own __proto__', '{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1}}}'],
    [
      'an error with an extra key',
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":1}}',
    ],
    ['an unsafe integer id', '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}'],
    ['a null id', '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}'],
    ['an extra key', '{"jsonrpc":"2.0","id":1,"result":{},"x":1}'],
  ])('leaves %s to the schema', (_name, text) => {
    expect(isPlainMessage(JSON.parse(text))).toBe(false);
  });

  it('decodes exactly what the SDK schema gives (a plain message is one the SDK v2 schema takes as it is too), on 20,000 generated messages', () => {
    // Each message is built from random members of every kind, valid or almost valid; the JSON
    // text goes through decodeRecord and, separately, through JSON.parse and the SDK's schema.
    const body = fc.oneof(
      fc.constant('{}'),
      fc.constant('{"content":[{"type":"text","text":"x"}],"isError":false}'),
      fc.constant('{"_meta":{"progressToken":"t"},"a":1}'),
      fc.constant('{"_meta":5}'),
      fc.constant('{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t","x":1}}}'),
      fc.constant('{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":5}}}'),
      fc.constant('{"_meta":{},"content":[]}'),
      fc.constant('{"_meta":{"progressToken":7,"io.example/x":{"y":[1,{"z":null}]}}}'),
      fc.constant('{"_meta":{"progressToken":1.5}}'),
      fc.constant('{"_meta":{"progressToken":null}}'),
      fc.constant('{"_meta":{"progressToken":9007199254740993}}'),
      fc.constant('{"_meta":{"__proto__":{"polluted":true}}}'),
      fc.constant('{"_meta":[]}'),
      fc.constant('{"_meta":null}'),
      fc.constant('{"__proto__":{"polluted":true},"a":1}'),
      fc.constant('[]'),
      fc.constant('null'),
      fc.constant('"text"'),
      fc.constant('7'),
    );
    const id = fc.oneof(
      fc.constant('1'),
      fc.constant('"req-1"'),
      fc.constant('1.5'),
      fc.constant('-0'),
      fc.constant('9007199254740993'),
      fc.constant('null'),
      fc.constant('true'),
      fc.constant('{}'),
    );
    const error = fc.oneof(
      fc.constant('{"code":-32603,"message":"boom"}'),
      fc.constant('{"code":-32603,"message":"boom","data":{"why":"x"}}'),
      fc.constant('{"code":-32603,"message":"boom","data":null}'),
      fc.constant('{"code":1.5,"message":"boom"}'),
      fc.constant('{"code":"1","message":"boom"}'),
      fc.constant('{"code":1,"message":2}'),
      fc.constant('{"code":1}'),
      fc.constant('{"code":1,"message":"m","extra":true}'),
      fc.constant('[]'),
      fc.constant('null'),
    );
    const member = fc.oneof(
      fc.constantFrom('"jsonrpc":"2.0"', '"jsonrpc":"1.0"', '"jsonrpc":2'),
      id.map((value) => `"id":${value}`),
      fc.constantFrom('"method":"tools/call"', '"method":5', '"method":""'),
      body.map((value) => `"params":${value}`),
      body.map((value) => `"result":${value}`),
      error.map((value) => `"error":${value}`),
      fc.constantFrom('"extra":1', '"__proto__":{"a":1}', '"JSONRPC":"2.0"'),
    );
    // Random members after an optional "jsonrpc" (duplicates allowed: the last one wins in
    // JSON.parse, in both paths), or one message kind with each of its members drawn at random.
    const loose = fc
      .tuple(fc.boolean(), fc.array(member, { maxLength: 4 }))
      .map(([withVersion, members]) => [...(withVersion ? ['"jsonrpc":"2.0"'] : []), ...members]);
    const shaped = fc
      .tuple(
        fc.option(id, { nil: undefined }),
        fc.oneof(
          fc.constant('"method":"notifications/progress"'),
          body.map((value) => `"result":${value}`),
          error.map((value) => `"error":${value}`),
        ),
        fc.option(body, { nil: undefined }),
      )
      .map(([idValue, kind, params]) => [
        '"jsonrpc":"2.0"',
        ...(idValue === undefined ? [] : [`"id":${idValue}`]),
        kind,
        ...(params === undefined ? [] : [`"params":${params}`]),
      ]);
    const message = fc
      .oneof(loose, shaped)
      .chain((members) => fc.shuffledSubarray(members, { minLength: members.length }))
      .map((members) => `{${members.join(',')}}`);
    let fast = 0;
    fc.assert(
      fc.property(message, (text) => {
        const reference = JSONRPCMessageSchema.safeParse(JSON.parse(text));
        if (isPlainMessage(JSON.parse(text))) {
          fast++;
          // The SDK v2 schema (the gateway's stdio front) takes it as it is too.
          expect(parseJSONRPCMessage(JSON.parse(text))).toStrictEqual(JSON.parse(text));
        }
        if (!reference.success) {
          expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(TransportProtocolError);
          return;
        }
        expect(decodeRecord(text, DEFAULT_RECORD_LIMITS)).toStrictEqual([reference.data]);
      }),
      { seed: 0x2026_1201, numRuns: 20_000 },
    );
    // The generator reaches the fast path often, so the comparison covers it.
    expect(fast).toBeGreaterThan(500);
    // 20,000 runs take about 2 s alone; a loaded CI machine (every test file in parallel) needs
    // more, and the property holds or fails whatever the time.
  }, 120_000);
});
