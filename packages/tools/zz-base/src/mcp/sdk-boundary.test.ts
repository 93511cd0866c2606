import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const here = new URL('./', import.meta.url);
const skillsFolder = new URL('../skills/', import.meta.url);

function sources(folder: URL): [string, string][] {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    .map((file) => [file, readFileSync(new URL(file, folder), 'utf8')]);
}

describe('the optional SDK peer', () => {
  it('is never imported: the mcp-sdk adapter types the client structurally', () => {
    const importers = [...sources(here), ...sources(skillsFolder)]
      .filter(([, text]) => /from '@modelcontextprotocol\/sdk/.test(text))
      .map(([file]) => file);
    expect(importers).toEqual([]);
  });

  it('is reachable through the ./mcp-sdk export of package.json', () => {
    const manifest = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { exports: Record<string, { types: string; default: string }> };
    expect(manifest.exports['./mcp-sdk']).toEqual({
      types: './dist/mcp/sdk-session-adapter.d.ts',
      default: './dist/mcp/sdk-session-adapter.js',
    });
  });

  it('is not re-exported from the main index', () => {
    const index = readFileSync(new URL('../index.ts', import.meta.url), 'utf8');
    expect(index).not.toContain('sdk-session-adapter');
  });
});
