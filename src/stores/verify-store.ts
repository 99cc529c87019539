/**
 * `sync --verify`: proves a store equals the dataset's current version, or says what differs: the
 * rows it lacks, holds in excess or holds with another content hash (every key is compared), a
 * sample of vectors compared value by value, and the version the store says it received.
 */
import { createHash } from 'node:crypto';
import { DEFAULTS } from '../config/defaults.js';
import { currentVersion, type RowPlace, rowPlaces, VersionRowReader } from './dataset-rows.js';
import { type RowKey, rowKey, type VectorStore } from './store.js';
import { diffStore, rowsOf } from './sync.js';

export interface StoreVerification {
  readonly store: string;
  readonly version: string;
  /** What the store recorded as its last completed sync, and a sync left unfinished. */
  readonly storeVersion?: string;
  readonly pending?: string;
  readonly rows: { readonly dataset: number; readonly store: number };
  /** Rows of the dataset the store lacks. */
  readonly missing: number;
  /** Rows the store holds that the dataset does not. */
  readonly extra: number;
  /** Rows held with another content hash. */
  readonly changed: number;
  /** Vectors compared, and those that differ beyond the store's precision. */
  readonly vectors: { readonly compared: number; readonly differ: number };
  /** A few keys of each kind of difference, for the message. */
  readonly examples: readonly string[];
  /** Keys (rowKey) whose vector differs: what `--repair` writes again although their hash is equal. */
  readonly differingVectors: readonly string[];
  readonly equal: boolean;
}

export interface VerifyStoreOptions {
  /** Vectors compared (default DEFAULTS.sync.verifySample; Infinity: all). */
  readonly sample?: number;
  /** Largest absolute difference of a vector value (default 1e-6; halfvec stores need ~1e-3). */
  readonly tolerance?: number;
}

export async function verifyStore(
  dir: string,
  store: VectorStore,
  options: VerifyStoreOptions = {},
): Promise<StoreVerification> {
  const version = await currentVersion(dir);
  const state = await store.describe();
  const places = await rowPlaces(version);
  const diff = await diffStore(store, places);
  const differs = [...diff.upserts.values()].flat();
  const extra = [...diff.deletes.values()].flat();
  const examples: string[] = [];
  for (const key of extra) note(examples, `extra ${show(key)}`);
  for (const place of differs) note(examples, `missing or changed ${show(place.key)}`);
  const differing = new Set(differs.map((place) => rowKey(place.key)));
  const held = [...places.values()].filter((place) => !differing.has(rowKey(place.key)));
  const vectors = await compareVectors(store, version, held, options);
  for (const key of vectors.differing) note(examples, `vector differs ${show(key)}`);
  const equal = differs.length === 0 && extra.length === 0 && vectors.differing.length === 0;
  return {
    store: store.label,
    version: version.version,
    ...(state.synced ? { storeVersion: state.synced.version } : {}),
    ...(state.pending ? { pending: state.pending.version } : {}),
    rows: { dataset: places.size, store: diff.unchanged + diff.changed + extra.length },
    missing: differs.length - diff.changed,
    extra: extra.length,
    changed: diff.changed,
    vectors: { compared: vectors.compared, differ: vectors.differing.length },
    examples,
    differingVectors: vectors.differing.map(rowKey),
    equal: equal && state.synced?.version === version.version && !state.pending,
  };
}

const show = (key: RowKey) => `${key.id}#${key.chunkIndex}`;

function note(examples: string[], example: string): void {
  if (examples.length < 10) examples.push(example);
}

/** A deterministic sample of rows (by key hash) whose vectors are read from both sides and compared. */
async function compareVectors(
  store: VectorStore,
  version: Awaited<ReturnType<typeof currentVersion>>,
  candidates: readonly RowPlace[],
  options: VerifyStoreOptions,
): Promise<{ compared: number; differing: RowKey[] }> {
  const sample = [...candidates]
    .map((place) => ({ place, order: createHash('sha1').update(rowKey(place.key)).digest('hex') }))
    .sort((a, b) => (a.order < b.order ? -1 : 1))
    .slice(0, options.sample ?? DEFAULTS.sync.verifySample)
    .map(({ place }) => place);
  const held = await store.vectors(sample.map((place) => place.key));
  const reader = new VersionRowReader(version);
  const tolerance = options.tolerance ?? 1e-6;
  const differing: RowKey[] = [];
  for (const row of await rowsOf(reader, sample)) {
    const stored = held.get(rowKey(row));
    if (!stored || !close(stored, row.embedding, tolerance)) differing.push(row);
  }
  return { compared: sample.length, differing };
}

function close(a: Float32Array, b: Float32Array, tolerance: number): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (Math.abs(a[i]! - b[i]!) > tolerance) return false;
  return true;
}
