/**
 * `embedpipe run` writes its part files around the page cache (output/direct-write.ts) unless
 * EMBEDPIPE_DIRECT_IO=off: after a default run fincore sees no more of a part cached than the run's
 * read of its footer brings in, after a run with it off the whole part, and DuckDB reads the same
 * rows from both.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { runArgs, runCli } from '../helpers/cli.js';
import { writeHardCsv } from '../helpers/corpus.js';
import { comparable } from '../helpers/dataset-checks.js';
import { readDataset } from '../helpers/duckdb.js';
import { cachedBytes } from '../helpers/page-cache.js';
import { skipOutsideCi } from '../helpers/skip.js';
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

/** The run with EMBEDPIPE_DIRECT_IO=off that the others are compared with (run once, by whichever test asks first). */
let cachedRun: Promise<{ bytes: number; cached: number; parts: number }> | undefined;
const cachedOut = join(root, 'cached');
const runCached = () => {
  cachedRun ??= runInto(cachedOut, { EMBEDPIPE_DIRECT_IO: 'off' });
  return cachedRun;
};

describe('run: part files and the page cache', () => {
  it('writes parts around it by default and through it with EMBEDPIPE_DIRECT_IO=off, the same rows either way', async () => {
    const direct = await runInto(join(root, 'direct'), {});
    const cached = await runCached();
    // The footer is read back (64 KB from the end, parquet.ts), with a page or two of read-ahead.
    expect(direct.bytes).toBeGreaterThan(4 * FOOTER_READ * direct.parts);
    expect(direct.cached).toBeLessThanOrEqual((FOOTER_READ + 8192) * direct.parts);
    expect(cached.cached).toBeGreaterThanOrEqual(cached.bytes);
    expect(comparable(await readDataset(join(root, 'direct')))).toEqual(
      comparable(await readDataset(cachedOut)),
    );
  });

  it('on a file system that refuses O_DIRECT (ramfs, mounted as root), writes through the page cache, the same rows', async (context) => {
    const run = promisify(execFile);
    const mountPoint = join(root, 'ramfs');
    await mkdir(mountPoint);
    try {
      await run('mount', ['-t', 'ramfs', 'ramfs', mountPoint]);
    } catch (error) {
      skipOutsideCi(context, `cannot mount ramfs here (${(error as Error).message.split('\n')[0]})`);
    }
    try {
      // ramfs reports no free space at all: the free-space guard is switched off for it.
      const refused = await runInto(join(mountPoint, 'out'), { EMBEDPIPE_MIN_FREE_MB: '0' });
      expect(refused.cached).toBeGreaterThanOrEqual(refused.bytes);
      await runCached();
      expect(comparable(await readDataset(join(mountPoint, 'out')))).toEqual(
        comparable(await readDataset(cachedOut)),
      );
    } finally {
      await run('umount', [mountPoint]);
    }
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
