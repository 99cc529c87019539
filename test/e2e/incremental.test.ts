/**
 * Nightly runs as a user runs them (the built CLI, DuckDB reading the folder): a second run over a
 * changed corpus sends only the changed and new chunks, counted at an independent server, and its
 * dataset equals a fresh full run's row for row; duplicate texts are sent once; the dataset is a
 * link to its current version, switched atomically, so a stopped or killed run leaves readers on
 * the previous version; a model switch builds a separate version; one run at a time (exit 8).
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_CALIBRATION_PROBES } from '../../src/chunking/calibrate.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { runArgs, runCli, SMALL_BATCHES, spawnCli } from '../helpers/cli.js';
import { longDocument, seeded } from '../helpers/corpus.js';
import { comparable } from '../helpers/dataset-checks.js';
import { readDataset } from '../helpers/duckdb.js';
import {
  INDEPENDENT_KEY,
  INDEPENDENT_MODEL,
  type IndependentGateway,
  independentVector,
  startIndependentGateway,
} from '../helpers/independent-gateway.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-incremental-');

interface Doc {
  id: string;
  text: string;
}

/** `count` documents of 1–4 paragraphs; every 33rd repeats an earlier document's text under its own id. */
function makeCorpus(count: number, seed: number): Doc[] {
  const rand = seeded(seed);
  const docs: Doc[] = [];
  for (let i = 0; i < count; i++) {
    const text = i % 33 === 32 ? docs[i - 17]!.text : longDocument(rand, 1 + Math.floor(rand() * 4));
    docs.push({ id: `doc-${String(i).padStart(4, '0')}`, text });
  }
  return docs;
}

async function writeJsonl(path: string, docs: readonly Doc[]): Promise<void> {
  await writeFile(path, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
}

describe('nightly incremental runs against an independent server', () => {
  let gateway: IndependentGateway;
  beforeAll(async () => {
    gateway = await startIndependentGateway();
  });
  afterAll(async () => {
    await gateway.close();
  });
  const env = () => ({ EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: INDEPENDENT_KEY });
  const nightlyArgs = (input: string, out: string) =>
    runArgs(input, INDEPENDENT_MODEL, '--out', out, '--max-tokens', '200', '--json');

  it('sends only changed and new chunks, equals a fresh run row for row, and sends duplicates once', {
    timeout: 240_000,
  }, async () => {
    const first = makeCorpus(600, 11);
    const firstPath = join(root, 'night-1.jsonl');
    await writeJsonl(firstPath, first);
    const out = join(root, 'nightly');

    const sentBefore = gateway.embedded.length;
    const r1 = await runCli(nightlyArgs(firstPath, out), env());
    expect(r1.code, r1.stderr).toBe(0);
    const s1 = JSON.parse(r1.stdout);
    const rows1 = await readDataset(out);
    // Duplicate texts were embedded once: every distinct chunk text was sent once (the calibration
    // probes, prefixes of the first documents, aside).
    const sent1 = gateway.embedded.slice(sentBefore);
    const probes = s1.sizing.calibration?.probes ?? 0;
    // An ASCII prose window: one wave of probes measures every class it holds.
    expect(probes).toBe(MIN_CALIBRATION_PROBES);
    const distinct = new Set(rows1.map((r) => r.text));
    expect(s1.deduplicated).toBeGreaterThan(0);
    expect(sent1.length - probes).toBe(distinct.size);
    expect(rows1.length).toBeGreaterThan(distinct.size);
    expect(await readlink(out)).toBe(join('nightly.versions', 'v000001'));
    expect((await manifestOf(out)).dataset.chunks).toEqual({
      sent: distinct.size,
      reused: 0,
      deduplicated: rows1.length - distinct.size,
    });

    // The next night: 5% changed, 2% deleted, 1% new, spread through the file.
    const rand = seeded(99);
    const second: Doc[] = [];
    const changed = new Set<string>();
    const deleted = new Set<string>();
    const added = new Set<string>();
    for (const [i, doc] of first.entries()) {
      if (i % 50 === 7) {
        deleted.add(doc.id);
        continue;
      }
      if (i % 20 === 3) {
        changed.add(doc.id);
        second.push({ id: doc.id, text: `${doc.text}\n\n${longDocument(rand, 1)}` });
      } else second.push(doc);
      if (i % 100 === 42) {
        const id = `new-${i}`;
        added.add(id);
        second.push({ id, text: longDocument(rand, 2) });
      }
    }
    const secondPath = join(root, 'night-2.jsonl');
    await writeJsonl(secondPath, second);

    const dry = await runCli([...nightlyArgs(secondPath, out), '--dry-run'], env());
    expect(dry.code, dry.stderr).toBe(0);
    const plannedToSend = JSON.parse(dry.stdout).toSend;
    // What the dry run says the night will change, document by document, is what it changes.
    const plannedChanges = JSON.parse(dry.stdout).changes;

    const sentBefore2 = gateway.embedded.length;
    const r2 = await runCli(nightlyArgs(secondPath, out), env());
    expect(r2.code, r2.stderr).toBe(0);
    const s2 = JSON.parse(r2.stdout);
    const sent2 = gateway.embedded.slice(sentBefore2);
    const rows2 = await readDataset(out);
    // Exactly the chunk texts the first version did not hold, each once.
    const held = new Set(rows1.map((r) => r.text));
    const fresh = new Set(rows2.map((r) => r.text).filter((t) => !held.has(t)));
    expect(new Set(sent2)).toEqual(fresh);
    expect(sent2.length).toBe(fresh.size);
    expect(plannedToSend.chunks).toBe(fresh.size);
    expect(s2.changes).toEqual({
      added: added.size,
      changed: changed.size,
      deleted: deleted.size,
      unchanged: second.length - added.size - changed.size,
    });
    expect(plannedChanges).toEqual(s2.changes);
    expect(s2.version).toMatchObject({ name: 'v000002', current: true, replaces: 'v000001' });
    expect(s2.saved.tokens).toBeGreaterThan(0);
    // The manifest says what was paid for this version: the texts sent, and every other row reused.
    // The 74 new texts of the 13 batches went in one request (19 when each batch sent its own):
    // batches with a few texts left after reuse share requests. Its retries aside: the server's
    // faults go by its call count, which night 1's calibration probes move.
    expect(s2.requests - s2.retries).toBe(1);
    // The dry run said so: 13 batches with texts to send, in one request.
    expect(plannedToSend).toMatchObject({ batches: 13, requests: 1 });
    const chunks2 = (await manifestOf(out)).dataset.chunks;
    expect(chunks2.sent).toBe(sent2.length);
    expect(chunks2.sent + chunks2.reused + chunks2.deduplicated).toBe(rows2.length);
    expect(chunks2.reused).toBeGreaterThan(rows2.length / 2);

    // A fresh full run of the second corpus gives the same dataset, row for row.
    const control = join(root, 'control');
    const r3 = await runCli(nightlyArgs(secondPath, control), env());
    expect(r3.code, r3.stderr).toBe(0);
    expect(comparable(rows2)).toEqual(comparable(await readDataset(control)));
    for (const row of rows2) expect(row.embedding).toEqual(independentVector(row.text));

    // Nothing changed since: a dry run says $0, a run sends nothing.
    const idle = await runCli([...nightlyArgs(secondPath, out), '--dry-run'], env());
    expect(JSON.parse(idle.stdout).toSend).toMatchObject({ chunks: 0, costUsd: '0.0000000000' });
    expect(JSON.parse(idle.stdout).changes).toEqual({
      added: 0,
      changed: 0,
      unchanged: second.length,
      deleted: 0,
    });
    const sentBefore3 = gateway.embedded.length;
    const r4 = await runCli(nightlyArgs(secondPath, out), env());
    expect(r4.code, r4.stderr).toBe(0);
    expect(gateway.embedded.length).toBe(sentBefore3);
    expect(comparable(await readDataset(out))).toEqual(comparable(rows2));
    // Every batch came with the version replaced: none sent, every row reused.
    expect((await manifestOf(out)).dataset.chunks).toEqual({
      sent: 0,
      reused: rows2.length,
      deduplicated: 0,
    });

    // The versions: the default keeps one old version beside the current one.
    const listed = await runCli(['datasets', out, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      JSON.parse(listed.stdout).map((v: { version: string; state: string }) => [v.version, v.state]),
    ).toEqual([
      ['v000002', 'complete'],
      ['v000003', 'current'],
    ]);
    expect(gateway.violations).toEqual([]);
  });
});

describe('a re-run of an unchanged corpus', () => {
  it('sends nothing, even for a script the first run probed lazily (the demo corpus)', async () => {
    const out = join(root, 'demo-again');
    const args = ['run', 'jobs/demo.json', '--out', out, '--json'];
    const first = await runCli(args);
    expect(first.code, first.stderr).toBe(0);
    for (let i = 0; i < 2; i++) {
      const again = await runCli(args);
      expect(again.code, again.stderr).toBe(0);
      const summary = JSON.parse(again.stdout);
      expect(summary.requests).toBe(0);
      expect(summary.changes).toMatchObject({ added: 0, changed: 0, deleted: 0 });
    }
  });
});

describe('a corpus edited before a script it first meets mid-corpus', () => {
  it('re-plans no unchanged document (its epoch is found by id), and equals a fresh run row for row', {
    timeout: 120_000,
  }, async () => {
    const rand = seeded(23);
    const pick = (n: number, from: number, span: number) =>
      Array.from({ length: n }, () => String.fromCharCode(from + Math.floor(rand() * span))).join('');
    const english = () => longDocument(rand, 1);
    // Long paragraphs of English and Chinese: cut at the budget, differently under each epoch's weights.
    const mixed = () =>
      Array.from(
        { length: 12 },
        () => `${longDocument(rand, 1).slice(0, 150)} ${pick(45, 0x4e00, 2000)}。`,
      ).join('\n\n');
    // The probe window (the first 256) holds no Chinese: the first document rich in it is probed
    // lazily, and an epoch starts there.
    const night1: Doc[] = [
      ...Array.from({ length: 300 }, (_, i) => ({ id: `en-${i}`, text: english() })),
      ...Array.from({ length: 20 }, (_, i) => ({ id: `mixed-a${i}`, text: mixed() })),
      { id: 'chinese', text: pick(300, 0x4e00, 2000) },
      ...Array.from({ length: 20 }, (_, i) => ({ id: `mixed-b${i}`, text: mixed() })),
    ];
    // Five documents inserted and two deleted past the window, before the epoch's start.
    const added = Array.from({ length: 5 }, (_, i) => ({ id: `new-${i}`, text: english() }));
    const night2 = [...night1.slice(0, 280), ...added, ...night1.slice(280, 290), ...night1.slice(292)];
    const paths = [join(root, 'script-1.jsonl'), join(root, 'script-2.jsonl')];
    await writeJsonl(paths[0]!, night1);
    await writeJsonl(paths[1]!, night2);
    const args = (input: string, out: string) => [
      'run',
      '--emulator',
      '--input',
      input,
      '--model',
      'emu/embed-small',
      '--out',
      out,
      '--json',
    ];
    const out = join(root, 'script-epochs');

    const r1 = await runCli(args(paths[0]!, out));
    expect(r1.code, r1.stderr).toBe(0);
    const epochs = JSON.parse(await readFile(join(out, '_calibration.json'), 'utf8')).epochs;
    expect(epochs.map((e: { after?: string }) => e.after)).toEqual([undefined, 'mixed-a19']);

    const r2 = await runCli(args(paths[1]!, out));
    expect(r2.code, r2.stderr).toBe(0);
    const s2 = JSON.parse(r2.stdout);
    expect(s2.changes).toEqual({ added: 5, changed: 0, deleted: 2, unchanged: night2.length - 5 });
    const rows = await readDataset(out);
    const sent = (await manifestOf(out)).dataset.chunks.sent;
    expect(sent).toBe(rows.filter((row) => row.id.startsWith('new-')).length);

    const control = join(root, 'script-epochs-fresh');
    const r3 = await runCli(args(paths[1]!, control));
    expect(r3.code, r3.stderr).toBe(0);
    expect(comparable(rows)).toEqual(comparable(await readDataset(control)));
  });
});

describe('versions, stops, locks and model switches', () => {
  let emulator: RunningEmulator;
  let corpusPath: string;
  let docs: Doc[];
  beforeAll(async () => {
    emulator = await startEmulator({ faults: { latencyMs: 40 } });
    docs = makeCorpus(400, 5);
    corpusPath = join(root, 'corpus.jsonl');
    await writeJsonl(corpusPath, docs);
  });
  afterAll(async () => {
    await emulator.close();
  });
  const env = () => ({ EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY });
  const args = (out: string, ...more: string[]) => {
    const model = more.includes('--model') ? more[more.indexOf('--model') + 1]! : 'emu/embed-small';
    const rest = more.filter((_, i) => more[i] !== '--model' && more[i - 1] !== '--model');
    return runArgs(corpusPath, model, '--out', out, ...SMALL_BATCHES, '--json', ...rest);
  };
  const waitForParts = async (dir: string, n: number) => {
    while ((await readdir(dir).catch(() => [])).filter((f) => f.endsWith('.parquet')).length < n) {
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('a stopped or killed run leaves readers on the previous version; the re-run resumes and switches', {
    timeout: 120_000,
  }, async () => {
    const out = join(root, 'switch');
    const r1 = await runCli(args(out), env());
    expect(r1.code, r1.stderr).toBe(0);
    const before = comparable(await readDataset(out));

    // Another plan (overlap): every chunk changes. Ctrl-C: the JSON summary still comes out.
    const next = join(`${out}.versions`, 'v000002');
    const interrupted = spawnCli(args(out, '--overlap', '16', '--commit-interval', '0'), env());
    await waitForParts(next, 2);
    interrupted.kill('SIGINT');
    const stopped = await interrupted.result;
    expect(stopped.code).toBe(130);
    const summary = JSON.parse(stopped.stdout);
    expect(summary).toMatchObject({
      status: 'stopped',
      stop: { exitCode: 130 },
      version: { name: 'v000002', current: false },
    });
    expect(comparable(await readDataset(out))).toEqual(before);

    // SIGKILL: no chance to clean up. Readers still see the first version whole.
    const killed = spawnCli(args(out, '--overlap', '16', '--commit-interval', '0'), env());
    const partsNow = (await readdir(next)).filter((f) => f.endsWith('.parquet')).length;
    await waitForParts(next, partsNow + 2);
    killed.kill('SIGKILL');
    await killed.result;
    expect(comparable(await readDataset(out))).toEqual(before);
    const listed = JSON.parse((await runCli(['datasets', out, '--json'])).stdout);
    expect(listed.map((v: { state: string }) => v.state)).toEqual(['current', 'unfinished']);

    // The killed run's lock is stale (its process is gone): the re-run takes it over at once.
    const resumed = await runCli(args(out, '--overlap', '16'), env());
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).version).toMatchObject({ name: 'v000002', current: true });
    const control = join(root, 'switch-control');
    expect((await runCli(args(control, '--overlap', '16'), env())).code).toBe(0);
    const resumedRows = await readDataset(out);
    expect(comparable(resumedRows)).toEqual(comparable(await readDataset(control)));
    // The attempts' batches count as sent (they were paid for this version), once each.
    const { chunks } = (await manifestOf(out)).dataset;
    expect(chunks.sent + chunks.reused + chunks.deduplicated).toBe(resumedRows.length);
    expect(chunks.sent).toBeGreaterThan(0);

    // Roll back by hand, and forward again.
    const back = await runCli(['datasets', out, '--switch', 'v000001']);
    expect(back.code, back.stderr).toBe(0);
    expect(comparable(await readDataset(out))).toEqual(before);
    expect((await runCli(['datasets', out, '--switch', 'v000002'])).code).toBe(0);
  });

  it('a model switch builds a separate version and leaves the old model readable', async () => {
    const out = join(root, 'models');
    expect((await runCli(args(out), env())).code).toBe(0);
    const small = await readDataset(out);
    const r = await runCli(args(out, '--model', 'emu/embed-large'), env());
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ dims: 1536, version: { name: 'v000002', current: true } });
    const large = await readDataset(out);
    expect(large.every((row) => row.embedding.length === 1536)).toBe(true);
    expect(small.every((row) => row.embedding.length === 384)).toBe(true);
    // The old model's version stays (pruning counts versions of the current model only).
    expect(await readDataset(join(`${out}.versions`, 'v000001'))).toHaveLength(small.length);
    const listed = JSON.parse((await runCli(['datasets', out, '--json'])).stdout);
    expect(listed.map((v: { model: string; dims: number }) => [v.model, v.dims])).toEqual([
      ['emu/embed-small', 384],
      ['emu/embed-large', 1536],
    ]);
  });

  it('refuses a second run on the same output while one runs (exit 8), and takes over a dead holder', async () => {
    const out = join(root, 'locked');
    const first = spawnCli(args(out, '--commit-interval', '0', '--concurrency', '1'), env());
    await waitForParts(join(`${out}.versions`, 'v000001'), 1);
    const second = await runCli(args(out), env());
    expect(second.code).toBe(8);
    expect(second.stderr).toMatch(/another embedpipe run \(process \d+ on .*\) is writing this dataset/);
    expect((await first.result).code).toBe(0);

    // A lock left by a process that is gone (SIGKILL, a crash) does not hold the next run back.
    const dead = spawn(process.execPath, ['-e', '']);
    const pid = dead.pid!;
    await new Promise((r) => dead.on('exit', r));
    const root2 = join(root, 'stale.versions');
    await mkdir(join(root2, '.lock'), { recursive: true });
    await writeFile(
      join(root2, '.lock-holder.json'),
      JSON.stringify({ pid, host: hostname(), startedAt: new Date().toISOString() }),
    );
    const after = await runCli(args(join(root, 'stale')), env());
    expect(after.code, after.stderr).toBe(0);
  });

  it('--max-cost stops before spending more (exit 9), says what is left, and a re-run finishes', async () => {
    const out = join(root, 'capped');
    const spentBefore = emulator.stats.inputs;
    const capped = await runCli(args(out, '--max-cost', '0.0005'), env());
    expect(capped.code, capped.stderr).toBe(9);
    expect(capped.stderr).toMatch(/max-cost/);
    const summary = JSON.parse(capped.stdout);
    expect(summary.status).toBe('stopped');
    expect(Number(summary.costUsd)).toBeLessThanOrEqual(0.0005);
    expect(summary.remaining.chunks).toBeGreaterThan(0);
    await expect(readdir(out)).rejects.toThrow(); // no version is current yet
    const sent = emulator.stats.inputs - spentBefore;

    const done = await runCli(args(out), env());
    expect(done.code, done.stderr).toBe(0);
    const rows = await readDataset(out);
    const resumed = JSON.parse(done.stdout);
    // The re-run sent what was left, and nothing the capped run had paid for.
    expect(emulator.stats.inputs - spentBefore - sent).toBe(summary.remaining.chunks);
    expect(new Set(rows.map((r) => r.id)).size).toBe(docs.length);
    expect(resumed.status).toBe('done');
  });
});

async function manifestOf(
  out: string,
): Promise<{ dataset: { chunks: { sent: number; reused: number; deduplicated: number } } }> {
  return JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
}
