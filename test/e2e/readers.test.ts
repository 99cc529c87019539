/**
 * The output folder as its readers see it (docs/output.md, "Reading the dataset"): every reader's one-line
 * query, run here: DuckDB, apache-arrow and parquet-wasm (the Rust arrow reader). The pyarrow,
 * pandas and Polars lines are not tested: PyPI is not reachable from this project's machines and
 * Debian packages none of pyarrow, Polars or fastparquet (the folder check below is what they
 * rely on: only data files are visible to a reader that skips `_` and `.` names).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type, tableFromIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddingFor } from '../../src/emulator/vectors.js';
import { runCli } from '../helpers/cli.js';
import { query, TEXT_DATASET_COLUMNS } from '../helpers/duckdb.js';

const MODEL = 'emu/embed-small';
const DIMS = 384;

let root: string;
let corpus: string;
const texts = new Map<string, string>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'embedpipe-readers-'));
  corpus = join(root, 'corpus.csv');
  const rows = ['id,text'];
  for (let i = 0; i < 12; i++) {
    const text = `Document ${i}: ${'grüne Äpfel, 東京 and plain words '.repeat(i + 1)}`;
    texts.set(`d${String(i).padStart(2, '0')}`, text);
    rows.push(`d${String(i).padStart(2, '0')},"${text}"`);
  }
  rows.push(',no id: rejected');
  await writeFile(corpus, `${rows.join('\n')}\n`);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function run(out: string, ...extra: string[]) {
  const result = await runCli(
    ['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out, '--max-inputs', '4', ...extra],
    {},
  );
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

/** The SQL of a `duckdb -c "…"` line the summary printed. */
function duckdbSql(line: string | undefined): string {
  const match = /duckdb -c "(.*)"$/.exec(line ?? '');
  if (!match) throw new Error(`not a duckdb hint: ${line}`);
  return match[1]!;
}

/** Names a reader that skips `_`/`.`-prefixed names (pyarrow, pandas, Polars, Spark) sees in `dir`. */
async function visibleNames(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => !name.startsWith('_') && !name.startsWith('.')).sort();
}

describe('the Parquet dataset, as its readers see it', () => {
  let out: string;
  let stdout: string;
  beforeAll(async () => {
    out = join(root, 'parquet');
    stdout = await run(out);
  }, 120_000);

  it('holds only data files besides _-prefixed side files, so a reader given the folder reads only data', async () => {
    const names = await readdir(out);
    expect(names).toEqual(expect.arrayContaining(['_manifest.json', '_rejects.jsonl', '_calibration.json']));
    expect(names).not.toContain('manifest.json');
    expect(names).not.toContain('rejects.jsonl');
    const visible = await visibleNames(out);
    expect(visible.length).toBeGreaterThan(0);
    for (const name of visible) expect(name).toMatch(/^data-.*\.parquet$/);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    expect(manifest.files).toEqual(visible);
    expect(manifest.counts.costUsd).toMatch(/^\d+\.\d{10}$/);
    expect(manifest.input).toMatchObject({ path: corpus, kind: 'file', files: 1 });
    expect(manifest.input.sha256).toBe(
      execFileSync('sha256sum', [corpus], { encoding: 'utf8' }).split(' ')[0],
    );
    expect(manifest.gateway).toMatchObject({
      emulator: true,
      baseUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//),
    });
  });

  it('DuckDB: the docs line and the summary\'s "query it" line read every row', async () => {
    const rows = await query(
      `SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS docs FROM read_parquet('${out}/*.parquet')`,
    );
    expect(rows[0]).toEqual({ n: expect.any(Number), docs: texts.size });
    const lines = stdout.split('\n');
    const hint = lines.find((line) => line.includes('query it:'));
    const sample = await query(duckdbSql(hint));
    expect(sample).toHaveLength(5);
    expect(typeof sample[0]!['text']).toBe('string');
  });

  it('DuckDB: the vector column is FLOAT[]; the nearest-neighbour query casts it to FLOAT[dims] and works', async () => {
    const scan = `read_parquet('${out}/*.parquet')`;
    const types = await query(`SELECT typeof(embedding) AS t FROM ${scan} LIMIT 1`);
    expect(types[0]!['t']).toBe('FLOAT[]');
    await expect(
      query(`SELECT array_cosine_similarity(embedding, embedding) FROM ${scan}`),
    ).rejects.toThrow();

    const hint = stdout.split('\n').find((line) => line.includes('nearest neighbours'));
    expect(hint).toContain(`FLOAT[${DIMS}]`);
    const neighbours = await query(duckdbSql(hint));
    expect(neighbours).toHaveLength(5);
    // The probe is the first chunk (by id, chunk_index): its own row comes first with similarity 1.
    expect(neighbours[0]).toMatchObject({ id: 'd00', chunk_index: 0 });
    expect(neighbours[0]!['score']).toBeCloseTo(1, 5);
    const scores = neighbours.map((row) => row['score'] as number);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);

    // Against vectors computed independently of the pipeline.
    const probe = embeddingFor(MODEL, texts.get('d00')!, DIMS);
    const literal = `[${Array.from(probe).join(',')}]::FLOAT[${DIMS}]`;
    const readme = await query(
      `SELECT id, chunk_index, array_cosine_similarity(embedding::FLOAT[${DIMS}], ${literal}) AS score ` +
        `FROM ${scan} ORDER BY score DESC LIMIT 3`,
    );
    expect(readme[0]).toMatchObject({ id: 'd00', chunk_index: 0 });
    expect(readme[0]!['score']).toBeCloseTo(1, 5);
  });

  it("DuckDB: the docs' own lines (sample and nearest neighbours) run as written", async () => {
    const readme = await readFile('docs/output.md', 'utf8');
    const section = readme.slice(readme.indexOf('## Reading the dataset'));
    const sample = /\| DuckDB \| `duckdb -c "(.*?)"` \|/.exec(section)?.[1];
    expect(sample).toBeDefined();
    expect(await query(sample!.replaceAll('out/docs', out))).toHaveLength(5);
    const block = /\*\*Nearest neighbours in DuckDB\.\*\*[\s\S]*?```sh\nduckdb -c "([\s\S]*?)"\n```/.exec(
      section,
    )?.[1];
    expect(block).toBeDefined();
    const sql = block!
      .replaceAll('out/docs', out)
      .replaceAll("'doc-1'", "'d03'")
      .replaceAll('384', String(DIMS));
    const neighbours = await query(sql);
    expect(neighbours).toHaveLength(10);
    expect(neighbours[0]).toMatchObject({ id: 'd03', chunk_index: 0 });
    expect(neighbours[0]!['score']).toBeCloseTo(1, 5);
  });

  it('parquet-wasm + apache-arrow: the embedding keeps its fixed size (what pyarrow restores)', async () => {
    const [first] = await visibleNames(out);
    const table = pw.readParquet(new Uint8Array(await readFile(join(out, first!))));
    const arrow = tableFromIPC(table.intoIPCStream());
    const field = arrow.schema.fields.find((f) => f.name === 'embedding')!;
    expect(field.type.typeId).toBe(Type.FixedSizeList);
    expect((field.type as unknown as { listSize: number }).listSize).toBe(DIMS);
    expect(arrow.schema.fields.map((f) => f.name)).toEqual(TEXT_DATASET_COLUMNS);
  });
});

describe('the Arrow IPC dataset (--output-format arrow)', () => {
  it('holds only .arrow data files besides side files; each reads with apache-arrow; the hint names pyarrow', async () => {
    const out = join(root, 'arrow');
    const stdout = await run(out, '--output-format', 'arrow');
    const visible = await visibleNames(out);
    expect(visible.length).toBeGreaterThan(0);
    let rows = 0;
    for (const name of visible) {
      expect(name).toMatch(/^data-.*\.arrow$/);
      const table = tableFromIPC(await readFile(join(out, name)));
      expect(table.schema.fields.find((f) => f.name === 'embedding')!.type.typeId).toBe(Type.FixedSizeList);
      rows += table.numRows;
    }
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    expect(manifest.counts.rows).toBe(rows);
    const hint = stdout.split('\n').find((line) => line.includes('query it:'));
    expect(hint).toContain(`ds.dataset('${out}', format='arrow')`);
    expect(stdout).not.toContain('read_parquet');
  }, 120_000);
});

describe('a dataset written by the previous version (manifest.json, rejects.jsonl)', () => {
  it('is resumed from its manifest.json, and the re-run leaves only the new names', async () => {
    const out = join(root, 'legacy');
    await run(out);
    const manifest = JSON.parse(await readFile(join(out, '_manifest.json'), 'utf8'));
    const { input: _input, gateway: _gateway, counts, ...rest } = manifest;
    const { costUsd, ...otherCounts } = counts;
    const v1 = { ...rest, version: 1, counts: { ...otherCounts, cost: Number(costUsd) } };
    await rm(join(out, '_manifest.json'));
    await writeFile(join(out, 'manifest.json'), JSON.stringify(v1));
    await writeFile(join(out, 'rejects.jsonl'), await readFile(join(out, '_rejects.jsonl')));
    await rm(join(out, '_rejects.jsonl'));
    await writeFile(join(out, 'failures.jsonl'), '{"old":true}\n');

    const result = await runCli(
      ['run', '--emulator', '--input', corpus, '--model', MODEL, '--out', out, '--max-inputs', '4', '--json'],
      {},
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).batches).toMatchObject({ embedded: 0, resumed: expect.any(Number) });
    const names = await readdir(out);
    expect(names).toEqual(expect.arrayContaining(['_manifest.json', '_rejects.jsonl']));
    for (const old of ['manifest.json', 'rejects.jsonl', 'failures.jsonl']) expect(names).not.toContain(old);
    for (const name of await visibleNames(out)) expect(name).toMatch(/\.parquet$/);
  }, 120_000);
});
