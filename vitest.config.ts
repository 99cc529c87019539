import { defineConfig } from 'vitest/config';

/**
 * The vector stores' tests (PGlite is PostgreSQL in WASM, LanceDB loads 20k rows) keep a core busy
 * for a minute: beside them, the tests that time Retry-After to 100 ms saw their servers' event
 * loops stall and counted requests as early. They run after everything else, as a group of their own.
 */
const STORES = ['test/stores/**/*.test.ts', 'test/e2e/sync.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores: files run in parallel forks, each with its own emulator on port 0.
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'main', include: ['test/**/*.test.ts'], exclude: STORES, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'stores', include: STORES, sequence: { groupOrder: 1 } } },
    ],
  },
});
