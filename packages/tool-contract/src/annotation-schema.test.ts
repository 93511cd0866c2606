import { readFileSync } from 'node:fs';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { describe, expect, it } from 'vitest';
import { CONTRACT_ANNOTATIONS_JSON_SCHEMA } from './annotation-schema.js';
import { toolAnnotations } from './annotations.js';
import { defineContract } from './define-contract.js';
import { CONTENT_TRUST_LEVELS, RISK_LEVELS } from './taxonomy.js';

// A real JSON Schema validator (Ajv with formats, as the MCP SDK configures it).
const validate = new AjvJsonSchemaValidator().getValidator<unknown>(
  structuredClone(CONTRACT_ANNOTATIONS_JSON_SCHEMA) as never,
);

describe('CONTRACT_ANNOTATIONS_JSON_SCHEMA', () => {
  it('is the document shipped as src/contract-annotations.schema.json', () => {
    const file = JSON.parse(
      readFileSync(new URL('./contract-annotations.schema.json', import.meta.url), 'utf8'),
    );
    expect(file).toEqual(CONTRACT_ANNOTATIONS_JSON_SCHEMA);
  });

  it('is deeply frozen', () => {
    expect(Object.isFrozen(CONTRACT_ANNOTATIONS_JSON_SCHEMA)).toBe(true);
    const properties = CONTRACT_ANNOTATIONS_JSON_SCHEMA.properties as Record<string, object>;
    expect(Object.isFrozen(properties.risk_level)).toBe(true);
  });

  const pairs = RISK_LEVELS.flatMap((risk) =>
    CONTENT_TRUST_LEVELS.map((contentTrust) => [risk, contentTrust] as const),
  );
  it.each(pairs)('accepts what toolAnnotations writes for %s / %s', (risk, contentTrust) => {
    const annotations = toolAnnotations(
      defineContract({
        risk,
        contentTrust,
        idempotent: true,
        version: '1.2.3-rc.1',
        deprecatedSince: '2026-01-01',
        sunset: '2026-06-01',
        replacement: 'next_tool',
        aliases: ['old.name', 'older-name'],
      }),
    );
    expect(validate({ ...annotations, title: 'Shown to people' }).valid).toBe(true);
  });

  it('accepts an empty alias list and an object without hints, as readContract does', () => {
    expect(validate({ ...valid, aliases: [] }).valid).toBe(true);
    expect(
      validate({ risk_level: 'read-only', content_trust_risk: 'trusted', version: '1.0.0' }).valid,
    ).toBe(true);
  });

  const valid = toolAnnotations(defineContract({ risk: 'low-risk-write' }));
  it.each([
    ['an unknown risk', { ...valid, risk_level: 'readonly' }],
    ['an unknown trust', { ...valid, content_trust_risk: 'ok' }],
    ['a bad version', { ...valid, version: '1.0' }],
    ['a bad date', { ...valid, sunset: '2026-02-30' }],
    ['a datetime', { ...valid, deprecated_since: '2026-01-01T00:00:00Z' }],
    ['a bad replacement', { ...valid, replacement: 'a b' }],
    ['a repeated alias', { ...valid, aliases: ['a', 'a'] }],
    ['a bad alias', { ...valid, aliases: ['a/b'] }],
    ['a string hint', { ...valid, idempotentHint: 'true' }],
    ['readOnlyHint true on a write', { ...valid, readOnlyHint: true }],
    ['destructiveHint true on a write', { ...valid, destructiveHint: true }],
    ['readOnlyHint false on read-only', { ...valid, risk_level: 'read-only' }],
    ['a missing risk', { content_trust_risk: 'trusted', version: '1.0.0' }],
    ['a missing version', { risk_level: 'read-only', content_trust_risk: 'trusted' }],
    ['not an object', ['risk_level']],
  ])('rejects %s', (_name, annotations) => {
    expect(validate(annotations).valid).toBe(false);
  });
});
