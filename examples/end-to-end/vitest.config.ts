import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'end-to-end',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
  },
});
