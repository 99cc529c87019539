/**
 * How a paid batch becomes part of the version: appended to the spill the moment it is embedded (a
 * killed run commits it on resume), then written with others in one group file whose footer
 * carries each batch's record, and only then counted in the ledger and offered for reuse. The
 * calibration that planned later documents is persisted before any part that depends on it.
 */
import { concatenated } from '../concatenated.js';
import type { Batch, Chunk, EmbeddedBatch } from '../domain.js';
import type { Ledger } from '../observability/ledger.js';
import { batchRecordMetadata, batchRecordOf, withoutStaleRows } from './batch-record.js';
import { PairDigest, type VersionDigest, versionDigestOf } from './contract.js';
import type { DatasetWriter } from './dataset.js';
import { GroupCommitter } from './group-committer.js';
import { hashKey } from './hash-key.js';
import { RowIds } from './row-keys.js';
import type { SpillLog } from './spill.js';

/** What the commit asks of the run's chunk sizing. */
export interface CommitSizing {
  isStale(chunk: Chunk, batchId: string): boolean;
  release(chunks: readonly Chunk[]): void;
}

/** Where committed rows are offered for reuse (embedding/reuse.ts). */
export interface CommittedRows {
  committed(
    file: string,
    hashes: readonly string[],
    vectors: readonly Float32Array[],
    keys: Float64Array,
  ): Promise<void>;
}

export interface DurableCommitOptions {
  readonly writer: DatasetWriter;
  readonly spill: SpillLog;
  readonly sizing: CommitSizing;
  readonly ledger: Ledger;
  readonly reuse: CommittedRows;
  /** Writes the calibration when it changed (resolves at once otherwise). */
  readonly persistCalibration: () => Promise<void>;
  readonly groupBytes: number;
  readonly maxDelayMs: number;
}

/** A data file this process wrote: what finalize knows of it without reading it. */
export interface WrittenFile {
  /** Its rows (the writer read the count back from the file's footer). */
  readonly rows: number;
  readonly dims: number;
  /** The digest of its rows' (id, chunk_index, content_hash): constant memory, whatever the rows. */
  readonly digest: VersionDigest;
}

export class DurableCommit {
  /** Data files this process wrote: finalize checks them against the plan without reading them. */
  readonly writtenHere = new Map<string, WrittenFile>();
  /**
   * Documents a batch of this process re-planned, with the digest of the rows that batch committed
   * for them, when those are chunks 0..k-1 each once: finalize puts them in place of the documents'
   * first plan (see planDigest). A later owner's commit replaces the entry, or removes it.
   */
  readonly replannedHere = new Map<string, ReplannedRows>();
  readonly #options: DurableCommitOptions;
  readonly #committer: GroupCommitter;

  constructor(options: DurableCommitOptions) {
    this.#options = options;
    this.#committer = new GroupCommitter((group) => this.#commitGroup(group), {
      concurrency: 2,
      maxBacklog: 2,
      groupBytes: options.groupBytes,
      maxDelayMs: options.maxDelayMs,
    });
  }

  /** A batch just embedded: spilled now, committed with its group. Waits only on a full backlog. */
  async add(batch: Batch, embedded: EmbeddedBatch): Promise<void> {
    await this.#options.persistCalibration();
    await this.#options.spill.append({ plannedChunks: batch.chunks.length, embedded });
    await this.#committer.add(batch, embedded);
  }

  /** Commits what waits; throws the first commit failure. */
  drain(): Promise<void> {
    return this.#committer.drain();
  }

  async #commitGroup(group: readonly { batch: Batch; embedded: EmbeddedBatch }[]): Promise<void> {
    const { writer, sizing, spill, ledger, reuse } = this.#options;
    // A document re-planned by another batch keeps only that batch's rows.
    const rows = group.map(({ batch, embedded }) => ({
      batch,
      embedded: withoutStaleRows(embedded, (chunk) => sizing.isStale(chunk, batch.batchId)),
    }));
    const records = rows.map(({ batch, embedded }) => batchRecordOf(batch.chunks.length, embedded));
    await this.#options.persistCalibration();
    const written = await writer.writeGroup(
      rows.map(({ batch, embedded }, i) => ({
        batchId: batch.batchId,
        batch: embedded,
        extra: batchRecordMetadata(records[i]!),
      })),
    );
    const chunks = concatenated(rows, ({ embedded }) => embedded.chunks);
    const dims = rows.find(({ embedded }) => embedded.vectors.length > 0)?.embedded.vectors[0]?.length;
    const keys = new Float64Array(chunks.length);
    for (let i = 0; i < chunks.length; i++) keys[i] = hashKey(chunks[i]!.hash);
    // (A group without a vector declares no dims of its own: finalize reads that file.)
    if (dims !== undefined) {
      const ids = RowIds.of(chunks.map((c) => c.documentId));
      const indices = new Int32Array(chunks.length);
      for (let i = 0; i < chunks.length; i++) indices[i] = chunks[i]!.index;
      const digest = versionDigestOf({ ids, indices, keys });
      this.writtenHere.set(written.file, { rows: written.rows, dims, digest });
    }
    await reuse.committed(
      written.file,
      chunks.map((c) => c.hash),
      concatenated(rows, ({ embedded }) => embedded.vectors),
      keys,
    );
    await spill.committed(rows.map(({ batch }) => batch.batchId));
    for (const { batch, embedded } of rows) this.#noteReplanned(batch.batchId, embedded);
    rows.forEach(({ batch }, i) => {
      ledger.commit(records[i]!);
      sizing.release(batch.chunks);
    });
  }

  #noteReplanned(batchId: string, embedded: EmbeddedBatch): void {
    if (embedded.replanned.length === 0) return;
    for (const [documentId, pairs] of replannedDigests(embedded)) {
      if (pairs) this.replannedHere.set(documentId, { batchId, pairs });
      else this.replannedHere.delete(documentId);
    }
  }
}

/**
 * Each document the batch re-planned, with the digest of its rows in the batch when they are
 * chunks 0..k-1 each once; undefined when they are not (a chunk failed or went stale).
 */
export function replannedDigests(embedded: EmbeddedBatch): Map<string, PairDigest | undefined> {
  const digests = new Map<string, PairDigest | undefined>();
  for (const documentId of embedded.replanned) {
    const chunks = embedded.chunks
      .filter((chunk) => chunk.documentId === documentId)
      .sort((a, b) => a.index - b.index);
    const complete = chunks.length > 0 && chunks.every((chunk, k) => chunk.index === k);
    if (!complete) {
      digests.set(documentId, undefined);
      continue;
    }
    const pairs = new PairDigest();
    for (const chunk of chunks) pairs.add(chunk.index, hashKey(chunk.hash));
    digests.set(documentId, pairs);
  }
  return digests;
}

/** The rows a batch committed for a document it re-planned (DurableCommit.replannedHere). */
export interface ReplannedRows {
  readonly batchId: string;
  readonly pairs: PairDigest;
}
