/**
 * Vectors as few views as they allow: the vectors of one answer are views of one buffer, in order
 * (gateway/decode.ts), so a batch's are usually one run. The spill writes the runs' bytes, and a
 * part's Parquet vector column writes them, where they are.
 */
export function vectorRuns(vectors: readonly Float32Array[]): Float32Array[] {
  const runs: Float32Array[] = [];
  let buffer: ArrayBufferLike | undefined;
  let start = 0;
  let end = 0;
  for (let i = 0; i < vectors.length; i++) {
    const v = vectors[i]!;
    if (buffer === v.buffer && end === v.byteOffset) {
      end += v.byteLength;
      continue;
    }
    if (buffer !== undefined) runs.push(new Float32Array(buffer, start, (end - start) / 4));
    buffer = v.buffer;
    start = v.byteOffset;
    end = v.byteOffset + v.byteLength;
  }
  if (buffer !== undefined) runs.push(new Float32Array(buffer, start, (end - start) / 4));
  return runs;
}
