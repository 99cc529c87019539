import { defineConfig } from 'vitest/config';

/**
 * Three groups, one after another. Vitest's default on two cores is one file at a time (cores − 1),
 * which left one core idle while most files wait on a network, a child process or a timer:
 * - `main` runs two files at once;
 * - `timed` holds the tests whose figures are rates and Retry-After waits of ~100 ms: beside a busy
 *   file their servers' event loops stalled and counted requests as early. They run alone;
 * - `stores` (PGlite is PostgreSQL in WASM, LanceDB loads 20k rows) keep a core busy for a minute.
 */
const TIMED = [
  'test/gateway/rate-budget.test.ts',
  'test/gateway/rate-limit.test.ts',
  'test/gateway/retry-after-race.test.ts',
  'test/e2e/progress-ratelimit.test.ts',
];
// commands-in-docs runs the docs' sync and search lines against PGlite too.
const STORES = ['test/stores/**/*.test.ts', 'test/e2e/sync.test.ts', 'test/docs/commands-in-docs.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each file has its own emulator on port 0 and its own redis-server.
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...TIMED, ...STORES],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'timed', include: TIMED, maxWorkers: 1, sequence: { groupOrder: 1 } } },
      {
        extends: true,
        test: { name: 'stores', include: STORES, maxWorkers: 2, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
