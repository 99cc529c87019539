/**
 * Documents a run re-planned (an epoch it opened mid-run left chunks it had planned over the new
 * envelope) across nights: the calibration records them, the next night plans them so from the
 * start, and every version equals a fresh run given its calibration row for row, however the
 * batches that re-planned them change. A version written before re-plans were recorded (its
 * calibration without them) is carried soundly too.
 */
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { runCli } from '../helpers/cli.js';
import { longDocument, seeded } from '../helpers/corpus.js';
import { comparable, freshOutputGiven } from '../helpers/dataset-checks.js';
import { readDataset } from '../helpers/duckdb.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-nightly-replans-');

interface Doc {
  id: string;
  text: string;
}

const writeJsonl = (path: string, docs: readonly Doc[]) =>
  writeFile(path, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');

interface Calibration {
  epochs: unknown[];
  replans?: { ids: string[] }[];
}
const calibrationOf = async (out: string): Promise<Calibration> =>
  JSON.parse(await readFile(join(out, '_calibration.json'), 'utf8'));

describe('re-planned documents across nights', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator();
  });
  afterAll(async () => {
    await emulator.close();
  });
  const env = () => ({ EMBEDPIPE_BASE_URL: emulator.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY });
  const run = (input: string, out: string, options: readonly string[]) =>
    runCli(
      ['run', '--input', input, '--model', 'emu/embed-small', '--out', out, ...options, '--json'],
      env(),
    );
  // One request at a time, few inputs each: many batches are planned and waiting when the lazy
  // probe's epoch opens, and their documents are re-planned as they go out.
  const WAITING = ['--max-inputs', '8', '--concurrency', '1'];

  /**
   * The folder's version equals a fresh run given its calibration, row for row; verify passes; and a
   * dry run of the same corpus, planned apart from the run's switch, finds every document as it is.
   */
  async function expectAsFresh(out: string, input: string, options: readonly string[], what: string) {
    const verified = await runCli(['verify', out, '--deep'], env());
    expect(verified.code, `${what}: verify --deep: ${verified.stdout}${verified.stderr}`).toBe(0);
    const dry = await run(input, out, [...options, '--dry-run']);
    expect(dry.code, `${what}: the dry run: ${dry.stderr.slice(-2000)}`).toBe(0);
    expect(JSON.parse(dry.stdout).changes, `${what}: the dry run's changes`).toMatchObject({
      added: 0,
      changed: 0,
      deleted: 0,
    });
    const control = await freshOutputGiven(out);
    const fresh = await run(input, control, options);
    expect(fresh.code, `${what}: the fresh run: ${fresh.stderr.slice(-2000)}`).toBe(0);
    const rows = comparable(await readDataset(out));
    const expected = comparable(await readDataset(control));
    expect(rows.length, `${what}: rows against a fresh run`).toBe(expected.length);
    expect(rows, `${what}: row for row against a fresh run`).toEqual(expected);
  }

  /**
   * 300 documents of long English paragraphs (chunks cut near the budget); then, with `terse`, 8 of
   * two-letter words, which the gateway counts above what the probes taught (a token a word): the
   * first answer holding them refits the envelope, and the documents planned and waiting are
   * re-planned; then one of Chinese, met past the probe window (the first 256 documents), so probed lazily; then
   * `after` more English. `script(from)`: 600 random characters of the 2,000 from code point `from`.
   */
  function corpus(seed: number, after: number, { terse: withTerse = false } = {}) {
    const rand = seeded(seed);
    const english = () => longDocument(rand, 6);
    const script = (from: number) =>
      Array.from({ length: 600 }, () => String.fromCharCode(from + Math.floor(rand() * 2000))).join('');
    const letter = () => String.fromCharCode(0x61 + Math.floor(rand() * 26));
    const terse = () => Array.from({ length: 300 }, () => letter() + letter()).join(' ');
    const docs: Doc[] = [
      ...Array.from({ length: 300 }, (_, i) => ({ id: `en-${i}`, text: english() })),
      ...(withTerse ? Array.from({ length: 8 }, (_, i) => ({ id: `terse-${i}`, text: terse() })) : []),
      { id: 'chinese', text: script(0x4e00) },
      ...Array.from({ length: after }, (_, i) => ({ id: `after-${i}`, text: english() })),
    ];
    return { docs, english, script };
  }

  /**
   * Two nights that re-plan inside shared requests: `corpus(43, 60)`, then the same edited all
   * through (batches with a text or two to send share requests) with terse documents mid-corpus,
   * whose answer opens an epoch that re-plans documents waiting in other batches.
   */
  function sharedReplanNights(): [Doc[], Doc[]] {
    const { docs: night1 } = corpus(43, 60);
    const rand = seeded(7);
    const letter = () => String.fromCharCode(0x61 + Math.floor(rand() * 26));
    const terse = () => Array.from({ length: 300 }, () => letter() + letter()).join(' ');
    const edited = night1.map((d, i) => (i % 37 === 3 ? { id: d.id, text: `${d.text} Edited.` } : d));
    const terseDocs = Array.from({ length: 8 }, (_, i) => ({ id: `terse-${i}`, text: terse() }));
    return [night1, [...edited.slice(0, 120), ...terseDocs, ...edited.slice(120)]];
  }

  it('records each re-plan, plans it so the next night, and equals a fresh run given the calibration', {
    timeout: 180_000,
  }, async () => {
    const { docs: night1, english } = corpus(41, 30, { terse: true });
    const paths = [1, 2, 3].map((n) => join(root, `night-${n}.jsonl`));
    await writeJsonl(paths[0]!, night1);
    const out = join(root, 'dataset');
    const r1 = await run(paths[0]!, out, WAITING);
    expect(r1.code, r1.stderr).toBe(0);
    const first = await calibrationOf(out);
    expect(first.epochs.length).toBeGreaterThan(1);
    const replanned = (first.replans ?? []).flatMap((r) => r.ids);
    expect(replanned.length, 'documents re-planned in the first night').toBeGreaterThan(0);
    await expectAsFresh(out, paths[0]!, WAITING, 'night 1');

    // Night 2: the document before each re-planned one edited, another deleted: the batches that
    // re-planned them change, the batches after them do not.
    const touched = new Set(replanned.map((id) => night1[night1.findIndex((d) => d.id === id) - 1]?.id));
    const night2 = night1
      .filter((d) => d.id !== 'en-5')
      .map((d) => (touched.has(d.id) ? { id: d.id, text: `${d.text}\n\nEdited: ${english()}` } : d));
    await writeJsonl(paths[1]!, night2);
    // The same night from a copy whose calibration records no re-plan (written before they were).
    const legacy = join(root, 'legacy');
    await cp(`${out}.versions`, `${legacy}.versions`, { recursive: true, verbatimSymlinks: true });
    await symlink('legacy.versions/v000001', legacy);
    const version = join(`${legacy}.versions`, 'v000001', '_calibration.json');
    const { replans: _dropped, ...older } = await calibrationOf(legacy);
    await writeFile(version, JSON.stringify(older));

    const r2 = await run(paths[1]!, out, WAITING);
    expect(r2.code, r2.stderr).toBe(0);
    const s2 = JSON.parse(r2.stdout);
    expect(s2.changes).toMatchObject({ deleted: 1, changed: touched.size, added: 0 });
    await expectAsFresh(out, paths[1]!, WAITING, 'night 2');

    const r2legacy = await run(paths[1]!, legacy, WAITING);
    expect(r2legacy.code, r2legacy.stderr).toBe(0);
    const verified = await runCli(['verify', legacy, '--deep'], env());
    expect(verified.code, `the older version's night: ${verified.stdout}${verified.stderr}`).toBe(0);
    expect(comparable(await readDataset(legacy))).toEqual(comparable(await readDataset(out)));

    // Night 3, unchanged: nothing sent, every re-plan still recorded (none of the deleted one).
    await writeJsonl(paths[2]!, night2);
    const r3 = await run(paths[2]!, out, WAITING);
    expect(r3.code, r3.stderr).toBe(0);
    expect(JSON.parse(r3.stdout).requests).toBe(0);
    const kept = ((await calibrationOf(out)).replans ?? []).flatMap((r) => r.ids).sort();
    expect(kept).toEqual(replanned.filter((id) => id !== 'en-5').sort());
  });

  it('keeps a document whole when the request that re-planned it was shared, and its host changes', {
    timeout: 180_000,
  }, async () => {
    const { docs: night1, script } = corpus(43, 20);
    // Each night, documents edited all through the corpus: a batch has a text or two to send, and
    // shares a request with others (send-pool.ts), whose first batch holds what it re-planned.
    const edited = (docs: readonly Doc[], offset: number) =>
      docs.map((d, i) => (i % 37 === offset ? { id: d.id, text: `${d.text} Edited ${offset}.` } : d));
    const night3 = edited(edited(night1, 3), 7);
    // The fourth also meets Korean mid-corpus: an epoch it opens moves the Korean weight alone.
    const night4 = [...night3.slice(0, 150), { id: 'korean', text: script(0xac00) }, ...night3.slice(150)];
    const nights = [night1, edited(night1, 3), night3, night4];
    const out = join(root, 'shared');
    // Requests of up to 128 inputs: a nightly batch with a few texts to send shares one.
    const SHARED = ['--max-tokens', '256'];
    let summary = '';
    for (const [n, docs] of nights.entries()) {
      const path = join(root, `shared-${n + 1}.jsonl`);
      await writeJsonl(path, docs);
      const result = await run(path, out, SHARED);
      summary = result.stdout;
      expect(result.code, `night ${n + 1}: ${result.stderr}`).toBe(0);
      await expectAsFresh(out, path, SHARED, `night ${n + 1}`);
    }
    // The Korean night re-cut nothing it did not change (a refit once moved every weight).
    expect(JSON.parse(summary).changes).toEqual({ added: 1, changed: 0, deleted: 0, unchanged: 321 });
  });

  it("drops a document's earlier re-plan from the batch that held it once the document is edited or deleted, and takes it anew when added again", {
    timeout: 240_000,
  }, async () => {
    const [night1, night2] = sharedReplanNights();
    const out = join(root, 'earlier-replans');
    const night = async (n: number, docs: readonly Doc[]) => {
      const path = join(root, `earlier-${n}.jsonl`);
      await writeJsonl(path, docs);
      const result = await run(path, out, WAITING);
      expect(result.code, `night ${n}: ${result.stderr}`).toBe(0);
      await expectAsFresh(out, path, WAITING, `night ${n}`);
      if (n > 1) {
        // The version replaced (readers may still hold it) is intact: files with rows dropped were
        // written anew, not changed under it.
        const replaced = `v${String(n - 1).padStart(6, '0')}`;
        const intact = await runCli(['verify', out, '--version', replaced, '--deep'], env());
        expect(intact.code, `night ${n}: ${replaced}: ${intact.stdout}${intact.stderr}`).toBe(0);
      }
      return JSON.parse(result.stdout).changes;
    };
    await night(1, night1);
    await night(2, night2);
    const replanned = new Set(((await calibrationOf(out)).replans ?? []).flatMap((r) => r.ids));
    expect(replanned.size, 'documents re-planned in the second night').toBeGreaterThan(0);
    const others = night2.length - replanned.size;
    // Each change to a re-planned document is seen, and its rows are the ones a fresh run writes.
    const touched = night2.map((d) =>
      replanned.has(d.id) ? { id: d.id, text: `${d.text} More words.` } : d,
    );
    expect(await night(3, touched)).toEqual({
      added: 0,
      changed: replanned.size,
      unchanged: others,
      deleted: 0,
    });
    const without = night2.filter((d) => !replanned.has(d.id));
    expect(await night(4, without)).toEqual({
      added: 0,
      changed: 0,
      unchanged: others,
      deleted: replanned.size,
    });
    expect(await night(5, night2)).toEqual({
      added: replanned.size,
      changed: 0,
      unchanged: others,
      deleted: 0,
    });
  });

  it("resumes a night whose failed batches ended it after a re-plan committed, the re-planned document edited meanwhile: the attempt's rows of it go", {
    timeout: 240_000,
  }, async () => {
    const [night1, night2] = sharedReplanNights();
    const first = join(root, 'attempts-first');
    const paths = [1, 2, 3].map((n) => join(root, `attempts-${n}.jsonl`));
    await writeJsonl(paths[0]!, night1);
    expect((await run(paths[0]!, first, WAITING)).code).toBe(0);
    await writeJsonl(paths[1]!, night2);
    // The second night against a gateway failing one request in five, each batch tried once: it ends
    // with failed batches (exit 5) and an unfinished version. Seeds are tried until its attempt
    // committed a re-plan (which requests fail decides that).
    let out = '';
    let replanned = new Set<string>();
    for (const seed of [5, 6, 7, 8, 9]) {
      out = join(root, `attempts-${seed}`);
      await cp(`${first}.versions`, `${out}.versions`, { recursive: true, verbatimSymlinks: true });
      await symlink(`attempts-${seed}.versions/v000001`, out);
      const faulty = await startEmulator({ faults: { seed, probabilities: { 500: 0.2 } } });
      const attempt = await runCli(
        [
          'run',
          '--input',
          paths[1]!,
          '--model',
          'emu/embed-small',
          '--out',
          out,
          ...WAITING,
          '--max-attempts',
          '1',
        ],
        { EMBEDPIPE_BASE_URL: faulty.baseUrl, EMBEDPIPE_API_KEY: EMULATOR_API_KEY },
      );
      await faulty.close();
      expect(attempt.code, attempt.stderr.slice(-2000)).toBe(5);
      const unfinished = await calibrationOf(join(`${out}.versions`, 'v000002'));
      replanned = new Set((unfinished.replans ?? []).flatMap((r) => r.ids));
      if (replanned.size > 0) break;
    }
    expect(replanned.size, 'an attempt that committed a re-plan').toBeGreaterThan(0);
    // The next night edits the documents the attempt re-planned, and finishes the version.
    const edited = night2.map((d) => (replanned.has(d.id) ? { id: d.id, text: `${d.text} More words.` } : d));
    await writeJsonl(paths[2]!, edited);
    const resumed = await run(paths[2]!, out, WAITING);
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    await expectAsFresh(out, paths[2]!, WAITING, 'the resumed night');
  });
});
