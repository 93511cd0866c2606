import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'tools',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Above vitest's 5 s/10 s defaults: two files run at once on CI's 2 cores (root
    // vitest.config.ts), and a test that starts real servers or processes can wait its turn for
    // a CPU. A test that hangs still fails, with its own tighter limit where it sets one.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
