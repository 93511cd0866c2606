import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as aiSdk from './ai-sdk/index.js';
import * as langChain from './langchain/index.js';
import * as openAiAgents from './openai-agents/index.js';

describe('public surface of the framework subpaths', () => {
  it.each([
    ['@toolfence/tools/ai-sdk', aiSdk, ['aiSdkTools']],
    ['@toolfence/tools/openai-agents', openAiAgents, ['isStrictCompatible', 'openAiAgentsTools']],
    ['@toolfence/tools/langchain', langChain, ['DEFAULT_COMPLETED_CALL_MEMORY', 'langChainTools']],
  ])('%s exports exactly the pinned runtime names', (_subpath, entry, names) => {
    expect(Object.keys(entry).sort()).toEqual([...names].sort());
  });
});

describe('the frameworks stay optional', () => {
  const src = join(import.meta.dirname, '..');
  const files: string[] = [];
  const walk = (folder: string): void => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) files.push(path);
    }
  };
  walk(src);
  const frameworkImport = /from '(ai|ai\/[^']*|@openai\/agents[^']*|@langchain\/[^']*)'/;

  it('no module outside src/adapters imports a framework, and the main entry imports no adapter', () => {
    const offenders = files
      .filter((file) => !relative(src, file).startsWith('adapters/'))
      .filter((file) => frameworkImport.test(readFileSync(file, 'utf8')))
      .map((file) => relative(src, file));
    expect(offenders).toEqual([]);
    expect(readFileSync(join(src, 'index.ts'), 'utf8')).not.toContain('./adapters/');
  });

  it('each adapter imports only its own framework', () => {
    const own: Record<string, RegExp> = {
      'ai-sdk': /^(ai)$/,
      'openai-agents': /^@openai\/agents$/,
      langchain: /^@langchain\//,
    };
    for (const file of files.filter((path) => relative(src, path).startsWith('adapters/'))) {
      const folder = relative(src, file).split('/')[1] as string;
      for (const match of readFileSync(file, 'utf8').matchAll(/from '([^.'][^']*)'/g)) {
        const specifier = match[1] as string;
        if (specifier.startsWith('node:')) continue;
        expect({ file: relative(src, file), specifier, own: own[folder]?.test(specifier) }).toEqual(
          {
            file: relative(src, file),
            specifier,
            own: true,
          },
        );
      }
    }
  });
});
