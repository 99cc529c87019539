/**
 * A vector store a dataset is synced into (PostgreSQL + pgvector, LanceDB), behind one small
 * interface. The store follows the dataset version by version: `sync` diffs the store's row keys and
 * content hashes against the dataset's current version and applies the difference in groups of whole
 * documents, so readers never see two versions' rows of one document. The store keeps the version
 * it last received and the dataset's model and dims, and refuses rows of other dims or another model.
 */

/** A row's key in the dataset and in every store. */
export interface RowKey {
  readonly id: string;
  readonly chunkIndex: number;
}

/** A row as a store holds it. */
export interface StoreRow extends RowKey {
  readonly text: string;
  readonly contentHash: string;
  readonly embedding: Float32Array;
}

/** What the store says of itself, read before a sync (and by `search`). */
export interface StoreState {
  /** The table (or collection) exists. */
  readonly exists: boolean;
  /** The vector length of its embedding column, when it exists. */
  readonly dims?: number;
  /** Its vectors are half precision (pgvector `halfvec`): values compare to about 1e-3. */
  readonly halfvec?: boolean;
  /** What the last completed sync recorded: the dataset's model, version and dataset root. */
  readonly synced?: SyncedVersion;
  /** A sync that started and did not complete: the version it was bringing the store to. */
  readonly pending?: SyncedVersion;
}

export interface SyncedVersion {
  readonly model: string;
  readonly version: string;
  readonly dims: number;
  /** When it was recorded (ISO 8601). */
  readonly at: string;
}

/**
 * One group of changes, applied atomically (one transaction in PostgreSQL, one table version in
 * LanceDB): every row of the group's documents that is new or whose content hash changed, and the
 * keys of the rows gone.
 */
export interface ChangeGroup {
  readonly upserts: readonly StoreRow[];
  readonly deletes: readonly RowKey[];
}

export interface PrepareOptions {
  readonly model: string;
  readonly dims: number;
  /** Drop what the table holds first (a model migration, or to rebuild). */
  readonly replace: boolean;
  /** Build an approximate index after loading (HNSW, cosine). */
  readonly index?: 'hnsw';
  /** PostgreSQL: store `halfvec` rather than `vector` (required for an index over 2,000 dims). */
  readonly halfvec?: boolean;
}

export interface SearchHit extends RowKey {
  readonly text: string;
  /** Cosine similarity, 1 = same direction. */
  readonly score: number;
}

export interface VectorStore {
  /** Where it is, for messages (no password). */
  readonly label: string;
  describe(): Promise<StoreState>;
  /**
   * Makes the table ready for rows of `dims` (created when missing; with `replace`, emptied and
   * recreated). Refuses a table of other dims or another model, or without the expected columns,
   * with a StoreError saying what to do (`--replace`, another table).
   */
  prepare(options: PrepareOptions): Promise<void>;
  /** Records that a sync towards `target` started (a sync that dies leaves it pending). */
  begin(target: SyncedVersion): Promise<void>;
  /** Every row's key and content hash, in any order. */
  scan(): AsyncIterable<readonly (RowKey & { readonly contentHash: string })[]>;
  /** Applies one group atomically. */
  apply(group: ChangeGroup): Promise<void>;
  /** Records the completed sync (clears `pending`), and builds the index asked for in prepare. */
  commit(synced: SyncedVersion): Promise<void>;
  /** The vectors of some rows (verify compares a sample with the dataset's). */
  vectors(keys: readonly RowKey[]): Promise<Map<string, Float32Array>>;
  /**
   * The `k` rows nearest to `vector` by cosine. Through the store's approximate index when it has
   * one; `exact`: a full scan (what the dataset folder's search gives, and slower).
   */
  search(vector: Float32Array, k: number, options?: { readonly exact?: boolean }): Promise<SearchHit[]>;
  close(): Promise<void>;
}

/** `id` and `chunk_index` as one map key. */
export const rowKey = (key: RowKey): string => `${key.chunkIndex}\u0000${key.id}`;
