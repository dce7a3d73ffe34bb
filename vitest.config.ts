import { defineConfig } from 'vitest/config';

// chDB binds one data directory per process and PGlite is single-connection, so test files
// run in separate processes (forks), never as threads sharing one engine.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    include: ['**/*.test.ts'],
    exclude: ['node_modules/**', 'data/**'],
    globalSetup: ['test/global-setup.ts'],
  },
});
