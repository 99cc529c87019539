/**
 * One ledger: what a version holds is counted once, from the batch records committed with its
 * data. Two nights of a mixed-script corpus against a gateway answering 429s and 503s: the run's
 * summary says the manifest's counts word for word, the manifest's rows are what DuckDB reads, and
 * its tokens, cost, requests and retries are the fold of the records DuckDB finds in the files'
 * own metadata (an independent reader). The run's own spend agrees with the records it committed.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { seeded } from '../chunking/generate.js';
import { runArgs, runCli } from '../helpers/cli.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { makeDocs, nextNight, writeJsonl } from '../helpers/nightly-corpus.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-ledger-');
const MODEL = 'emu/embed-small';
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startEmulator({
    recordRequests: false,
    faults: { seed: 5, probabilities: { 429: 0.15, 503: 0.1 }, retryAfterSeconds: 0.05 },
    retryAfterFormat: 'ms',
  });
});
afterAll(async () => {
  await emulator.close();
});

interface Record {
  rows: number;
  promptTokens: number;
  cost: number;
  requests: number;
  retries: number;
  failures: unknown[];
}

/** Every batch record the dataset's files carry, read by DuckDB from their key-value metadata. */
async function recordsInFiles(dir: string): Promise<Record[]> {
  const kv = await query(
    `SELECT file_name AS file, decode(key) AS key, decode(value) AS value
       FROM parquet_kv_metadata(${sqlString(join(dir, '*.parquet'))})`,
  );
  const files = new Map<string, Map<string, string>>();
  for (const { file, key, value } of kv as { file: string; key: string; value: string }[]) {
    if (!files.has(file)) files.set(file, new Map());
    files.get(file)!.set(key, value);
  }
  const records: Record[] = [];
  for (const [file, entries] of files) {
    const batches = JSON.parse(entries.get('embedpipe.batches') ?? 'null') as {
      [id: string]: { [key: string]: string };
    } | null;
    expect(batches, `${file} lists its batches`).not.toBeNull();
    for (const own of Object.values(batches!)) {
      const text = own['embedpipe.batch'] ?? entries.get('embedpipe.batch');
      expect(text, `${file}: a batch without its record`).toBeDefined();
      records.push(JSON.parse(text!) as Record);
    }
  }
  return records;
}

const sum = (records: readonly Record[], field: 'promptTokens' | 'cost' | 'requests' | 'retries') =>
  records.reduce((total, record) => total + record[field], 0);

describe('one ledger', () => {
  it('summary, manifest, files and the run’s spend agree on every count, night after night', {
    timeout: 120_000,
  }, async () => {
    const rand = seeded(18);
    const first = makeDocs(80, rand);
    const second = nextNight(first, rand, 1, 0.1).docs;
    const out = join(root, 'out');
    for (const [n, docs] of [first, second].entries()) {
      const input = join(root, `night-${n}.jsonl`);
      await writeJsonl(input, docs);
      const result = await runCli(
        [...runArgs(input, MODEL, '--max-tokens', '128', '--max-inputs', '16'), '--out', out, '--json'],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY },
      );
      expect(result.code, result.stderr).toBe(0);
      const summary = JSON.parse(result.stdout);
      const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
      const { counts } = manifest;

      // The summary quotes the manifest, which the switch checked against the files.
      expect(summary.dataset).toEqual(counts);
      expect(summary.rows).toBe(counts.rows);
      expect(summary.chunks).toBe(counts.chunks);
      expect(summary.failures).toBe(counts.failures);
      const [read] = await query(
        `SELECT count(*)::INT AS rows FROM read_parquet(${sqlString(join(out, '*.parquet'))})`,
      );
      expect(read!['rows']).toBe(counts.rows);

      // The manifest's money and traffic are the fold of the records the files carry.
      const records = await recordsInFiles(out);
      expect(records.length).toBe(summary.batches.planned);
      expect(sum(records, 'promptTokens')).toBe(counts.tokens);
      expect(sum(records, 'requests')).toBe(counts.requests);
      expect(sum(records, 'retries')).toBe(counts.retries);
      expect(sum(records, 'cost')).toBeCloseTo(Number(counts.costUsd), 9);
      expect(records.reduce((n, r) => n + r.failures.length, 0)).toBe(counts.failures);

      // Every planned batch is accounted once: committed now, or by the night before.
      const { batches } = summary;
      expect(batches.embedded + batches.resumed + batches.failed).toBe(batches.planned);
      if (n === 0) {
        // A fresh version: everything it holds this run paid, beside the calibration probes.
        const probes = summary.sizing.calibration ?? { requests: 0, costUsd: '0' };
        expect(batches.resumed).toBe(0);
        expect(summary.requests).toBe(probes.requests + counts.requests);
        expect(Number(summary.costUsd)).toBeCloseTo(Number(probes.costUsd) + Number(counts.costUsd), 9);
        expect(summary.retries).toBeGreaterThanOrEqual(counts.retries);
      } else {
        expect(batches.resumed).toBeGreaterThan(0);
      }
    }
    // The faults were met: the records count retries.
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    expect(manifest.counts.retries).toBeGreaterThan(0);
  });
});
