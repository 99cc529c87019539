/**
 * The one ledger of a dataset version: the batch records committed with its data, and nothing
 * kept beside them. What the version holds (rows, tokens, cost, requests, failures) and what this
 * run committed are folds over those records; the summary, the manifest, the progress line,
 * `status` and the metrics read them from here instead of counting for themselves.
 *
 * The folds are kept as running sums as records arrive (a progress line reads them often), but
 * every sum moves in exactly one place: `#fold`.
 */
import type { BatchRecord, ChunkFailure } from '../domain.js';

/** A fold of batch records. */
export interface RecordTotals {
  /** Batches folded (with or without a record). */
  batches: number;
  rows: number;
  /** Vector length; 0 while no folded batch had a vector. */
  dims: number;
  promptTokens: number;
  cost: number;
  requests: number;
  retries: number;
  /** Rows whose vectors a request of the runs that built the version brought, failures included. */
  sent: number;
  /** Rows whose vectors came from the dataset: by content hash, or whole batches of the version replaced. */
  reused: number;
  /** Rows whose vectors another chunk of the same run was sent for. */
  deduplicated: number;
  readonly providers: Set<string>;
  readonly failures: ChunkFailure[];
}

const emptyTotals = (): RecordTotals => ({
  batches: 0,
  rows: 0,
  dims: 0,
  promptTokens: 0,
  cost: 0,
  requests: 0,
  retries: 0,
  sent: 0,
  reused: 0,
  deduplicated: 0,
  providers: new Set(),
  failures: [],
});

export class Ledger {
  /** Every batch id of the plan (repairs included), in plan order. */
  readonly planned = new Set<string>();
  /** Batches of the plan committed before this run (a resumed or incremental run skips them). */
  readonly carried = emptyTotals();
  /** Batches this run (this process) committed. */
  readonly committed = emptyTotals();
  /** Batches whose retries ran out in this run: not committed, a re-run sends them again. */
  failedBatches = 0;

  /** A batch of the plan (a batch planned twice counts once). */
  plan(batchId: string): void {
    this.planned.add(batchId);
  }

  /**
   * A committed batch of the plan found in the version (`undefined`: a part written without a
   * record). `inherited`: it came with the version replaced (a file linked from it), so none of its
   * rows was sent for this version.
   */
  carry(record: BatchRecord | undefined, inherited = false): void {
    this.#fold(this.carried, record, inherited);
  }

  /** A batch this run committed. */
  commit(record: BatchRecord): void {
    this.#fold(this.committed, record);
  }

  failed(): void {
    this.failedBatches += 1;
  }

  /** What the version holds: every committed batch of its plan, whichever run paid for it. */
  dataset(): RecordTotals {
    const { carried: a, committed: b } = this;
    return {
      batches: a.batches + b.batches,
      rows: a.rows + b.rows,
      dims: b.dims || a.dims,
      promptTokens: a.promptTokens + b.promptTokens,
      cost: a.cost + b.cost,
      requests: a.requests + b.requests,
      retries: a.retries + b.retries,
      sent: a.sent + b.sent,
      reused: a.reused + b.reused,
      deduplicated: a.deduplicated + b.deduplicated,
      providers: new Set([...a.providers, ...b.providers]),
      failures: [...a.failures, ...b.failures],
    };
  }

  #fold(totals: RecordTotals, record: BatchRecord | undefined, inherited = false): void {
    totals.batches += 1;
    if (!record) return;
    totals.rows += record.rows;
    if (inherited) totals.reused += record.rows;
    else {
      const reused = record.reused ?? 0;
      const deduplicated = record.deduplicated ?? 0;
      totals.reused += reused;
      totals.deduplicated += deduplicated;
      // A reused row dropped at commit (its document re-planned meanwhile) must not make this negative.
      totals.sent += Math.max(0, record.rows + record.failures.length - reused - deduplicated);
    }
    if (record.dims > 0) totals.dims = record.dims;
    totals.promptTokens += record.promptTokens;
    totals.cost += record.cost;
    totals.requests += record.requests;
    totals.retries += record.retries;
    if (record.provider) totals.providers.add(record.provider);
    totals.failures.push(...record.failures);
  }
}
