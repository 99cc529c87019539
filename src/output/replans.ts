/**
 * Re-plans recorded by a version's earlier attempts (same plan, same batch ids), restored before a
 * resumed run plans again. A batch in a file carried over from the current version was planned by
 * another run: its re-plans say nothing of this plan's batches (restored, they made every chunk of
 * the document stale).
 */
import type { RunSizing } from '../chunking/run-sizing.js';
import { linkedFrom } from './finalize.js';
import type { OutputSession } from './session.js';

export async function restoreReplans(dir: string, session: OutputSession, sizing: RunSizing): Promise<void> {
  const carried = await linkedFrom(dir, session.current);
  for (const [batchId, record] of session.committed) {
    if (carried.has(session.fileOf.get(batchId) ?? '')) continue;
    for (const documentId of record?.replanned ?? []) sizing.restoreOwner(documentId, batchId);
  }
}
