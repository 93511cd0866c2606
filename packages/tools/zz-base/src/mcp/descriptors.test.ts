import { describe, expect, it } from 'vitest';
import { parseTool } from './descriptors.js';

describe('parseTool', () => {
  it('keeps the declared $schema so the registry validates in that dialect', () => {
    const parsed = parseTool({
      name: 'lookup',
      inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' },
      outputSchema: { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object' },
    });
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#' },
        outputSchema: { $schema: 'https://json-schema.org/draft/2019-09/schema' },
      },
    });
  });

  it.each([
    ['inputSchema', { inputSchema: { $schema: 'http://json-schema.org/schema#', type: 'object' } }],
    [
      'outputSchema',
      {
        inputSchema: { type: 'object' },
        outputSchema: { $schema: 'https://example.invalid/schema', type: 'object' },
      },
    ],
  ])('reports a tool whose %s declares an unknown dialect', (which, schemas) => {
    expect(parseTool({ name: 'lookup', ...schemas })).toEqual({
      ok: false,
      reason: `tool ${which} declares an unknown JSON Schema dialect`,
    });
  });
});
