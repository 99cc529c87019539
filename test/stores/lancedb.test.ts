/** The LanceDB store against real embedded LanceDB tables, each test in a fresh temp folder. */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@lancedb/lancedb';
import { describe, expect, it, vi } from 'vitest';
import { cosine } from '../../src/embedding/cosine.js';
import { StoreError } from '../../src/errors.js';
import type { Logger } from '../../src/observability/logger.js';
import { GROUP_LIMITS } from '../../src/stores/lance-group.js';
import { keyPredicate } from '../../src/stores/lance-sql.js';
import { parseLanceUrl } from '../../src/stores/lance-url.js';
import { type LanceStoreOptions, lanceReason, openLanceStore } from '../../src/stores/lancedb.js';
import { type RowKey, rowKey, type StoreRow, type VectorStore } from '../../src/stores/store.js';
import { tempFolder } from '../helpers/temp.js';
import { scanAll, storeRows } from './contract.js';

const MODEL = 'emu/lance-test';

const hashes = (list: readonly StoreRow[]) => new Map(list.map((row) => [rowKey(row), row.contentHash]));
const synced = (version: string, dims: number, model = MODEL) => ({
  model,
  version,
  dims,
  at: '2026-11-26T00:00:00.000Z',
});

/** A store on table `docs` of a fresh database folder, closed after `work`. */
async function withStore<T>(
  work: (store: VectorStore, dir: string) => Promise<T>,
  options: LanceStoreOptions = {},
): Promise<T> {
  const dir = join(await tempFolder('embedpipe-lance-'), 'db');
  const store = await openLanceStore(`lancedb://${dir}?table=docs`, options);
  try {
    return await work(store, dir);
  } finally {
    await store.close();
  }
}

/** The table's current version, read by a separate connection (as another reader would). */
async function versionOf(dir: string): Promise<number> {
  const db = await connect(dir);
  try {
    return await (await db.openTable('docs')).version();
  } finally {
    db.close();
  }
}

describe('lancedb store URLs', () => {
  it('reads absolute and relative folders, percent-decoded, and requires the table', () => {
    expect(parseLanceUrl('lancedb:///data/vec%20db?table=docs')).toEqual({
      path: '/data/vec db',
      table: 'docs',
      label: 'lancedb:///data/vec db?table=docs',
    });
    expect(parseLanceUrl('lancedb://./sub/db?table=t_1', '/work')).toMatchObject({ path: '/work/sub/db' });
    expect(parseLanceUrl('LanceDB://../db?table=t', '/work/x').path).toBe('/work/db');
    for (const [url, why] of [
      ['postgres:///db?table=t', 'must start with lancedb://'],
      ['lancedb://host/db?table=t', '"host" is read as a host'],
      ['lancedb:///db', 'name the table'],
      ['lancedb:///db?table=t&tabel=u', 'unknown parameter tabel'],
      ['lancedb:///db?table=a/b', 'may hold only'],
      ['lancedb:///?table=t', 'no database folder'],
      ['lancedb:///db%zz?table=t', 'bad %-escape'],
    ] as const) {
      expect(() => parseLanceUrl(url), url).toThrow(why);
      expect(() => parseLanceUrl(url)).toThrow(StoreError);
    }
  });

  it('refuses a path that is a file, with exit 11, naming the store', async () => {
    const file = join(await tempFolder('embedpipe-lance-'), 'file');
    await writeFile(file, 'not a database');
    const opening = openLanceStore(`lancedb://${file}?table=docs`);
    await expect(opening).rejects.toBeInstanceOf(StoreError);
    await expect(opening).rejects.toMatchObject({ exitCode: 11, message: expect.stringContaining(file) });
  });
});

describe('lancedb store', () => {
  it('creates its table, applies upserts and deletes, and scans exactly what it holds', async () => {
    await withStore(async (store, dir) => {
      expect(await store.describe()).toEqual({ exists: false });
      expect(existsSync(dir)).toBe(false); // reading creates nothing
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      expect(await store.describe()).toEqual({ exists: true, dims: 8 });
      const odd = ["it's", 'back\\slash', 'é 東京', 'pipe|7', 'line\nbreak', 'plain'];
      const first = storeRows(odd, 8);
      await store.apply({ upserts: first, deletes: [] });
      expect(await scanAll(store)).toEqual(hashes(first));
      // "it's" re-chunked to one row, 'pipe|7' gone whole, a row that never existed deleted too.
      const changed = storeRows(["it's"], 8, 1, '-v2');
      const deletes: RowKey[] = [
        { id: "it's", chunkIndex: 1 },
        { id: "it's", chunkIndex: 2 },
        ...storeRows(['pipe|7'], 8),
        { id: 'ghost', chunkIndex: 0 },
      ];
      await store.apply({ upserts: changed, deletes });
      const kept = first.filter((row) => row.id !== "it's" && row.id !== 'pipe|7');
      expect(await scanAll(store)).toEqual(hashes([...kept, ...changed]));
      // A group of deletes only; other rows of the same chunk index and of the same id stay.
      await store.apply({ upserts: [], deletes: [{ id: 'plain', chunkIndex: 1 }] });
      const left = [...kept, ...changed].filter((row) => !(row.id === 'plain' && row.chunkIndex === 1));
      expect(await scanAll(store)).toEqual(hashes(left));
      const vectors = await store.vectors([left[0]!, changed[0]!, { id: 'ghost', chunkIndex: 0 }]);
      expect(vectors).toEqual(new Map([left[0]!, changed[0]!].map((row) => [rowKey(row), row.embedding])));
    });
  });

  it('writes one table version per group, and scans in pages of at most 10,000 keys', async () => {
    await withStore(async (store, dir) => {
      await store.prepare({ model: MODEL, dims: 4, replace: false });
      const many = storeRows(
        Array.from({ length: 4_000 }, (_, i) => `d${i}`),
        4,
      );
      await store.apply({ upserts: many, deletes: [] });
      const before = await versionOf(dir);
      await store.apply({ upserts: storeRows(['d1'], 4, 1, '-v2'), deletes: storeRows(['d2', 'd3'], 4) });
      expect(await versionOf(dir)).toBe(before + 1);
      const pages: number[] = [];
      for await (const page of store.scan()) pages.push(page.length);
      expect(pages.reduce((a, b) => a + b, 0)).toBe(12_000 - 6);
      expect(Math.max(...pages)).toBe(10_000);
    });
  });

  it('applies a group whole or not at all: a bad row leaves the table as it was', async () => {
    await withStore(async (store, dir) => {
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      const first = storeRows(['a', 'b'], 8);
      await store.apply({ upserts: first, deletes: [] });
      const version = await versionOf(dir);
      const good = storeRows(['c'], 8);
      const wrongDims = { ...storeRows(['bad'], 8, 1)[0]!, embedding: new Float32Array(7) };
      const notFinite = { ...storeRows(['nan'], 8, 1)[0]!, embedding: new Float32Array(8).fill(Number.NaN) };
      for (const [bad, why] of [
        [wrongDims, 'row "bad" chunk 0 has an embedding of 7 dims'],
        [notFinite, 'row "nan" chunk 0 has a non-finite embedding value'],
      ] as const) {
        const applying = store.apply({ upserts: [...good, bad], deletes: [{ id: 'a', chunkIndex: 0 }] });
        await expect(applying).rejects.toBeInstanceOf(StoreError);
        await expect(applying).rejects.toThrow(why);
      }
      await expect(store.apply({ upserts: [...good, good[0]!], deletes: [] })).rejects.toThrow(
        'appears twice',
      );
      await expect(store.apply({ upserts: good, deletes: [good[0]!] })).rejects.toThrow(
        'both upserted and deleted',
      );
      const huge = new Array<StoreRow>(GROUP_LIMITS.rows + 1).fill(good[0]!);
      await expect(store.apply({ upserts: huge, deletes: [] })).rejects.toThrow(
        /over the LanceDB store's bound/,
      );
      expect(await versionOf(dir)).toBe(version);
      expect(await scanAll(store)).toEqual(hashes(first));
    });
  });

  it('refuses other dims, another model or a table without its columns; --replace recreates', async () => {
    await withStore(async (store, dir) => {
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      await store.apply({ upserts: storeRows(['a'], 8), deletes: [] });
      await store.commit(synced('v000001', 8));
      const dims = store.prepare({ model: MODEL, dims: 16, replace: false });
      await expect(dims).rejects.toMatchObject({ exitCode: 11 });
      await expect(dims).rejects.toThrow(/holds 8-dim vectors, the dataset 16-dim .*--replace/);
      await expect(store.prepare({ model: 'emu/other', dims: 8, replace: false })).rejects.toThrow(
        `holds vectors of ${MODEL}, the dataset of emu/other`,
      );
      await store.prepare({ model: MODEL, dims: 8, replace: false }); // the same: kept
      expect((await scanAll(store)).size).toBe(3);
      await store.prepare({ model: 'emu/other', dims: 16, replace: true });
      expect(await store.describe()).toEqual({ exists: true, dims: 16 });
      expect(await scanAll(store)).toEqual(new Map());
      await store.apply({ upserts: storeRows(['z'], 16), deletes: [] });
      expect((await scanAll(store)).size).toBe(3);
      // A table made by something else: a column missing, another of the wrong type.
      const db = await connect(dir);
      await db.createTable('foreign', [{ id: 'x', chunk_index: 'zero', text: 't', embedding: [1, 2] }]);
      db.close();
      const foreign = await openLanceStore(`lancedb://${dir}?table=foreign`);
      try {
        const preparing = foreign.prepare({ model: MODEL, dims: 2, replace: false });
        await expect(preparing).rejects.toThrow(
          /lacks the column content_hash; its column chunk_index is Utf8, not Int32 \(sync with --replace/,
        );
        await foreign.prepare({ model: MODEL, dims: 2, replace: true });
        expect(await foreign.describe()).toEqual({ exists: true, dims: 2 });
      } finally {
        await foreign.close();
      }
    });
  });

  it('records begin as pending and commit as synced, seen by describe and by another store', async () => {
    await withStore(async (store, dir) => {
      await store.prepare({ model: MODEL, dims: 4, replace: false });
      await store.begin(synced('v000002', 4));
      expect(await store.describe()).toEqual({ exists: true, dims: 4, pending: synced('v000002', 4) });
      await store.apply({ upserts: storeRows(['a'], 4), deletes: [] });
      await store.commit(synced('v000002', 4));
      await store.begin(synced('v000003', 4));
      const reader = await openLanceStore(`lancedb://${dir}?table=docs`);
      try {
        expect(await reader.describe()).toEqual({
          exists: true,
          dims: 4,
          synced: synced('v000002', 4),
          pending: synced('v000003', 4),
        });
      } finally {
        await reader.close();
      }
    });
  });

  it('searches by cosine in the order of an exact search computed here, scores included', async () => {
    await withStore(async (store, dir) => {
      await store.prepare({ model: MODEL, dims: 16, replace: false });
      const all = storeRows(
        Array.from({ length: 60 }, (_, i) => `doc-${i}`),
        16,
      );
      await store.apply({ upserts: all, deletes: [] });
      for (const query of [all[41]!.embedding, Float32Array.from({ length: 16 }, (_, i) => (i % 3) - 1)]) {
        const exact = all
          .map((row) => ({ key: rowKey(row), score: cosine(query, row.embedding) }))
          .sort((a, b) => b.score - a.score)
          .slice(0, 7);
        const hits = await store.search(query, 7);
        expect(hits.map(rowKey)).toEqual(exact.map((hit) => hit.key));
        for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(exact[i]!.score, 5);
      }
      expect((await store.search(all[41]!.embedding, 1))[0]).toMatchObject({
        id: 'doc-13',
        text: 'doc-13 #2',
      });
      await expect(store.search(new Float32Array(3), 5)).rejects.toThrow('the query vector has 3 dims');
      // Above the index threshold but without an index, the search is still flat: the same hits.
      const large = await openLanceStore(`lancedb://${dir}?table=docs`, { indexMinRows: 1 });
      try {
        expect(await large.search(all[7]!.embedding, 9)).toEqual(await store.search(all[7]!.embedding, 9));
      } finally {
        await large.close();
      }
    });
  });

  it('refuses to search or write a table that does not exist', async () => {
    await withStore(async (store) => {
      await expect(store.search(new Float32Array(4), 5)).rejects.toThrow(/docs.*does not exist/);
      await expect(store.apply({ upserts: storeRows(['a'], 4), deletes: [] })).rejects.toBeInstanceOf(
        StoreError,
      );
      expect(await store.vectors([{ id: 'a', chunkIndex: 0 }])).toEqual(new Map());
      expect(await scanAll(store)).toEqual(new Map());
    });
  });

  it('compacts at commit and builds the HNSW index only above its row threshold', async () => {
    const info = vi.fn();
    const logger = { info, warn: vi.fn(), debug: vi.fn() } as unknown as Logger;
    await withStore(
      async (store, dir) => {
        await store.prepare({ model: MODEL, dims: 16, replace: false, index: 'hnsw' });
        const ids = Array.from({ length: 200 }, (_, i) => `doc-${i}`);
        for (let i = 0; i < ids.length; i += 50)
          await store.apply({ upserts: storeRows(ids.slice(i, i + 50), 16), deletes: [] });
        await store.commit(synced('v000001', 16)); // 600 rows: below 1,000, skipped
        expect(info).toHaveBeenCalledWith(
          expect.objectContaining({ rows: 600, minimum: 1_000 }),
          expect.any(String),
        );
        const db = await connect(dir, { readConsistencyInterval: 0 });
        const table = await db.openTable('docs');
        expect(await table.listIndices()).toEqual([]);
        expect((await table.stats()).fragmentStats.numFragments).toBe(1); // compacted
        const more = storeRows(
          Array.from({ length: 200 }, (_, i) => `more-${i}`),
          16,
        );
        await store.apply({ upserts: more, deletes: [] });
        await store.commit(synced('v000002', 16)); // 1,200 rows: built
        expect((await table.listIndices()).map((index) => index.indexType)).toEqual(['IvfHnswSq']);
        db.close();
        // Through the index: the row itself comes first, scores are exact cosines of what is found.
        const query = more[123]!.embedding;
        const hits = await store.search(query, 10);
        expect(rowKey(hits[0]!)).toBe(rowKey(more[123]!));
        const byKey = new Map([...storeRows(ids, 16), ...more].map((row) => [rowKey(row), row]));
        for (const hit of hits)
          expect(hit.score).toBeCloseTo(cosine(query, byKey.get(rowKey(hit))!.embedding), 4);
        // Rows written after the index are found too (optimize at the next commit indexes them).
        const late = storeRows(['late'], 16, 1, '-late');
        await store.apply({ upserts: late, deletes: [] });
        expect(rowKey((await store.search(late[0]!.embedding, 3))[0]!)).toBe(rowKey(late[0]!));
        await store.commit(synced('v000003', 16));
        expect(rowKey((await store.search(late[0]!.embedding, 3))[0]!)).toBe(rowKey(late[0]!));
        expect((await store.describe()).synced?.version).toBe('v000003');
      },
      { logger, indexMinRows: 1_000 },
    );
  });

  it('loads 20,000 rows of 384 dims in groups of 2,000', { timeout: 120_000 }, async () => {
    await withStore(async (store) => {
      const dims = 384;
      await store.prepare({ model: MODEL, dims, replace: false });
      const all = storeRows(
        Array.from({ length: 2_000 }, (_, i) => `doc-${i}`),
        dims,
        10,
      );
      const started = performance.now();
      for (let i = 0; i < all.length; i += 2_000)
        await store.apply({ upserts: all.slice(i, i + 2_000), deletes: [] });
      const loaded = performance.now();
      await store.commit(synced('v000001', dims));
      const committed = performance.now();
      expect((await scanAll(store)).size).toBe(20_000);
      const rate = Math.round(20_000 / ((loaded - started) / 1000));
      console.info(
        `lancedb load: ${rate} rows/s (20,000 × ${dims} in ${Math.round(loaded - started)} ms), commit ${Math.round(committed - loaded)} ms`,
      );
    });
  });

  it("shortens LanceDB's errors to their first line, without Rust source paths", () => {
    const native = new Error(
      "Table 'x' was not found  Caused by: Dataset at path db/x.lance was not found: Not found, /usr/local/cargo/registry/src/lance-8.0.0/src/io/commit.rs:646:26",
    );
    expect(lanceReason(native)).toBe("Table 'x' was not found");
    expect(lanceReason(new Error('lance error: Not supported: no, /usr/x/src/a.rs:1:2'))).toBe(
      'lance error: Not supported: no',
    );
  });

  it('keys a filter by a flat IN list (a long OR chain crashes the native parser)', () => {
    expect(keyPredicate([{ id: "o'k", chunkIndex: 2 }])).toBe(
      "id IN ('o''k') AND concat(CAST(chunk_index AS STRING), '|', id) IN ('2|o''k')",
    );
  });
});
