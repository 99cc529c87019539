/**
 * Nothing paid twice after a crash: a run SIGKILLed three times at random moments, then resumed to
 * the end, pays again only for the requests that were on the wire at each kill (the spill keeps
 * every answered batch), and re-runs on a disk without room stop before paying for anything.
 * Counted by the gateway (an emulator in this process, outside the killed one).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { ExitCode } from '../../src/errors.js';
import { seeded } from '../chunking/generate.js';
import { runArgs, runCli, spawnCli } from '../helpers/cli.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'emu/embed-small';
const root = await tempFolder('embedpipe-crash-');
let emulator: RunningEmulator;
let corpus: string;
/** Documents, one chunk each, every text distinct (no deduplication blurs the count). */
const DOCUMENTS = 4_000;

beforeAll(async () => {
  emulator = await startEmulator({ recordRequests: false, faults: { latencyMs: { min: 5, max: 25 } } });
  const rand = seeded(19);
  const scripts = ['alpha beta', '漢字と仮名', 'שלום', 'émoji 👩‍💻', 'καλημέρα', 'fn(x) => x + 1'];
  const lines = Array.from({ length: DOCUMENTS }, (_, i) =>
    JSON.stringify({
      id: `d${i}`,
      text: `${scripts[i % scripts.length]} ${i} ${rand().toString(36).slice(2)}`,
    }),
  );
  corpus = join(root, 'corpus.jsonl');
  const { writeFile } = await import('node:fs/promises');
  await writeFile(corpus, `${lines.join('\n')}\n`);
});
afterAll(async () => {
  await emulator.close();
});

const env = (more: Record<string, string> = {}) => ({
  EMBEDPIPE_BASE_URL: emulator.baseUrl,
  EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
  ...more,
});
const args = (out: string) => [
  ...runArgs(corpus, MODEL, '--max-inputs', '8', '--concurrency', '2'),
  '--out',
  out,
  '--json',
];

async function filesIn(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const spilled = await readdir(join(dir, '_spill')).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith('.parquet')).length + spilled.length;
}

describe('crashes', () => {
  it('three SIGKILLs at random moments re-pay under 2% of the inputs', { timeout: 120_000 }, async () => {
    const out = join(root, 'killed');
    const versionDir = join(root, 'killed.versions', 'v000001');
    const rand = seeded(7);
    const before = emulator.stats.inputs;
    let kills = 0;
    for (let attempt = 0; attempt < 3; attempt++) {
      const child = spawnCli(args(out), env());
      // Once it is embedding (a spill segment or a data file is there), at a random moment.
      const started = Date.now();
      while ((await filesIn(versionDir)) === 0 && Date.now() - started < 30_000)
        await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 100 + rand() * 700));
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        kills += 1;
      }
      await child.result;
    }
    const final = await runCli(args(out), env());
    expect(final.code, final.stderr).toBe(0);
    const summary = JSON.parse(final.stdout);
    expect(kills).toBe(3);
    expect(summary.rows).toBe(DOCUMENTS);
    const [read] = await query(
      `SELECT count(*)::INT AS rows, count(DISTINCT id)::INT AS ids FROM read_parquet(${sqlString(join(out, '*.parquet'))})`,
    );
    expect(read).toEqual({ rows: DOCUMENTS, ids: DOCUMENTS });
    // Every input the gateway embedded: the corpus once, and at each kill what was on the wire (2
    // requests of at most 8 inputs) and the answers read but not yet in the spill (a slot goes to the
    // next request as an answer is read: at most 2 more; once 56 against the 48 of the wire alone).
    // No calibration probes: these texts are too short to be evidence (the sizing is still the byte
    // bound).
    expect(summary.sizing).toMatchObject({ basis: 'byte-bound' });
    const sent = emulator.stats.inputs - before;
    const repaid = sent - DOCUMENTS;
    expect(repaid).toBeGreaterThanOrEqual(0);
    expect(repaid / DOCUMENTS).toBeLessThan(0.02);
    expect(repaid).toBeLessThanOrEqual(3 * (2 + 2) * 8);
  });

  it('a disk without room stops the run before it pays for anything (exit 7)', async () => {
    const out = join(root, 'full');
    const before = emulator.stats.requests;
    // More free space than any disk has: the guard must refuse before the first request.
    const result = await runCli(args(out), env({ EMBEDPIPE_MIN_FREE_MB: String(2 ** 40) }));
    expect(result.code, result.stderr).toBe(ExitCode.output);
    expect(result.stdout + result.stderr).toMatch(/free on the file system of .*stops before paying/);
    const requests = emulator.stats.requests - before;
    // The model lookup only: no embeddings request.
    expect(requests).toBeLessThanOrEqual(1);
  });
});
