/**
 * Exact search for evaluation: a query against every row of a version (no index, no recall loss),
 * ranked by cosine (rows and query are unit vectors: a dot product). Results are chunks
 * (`id#chunk_index`) or documents (a document scores as its best chunk), as the queries' relevant
 * items are named.
 */
import type { VersionVectors } from './version-vectors.js';

export type RankLevel = 'chunk' | 'document';

export interface Ranking {
  /** Item keys, best first. */
  readonly keys: string[];
  readonly scores: number[];
}

export const chunkKey = (id: string, chunkIndex: number): string => `${id}#${chunkIndex}`;

/** The cosine of the unit `query` with every row. */
export function scoreAll(version: VersionVectors, query: Float32Array): Float32Array {
  const { matrix, dims, rows } = version;
  const scores = new Float32Array(rows);
  for (let row = 0, start = 0; row < rows; row++, start += dims) {
    let dot = 0;
    for (let j = 0; j < dims; j++) dot += matrix[start + j]! * query[j]!;
    scores[row] = dot;
  }
  return scores;
}

/** The `k` best items by score; ties go to the smaller key, so a ranking is reproducible. */
export function rankTop(version: VersionVectors, scores: Float32Array, k: number, level: RankLevel): Ranking {
  const best = new TopK(k);
  if (level === 'chunk') {
    for (let row = 0; row < version.rows; row++)
      if (best.admits(scores[row]!))
        best.offer(chunkKey(version.ids[row]!, version.chunkIndexes[row]!), scores[row]!);
    return best.ranking();
  }
  const byDocument = new Map<string, number>();
  for (let row = 0; row < version.rows; row++) {
    const id = version.ids[row]!;
    const score = scores[row]!;
    const seen = byDocument.get(id);
    if (seen === undefined || score > seen) byDocument.set(id, score);
  }
  for (const [id, score] of byDocument) if (best.admits(score)) best.offer(id, score);
  return best.ranking();
}

/** The k best of a stream of scored keys, kept sorted (k is small: a linear insert is cheapest). */
class TopK {
  readonly #keys: string[] = [];
  readonly #scores: number[] = [];
  constructor(private readonly k: number) {}

  admits(score: number): boolean {
    return this.#scores.length < this.k || score >= this.#scores[this.#scores.length - 1]!;
  }

  offer(key: string, score: number): void {
    let at = this.#scores.length;
    while (
      at > 0 &&
      (this.#scores[at - 1]! < score || (this.#scores[at - 1] === score && this.#keys[at - 1]! > key))
    )
      at--;
    if (at >= this.k) return;
    this.#keys.splice(at, 0, key);
    this.#scores.splice(at, 0, score);
    if (this.#keys.length > this.k) {
      this.#keys.pop();
      this.#scores.pop();
    }
  }

  ranking(): Ranking {
    return { keys: [...this.#keys], scores: [...this.#scores] };
  }
}
