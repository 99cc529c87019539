/**
 * Re-plans recorded before this run, restored before it plans: by its version's earlier attempts
 * (committed batches; the spill's are restored as it is replayed, spill-replay.ts), and by batches
 * carried over from the current version. A carried batch was planned by another run: its re-plans
 * own nothing (trusted, a document edited or deleted since kept its old rows there), and their rows
 * count only where the plan still has them (RunSizing.earlierReplan). An attempt's own the document
 * only where the calibration does not record the re-plan (RunSizing.restoreReplan).
 */
import type { Chunk } from '../domain.js';
import { linkedFrom } from './finalize.js';
import type { OutputSession } from './session.js';

/** What restoring re-plans asks of the run's chunk sizing (chunking/run-sizing.ts). */
export interface ReplanOwners {
  /** A re-plan an earlier attempt recorded (RunSizing.restoreReplan). */
  restoreReplan(documentId: string, batchId: string): void;
  /** A re-plan a carried batch recorded (RunSizing.earlierReplan). */
  earlierReplan(documentId: string, batchId: string): void;
  /** Whether a chunk belongs to an old plan of a document re-planned by this or another batch. */
  isStale(chunk: Chunk, batchId: string): boolean;
}

export async function restoreReplans(
  dir: string,
  session: OutputSession,
  sizing: ReplanOwners,
): Promise<void> {
  const carried = await linkedFrom(dir, session.current);
  for (const [batchId, record] of session.committed) {
    const fromCarried = carried.has(session.fileOf.get(batchId) ?? '');
    for (const documentId of record?.replanned ?? []) {
      if (fromCarried) sizing.earlierReplan(documentId, batchId);
      else sizing.restoreReplan(documentId, batchId);
    }
  }
}

/** A run's re-plans as its switch weighs them (finalize.ts): owned, and earlier ones counted by key. */
export function replansAtSwitch(sizing: {
  owners(): Map<string, string>;
  earlierReplans(): Map<string, string>;
}): { owners: Map<string, string>; earlierReplans: Map<string, string> } {
  return { owners: sizing.owners(), earlierReplans: sizing.earlierReplans() };
}
