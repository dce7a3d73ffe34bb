import { defineConfig } from 'vitest/config';

/**
 * Three projects, by file name (README "Tests"):
 * - unit   `*.unit.test.ts`: no backends, no servers, no embedded engines; seconds. Run while working.
 * - int    every other `*.test.ts`: the service's parts on the embedded defaults (PGlite, chDB, the in-process bus)
 *          and, in `*.int.test.ts`, the same scenarios on the real ones (Postgres, Kafka, ClickHouse, Redis).
 * - e2e    `test/e2e/*.e2e.test.ts`: whole processes, browsers, crashes.
 * `npm test` runs all three (the README's command, and CI's).
 *
 * chDB binds one data directory per process and PGlite is single-connection, so test files run in separate
 * processes (forks), never as threads sharing one engine.
 */
// expect.poll waits 15 s by default, not vitest's 1 s: on a busy two-core machine a page or a pipeline can take longer
// than a second to show what it will show (a test must pass under load, not only alone).
const shared = { pool: 'forks' as const, maxWorkers: 2, testTimeout: 60_000, hookTimeout: 120_000, expect: { poll: { timeout: 15_000 } } };
const exclude = ['node_modules/**', 'data/**'];

export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: 'unit', include: ['**/*.unit.test.ts'], exclude } },
      {
        test: {
          ...shared,
          name: 'int',
          include: ['**/*.test.ts'],
          exclude: [...exclude, '**/*.unit.test.ts', '**/*.e2e.test.ts'],
          globalSetup: ['test/global-setup.ts'],
        },
      },
      { test: { ...shared, name: 'e2e', include: ['**/*.e2e.test.ts'], exclude, globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
