/**
 * `embedpipe run` as a user runs it: the built CLI in a child process, the emulator over real HTTP
 * with 30% of requests failing, the dataset read back by DuckDB and compared vector by vector.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALIBRATION_PROBES } from '../../src/chunking/calibrate.js';
import {
  EMULATOR_API_KEY,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { runArgs, runCli, SMALL_BATCHES, spawnCli } from '../helpers/cli.js';
import { type HardCorpus, writeHardCsv } from '../helpers/corpus.js';
import { expectExactDataset } from '../helpers/dataset-checks.js';
import { readDataset } from '../helpers/duckdb.js';
import {
  INDEPENDENT_DIMS,
  INDEPENDENT_KEY,
  INDEPENDENT_MODEL,
  INDEPENDENT_TOKEN_LIMIT,
  independentVector,
  startIndependentGateway,
} from '../helpers/independent-gateway.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'emu/embed-small'; // 384 dims, context_length 512 → chunks of at most 460 tokens
const FAULTS = {
  seed: 7,
  probabilities: { 429: 0.1, 500: 0.05, 502: 0.03, 503: 0.03, 529: 0.04, reset: 0.05 },
  retryAfterSeconds: 1,
};

let emulator: RunningEmulator;
const root = await tempFolder('embedpipe-e2e-');
let corpusPath: string;
let corpus: HardCorpus;

beforeAll(async () => {
  emulator = await startEmulator({ faults: FAULTS });
  corpusPath = join(root, 'corpus.csv');
  corpus = await writeHardCsv(corpusPath, 120);
});
afterAll(async () => {
  await emulator.close();
});

/**
 * `run` in small batches, two at a time: many parts, so a run can be stopped half way; every batch
 * committed at once, so a kill mid-run finds many committed files.
 */
const smallBatchRun = (out: string) =>
  runArgs(corpusPath, MODEL, '--out', out, ...SMALL_BATCHES, '--commit-interval', '0');

const env = () => ({ EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY });

/** The emulator's vectors, in chunks of at most 460 tokens. */
const EMULATOR_CHUNKS = { vectorOf: (text: string) => embeddingFor(MODEL, text, 384), maxTokens: 460 };

/** The manifest's `input` of a single file holding `bytes`. */
const fileInput = (path: string, bytes: Buffer) => ({
  path,
  kind: 'file',
  bytes: bytes.length,
  files: 1,
  sha256: createHash('sha256').update(bytes).digest('hex'),
});

describe('embedpipe run', () => {
  it('embeds every valid row exactly, rejects every bad one, and honours every Retry-After', async () => {
    const out = join(root, 'full');
    const result = await runCli(
      runArgs(corpusPath, MODEL, '--out', out, '--max-inputs', '16', '--json'),
      env(),
    );
    expect(result.stderr).not.toContain(EMULATOR_API_KEY);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({
      status: 'done',
      documents: corpus.valid.size,
      rejects: corpus.rejectedLines.length,
    });
    expect(summary.retries).toBeGreaterThan(0);

    expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_CHUNKS);
    expect(emulator.stats.retryAfterViolations).toEqual({});

    const rejects = (await readFile(join(out, '_rejects.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rejects.map((r) => r.line).sort((a, b) => a - b)).toEqual(corpus.rejectedLines);
    for (const reject of rejects) expect(reject.reason).toEqual(expect.any(String));

    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    const parts = (await readdir(out)).filter((f) => f.endsWith('.parquet')).sort();
    expect(manifest).toMatchObject({ model: MODEL, dims: 384, files: parts });
    expect(manifest.counts).toMatchObject({
      documents: corpus.valid.size,
      rejects: corpus.rejectedLines.length,
    });
    // Its malformed records sent the CSV reader back to the file's start: a whole read all the same.
    expect(manifest.input).toEqual(fileInput(corpusPath, await readFile(corpusPath)));
  });

  it('records the input as planning read it: the file is not read again at the switch', async () => {
    const slow = await startEmulator({ faults: { latencyMs: 40 } });
    try {
      const input = join(root, 'read-once.jsonl');
      const texts = ['漢字かな', '👩‍👩‍👧 and 🇯🇵', 'مرحبا', 'e\u0301\u0323', 'x'.repeat(300)];
      const lines = Array.from({ length: 160 }, (_, i) =>
        JSON.stringify({ id: `d${i}`, text: `${texts[i % 5]} ${i}` }),
      );
      const bytes = Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n`);
      await writeFile(input, bytes);
      const out = join(root, 'read-once');
      const envSlow = { EMBEDPIPE_BASE_URL: slow.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY };
      const running = spawnCli(
        [...runArgs(input, MODEL, '--out', out, ...SMALL_BATCHES, '--commit-interval', '0'), '--json'],
        envSlow,
      );
      // Once batches are committed, the file (one read of it, well under a read's size) was read
      // whole; it is moved away before the switch.
      const building = join(`${out}.versions`, 'v000001');
      while ((await readdir(building).catch(() => [])).filter((f) => f.endsWith('.parquet')).length < 2)
        await new Promise((r) => setTimeout(r, 10));
      await rename(input, `${input}.moved`);
      const result = await running.result;
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'done', documents: 160 });
      const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
      expect(manifest.input).toEqual(fileInput(input, bytes));
    } finally {
      await slow.close();
    }
  });

  it('resumes after kill -9: the re-run embeds only what is missing and ends with the same dataset', async () => {
    const slow = await startEmulator({ faults: { latencyMs: 60 } });
    try {
      const out = join(root, 'killed');
      const args = smallBatchRun(out);
      const envSlow = { EMBEDPIPE_BASE_URL: slow.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY };
      const first = spawnCli(args, envSlow);
      // Kill it once a few data files are in the version it is building (readers see nothing yet):
      // mid-run, long before the dataset is switched to that version.
      const building = join(`${out}.versions`, 'v000001');
      for (;;) {
        const files = (await readdir(building).catch(() => [])).filter((f) => f.endsWith('.parquet'));
        if (files.length >= 5) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      first.kill('SIGKILL');
      expect((await first.result).signal).toBe('SIGKILL');
      await expect(readdir(out)).rejects.toThrow();
      const rowsBefore = (await readDataset(building)).length;
      expect(rowsBefore).toBeGreaterThan(0);
      // Requests the killed process had in flight still reach the emulator: let them land first.
      while (slow.stats.inFlight > 0) await new Promise((r) => setTimeout(r, 10));
      const inputsBefore = slow.stats.inputs;

      const second = await runCli([...args, '--json'], envSlow);
      expect(second.code, second.stderr).toBe(0);
      const summary = JSON.parse(second.stdout);
      expect(summary.batches.resumed).toBeGreaterThanOrEqual(5);
      const rows = await readDataset(out);
      expectExactDataset(rows, corpus.valid, EMULATOR_CHUNKS);
      expect(rowsBefore).toBeLessThan(rows.length); // it was killed mid-run
      // Finished batches were not sent again: the re-run paid at most for the rows that were missing
      // (fewer when a batch answered before the kill was in the version's spill: committed unpaid;
      // test/e2e/crash.test.ts counts what the spill saves).
      const paid = slow.stats.inputs - inputsBefore;
      expect(paid).toBeLessThanOrEqual(rows.length - rowsBefore);
      expect(paid).toBeGreaterThanOrEqual(rows.length - rowsBefore - 2 * 8 * 2);
    } finally {
      await slow.close();
    }
  });

  it('stops on exhausted credits with exit 4 and a resume hint; the re-run completes', async () => {
    const key = 'credit-limited-key-0001';
    const limited = await startEmulator({ keys: [{ key, credits: 0.0004 }] });
    try {
      const out = join(root, 'credits');
      const args = smallBatchRun(out);
      const envLimited = { EMBEDPIPE_BASE_URL: limited.baseUrl, EMBEDPIPE_API_KEY: key };
      const stopped = await runCli(args, envLimited);
      expect(stopped.code).toBe(4);
      const line = stopped.stderr.trim().split('\n').at(-1)!;
      expect(line).toMatch(/credits exhausted/);
      expect(line).toContain(`resume with: embedpipe ${args.join(' ')}`);
      expect(stopped.stderr).not.toContain(key);
      // Readers see no dataset yet; the version being built holds what was paid for.
      await expect(readdir(out)).rejects.toThrow();
      const partial = await readDataset(join(`${out}.versions`, 'v000001'));
      expect(partial.length).toBeGreaterThan(0);

      limited.reset({ keys: [{ key, credits: 100 }] });
      const resumed = await runCli(args, envLimited);
      expect(resumed.code, resumed.stderr).toBe(0);
      expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_CHUNKS);
      expect(limited.stats.inputs).toBe((await readDataset(out)).length - partial.length);
    } finally {
      await limited.close();
    }
  });

  it('--dry-run counts documents, chunks, tokens and cost without embedding', async () => {
    const before = emulator.stats.byPath['/embeddings'] ?? 0;
    const r = await runCli(
      ['run', '--input', corpusPath, '--model', MODEL, '--out', join(root, 'dry'), '--dry-run', '--json'],
      env(),
    );
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ status: 'dry-run', documents: corpus.valid.size });
    expect(summary.chunks).toBeGreaterThan(corpus.valid.size);
    expect(Number(summary.costUsd)).toBeGreaterThan(0);
    expect(emulator.stats.byPath['/embeddings'] ?? 0).toBe(before);
    await expect(readdir(join(root, 'dry'))).rejects.toThrow();
  });

  it('--encoding windows-1252 reads a Latin-1 file of a text folder; without it, the reject names it', async () => {
    const folder = join(root, 'latin1');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'utf8.txt'), 'naïve café, in UTF-8');
    await writeFile(join(folder, 'latin1.txt'), Buffer.from('crème brûlée, in Latin-1', 'latin1'));
    const plain = await runCli(
      ['run', '--input', folder, '--model', MODEL, '--out', join(root, 'latin1-plain')],
      env(),
    );
    expect(plain.code, plain.stderr).toBe(0);
    const rejects = await readFile(join(root, 'latin1-plain', '_rejects.jsonl'), 'utf8');
    expect(rejects).toMatch(/latin1\.txt.*it reads as windows-1252: pass --encoding windows-1252/);
    const out = join(root, 'latin1-read');
    const read = await runCli(
      ['run', '--input', folder, '--model', MODEL, '--out', out, '--encoding', 'windows-1252'],
      env(),
    );
    expect(read.code, read.stderr).toBe(0);
    // Every file written by this run, its rows the plan's: checked by digest, no row read.
    expect(read.stderr).toContain('"checked":"by digest"');
    const texts = (await readDataset(out)).map((row) => row.text).sort();
    expect(texts).toEqual(['crème brûlée, in Latin-1', 'naïve café, in UTF-8']);
  });

  it('--dry-run on a new folder with repeated texts: never "already holds", and says its figures are upper bounds', async () => {
    const input = join(root, 'repeats.jsonl');
    const texts = ['the same text', 'the same text', 'another text', 'the same text'];
    await writeFile(input, texts.map((text, i) => JSON.stringify({ id: `r${i}`, text })).join('\n'));
    const args = ['run', '--input', input, '--model', MODEL, '--out', join(root, 'dry-new'), '--dry-run'];
    const human = await runCli(args, env());
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).not.toMatch(/already holds/);
    expect(human.stdout).toMatch(/2 chunks repeat the text of an earlier one: each text is sent once/);
    expect(human.stdout).toMatch(/at most 4 chunks/);
    expect(human.stdout).toMatch(/upper bounds/);
    const json = JSON.parse((await runCli([...args, '--json'], env())).stdout);
    expect(json.toSend).toMatchObject({ chunks: 2, held: 0, repeated: 2 });
  });

  it('writes Arrow IPC files with --output-format arrow (and a 1 MB memory target: collections change nothing written)', async () => {
    const out = join(root, 'arrow');
    const r = await runCli(
      [
        ...['run', '--input', corpusPath, '--model', MODEL, '--out', out, '--output-format', 'arrow'],
        ...['--memory-target', '1'],
      ],
      env(),
    );
    expect(r.code, r.stderr).toBe(0);
    // Any process is past 1 MB: the target collected, at most once a second, and said so.
    const target = r.stderr
      .split('\n')
      .filter((line) => line.includes('memory target'))
      .map((line) => JSON.parse(line) as { targetMb: number; collections: number });
    expect(target).toEqual([expect.objectContaining({ targetMb: 1 })]);
    expect(target[0]!.collections).toBeGreaterThan(0);
    const files = (await readdir(out)).filter((f) => f.endsWith('.arrow'));
    expect(files.length).toBeGreaterThan(0);
    let rows = 0;
    for (const file of files) {
      const table = tableFromIPC(await readFile(join(out, file)));
      rows += table.numRows;
      const text = table.getChild('text')!;
      const embedding = table.getChild('embedding')!;
      for (let i = 0; i < table.numRows; i++) {
        expect(Float32Array.from(embedding.get(i)!)).toEqual(embeddingFor(MODEL, text.get(i) as string, 384));
      }
    }
    expect(rows).toBe((await readDataset(join(root, 'full'))).length);
  });

  it('fails fast with one line and a distinct code on a bad key, an unknown model, a missing input', async () => {
    const cases: Array<[string[], Record<string, string>, number, RegExp]> = [
      [
        ['run', '--input', corpusPath, '--model', MODEL, '--out', join(root, 'x')],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: 'not-a-valid-key-42' },
        3,
        /authentication failed/,
      ],
      [
        ['run', '--input', corpusPath, '--model', 'emu/nope', '--out', join(root, 'x')],
        env(),
        2,
        /unknown embedding model "emu\/nope"/,
      ],
      [
        ['run', '--input', join(root, 'missing.csv'), '--model', MODEL, '--out', join(root, 'x')],
        env(),
        2,
        /input not found/,
      ],
      [
        ['run', '--input', corpusPath, '--model', MODEL],
        { EMBEDPIPE_BASE_URL: emulator.baseUrl },
        3,
        /EMBEDPIPE_API_KEY is not set/,
      ],
      [['run', 'jobs/missing.json'], env(), 2, /job file not found/],
      [['run', '--input', corpusPath, '--model', MODEL, '--concurrency', '0'], env(), 2, /--concurrency/],
    ];
    for (const [args, environment, code, pattern] of cases) {
      const r = await runCli(args, environment);
      const lines = r.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('embedpipe: '));
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(pattern);
      expect(r.code, lines[0]).toBe(code);
      expect(r.stderr).not.toContain('not-a-valid-key-42');
    }
  });

  // ~23 s of its faults' Retry-After waits and re-planned documents: above the default 30 s on a slow day.
  it('works against an independent implementation of the interface, with its own quirks and faults', {
    timeout: 90_000,
  }, async () => {
    const gateway = await startIndependentGateway();
    try {
      const out = join(root, 'independent');
      const r = await runCli(
        runArgs(corpusPath, INDEPENDENT_MODEL, '--out', out, '--max-inputs', '4', '--json'),
        {
          EMBEDPIPE_BASE_URL: gateway.baseUrl,
          EMBEDPIPE_API_KEY: INDEPENDENT_KEY,
        },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toContain(INDEPENDENT_KEY);
      const summary = JSON.parse(r.stdout);
      expect(summary).toMatchObject({ status: 'done', dims: INDEPENDENT_DIMS, failures: 0 });
      expect(Number(summary.costUsd)).toBeGreaterThan(0); // estimated from pricing: this server reports no cost
      const rows = await readDataset(out);
      // No context_length: chunks use the documented fallback budget (8192 less 10%).
      expectExactDataset(rows, corpus.valid, { vectorOf: independentVector, maxTokens: 7372 });
      expect(gateway.stats.faults).toBeGreaterThan(3);
      // Its 400s name a limit of 4000 tokens: the budget learned it, and the rejected documents
      // were re-planned whole.
      expect(gateway.stats.tooLong).toBeGreaterThan(0);
      expect(summary.sizing).toMatchObject({ budgetTokens: Math.floor(INDEPENDENT_TOKEN_LIMIT * 0.9) });
      expect(gateway.violations).toEqual([]);
    } finally {
      await gateway.close();
    }
  });

  it('on Ctrl-C finishes what is in flight, exits 130 with a resume hint, and the re-run completes', async () => {
    const slow = await startEmulator({ faults: { latencyMs: 60 } });
    try {
      const out = join(root, 'interrupted');
      const args = smallBatchRun(out);
      const envSlow = { EMBEDPIPE_BASE_URL: slow.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY };
      const first = spawnCli(args, envSlow);
      const version = join(`${out}.versions`, 'v000001');
      while ((await readdir(version).catch(() => [])).filter((f) => f.endsWith('.parquet')).length < 3) {
        await new Promise((r) => setTimeout(r, 20));
      }
      first.kill('SIGINT');
      const stopped = await first.result;
      expect(stopped.code).toBe(130);
      expect(stopped.stderr).toMatch(/interrupted.*re-run the same command to resume/);
      // Readers still see no dataset; every request the run sent was answered and kept in the
      // version it was building (the first run also sent its calibration probes; the re-run reuses
      // that calibration).
      await expect(readdir(out)).rejects.toThrow();
      const kept = (await readDataset(version)).length;
      expect(slow.stats.inputs).toBe(kept + CALIBRATION_PROBES);
      const second = await runCli(args, envSlow);
      expect(second.code, second.stderr).toBe(0);
      expectExactDataset(await readDataset(out), corpus.valid, EMULATOR_CHUNKS);
      expect(slow.stats.inputs).toBe((await readDataset(out)).length + CALIBRATION_PROBES);
    } finally {
      await slow.close();
    }
  });
});
