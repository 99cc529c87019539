/**
 * The pgvector store over the wire against PGlite + pgvector (served by pglite-socket), and against
 * a real PostgreSQL too when DATABASE_URL is set (e.g. postgres://user:pw@localhost:5432/db, with
 * pgvector installed): every test uses a table of its own. An independent pg.Client inspects what
 * the store wrote. Load rates are
 * measured by bench/sync.bench.mjs, not here.
 */
import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosine } from '../../src/embedding/cosine.js';
import { StoreError } from '../../src/errors.js';
import { extensionError } from '../../src/stores/pg-errors.js';
import { parsePgUrl, withoutPassword } from '../../src/stores/pg-url.js';
import { openPgvectorStore, type PgvectorTuning } from '../../src/stores/pgvector.js';
import {
  type RowKey,
  rowKey,
  type StoreRow,
  type SyncedVersion,
  type VectorStore,
} from '../../src/stores/store.js';
import { startPglite, tableUrl, uniqueTable } from '../helpers/pglite-server.js';
import { describeStoreContract, storeRows } from './contract.js';

const MODEL = 'emu/pg-test';
const START_TIMEOUT = 120_000;

interface Target {
  readonly name: string;
  readonly start: () => Promise<{ readonly url: string; stop(): Promise<void> }>;
}

const targets: Target[] = [
  // More than one connection: the tests inspect with their own client while a store is open.
  { name: 'PGlite', start: () => startPglite({ maxConnections: 4 }) },
  ...(process.env['DATABASE_URL']
    ? [
        {
          name: 'DATABASE_URL',
          start: async () => ({ url: process.env['DATABASE_URL']!, stop: async () => {} }),
        },
      ]
    : []),
];

const hashes = (list: readonly StoreRow[]) => new Map(list.map((row) => [rowKey(row), row.contentHash]));
const synced = (version: string, dims: number, model = MODEL): SyncedVersion => ({
  model,
  version,
  dims,
  at: '2026-11-26T00:00:00.000Z',
});

async function scanAll(store: VectorStore, pageSizes: number[] = []): Promise<Map<string, string>> {
  const held = new Map<string, string>();
  for await (const page of store.scan()) {
    pageSizes.push(page.length);
    for (const row of page) held.set(rowKey(row), row.contentHash);
  }
  return held;
}

/** A StoreError of one line, exit 11, matching `pattern`, without `secret`. */
async function expectStoreError(
  promise: Promise<unknown>,
  pattern: RegExp,
  secret = 'secret',
): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreError);
  const { message, exitCode } = error as StoreError;
  expect(exitCode).toBe(11);
  expect(message).toMatch(pattern);
  expect(message).not.toContain('\n');
  expect(message).not.toContain(secret);
  return message;
}

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('postgres store URLs', () => {
  it('take the password from the URL, else from the env given (never from process.env behind it)', () => {
    const fromUrl = parsePgUrl('postgres://me:p%40ss@db.example:6543/vectors?table=docs', {
      PGPASSWORD: 'env',
    });
    expect(fromUrl).toMatchObject({ password: 'p@ss', schema: 'public', table: 'docs' });
    expect(fromUrl.connection).toMatchObject({
      host: 'db.example',
      port: 6543,
      user: 'me',
      database: 'vectors',
    });
    expect(fromUrl.label).toBe('postgres://me@db.example:6543/vectors?table=docs');
    expect(parsePgUrl('postgresql://me@h/db?table=t&schema=s', { PGPASSWORD: 'env' })).toMatchObject({
      password: 'env',
      schema: 's',
    });
    expect(parsePgUrl('postgres://me@[::1]/db?table=t', {}).password).toBeUndefined();
    expect(parsePgUrl('postgres://me@[::1]/db?table=t', {}).connection.host).toBe('::1');
    expect(withoutPassword('postgres://me:s3cr/et@host:bad/db')).toBe('postgres://me@host:bad/db');
  });
});

describe('a CREATE EXTENSION vector that fails', () => {
  const label = 'postgres://me@db:5432/vectors?table=docs';
  const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

  it('says to ask an admin when the user may not create it, and to install pgvector when it is missing', () => {
    const denied = extensionError(
      label,
      'vectors',
      failure('42501', 'permission denied to create extension "vector"'),
    );
    expect(denied).toBeInstanceOf(StoreError);
    expect(denied.message).toBe(
      `${label}: no permission to create the pgvector extension: ask an admin to run CREATE EXTENSION vector; in database vectors`,
    );
    const missing = extensionError(label, 'vectors', failure('0A000', 'extension "vector" is not available'));
    expect(missing.message).toMatch(
      /pgvector is not installed on the server \(extension "vector" is not available\)/,
    );
    const other = extensionError(label, undefined, failure('XX000', 'it broke\nsecret'), 'secret');
    expect(other.message).toBe(`cannot create the pgvector extension in ${label}: it broke ***`);
  });
});

describe.each(targets)('the pgvector store on $name', (target) => {
  let server: { readonly url: string; stop(): Promise<void> } | undefined;
  const tables: string[] = [];
  const base = () => server!.url;

  beforeAll(async () => {
    server = await target.start();
  }, START_TIMEOUT);
  afterAll(async () => {
    // Leave a shared database as found; PGlite's goes with its server.
    if (server && target.name === 'DATABASE_URL')
      await inspect(async (client) => {
        for (const table of tables) await client.query(`DROP TABLE IF EXISTS "${table}" CASCADE`);
        await client.query('DELETE FROM embedpipe_sync WHERE table_name = ANY($1)', [tables]).catch(() => {});
      });
    await server?.stop();
  }, START_TIMEOUT);

  /** A store on a table no other test uses. */
  async function open(tuning: PgvectorTuning = {}): Promise<{ store: VectorStore; table: string }> {
    const table = uniqueTable('pgv');
    tables.push(table);
    return { store: await openPgvectorStore(tableUrl(base(), table), process.env, tuning), table };
  }

  /** `work` with an independent client (what another reader of the database sees). */
  async function inspect<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: base() });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  describeStoreContract(`pgvector on ${target.name}`, async () => (await open()).store);

  it('creates its table, applies upserts and deletes, and scans what it holds (across statements and pages)', async () => {
    const { store, table } = await open({ statementBytes: 2_000, scanPage: 7, keysPerStatement: 5 });
    try {
      expect(await store.describe()).toEqual({ exists: false });
      expect(await scanAll(store)).toEqual(new Map());
      expect(await store.vectors([{ id: 'a', chunkIndex: 0 }])).toEqual(new Map());
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      expect(await store.describe()).toEqual({ exists: true, dims: 8, halfvec: false });
      // Ids that an array literal must quote: braces, commas, quotes, backslashes, spaces, non-ASCII.
      const ids = [
        'a',
        'b',
        'c',
        'd"q{u},o\'te\\',
        'é 東京',
        ...Array.from({ length: 8 }, (_, i) => `doc-${i}`),
      ];
      const first = storeRows(ids, 8);
      await store.apply({ upserts: first, deletes: [] });
      const pages: number[] = [];
      expect(await scanAll(store, pages)).toEqual(hashes(first));
      expect(pages.length).toBe(Math.ceil(first.length / 7));
      expect(Math.max(...pages)).toBe(7);

      // A document re-chunked (new hashes, one chunk gone), another gone whole.
      const changed = storeRows(['b'], 8, 2, '-v2');
      const deletes: RowKey[] = [{ id: 'b', chunkIndex: 2 }, ...storeRows(['c'], 8)];
      await store.apply({ upserts: changed, deletes });
      const expected = hashes([...first.filter((r) => r.id !== 'b' && r.id !== 'c'), ...changed]);
      expect(await scanAll(store)).toEqual(expected);

      const wanted = [...first.slice(9, 16), changed[1]!, { id: 'c', chunkIndex: 0 }];
      const vectors = await store.vectors(wanted);
      expect(vectors.size).toBe(8);
      for (const row of [...first.slice(9, 16), changed[1]!])
        expect(Array.from(vectors.get(rowKey(row))!)).toEqual(Array.from(row.embedding));
      const text = await inspect(
        async (client) =>
          (await client.query(`SELECT text FROM "${table}" WHERE id = $1 AND chunk_index = 1`, ['b'])).rows[0]
            ?.text,
      );
      expect(text).toBe('b #1-v2');
    } finally {
      await store.close();
    }
  });

  it('applies a group atomically: a row refused mid-group leaves nothing of it, and the error names the row', async () => {
    // One row per statement: the refused row comes after the deletes and earlier rows were sent.
    const { store, table } = await open({ statementBytes: 200 });
    try {
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      const first = storeRows(['a', 'b', 'c'], 8);
      await store.apply({ upserts: first, deletes: [] });
      const bad = { ...storeRows(['e'], 8, 1)[0]!, chunkIndex: 9, embedding: new Float32Array(7) };
      const group = { upserts: [...storeRows(['d', 'e'], 8), bad], deletes: storeRows(['a'], 8) };
      const message = await expectStoreError(
        store.apply(group),
        /row "e" chunk 9: its embedding has 7 dims, the table 8/,
      );
      expect(message).toContain(store.label);
      expect(await scanAll(store)).toEqual(hashes(first));
      const nan = {
        ...bad,
        embedding: Float32Array.from({ length: 8 }, (_, i) => (i === 3 ? Number.NaN : 0)),
      };
      await expectStoreError(
        store.apply({ upserts: [nan], deletes: [] }),
        /row "e" chunk 9: its embedding holds NaN at 3/,
      );

      // A refusal by the server itself, in the final merge after the deletes ran: rolled back too.
      await inspect(async (client) => {
        await client.query(`CREATE FUNCTION "${table}_refuse"() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.id = 'poison' THEN RAISE EXCEPTION 'refused row %', NEW.id; END IF; RETURN NEW; END $$`);
        await client.query(`CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON "${table}"
          FOR EACH ROW EXECUTE FUNCTION "${table}_refuse"()`);
      });
      const poisoned = {
        upserts: [...storeRows(['f'], 8), ...storeRows(['poison'], 8, 1)],
        deletes: storeRows(['b'], 8),
      };
      await expectStoreError(
        store.apply(poisoned),
        /cannot apply a group \(4 upserts, 3 deletes\) to .*refused row poison/,
      );
      expect(await scanAll(store)).toEqual(hashes(first));
      // The connection is usable after the rollback.
      await store.apply({ upserts: storeRows(['f'], 8), deletes: storeRows(['b'], 8) });
      expect(await scanAll(store)).toEqual(hashes([...storeRows(['a', 'c', 'f'], 8)]));
    } finally {
      await store.close();
    }
  });

  it('refuses a table of other dims, type or model, or without its columns; --replace rebuilds it', async () => {
    const { store } = await open();
    try {
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      await store.apply({ upserts: storeRows(['a'], 8), deletes: [] });
      await store.begin(synced('v000001', 8));
      await store.commit(synced('v000001', 8));
      await expectStoreError(
        store.prepare({ model: MODEL, dims: 16, replace: false }),
        /holds 8-dim vectors, the dataset 16-dim ones: sync with --replace/,
      );
      await expectStoreError(
        store.prepare({ model: 'emu/other', dims: 8, replace: false }),
        /holds embeddings of model emu\/pg-test, the dataset is of emu\/other: sync with --replace/,
      );
      await expectStoreError(
        store.prepare({ model: MODEL, dims: 8, replace: false, halfvec: true }),
        /stores vector, not halfvec/,
      );
      expect(await scanAll(store)).toEqual(hashes(storeRows(['a'], 8)));
      await store.prepare({ model: 'emu/other', dims: 16, replace: true });
      expect(await store.describe()).toEqual({ exists: true, dims: 16, halfvec: false });
      expect(await scanAll(store)).toEqual(new Map());
      await store.apply({ upserts: storeRows(['b'], 16), deletes: [] });
      expect(await scanAll(store)).toEqual(hashes(storeRows(['b'], 16)));
    } finally {
      await store.close();
    }

    const { store: foreign, table } = await open();
    const { store: keyless, table: keylessTable } = await open();
    try {
      await inspect(async (client) => {
        await client.query('CREATE EXTENSION IF NOT EXISTS vector');
        await client.query(`CREATE TABLE "${table}" (id text, body text)`);
        await client.query(
          `CREATE TABLE "${keylessTable}" (id text, chunk_index int, text text, content_hash text, embedding vector(8))`,
        );
      });
      // Not embedpipe's table: refused even with --replace, and left as it is.
      for (const replace of [false, true])
        await expectStoreError(
          foreign.prepare({ model: MODEL, dims: 8, replace }),
          /lacks the columns chunk_index, text, content_hash, embedding: use another table/,
        );
      await expectStoreError(
        keyless.prepare({ model: MODEL, dims: 8, replace: false }),
        /PRIMARY KEY \(id, chunk_index\)/,
      );
      const columns = await inspect(async (client) =>
        (await client.query(`SELECT * FROM "${table}" LIMIT 0`)).fields.map((f) => f.name),
      );
      expect(columns).toEqual(['id', 'body']);
    } finally {
      await foreign.close();
      await keyless.close();
    }
  });

  it('records the sync begun and committed, per table, as describe reads it', async () => {
    const { store, table } = await open();
    const { store: other } = await open();
    try {
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      await store.begin(synced('v000001', 8));
      expect(await store.describe()).toEqual({
        exists: true,
        dims: 8,
        halfvec: false,
        pending: synced('v000001', 8),
      });
      await store.commit(synced('v000001', 8));
      expect(await store.describe()).toEqual({
        exists: true,
        dims: 8,
        halfvec: false,
        synced: synced('v000001', 8),
      });
      await store.begin(synced('v000002', 8));
      const state = {
        exists: true,
        dims: 8,
        halfvec: false,
        synced: synced('v000001', 8),
        pending: synced('v000002', 8),
      };
      expect(await store.describe()).toEqual(state);
      expect(await other.describe()).toEqual({ exists: false });
      const again = await openPgvectorStore(tableUrl(base(), table), process.env);
      try {
        expect(await again.describe()).toEqual(state);
      } finally {
        await again.close();
      }
    } finally {
      await store.close();
      await other.close();
    }
  });

  it('searches by cosine: the top k in the order, and with the scores, an exact search gives', async () => {
    const { store } = await open();
    try {
      await expectStoreError(store.search(new Float32Array(16), 3), /the table does not exist/);
      await store.prepare({ model: MODEL, dims: 16, replace: false });
      const all = storeRows(
        Array.from({ length: 100 }, (_, i) => `doc-${i}`),
        16,
        2,
      );
      await store.apply({ upserts: all, deletes: [] });
      const query = storeRows(['query'], 16, 1)[0]!.embedding;
      const exact = all
        .map((row) => ({ key: rowKey(row), score: cosine(query, row.embedding) }))
        .sort((a, b) => b.score - a.score);
      for (const k of [1, 10, 50]) {
        const hits = await store.search(query, k);
        expect(hits.map(rowKey)).toEqual(exact.slice(0, k).map((hit) => hit.key));
        for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(exact[i]!.score, 5);
      }
      const [top] = await store.search(all[33]!.embedding, 1);
      expect(top).toMatchObject({ id: all[33]!.id, chunkIndex: all[33]!.chunkIndex, text: all[33]!.text });
      expect(top!.score).toBeCloseTo(1, 5);
      await expectStoreError(
        store.search(new Float32Array(8), 3),
        /the query vector has 8 dims, the table 16/,
      );
    } finally {
      await store.close();
    }
  });

  it('stores halfvec when asked: values to about 1e-3, search, an HNSW index, and later syncs keep it', async () => {
    const { store, table } = await open();
    try {
      await store.prepare({ model: MODEL, dims: 8, replace: false, halfvec: true, index: 'hnsw' });
      expect(await store.describe()).toEqual({ exists: true, dims: 8, halfvec: true });
      const type = await inspect(
        async (client) =>
          (
            await client.query(
              `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
                WHERE attrelid = $1::regclass AND attname = 'embedding'`,
              [`"${table}"`],
            )
          ).rows[0]?.type,
      );
      expect(type).toBe('halfvec(8)');
      const all = storeRows(
        Array.from({ length: 20 }, (_, i) => `doc-${i}`),
        8,
      );
      await store.apply({ upserts: all, deletes: [] });
      const vectors = await store.vectors(all.slice(0, 5));
      for (const row of all.slice(0, 5)) {
        const held = vectors.get(rowKey(row))!;
        for (const [i, value] of row.embedding.entries())
          expect(Math.abs(held[i]! - value)).toBeLessThanOrEqual(1e-3);
      }
      const [top] = await store.search(all[7]!.embedding, 1);
      expect(rowKey(top!)).toBe(rowKey(all[7]!));
      await store.commit(synced('v000001', 8));
      expect(await indexDefinitions(table)).toEqual([
        expect.stringMatching(/USING hnsw \(embedding halfvec_cosine_ops\)/),
      ]);
      const huge = { ...all[0]!, embedding: Float32Array.from({ length: 8 }, () => 1e6) };
      await expectStoreError(
        store.apply({ upserts: [huge], deletes: [] }),
        /row "doc-0" chunk 0: .*beyond halfvec's range/,
      );
      await store.prepare({ model: MODEL, dims: 8, replace: false });
      expect((await store.describe()).halfvec).toBe(true);
    } finally {
      await store.close();
    }
  });

  /** The definitions of a table's indexes other than its primary key. */
  async function indexDefinitions(table: string): Promise<string[]> {
    return inspect(async (client) =>
      (
        await client.query(
          `SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexname NOT LIKE '%_pkey' ORDER BY indexname`,
          [table],
        )
      ).rows.map((row) => String(row.indexdef)),
    );
  }

  it('builds the HNSW cosine index at commit, once; over 2,000 dims only as halfvec', async () => {
    const { store, table } = await open();
    try {
      await store.prepare({ model: MODEL, dims: 8, replace: false, index: 'hnsw' });
      const all = storeRows(
        Array.from({ length: 30 }, (_, i) => `doc-${i}`),
        8,
      );
      await store.apply({ upserts: all, deletes: [] });
      expect(await indexDefinitions(table)).toEqual([]);
      await store.commit(synced('v000001', 8));
      await store.commit(synced('v000001', 8));
      expect(await indexDefinitions(table)).toEqual([
        expect.stringMatching(/USING hnsw \(embedding vector_cosine_ops\)/),
      ]);
      const [top] = await store.search(all[4]!.embedding, 3);
      expect(rowKey(top!)).toBe(rowKey(all[4]!));
    } finally {
      await store.close();
    }

    const { store: wide, table: wideTable } = await open();
    try {
      await expectStoreError(
        wide.prepare({ model: MODEL, dims: 2_001, replace: false, index: 'hnsw' }),
        /HNSW indexes vectors of at most 2000 dims; the dataset has 2001: sync with --halfvec/,
      );
      expect((await wide.describe()).exists).toBe(false);
      await wide.prepare({ model: MODEL, dims: 2_001, replace: false, index: 'hnsw', halfvec: true });
      await wide.apply({ upserts: storeRows(['a', 'b'], 2_001), deletes: [] });
      await wide.commit(synced('v000001', 2_001));
      expect(await indexDefinitions(wideTable)).toEqual([
        expect.stringMatching(/USING hnsw \(embedding halfvec_cosine_ops\)/),
      ]);
    } finally {
      await wide.close();
    }
  });

  it('refuses bad URLs, bad table names and a refused connection with one line, never the password', async () => {
    const bad: [string, RegExp][] = [
      ['mysql://u:secret@h/db?table=docs', /must start with postgres:\/\//],
      ['postgres://u:secret@h:99999/db?table=docs', /does not parse as a URL/],
      ['postgres://u:secret@h/db', /names no table/],
      ['postgres://u:secret@h/db?table=docs;drop', /table "docs;drop" is not a plain SQL identifier/],
      ['postgres://u:secret@h/db?table=1docs', /table "1docs" is not a plain SQL identifier/],
      [`postgres://u:secret@h/db?table=${'x'.repeat(64)}`, /at most 63 characters/],
      ['postgres://u:secret@h/db?table=docs&schema=a-b', /schema "a-b" is not a plain SQL identifier/],
      ['postgres://u:secret@h/db?table=docs&tabel=x', /unknown parameter tabel/],
      ['postgres://u:secret@h/db?table=embedpipe_sync', /embedpipe's own record/],
      ['postgres://u:secret@h/db?table=docs&sslmode=allow', /sslmode=allow is not supported/],
    ];
    for (const [url, pattern] of bad) {
      const message = await expectStoreError(openPgvectorStore(url, {}), pattern);
      if (!url.startsWith('mysql')) expect(message).toContain('postgres://u@h');
    }
    const port = await closedPort();
    await expectStoreError(
      openPgvectorStore(`postgres://u:secret@127.0.0.1:${port}/db?table=docs`, {}),
      new RegExp(
        `^cannot connect to postgres://u@127\\.0\\.0\\.1:${port}/db\\?table=docs: connection refused`,
      ),
    );
    await expectStoreError(
      openPgvectorStore(`postgres://u@127.0.0.1:${port}/db?table=docs`, { PGPASSWORD: 'secret' }),
      /connection refused/,
    );

    if (target.name === 'PGlite') {
      // PGlite takes any password: the store opens, and its label leaves the password out.
      const url = tableUrl(base().replace('postgres@', 'postgres:secret@'), uniqueTable('pgv'));
      const store = await openPgvectorStore(url, {});
      try {
        expect(store.label).toBe(url.replace(':secret@', '@'));
        expect((await store.describe()).exists).toBe(false);
      } finally {
        await store.close();
      }
    }
    const noSchema = await openPgvectorStore(
      `${tableUrl(base(), uniqueTable('pgv'))}&schema=nowhere`,
      process.env,
    );
    try {
      await expectStoreError(
        noSchema.prepare({ model: MODEL, dims: 8, replace: false }),
        /schema nowhere does not exist/,
      );
    } finally {
      await noSchema.close();
    }
  });
});
