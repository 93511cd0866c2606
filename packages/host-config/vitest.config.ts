import { defineProject } from 'vitest/config';

export default defineProject({
  test: {
    name: 'host-config',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});
