import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      'packages/*/vitest.config.ts',
      'examples/*/vitest.config.ts',
      'scripts/vitest.config.ts',
    ],
    // vitest's own default for `run` is one worker fewer than the CPUs: 1 on CI's 2 cores, which
    // ran every file one after the other. Most test files wait on real servers, processes and
    // sockets rather than compute, so two files at a time on 2 cores roughly halves the tests
    // step (CONTRIBUTING.md, "CI time budget"); more CPUs keep vitest's default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
