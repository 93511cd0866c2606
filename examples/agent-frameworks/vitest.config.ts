import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'agent-frameworks',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: { OPENAI_AGENTS_DISABLE_TRACING: '1' },
  },
});
