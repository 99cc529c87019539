/**
 * Re-plans recorded by a version's earlier attempts (same plan, same batch ids), restored before a
 * resumed run plans again. A batch in a file carried over from the current version was planned by
 * another run: its re-plans say nothing of this plan's batches (restored, they made every chunk of
 * the document stale; produce.ts counts them as earlier re-plans). A document the calibration
 * records as re-planned is planned so from the start (RunSizing.plan): its batches are not the
 * attempt's, and the attempt's rows of it count only where the plan still has them
 * (RunSizing.restoreReplan).
 */
import type { Chunk } from '../domain.js';
import { linkedFrom } from './finalize.js';
import type { OutputSession } from './session.js';

/** What restoring re-plans asks of the run's chunk sizing (chunking/run-sizing.ts). */
export interface ReplanOwners {
  /** A re-plan an earlier attempt recorded (RunSizing.restoreReplan). */
  restoreReplan(documentId: string, batchId: string): void;
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
    if (carried.has(session.fileOf.get(batchId) ?? '')) continue;
    for (const documentId of record?.replanned ?? []) sizing.restoreReplan(documentId, batchId);
  }
}

/** A run's re-plans as its switch weighs them (finalize.ts): owned, and earlier ones counted by key. */
export function replansAtSwitch(sizing: {
  owners(): Map<string, string>;
  earlierReplans(): Map<string, string>;
}): { owners: Map<string, string>; earlierReplans: Map<string, string> } {
  return { owners: sizing.owners(), earlierReplans: sizing.earlierReplans() };
}
