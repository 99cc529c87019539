/**
 * `embedpipe sync`: brings a store to the dataset's current version. The store's keys and content
 * hashes are diffed against the version's (whatever version the store last received, a rollback
 * included), and only the difference is written: rows new or whose hash changed are upserted, rows
 * gone are deleted. Changes are applied in groups of whole documents, each group atomically, so a
 * reader never sees two versions' rows of one document; a sync that dies leaves the store with
 * whole groups applied and `pending` recorded, and the next sync's diff completes it.
 */
import type { SyncReport } from '../domain.js';
import type { Logger } from '../observability/logger.js';
import { currentVersion, type RowPlace, rowPlaces, VersionRowReader } from './dataset-rows.js';
import { type ChangeGroup, type RowKey, rowKey, type StoreRow, type VectorStore } from './store.js';

/**
 * Rows per group: one transaction (PostgreSQL) or table version (LanceDB) each; large enough that a
 * group's statements are bulk, small enough that a group's vectors stay a few MB.
 */
const GROUP_ROWS = 2_000;

export type { SyncReport };

export interface SyncOptions {
  /** Drop what the table holds first (a model migration into the same table). */
  readonly replace?: boolean;
  readonly index?: 'hnsw';
  readonly halfvec?: boolean;
  /** Rows upserted even when their hash is unchanged (`--repair` of vectors that differ). */
  readonly force?: ReadonlySet<string>;
  /** Rows per group at most (a larger document is a group of its own). */
  readonly groupRows?: number;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
}

/** The difference between the store and the dataset, per document. */
export interface StoreDiff {
  /** Rows the store lacks or holds with another hash, per document id. */
  readonly upserts: Map<string, RowPlace[]>;
  /** Rows the store holds that the dataset does not, per document id. */
  readonly deletes: Map<string, RowKey[]>;
  readonly unchanged: number;
  /** Of the upserts, the rows the store holds with another content hash (the others it lacks). */
  readonly changed: number;
}

export async function syncStore(
  dir: string,
  store: VectorStore,
  options: SyncOptions = {},
): Promise<SyncReport> {
  const started = Date.now();
  const version = await currentVersion(dir);
  const before = await store.describe();
  await store.prepare({
    model: version.model,
    dims: version.dims,
    replace: options.replace === true,
    ...(options.index ? { index: options.index } : {}),
    ...(options.halfvec ? { halfvec: true } : {}),
  });
  const target = {
    model: version.model,
    version: version.version,
    dims: version.dims,
    at: new Date().toISOString(),
  };
  await store.begin(target);
  const places = await rowPlaces(version);
  const diff = await diffStore(store, places, options.force);
  const groups = changeGroups(diff, options.groupRows ?? GROUP_ROWS);
  let upserted = 0;
  let deleted = 0;
  const reader = new VersionRowReader(version);
  for (const group of groups) {
    options.signal?.throwIfAborted();
    const rows = await rowsOf(reader, group.upserts);
    await store.apply({ upserts: rows, deletes: group.deletes });
    upserted += rows.length;
    deleted += group.deletes.length;
    options.logger?.debug({ upserted, deleted }, 'sync group applied');
  }
  await store.commit(target);
  const report: SyncReport = {
    store: store.label,
    version: version.version,
    ...(before.synced && !options.replace ? { from: before.synced.version } : {}),
    model: version.model,
    dims: version.dims,
    rows: places.size,
    upserted,
    deleted,
    unchanged: diff.unchanged,
    documents: new Set([...diff.upserts.keys(), ...diff.deletes.keys()]).size,
    groups: groups.length,
    elapsedMs: Date.now() - started,
  };
  options.logger?.info(report, 'synced');
  return report;
}

/** What the store lacks, holds differently, or holds in excess, against the dataset's rows. */
export async function diffStore(
  store: VectorStore,
  places: ReadonlyMap<string, RowPlace>,
  force?: ReadonlySet<string>,
): Promise<StoreDiff> {
  const upserts = new Map<string, RowPlace[]>();
  const deletes = new Map<string, RowKey[]>();
  const seen = new Set<string>();
  let unchanged = 0;
  let changed = 0;
  for await (const page of store.scan()) {
    for (const held of page) {
      const key = rowKey(held);
      const place = places.get(key);
      if (!place) {
        push(deletes, held.id, { id: held.id, chunkIndex: held.chunkIndex });
        continue;
      }
      seen.add(key);
      if (place.contentHash === held.contentHash && !force?.has(key)) unchanged += 1;
      else {
        if (place.contentHash !== held.contentHash) changed += 1;
        push(upserts, place.key.id, place);
      }
    }
  }
  for (const [key, place] of places) if (!seen.has(key)) push(upserts, place.key.id, place);
  return { upserts, deletes, unchanged, changed };
}

function push<T>(map: Map<string, T[]>, id: string, value: T): void {
  const list = map.get(id);
  if (list) list.push(value);
  else map.set(id, [value]);
}

interface PlannedGroup {
  readonly upserts: readonly RowPlace[];
  readonly deletes: readonly RowKey[];
}

/** Whole documents per group, up to `groupRows` rows (a document is never split). */
export function changeGroups(diff: StoreDiff, groupRows: number): PlannedGroup[] {
  const groups: PlannedGroup[] = [];
  let upserts: RowPlace[] = [];
  let deletes: RowKey[] = [];
  const flush = () => {
    if (upserts.length + deletes.length === 0) return;
    groups.push({ upserts, deletes });
    upserts = [];
    deletes = [];
  };
  const ids = new Set([...diff.upserts.keys(), ...diff.deletes.keys()]);
  for (const id of ids) {
    const documentUpserts = diff.upserts.get(id) ?? [];
    const documentDeletes = diff.deletes.get(id) ?? [];
    if (upserts.length + deletes.length + documentUpserts.length + documentDeletes.length > groupRows)
      flush();
    upserts.push(...documentUpserts);
    deletes.push(...documentDeletes);
  }
  flush();
  return groups;
}

/** Whole rows at `places`, read from the dataset's files (each file once per call). */
export async function rowsOf(reader: VersionRowReader, places: readonly RowPlace[]): Promise<StoreRow[]> {
  const byFile = new Map<string, RowPlace[]>();
  for (const place of places) push(byFile, place.file, place);
  const rows: StoreRow[] = [];
  for (const [file, inFile] of byFile)
    rows.push(
      ...(await reader.rows(
        file,
        inFile.map((place) => place.row),
      )),
    );
  return rows;
}

export type { ChangeGroup };
