/**
 * The dataset contract, as a user meets it: the nightly scenario that gave readers duplicate rows,
 * a version made wrong by hand refused at the switch (readers keep the previous one), and
 * `embedpipe verify` naming the offending ids of a current version made wrong after its switch.
 */
import { cp, readdir, readFile, readlink, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { seeded } from '../chunking/generate.js';
import { runCli } from '../helpers/cli.js';
import { query, readDataset, sqlString } from '../helpers/duckdb.js';
import {
  INDEPENDENT_KEY,
  INDEPENDENT_MODEL,
  type IndependentGateway,
  startIndependentGateway,
} from '../helpers/independent-gateway.js';
import { type Doc, makeDocs, nextNight, writeJsonl } from '../helpers/nightly-corpus.js';
import { appendCopy, type EditableRows, tamperParquet } from '../helpers/tamper.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-contract-');
const MODEL = 'emu/embed-small';
const EMULATOR_ENV = { EMBEDPIPE_API_KEY: 'unused' };
const nightly = (input: string, out: string, ...more: string[]) => [
  'run',
  '--emulator',
  '--input',
  input,
  '--model',
  MODEL,
  '--max-tokens',
  '128',
  '--out',
  out,
  '--json',
  ...more,
];

/** Rows, distinct (id, chunk_index) keys and documents of a dataset folder, read by DuckDB. */
async function shape(dir: string): Promise<{ rows: number; keys: number; documents: number }> {
  const [row] = await query(
    `SELECT count(*)::INT AS rows, count(DISTINCT (id, chunk_index))::INT AS keys, count(DISTINCT id)::INT AS documents
       FROM read_parquet(${sqlString(join(dir, '*.parquet'))})`,
  );
  return row as { rows: number; keys: number; documents: number };
}

/** Whether two dataset folders hold the same rows (ids, chunks, texts, hashes, vectors), each as often. */
async function sameRows(a: string, b: string): Promise<boolean> {
  const columns = 'id, chunk_index, text, content_hash, embedding';
  const rowsOf = (dir: string) => `SELECT ${columns} FROM read_parquet(${sqlString(join(dir, '*.parquet'))})`;
  const [differ] = await query(
    `SELECT (SELECT count(*) FROM (${rowsOf(a)} EXCEPT ALL ${rowsOf(b)}))::INT
          + (SELECT count(*) FROM (${rowsOf(b)} EXCEPT ALL ${rowsOf(a)}))::INT AS n`,
  );
  return differ?.['n'] === 0;
}

/** Two nights of a mixed-script corpus: 5% edited, ~2.5% deleted, ~1% added, a stretch reordered. */
async function twoNights(name: string, count: number, seed: number) {
  const rand = seeded(seed);
  const first = makeDocs(count, rand);
  const second = nextNight(first, rand, 1, 0.05).docs;
  const night1 = join(root, `${name}-1.jsonl`);
  const night2 = join(root, `${name}-2.jsonl`);
  await writeJsonl(night1, first);
  await writeJsonl(night2, second);
  return { first, second, night1, night2 };
}

describe('the nightly scenario', () => {
  it('the second night holds each planned chunk once: no duplicate rows, and verify passes', {
    timeout: 120_000,
  }, async () => {
    const { second, night1, night2 } = await twoNights('nightly', 300, 18);
    const out = join(root, 'nightly');
    const r1 = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(r1.code, r1.stderr).toBe(0);
    const r2 = await runCli(nightly(night2, out), EMULATOR_ENV);
    expect(r2.code, r2.stderr).toBe(0);
    const summary = JSON.parse(r2.stdout);
    const held = await shape(out);
    expect(held.rows).toBe(held.keys);
    expect(held.documents).toBe(second.length);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    // One count of what the version holds, wherever it is read.
    expect(manifest.counts.rows).toBe(held.rows);
    expect(summary.rows).toBe(held.rows);
    expect(summary.chunks).toBe(held.rows + summary.failures);
    expect(manifest.counts.chunks).toBe(summary.chunks);
    expect(manifest.contract.documents).toBe(held.documents);
    const verified = await runCli(['verify', out, '--deep', '--json']);
    expect(verified.code, verified.stdout).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({
      ok: true,
      rows: held.rows,
      documents: held.documents,
    });
  });

  it('drops the batches the plan no longer has from the files it links by digest; the same rows as row by row', {
    timeout: 120_000,
  }, async () => {
    const { night1, night2 } = await twoNights('by-batch', 300, 41);
    const out = join(root, 'by-batch');
    const r1 = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(r1.code, r1.stderr).toBe(0);
    // The same dataset, its first version made to look like an older build's (no file records):
    // its next version is checked row by row.
    const rows = join(root, 'by-rows');
    await cp(`${out}.versions`, `${rows}.versions`, { recursive: true });
    await symlink(join('by-rows.versions', 'v000001'), rows);
    const first = join(`${rows}.versions`, 'v000001', '_manifest.json');
    const manifest = JSON.parse(await readFile(first, 'utf8'));
    delete manifest.contract.fileDigests;
    await writeFile(first, JSON.stringify(manifest));

    const byDigest = await runCli(nightly(night2, out), EMULATOR_ENV);
    expect(byDigest.code, byDigest.stderr).toBe(0);
    expect(byDigest.stderr).toContain('"checked":"by digest"');
    expect(byDigest.stderr).toContain('dropped the batches this plan no longer has');
    const byRows = await runCli(nightly(night2, rows), EMULATOR_ENV);
    expect(byRows.code, byRows.stderr).toBe(0);
    expect(byRows.stderr).toContain('"checked":"row by row"');
    expect(JSON.parse(byDigest.stdout).changes).toEqual(JSON.parse(byRows.stdout).changes);
    expect(await sameRows(out, rows)).toBe(true);
    const held = await shape(out);
    expect(held.rows).toBe(held.keys);
    const verified = await runCli(['verify', out, '--deep', '--json']);
    expect(verified.code, verified.stdout).toBe(0);
    // Readers of the previous version still see it whole: the files it shares were not touched.
    const previous = await runCli(['verify', out, '--version', 'v000001', '--deep', '--json']);
    expect(previous.code, previous.stdout).toBe(0);
  });
});

describe('a nightly packs its batches in step with the version it replaces', () => {
  it('an edit that adds chunks near the start moves no later batch: they are carried, not written again', {
    timeout: 120_000,
  }, async () => {
    const rand = seeded(53);
    const first = makeDocs(300, rand);
    const second = first.map((doc, i) =>
      i === 5
        ? {
            ...doc,
            text: `${doc.text}\n\n${'A paragraph added tonight, long enough for chunks of its own. '.repeat(12)}`,
          }
        : doc,
    );
    const night1 = join(root, 'starts-1.jsonl');
    const night2 = join(root, 'starts-2.jsonl');
    await writeJsonl(night1, first);
    await writeJsonl(night2, second);
    const out = join(root, 'starts');
    const r1 = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(r1.code, r1.stderr).toBe(0);
    const starts = (await readFile(join(out, '_batch-starts.jsonl'), 'utf8')).trim().split('\n');
    expect(JSON.parse(starts[0]!)).toMatchObject({ model: MODEL });
    expect(starts.length - 1).toBe(JSON.parse(r1.stdout).batches.planned);
    // The same dataset without its starts (an older build's version): packed as before.
    const without = join(root, 'no-starts');
    await cp(`${out}.versions`, `${without}.versions`, { recursive: true });
    await symlink(join('no-starts.versions', 'v000001'), without);
    await rm(join(`${without}.versions`, 'v000001', '_batch-starts.jsonl'));

    const inStep = await runCli(nightly(night2, out), EMULATOR_ENV);
    expect(inStep.code, inStep.stderr).toBe(0);
    const moved = await runCli(nightly(night2, without), EMULATOR_ENV);
    expect(moved.code, moved.stderr).toBe(0);
    const a = JSON.parse(inStep.stdout);
    const b = JSON.parse(moved.stdout);
    expect(a.changes).toMatchObject({ added: 0, changed: 1, deleted: 0 });
    expect(b.changes).toEqual(a.changes);
    // Without the starts every batch from the edit on was packed again (its vectors reused);
    // with them, the batches around the edit only.
    expect(b.batches.embedded).toBeGreaterThan(b.batches.planned / 2);
    expect(a.batches.embedded).toBeLessThanOrEqual(3);
    expect(a.batches.resumed).toBeGreaterThanOrEqual(a.batches.planned - 3);
    expect(await sameRows(out, without)).toBe(true);
    const verified = await runCli(['verify', out, '--deep', '--json']);
    expect(verified.code, verified.stdout).toBe(0);
  });
});

/** Data files of `dir` that are not hard links of a file in `other` (written by the run building `dir`). */
async function ownFiles(dir: string, other: string): Promise<string[]> {
  const inodes = new Set(
    await Promise.all((await readdir(other)).map(async (name) => (await stat(join(other, name))).ino)),
  );
  const own: string[] = [];
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.parquet'))) {
    if (!inodes.has((await stat(join(dir, name))).ino)) own.push(name);
  }
  return own;
}

describe('a re-run sums the files it links from a checked version, and trusts no file that changed', () => {
  let night1 = '';
  beforeAll(async () => {
    night1 = (await twoNights('linked', 120, 29)).night1;
  });
  const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, '_manifest.json'), 'utf8'));
  const dataFiles = async (dir: string) => (await readdir(dir)).filter((n) => n.endsWith('.parquet')).sort();

  it("records every file's rows at the switch; the same corpus again is checked by digest, no row read", {
    timeout: 120_000,
  }, async () => {
    const out = join(root, 'linked');
    const first = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(first.code, first.stderr).toBe(0);
    const recorded = (await manifestOf(out)).contract.fileDigests;
    expect(Object.keys(recorded).sort()).toEqual(await dataFiles(out));
    for (const file of await dataFiles(out))
      expect(recorded[file]).toMatchObject({ bytes: (await stat(join(out, file))).size });
    const again = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).changes).toMatchObject({ added: 0, changed: 0, deleted: 0 });
    // Every file is linked from v000001, none written by this run: summed from its record.
    expect(again.stderr).toContain('"checked":"by digest"');
    expect(await readlink(out)).toBe(join('linked.versions', 'v000002'));
    expect((await manifestOf(out)).contract.fileDigests).toEqual(recorded);
    const verified = await runCli(['verify', out, '--json']);
    expect(verified.code, verified.stdout).toBe(0);
  });

  it('a linked file edited in place (both versions see it) is read row by row, and refused', {
    timeout: 120_000,
  }, async () => {
    const out = join(root, 'linked-edited');
    expect((await runCli(nightly(night1, out), EMULATOR_ENV)).code).toBe(0);
    let duplicated = '';
    const file = (await dataFiles(out))[0]!;
    await tamperParquet(
      join(out, file),
      (rows) => {
        duplicated = rows.ids[0]!;
        appendCopy(rows, 0);
      },
      { inPlace: true },
    );
    const again = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(again.code, again.stderr).toBe(5);
    expect(again.stderr).toContain('[chunk-index]');
    expect(again.stderr).toContain(duplicated);
    expect(await readlink(out)).toBe(join('linked-edited.versions', 'v000001'));
    // verify names the file: its size and its rows are not those its switch recorded.
    const report = JSON.parse((await runCli(['verify', out, '--json'])).stdout);
    const manifestViolations = (
      report.violations as { check: string; message: string; ids: string[] }[]
    ).filter((v) => v.check === 'manifest');
    expect(manifestViolations.map((v) => v.message)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/size is not the one the switch recorded/),
        expect.stringMatching(/rows are not the ones the switch recorded/),
      ]),
    );
    expect(manifestViolations.flatMap((v) => v.ids)).toContain(file);
  });

  it("a recorded digest that is not the file's is not believed: the re-run reads the rows, verify names the file", {
    timeout: 120_000,
  }, async () => {
    const out = join(root, 'linked-misrecorded');
    expect((await runCli(nightly(night1, out), EMULATOR_ENV)).code).toBe(0);
    const file = (await dataFiles(out))[0]!;
    const manifestPath = join(await realpath(out), '_manifest.json');
    const manifest = await manifestOf(out);
    const record = manifest.contract.fileDigests[file];
    record.digest = `${record.digest.slice(0, 15)}${record.digest.endsWith('0') ? '1' : '0'}`;
    await writeFile(manifestPath, JSON.stringify(manifest, null, 2));
    const report = JSON.parse((await runCli(['verify', out, '--json'])).stdout);
    expect(report.ok).toBe(false);
    expect(report.violations).toEqual([
      expect.objectContaining({
        check: 'manifest',
        message: expect.stringMatching(/rows are not the ones the switch recorded/),
        ids: [file],
      }),
    ]);
    // The sums differ from the plan's: the switch reads the rows, which are sound, and switches.
    const again = await runCli(nightly(night1, out), EMULATOR_ENV);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('"checked":"row by row"');
    expect((await manifestOf(out)).contract.fileDigests[file].digest).not.toBe(record.digest);
  });
});

describe('a version made wrong by hand is refused at the switch', () => {
  const tampers = {
    'a duplicated row': (rows: EditableRows) => {
      appendCopy(rows, 0);
      return { id: rows.ids[0]!, check: 'chunk-index' };
    },
    'a row of a deleted document': (rows: EditableRows) => {
      appendCopy(rows, 0, 'deleted-doc');
      return { id: 'deleted-doc', check: 'planned-rows' };
    },
    'a text edited in a file': (rows: EditableRows) => {
      const last = rows.texts.length - 1;
      rows.texts[last] = `${rows.texts[last]} (edited)`;
      return { id: rows.ids[last]!, check: 'content-hash' };
    },
  };

  for (const [what, tamper] of Object.entries(tampers)) {
    it(`${what}: exit 5 naming the check and the id; readers keep the previous version`, {
      timeout: 120_000,
    }, async () => {
      const name = what.replace(/\W+/g, '-');
      const { night1, night2 } = await twoNights(name, 60, 7);
      const out = join(root, name);
      expect((await runCli(nightly(night1, out), EMULATOR_ENV)).code).toBe(0);
      // The second night stopped half way by its cost cap: its version holds some batches.
      const dry = await runCli([...nightly(night2, out), '--dry-run'], EMULATOR_ENV);
      const cap = (Number(JSON.parse(dry.stdout).toSend.costUsd) / 2).toFixed(10);
      const stopped = await runCli([...nightly(night2, out), '--max-cost', cap], EMULATOR_ENV);
      expect(stopped.code, stopped.stderr).toBe(9);
      const v1 = join(`${out}.versions`, 'v000001');
      const v2 = join(`${out}.versions`, 'v000002');
      const own = await ownFiles(v2, v1);
      expect(own.length).toBeGreaterThan(0);
      let expected = { id: '', check: '' };
      await tamperParquet(join(v2, own[0]!), (rows) => {
        expected = tamper(rows);
      });

      const resumed = await runCli(nightly(night2, out), EMULATOR_ENV);
      expect(resumed.code, resumed.stderr).toBe(5);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'stopped', stop: { exitCode: 5 } });
      expect(resumed.stderr).toContain(`[${expected.check}]`);
      expect(resumed.stderr).toContain(expected.id);
      expect(await readlink(out)).toBe(join(`${name}.versions`, 'v000001'));
      expect(await readdir(v2)).not.toContain('_manifest.json');
    });
  }
});

describe('embedpipe verify', () => {
  let out: string;
  let night2: string;
  beforeAll(async () => {
    const nights = await twoNights('verify', 60, 3);
    night2 = nights.night2;
    out = join(root, 'verify');
    expect((await runCli(nightly(nights.night1, out), EMULATOR_ENV)).code).toBe(0);
    expect((await runCli(nightly(night2, out), EMULATOR_ENV)).code).toBe(0);
  });

  /** The current version's first data file, tampered (a new inode: v000001's links keep theirs). */
  async function tamperCurrent(edit: Parameters<typeof tamperParquet>[1]): Promise<void> {
    const file = (await readdir(out)).filter((n) => n.endsWith('.parquet')).sort()[0]!;
    await tamperParquet(join(out, file), edit);
  }

  it('passes a sound version, fast and deep, with JSON for scripts', async () => {
    const fast = await runCli(['verify', out, '--json']);
    expect(fast.code, fast.stdout).toBe(0);
    const report = JSON.parse(fast.stdout);
    // Sound: its rows sum to what the switch recorded, read a file at a time.
    expect(report).toMatchObject({ ok: true, deep: false, checked: 'by digest', violations: [] });
    expect(report.rows).toBe((await shape(out)).rows);
    const deep = await runCli(['verify', out, '--deep']);
    expect(deep.code, deep.stdout).toBe(0);
    expect(deep.stdout).toContain('ok: the version keeps the dataset contract');
    // `--version vN` after the command is verify's, not the program's (which printed the tool's
    // version and exited 0 without checking anything).
    const older = await runCli(['verify', out, '--version', 'v000001']);
    expect(older.code, older.stdout).toBe(0);
    expect(older.stdout).toContain('v000001');
    expect(older.stdout).toContain('ok: the version keeps the dataset contract');
  });

  it('names the ids of a duplicated row, a row of an unknown document and an edited text; datasets --switch refuses the version', {
    timeout: 60_000,
  }, async () => {
    let duplicated = '';
    let edited = '';
    await tamperCurrent((rows) => {
      duplicated = rows.ids[1]!;
      appendCopy(rows, 1);
      appendCopy(rows, 2, 'ghost-doc');
      edited = rows.ids[0]!;
      rows.texts[0] = `${rows.texts[0]}!`;
    });
    const fast = await runCli(['verify', out, '--json']);
    expect(fast.code).toBe(5);
    const report = JSON.parse(fast.stdout);
    expect(report.ok).toBe(false);
    // The sums differ: the rows are grouped, which names the ids.
    expect(report.checked).toBe('row by row');
    const byCheck = (check: string) =>
      (report.violations as { check: string; ids: string[] }[])
        .filter((v) => v.check === check)
        .flatMap((v) => v.ids);
    expect(byCheck('chunk-index')).toContain(duplicated);
    expect(byCheck('recorded-rows')).toContain('ghost-doc');
    expect(
      (report.violations as { check: string; message: string }[]).some(
        (v) => v.check === 'manifest' && /the manifest counts \d+ rows, the files hold \d+/.test(v.message),
      ),
    ).toBe(true);
    // A text edited with its hash kept is found by --deep (fast reads no text).
    expect(byCheck('content-hash')).toEqual([]);
    const deep = await runCli(['verify', out, '--deep']);
    expect(deep.code).toBe(5);
    expect(deep.stdout).toMatch(new RegExp(`FAIL \\[content-hash\\] 1 rows[^\\n]*${edited}`));

    // Rolled forward to v000001 and back: the broken version is refused, the link stays.
    const current = await readlink(out);
    expect((await runCli(['datasets', out, '--switch', 'v000001'])).code).toBe(0);
    const back = await runCli(['datasets', out, '--switch', 'v000002']);
    expect(back.code).toBe(5);
    expect(back.stderr).toContain('ghost-doc');
    expect(await readlink(out)).not.toBe(current);
  });
});

describe('embedpipe verify --sample', () => {
  let gateway: IndependentGateway;
  let emulator: RunningEmulator;
  beforeAll(async () => {
    gateway = await startIndependentGateway();
    // Another model behind the same name and dims: what a gateway that swapped models would answer.
    emulator = await startEmulator({
      recordRequests: false,
      models: [
        {
          id: INDEPENDENT_MODEL,
          dims: 48,
          contextLength: 8192,
          overLong: 'reject',
          pricePerToken: '0.0000001',
          providers: ['alpha'],
        },
      ],
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await emulator?.close();
  });

  it('re-embeds random rows: the same gateway passes, another model behind the same name is named', {
    timeout: 60_000,
  }, async () => {
    const docs: Doc[] = makeDocs(12, seeded(5));
    const input = join(root, 'sample.jsonl');
    await writeJsonl(input, docs);
    const out = join(root, 'sample');
    const env = { EMBEDPIPE_BASE_URL: gateway.baseUrl, EMBEDPIPE_API_KEY: INDEPENDENT_KEY };
    const run = await runCli(['run', '--input', input, '--model', INDEPENDENT_MODEL, '--out', out], env);
    expect(run.code, run.stderr).toBe(0);
    const same = await runCli(['verify', out, '--sample', '8', '--json'], env);
    expect(same.code, same.stdout + same.stderr).toBe(0);
    expect(JSON.parse(same.stdout).sample).toMatchObject({ rows: 8 });
    const swapped = await runCli(['verify', out, '--sample', '8', '--json'], {
      EMBEDPIPE_BASE_URL: emulator.baseUrl,
      EMBEDPIPE_API_KEY: EMULATOR_API_KEY,
    });
    expect(swapped.code).toBe(5);
    const report = JSON.parse(swapped.stdout);
    expect(report.violations).toHaveLength(1);
    expect(report.violations[0].check).toBe('sample');
    expect(report.violations[0].message).toMatch(/^8 of 8 sampled rows embed differently/);
    expect((await readDataset(out)).map((r) => r.id)).toEqual(
      expect.arrayContaining(report.violations[0].ids),
    );
  });
});
