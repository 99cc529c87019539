/** A run's ledger filled as a run would fill it, for tests of what reads it (progress, summary). */
import type { RunStats } from '../../src/observability/stats.js';
import type { BatchRecord } from '../../src/output/batch-record.js';

export interface Booked {
  planned?: number;
  /** Committed by an earlier run. */
  resumed?: number;
  /** Committed by this run, with `rows` rows in all. */
  embedded?: number;
  rows?: number;
  failed?: number;
}

const record = (rows: number): BatchRecord => ({
  rows,
  dims: 4,
  chunks: rows,
  promptTokens: 0,
  cost: 0,
  requests: 1,
  retries: 0,
  failures: [],
});

export function book(stats: RunStats, booked: Booked): RunStats {
  const { ledger } = stats;
  const base = ledger.planned.size;
  for (let i = 0; i < (booked.planned ?? 0); i++) ledger.plan(`batch-${base + i}`);
  for (let i = 0; i < (booked.resumed ?? 0); i++) ledger.carry(undefined);
  for (let i = 0; i < (booked.embedded ?? 0); i++) ledger.commit(record(i === 0 ? (booked.rows ?? 0) : 0));
  for (let i = 0; i < (booked.failed ?? 0); i++) ledger.failed();
  return stats;
}
