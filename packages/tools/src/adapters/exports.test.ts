import { describe, expect, it } from 'vitest';
import * as aiSdk from './ai-sdk/index.js';
import * as langChain from './langchain/index.js';
import * as openAiAgents from './openai-agents/index.js';

describe('public surface of the framework subpaths', () => {
  it.each([
    ['@toolfence/tools/ai-sdk', aiSdk, ['aiSdkTools']],
    ['@toolfence/tools/openai-agents', openAiAgents, ['isStrictCompatible', 'openAiAgentsTools']],
    ['@toolfence/tools/langchain', langChain, ['langChainTools']],
  ])('%s exports exactly the pinned runtime names', (_subpath, entry, names) => {
    expect(Object.keys(entry).sort()).toEqual([...names].sort());
  });
});
