/**
 * The contract every VectorStore keeps, run against each store (test/stores/*.contract.test.ts):
 * what sync, verify and search rely on. `open` gives a store on a table no other test uses.
 */
import { describe, expect, it } from 'vitest';
import { cosine } from '../../src/embedding/cosine.js';
import { type RowKey, rowKey, type StoreRow, type VectorStore } from '../../src/stores/store.js';
import { seeded } from '../helpers/corpus.js';

export interface ContractOptions {
  /** Values compare to this (halfvec stores: ~1e-3). */
  readonly tolerance?: number;
}

const DIMS = 8;

/** `chunks` rows per id, vectors seeded per (salt, id, chunk), hashes salted: shared by every store's tests. */
export function storeRows(ids: readonly string[], dims: number, chunks = 3, salt = ''): StoreRow[] {
  return ids.flatMap((id) =>
    Array.from({ length: chunks }, (_, chunkIndex) => {
      const seed = [...`${salt}${id}#${chunkIndex}`].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 17);
      const rand = seeded(seed);
      const embedding = Float32Array.from({ length: dims }, () => rand() * 2 - 1);
      return {
        id,
        chunkIndex,
        text: `${id} #${chunkIndex}${salt}`,
        contentHash: `${salt}${seed}`,
        embedding,
      };
    }),
  );
}

const rowsFor = (ids: readonly string[], chunks = 2, salt = '') => storeRows(ids, DIMS, chunks, salt);

export async function scanAll(store: VectorStore): Promise<Map<string, string>> {
  const held = new Map<string, string>();
  for await (const page of store.scan()) for (const row of page) held.set(rowKey(row), row.contentHash);
  return held;
}

const keysOf = (rows: readonly StoreRow[]) => new Map(rows.map((row) => [rowKey(row), row.contentHash]));

const synced = (version: string) => ({
  model: 'emu/contract',
  version,
  dims: DIMS,
  at: '2026-11-26T00:00:00.000Z',
});

export function describeStoreContract(
  name: string,
  open: () => Promise<VectorStore>,
  options: ContractOptions = {},
): void {
  const tolerance = options.tolerance ?? 1e-6;
  describe(`${name}: the VectorStore contract`, () => {
    it('creates its table, upserts and deletes in groups, and scans what it holds', async () => {
      const store = await open();
      try {
        expect((await store.describe()).exists).toBe(false);
        await store.prepare({ model: 'emu/contract', dims: DIMS, replace: false });
        const state = await store.describe();
        expect(state).toMatchObject({ exists: true, dims: DIMS });
        const first = rowsFor(['a', 'b', 'c', "d'quote", 'é 東京']);
        await store.apply({ upserts: first, deletes: [] });
        expect(await scanAll(store)).toEqual(keysOf(first));
        // A document re-chunked: its rows change, one goes; another document goes whole.
        const changed = rowsFor(['b'], 1, '-v2');
        const deletes: RowKey[] = [{ id: 'b', chunkIndex: 1 }, ...rowsFor(['c'])];
        await store.apply({ upserts: changed, deletes });
        const expected = keysOf([...first.filter((r) => r.id !== 'b' && r.id !== 'c'), ...changed]);
        expect(await scanAll(store)).toEqual(expected);
        const vectors = await store.vectors([...first.slice(0, 2), { id: 'nope', chunkIndex: 0 }]);
        expect(vectors.has(rowKey({ id: 'nope', chunkIndex: 0 }))).toBe(false);
        const held = vectors.get(rowKey(first[0]!))!;
        for (let i = 0; i < DIMS; i++)
          expect(Math.abs(held[i]! - first[0]!.embedding[i]!)).toBeLessThanOrEqual(tolerance);
      } finally {
        await store.close();
      }
    });

    it('records a sync as pending until committed, and the version committed', async () => {
      const store = await open();
      try {
        await store.prepare({ model: 'emu/contract', dims: DIMS, replace: false });
        await store.begin(synced('v000001'));
        expect((await store.describe()).pending?.version).toBe('v000001');
        await store.commit(synced('v000001'));
        const state = await store.describe();
        expect(state.synced).toMatchObject({ model: 'emu/contract', version: 'v000001', dims: DIMS });
        expect(state.pending).toBeUndefined();
      } finally {
        await store.close();
      }
    });

    it('refuses rows of other dims or another model, unless replaced', async () => {
      const store = await open();
      try {
        await store.prepare({ model: 'emu/contract', dims: DIMS, replace: false });
        await store.apply({ upserts: rowsFor(['a']), deletes: [] });
        await store.commit(synced('v000001'));
        await expect(
          store.prepare({ model: 'emu/contract', dims: DIMS * 2, replace: false }),
        ).rejects.toMatchObject({
          exitCode: 11,
        });
        await expect(store.prepare({ model: 'emu/other', dims: DIMS, replace: false })).rejects.toMatchObject(
          {
            exitCode: 11,
          },
        );
        await store.prepare({ model: 'emu/other', dims: DIMS * 2, replace: true });
        expect(await scanAll(store)).toEqual(new Map());
        expect((await store.describe()).dims).toBe(DIMS * 2);
      } finally {
        await store.close();
      }
    });

    it('finds the nearest rows by cosine, in the order an exact search gives', async () => {
      const store = await open();
      try {
        await store.prepare({ model: 'emu/contract', dims: DIMS, replace: false });
        const rows = rowsFor(
          Array.from({ length: 30 }, (_, i) => `doc-${i}`),
          2,
        );
        await store.apply({ upserts: rows, deletes: [] });
        const query = rows[17]!.embedding;
        const exact = rows
          .map((row) => ({ key: rowKey(row), score: cosine(query, row.embedding) }))
          .sort((a, b) => b.score - a.score)
          .slice(0, 5);
        const hits = await store.search(query, 5);
        expect(hits.map(rowKey)).toEqual(exact.map((hit) => hit.key));
        for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(exact[i]!.score, 2);
        expect(hits[0]!.text).toBe(rows[17]!.text);
      } finally {
        await store.close();
      }
    });
  });
}
