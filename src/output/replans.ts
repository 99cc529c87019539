/**
 * Re-plans recorded by a version's earlier attempts (same plan, same batch ids), restored before a
 * resumed run plans again. A batch in a file carried over from the current version was planned by
 * another run: its re-plans say nothing of this plan's batches (restored, they made every chunk of
 * the document stale). A document the calibration records as re-planned is planned so from the
 * start (RunSizing.plan): its batches are not the attempt's, and an owner restored here would make
 * its rows stale in them.
 */
import type { Chunk } from '../domain.js';
import { linkedFrom } from './finalize.js';
import type { OutputSession } from './session.js';

/** What restoring re-plans asks of the run's chunk sizing (chunking/run-sizing.ts). */
export interface ReplanOwners {
  /** An ownership recorded in a committed part: the document's old chunks are stale. */
  restoreOwner(documentId: string, batchId: string): void;
  /** Whether the document is planned as a run re-planned it. */
  plannedAsReplanned(documentId: string): boolean;
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
    for (const documentId of record?.replanned ?? [])
      if (!sizing.plannedAsReplanned(documentId)) sizing.restoreOwner(documentId, batchId);
  }
}

/**
 * Documents that batches carried over from the version replaced re-planned: document id → batch
 * id. Those batches' files hold the rows of the re-plan, which count only where the plan still has
 * them (finalize.ts, compactDataset): the document may since be deleted or edited, and the batches
 * that plan it now send its chunks (or take their vectors by hash).
 */
export function carriedReplans(
  committed: ReadonlyMap<string, { readonly replanned?: readonly string[] } | undefined>,
  inherited: ReadonlySet<string>,
): Map<string, string> {
  const carried = new Map<string, string>();
  for (const batchId of inherited)
    for (const documentId of committed.get(batchId)?.replanned ?? []) carried.set(documentId, batchId);
  return carried;
}

/** A run's re-plans as its switch weighs them: the owners this version's batches recorded, and carried ones. */
export function replansAtSwitch(
  sizing: { owners(): Map<string, string> },
  session: Pick<OutputSession, 'committed' | 'inherited'>,
): { owners: Map<string, string>; carriedReplans: Map<string, string> } {
  return { owners: sizing.owners(), carriedReplans: carriedReplans(session.committed, session.inherited) };
}
