import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'tool-contract',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
