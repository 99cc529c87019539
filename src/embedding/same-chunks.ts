import type { Chunk } from '../domain.js';

/**
 * Whether two lists hold the same chunk objects in the same order: the test for "answered as
 * planned", nearly every batch, which then skips the work a re-plan or a failure needs.
 */
export function sameChunks(a: readonly Chunk[], b: readonly Chunk[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
