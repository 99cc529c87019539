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
  // Four running sums: independent additions the CPU overlaps (one sum is a chain of dependent adds).
  const tail = dims - (dims % 4);
  for (let row = 0, start = 0; row < rows; row++, start += dims) {
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    for (let j = 0; j < tail; j += 4) {
      a += matrix[start + j]! * query[j]!;
      b += matrix[start + j + 1]! * query[j + 1]!;
      c += matrix[start + j + 2]! * query[j + 2]!;
      d += matrix[start + j + 3]! * query[j + 3]!;
    }
    for (let j = tail; j < dims; j++) a += matrix[start + j]! * query[j]!;
    scores[row] = a + b + c + d;
  }
  return scores;
}

/** Queries scored together by scoreBlock. */
export const QUERY_BLOCK = 8;

/** One Float32Array per query of a block (QUERY_BLOCK of them). */
type Block = [
  Float32Array,
  Float32Array,
  Float32Array,
  Float32Array,
  Float32Array,
  Float32Array,
  Float32Array,
  Float32Array,
];

/**
 * The cosines of up to QUERY_BLOCK unit queries (rows `first…` of `queries`) with every row, in one
 * pass over the version: a large version does not fit in the CPU's caches, and one query at a time
 * read it from memory once per query. Sums are doubles as in scoreAll, so the float32 scores agree.
 * The eight queries and sums are written out: V8 keeps them in registers, and a loop over an array of
 * sums ran much slower (docs/benchmarks.md, "Design figures").
 */
export function scoreBlock(
  version: VersionVectors,
  queries: Float32Array,
  first: number,
  count: number,
): Float32Array[] {
  const { matrix, dims, rows } = version;
  const q = (i: number) =>
    i < count ? queries.subarray((first + i) * dims, (first + i + 1) * dims) : new Float32Array(dims);
  const [q0, q1, q2, q3, q4, q5, q6, q7] = Array.from({ length: QUERY_BLOCK }, (_, i) => q(i)) as Block;
  const out = Array.from({ length: QUERY_BLOCK }, () => new Float32Array(rows));
  const [s0, s1, s2, s3, s4, s5, s6, s7] = out as Block;
  for (let row = 0, start = 0; row < rows; row++, start += dims) {
    let a0 = 0;
    let a1 = 0;
    let a2 = 0;
    let a3 = 0;
    let a4 = 0;
    let a5 = 0;
    let a6 = 0;
    let a7 = 0;
    for (let j = 0; j < dims; j++) {
      const m = matrix[start + j]!;
      a0 += m * q0[j]!;
      a1 += m * q1[j]!;
      a2 += m * q2[j]!;
      a3 += m * q3[j]!;
      a4 += m * q4[j]!;
      a5 += m * q5[j]!;
      a6 += m * q6[j]!;
      a7 += m * q7[j]!;
    }
    s0[row] = a0;
    s1[row] = a1;
    s2[row] = a2;
    s3[row] = a3;
    s4[row] = a4;
    s5[row] = a5;
    s6[row] = a6;
    s7[row] = a7;
  }
  return out.slice(0, count);
}

/** Each row's document as a number, and the documents' ids: built once per version. */
export interface DocumentIndex {
  readonly ofRow: Int32Array;
  readonly ids: readonly string[];
}

export function documentIndex(version: VersionVectors): DocumentIndex {
  const numbers = new Map<string, number>();
  const ofRow = new Int32Array(version.rows);
  for (let row = 0; row < version.rows; row++) {
    const id = version.ids[row]!;
    let n = numbers.get(id);
    if (n === undefined) {
      n = numbers.size;
      numbers.set(id, n);
    }
    ofRow[row] = n;
  }
  return { ofRow, ids: [...numbers.keys()] };
}

/** The `k` best items by score; ties go to the smaller key, so a ranking is reproducible. */
export function rankTop(
  version: VersionVectors,
  scores: Float32Array,
  k: number,
  level: RankLevel,
  documents?: DocumentIndex,
): Ranking {
  const best = new TopK(k);
  if (level === 'chunk') {
    for (let row = 0; row < version.rows; row++)
      if (best.admits(scores[row]!))
        best.offer(chunkKey(version.ids[row]!, version.chunkIndexes[row]!), scores[row]!);
    return best.ranking();
  }
  // A document scores as its best chunk.
  const index = documents ?? documentIndex(version);
  const byDocument = new Float32Array(index.ids.length).fill(Number.NEGATIVE_INFINITY);
  for (let row = 0; row < version.rows; row++) {
    const doc = index.ofRow[row]!;
    if (scores[row]! > byDocument[doc]!) byDocument[doc] = scores[row]!;
  }
  for (let doc = 0; doc < byDocument.length; doc++)
    if (best.admits(byDocument[doc]!)) best.offer(index.ids[doc]!, byDocument[doc]!);
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
