/**
 * `embedpipe run` writes its part files around the page cache (output/direct-write.ts) unless
 * EMBEDPIPE_DIRECT_IO=off: after a default run fincore sees no more of a part cached than the run's
 * read of its footer brings in, after a run with it off the whole part, and DuckDB reads the same
 * rows from both.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { runArgs, runCli } from '../helpers/cli.js';
import { writeHardCsv } from '../helpers/corpus.js';
import { comparable } from '../helpers/dataset-checks.js';
import { readDataset } from '../helpers/duckdb.js';
import { cachedBytes } from '../helpers/page-cache.js';
import { tempFolder } from '../helpers/temp.js';

/** What a run reads of each part it wrote: its footer, from the last 64 KB. */
const FOOTER_READ = 64 * 1024;

let emulator: RunningEmulator;
const root = await tempFolder('embedpipe-direct-io-');
const corpusPath = join(root, 'corpus.csv');

beforeAll(async () => {
  emulator = await startEmulator();
  await writeHardCsv(corpusPath, 400);
});
afterAll(async () => {
  await emulator.close();
});

/** Runs the corpus into `out`; returns the bytes of its part files and how many of them are cached. */
async function runInto(
  out: string,
  env: Record<string, string>,
): Promise<{ bytes: number; cached: number; parts: number }> {
  const result = await runCli(runArgs(corpusPath, 'emu/embed-small', '--out', out, '--max-inputs', '16'), {
    EMBEDPIPE_BASE_URL: emulator.baseUrl,
    EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
    ...env,
  });
  expect(result.code, result.stderr).toBe(0);
  const parts = (await readdir(out)).filter((name) => name.endsWith('.parquet'));
  expect(parts.length).toBeGreaterThan(0);
  let bytes = 0;
  let cached = 0;
  for (const part of parts) {
    const { size } = await stat(join(out, part));
    bytes += size;
    cached += await cachedBytes(join(out, part));
  }
  return { bytes, cached, parts: parts.length };
}

describe('run: part files and the page cache', () => {
  it('writes parts around it by default and through it with EMBEDPIPE_DIRECT_IO=off, the same rows either way', async () => {
    const direct = await runInto(join(root, 'direct'), {});
    const cachedRun = await runInto(join(root, 'cached'), { EMBEDPIPE_DIRECT_IO: 'off' });
    // The footer is read back (64 KB from the end, parquet.ts), with a page or two of read-ahead.
    expect(direct.bytes).toBeGreaterThan(4 * FOOTER_READ * direct.parts);
    expect(direct.cached).toBeLessThanOrEqual((FOOTER_READ + 8192) * direct.parts);
    expect(cachedRun.cached).toBeGreaterThanOrEqual(cachedRun.bytes);
    expect(comparable(await readDataset(join(root, 'direct')))).toEqual(
      comparable(await readDataset(join(root, 'cached'))),
    );
  });

  it('names the variable when its value is neither on nor off', async () => {
    const result = await runCli(runArgs(corpusPath, 'emu/embed-small', '--out', join(root, 'bad')), {
      EMBEDPIPE_BASE_URL: emulator.baseUrl,
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
      EMBEDPIPE_DIRECT_IO: 'sometimes',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('EMBEDPIPE_DIRECT_IO');
  });
});
