import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'readme-examples',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
