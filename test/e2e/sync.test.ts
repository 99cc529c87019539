/**
 * Into the index, as a new user would: `run` a corpus, `sync` it to PostgreSQL + pgvector (served
 * over the wire by PGlite, or DATABASE_URL) and to LanceDB, change 5% of the corpus, `run` and
 * `sync` again. Each store equals the dataset (`sync --verify`, and an independent query of the
 * store counts the same rows and hashes as DuckDB reads from the Parquet files), only the changed
 * rows were written, a sync killed mid-way and run again ends equal, and `search` returns the same
 * top-k from the dataset folder and from each store.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runArgs, runCli, spawnCli } from '../helpers/cli.js';
import { longDocument, seeded } from '../helpers/corpus.js';
import { query, sqlString } from '../helpers/duckdb.js';
import { type PgliteServer, startPglite } from '../helpers/pglite-server.js';
import { tempFolder } from '../helpers/temp.js';

const root = await tempFolder('embedpipe-sync-');
const out = join(root, 'out', 'docs');
const corpus = join(root, 'docs.jsonl');
const MODEL = 'emu/embed-small';

interface Doc {
  id: string;
  text: string;
}

function makeCorpus(count: number): Doc[] {
  const rand = seeded(42);
  return Array.from({ length: count }, (_, i) => ({
    id: `doc-${String(i).padStart(4, '0')}`,
    text: longDocument(rand, 1 + Math.floor(rand() * 3)),
  }));
}

async function runCorpus(docs: readonly Doc[], ...more: string[]): Promise<void> {
  await writeFile(corpus, docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
  const result = await runCli([
    ...runArgs(corpus, MODEL, '--out', out, '--emulator', '--max-tokens', '48', '--json'),
    ...more,
  ]);
  expect(result.code, result.stderr).toBe(0);
}

/** What DuckDB reads from the current version: every row's key and hash. */
async function datasetKeys(): Promise<Map<string, string>> {
  const rows = await query(
    `SELECT id, chunk_index, content_hash FROM read_parquet(${sqlString(`${out}/*.parquet`)})`,
  );
  return new Map(rows.map((r) => [`${r['id']}#${r['chunk_index']}`, String(r['content_hash'])]));
}

async function syncCli(url: string, ...more: string[]) {
  const result = await runCli(['sync', out, '--to', url, '--json', ...more]);
  return { ...result, report: result.code === 0 ? JSON.parse(result.stdout) : undefined };
}

describe('sync and search: the store follows the dataset, version by version', () => {
  let postgres: PgliteServer;
  let pgUrl: string;
  let lanceUrl: string;
  let lanceDir: string;

  beforeAll(async () => {
    postgres = await startPglite();
    pgUrl = `${postgres.url}?table=docs`;
    lanceDir = join(root, 'lance');
    lanceUrl = `lancedb://${lanceDir}?table=docs`;
  }, 120_000);
  afterAll(async () => {
    await postgres?.stop();
    await rm(root, { recursive: true, force: true });
  });

  /** The store's rows read with its own client, not embedpipe's. */
  async function storeKeys(kind: 'pg' | 'lance'): Promise<Map<string, string>> {
    if (kind === 'pg') {
      const client = new pg.Client({ connectionString: postgres.url });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT id, chunk_index, content_hash FROM docs');
        return new Map(rows.map((r) => [`${r.id}#${r.chunk_index}`, String(r.content_hash)]));
      } finally {
        await client.end();
      }
    }
    const db = await lancedb.connect(lanceDir);
    const table = await db.openTable('docs');
    const rows = await table.query().select(['id', 'chunk_index', 'content_hash']).toArray();
    table.close();
    db.close();
    return new Map(rows.map((r) => [`${r.id}#${r.chunk_index}`, String(r.content_hash)]));
  }

  const stores = () => [
    { kind: 'pg' as const, url: pgUrl },
    { kind: 'lance' as const, url: lanceUrl },
  ];

  it('a first sync writes every row; verify passes; an independent read counts the same rows', async () => {
    await runCorpus(makeCorpus(120));
    const expected = await datasetKeys();
    for (const { kind, url } of stores()) {
      const { code, stderr, report } = await syncCli(url, '--index', 'hnsw');
      expect(code, stderr).toBe(0);
      expect(report).toMatchObject({
        version: 'v000001',
        rows: expected.size,
        upserted: expected.size,
        deleted: 0,
      });
      expect(await storeKeys(kind)).toEqual(expected);
      const verified = await runCli(['sync', out, '--to', url, '--verify']);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
      expect(verified.stdout).toMatch(/equals v000001/);
    }
  }, 240_000);

  it('after a 5% change only the changed rows are written and the gone ones deleted', async () => {
    const before = await datasetKeys();
    const docs = makeCorpus(120);
    for (const i of [3, 17, 40]) docs[i] = { id: docs[i]!.id, text: `${docs[i]!.text} Edited tonight.` };
    docs.splice(90, 2); // two documents gone
    docs.push({ id: 'doc-new-1', text: 'A new document about vector stores.' });
    await runCorpus(docs);
    const after = await datasetKeys();
    const written = [...after].filter(([key, hash]) => before.get(key) !== hash).length;
    const gone = [...before.keys()].filter((key) => !after.has(key)).length;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(after.size * 0.1);
    for (const { kind, url } of stores()) {
      const { code, stderr, report } = await syncCli(url);
      expect(code, stderr).toBe(0);
      expect(report).toMatchObject({ from: 'v000001', version: 'v000002', upserted: written, deleted: gone });
      expect(await storeKeys(kind)).toEqual(after);
      expect((await runCli(['sync', out, '--to', url, '--verify'])).code).toBe(0);
    }
  }, 240_000);

  it('search returns the same top-k from the dataset folder and from each store', async () => {
    const ask = async (target: string, ...more: string[]) => {
      const result = await runCli([
        'search',
        target,
        'vector stores and nightly runs',
        '-k',
        '5',
        '--emulator',
        '--json',
        ...more,
      ]);
      expect(result.code, result.stderr).toBe(0);
      return (JSON.parse(result.stdout).hits as { id: string; chunkIndex: number; score: number }[]).map(
        (hit) => ({ key: `${hit.id}#${hit.chunkIndex}`, score: hit.score }),
      );
    };
    const fromDataset = await ask(out);
    expect(fromDataset).toHaveLength(5);
    for (const { url } of stores()) {
      // Exact: a full scan of the store. Through its HNSW index (the default) the top-k is
      // approximate, and on the emulator's random vectors it can differ: it returns k hits.
      const fromStore = await ask(url, '--exact');
      expect(fromStore.map((hit) => hit.key)).toEqual(fromDataset.map((hit) => hit.key));
      for (const [i, hit] of fromStore.entries()) expect(hit.score).toBeCloseTo(fromDataset[i]!.score, 3);
      expect(await ask(url)).toHaveLength(5);
    }
  }, 120_000);

  it('a sync killed mid-way leaves whole groups, and the next sync ends equal', async () => {
    // A rollback to v000001, loaded afresh (--replace: every row, several groups); the sync is
    // killed (SIGKILL) the moment it says its first group is applied.
    const switched = await runCli(['datasets', out, '--switch', 'v000001']);
    expect(switched.code, switched.stderr).toBe(0);
    const expected = await datasetKeys();
    for (const { kind, url } of stores()) {
      const child = spawnCli(['sync', out, '--to', url, '--replace'], { EMBEDPIPE_LOG_LEVEL: 'debug' });
      child.stderr?.on('data', (data: Buffer) => {
        if (String(data).includes('sync group applied')) child.kill('SIGKILL');
      });
      const killed = await child.result;
      expect(killed.signal).toBe('SIGKILL');
      const partial = await storeKeys(kind);
      expect(partial.size).toBeGreaterThan(0);
      expect(partial.size).toBeLessThan(expected.size);
      const pending = await runCli(['sync', out, '--to', url, '--verify']);
      expect(pending.code).toBe(12);
      expect(pending.stdout).toMatch(/did not finish/);
      const { code, stderr, report } = await syncCli(url);
      expect(code, stderr).toBe(0);
      expect(report).toMatchObject({
        version: 'v000001',
        upserted: expected.size - partial.size,
        deleted: 0,
      });
      expect(await storeKeys(kind)).toEqual(expected);
      expect((await runCli(['sync', out, '--to', url, '--verify'])).code).toBe(0);
    }
  }, 240_000);

  it('verify finds a row changed behind its back, and --repair writes it again', async () => {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      await client.query(
        "UPDATE docs SET content_hash = 'tampered' WHERE (id, chunk_index) = ('doc-0003', 0)",
      );
      await client.query("DELETE FROM docs WHERE id = 'doc-0004'");
    } finally {
      await client.end();
    }
    const verified = await runCli(['sync', out, '--to', pgUrl, '--verify']);
    expect(verified.code).toBe(12);
    expect(verified.stdout).toMatch(/rows missing/);
    expect(verified.stdout).toMatch(/1 rows with another content hash/);
    const repaired = await runCli(['sync', out, '--to', pgUrl, '--repair']);
    expect(repaired.code, repaired.stdout + repaired.stderr).toBe(0);
    expect(await storeKeys('pg')).toEqual(await datasetKeys());
  }, 120_000);

  it('a model migration needs --replace: never two models or dims in one table', async () => {
    const docs = makeCorpus(20);
    await runCorpus(docs, '--model', 'emu/embed-large');
    for (const { kind, url } of stores()) {
      const refused = await runCli(['sync', out, '--to', url]);
      expect(refused.code, refused.stderr).toBe(11);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      const { code, stderr, report } = await syncCli(url, '--replace');
      expect(code, stderr).toBe(0);
      expect(report).toMatchObject({ dims: 1536, model: 'emu/embed-large' });
      expect(await storeKeys(kind)).toEqual(await datasetKeys());
    }
  }, 240_000);

  it('run --sync-to syncs the store after the switch; the summary says what the sync did', async () => {
    const second = join(root, 'out', 'second');
    const url = `lancedb://${lanceDir}?table=second`;
    await writeFile(
      corpus,
      makeCorpus(10)
        .map((d) => JSON.stringify(d))
        .join('\n') + '\n',
    );
    const result = await runCli([
      ...runArgs(corpus, MODEL, '--out', second, '--emulator', '--max-tokens', '48', '--json'),
      '--sync-to',
      url,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout);
    expect(summary.sync).toMatchObject({ version: 'v000001', rows: summary.rows, upserted: summary.rows });
    expect((await runCli(['sync', second, '--to', url, '--verify'])).code).toBe(0);
  }, 120_000);

  it('bad store URLs and unreachable stores get one line and their exit code', async () => {
    const notAStore = await runCli(['sync', out, '--to', 'mysql://root@localhost/db']);
    expect(notAStore.code).toBe(2);
    expect(notAStore.stderr).toMatch(/not a store URL/);
    const refused = await runCli(['sync', out, '--to', 'postgres://user:secret@127.0.0.1:9/db?table=docs']);
    expect(refused.code).toBe(11);
    expect(refused.stderr).not.toMatch(/secret/);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);
});
