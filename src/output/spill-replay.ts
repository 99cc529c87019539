/**
 * A resumed run first commits what the killed one had paid for and spilled (output/spill.ts) but
 * not committed: those batches are then skipped like any committed batch, never sent again.
 */

import type { Logger } from '../observability/logger.js';
import { batchRecordMetadata, batchRecordOf, withoutStaleRows } from './batch-record.js';
import type { ReplanOwners } from './replans.js';
import type { OutputSession } from './session.js';
import { readSpill, SpillLog } from './spill.js';

/** Commits the spill's uncommitted batches into the session's version; returns the fresh spill. */
export async function replaySpill(
  session: OutputSession,
  sizing: ReplanOwners,
  logger: Logger,
): Promise<SpillLog> {
  const { writer, committed, fileOf } = session;
  const byId = new Map((await readSpill(writer.dir)).map((s) => [s.embedded.batchId, s]));
  const spilled = [...byId.values()].filter((s) => !committed.has(s.embedded.batchId));
  if (spilled.length > 0) {
    for (const { embedded } of spilled)
      for (const documentId of embedded.replanned) sizing.restoreReplan(documentId, embedded.batchId);
    const entries = spilled.map(({ plannedChunks, embedded }) => {
      // A document re-planned by another batch keeps only that batch's rows (as at a group commit).
      const kept = withoutStaleRows(embedded, (chunk) => sizing.isStale(chunk, embedded.batchId));
      const record = batchRecordOf(plannedChunks, kept);
      return { batchId: kept.batchId, batch: kept, extra: batchRecordMetadata(record), record };
    });
    const written = await writer.writeGroup(entries);
    for (const { batchId, record } of entries) {
      committed.set(batchId, record);
      fileOf.set(batchId, written.file);
    }
    logger.info(
      { batches: entries.length, rows: entries.reduce((n, e) => n + e.record.rows, 0) },
      'committed the batches a stopped run had paid for but not committed (its spill)',
    );
  }
  const spill = await SpillLog.open(writer.dir);
  await spill.clear();
  return spill;
}
