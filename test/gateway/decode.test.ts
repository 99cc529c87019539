import { describe, expect, it } from 'vitest';
import { decodeBase64Float32, decodeEmbeddings, ShapeError } from '../../src/gateway/decode.js';

function randomVector(length: number): Float32Array {
  const vector = new Float32Array(length);
  for (let i = 0; i < length; i++) vector[i] = (Math.random() - 0.5) * 10 ** ((i % 20) - 10);
  return vector;
}

describe('decodeBase64Float32', () => {
  it('round-trips vectors of many sizes, padded or not', () => {
    for (const length of [1, 2, 3, 4, 5, 7, 31, 384, 1536, 3072]) {
      const vector = randomVector(length);
      const padded = Buffer.from(vector.buffer).toString('base64');
      expect(decodeBase64Float32(padded)).toEqual(vector);
      expect(decodeBase64Float32(padded.replace(/=+$/, ''))).toEqual(vector);
    }
  });

  it('returns arrays that own an aligned buffer of exactly their size', () => {
    // Small decodes are where Buffer.from would hand out an unaligned slice of its shared pool.
    const decoded = decodeBase64Float32(Buffer.from(new Float32Array([1, 2, 3]).buffer).toString('base64'));
    expect(decoded.byteOffset).toBe(0);
    expect(decoded.buffer.byteLength).toBe(12);
  });

  it('decodes bytes from an unaligned source exactly', () => {
    const bytes = Buffer.alloc(17);
    new DataView(bytes.buffer, bytes.byteOffset).setFloat32(1, 1.5, true);
    new DataView(bytes.buffer, bytes.byteOffset).setFloat32(5, -2.25, true);
    const text = bytes.subarray(1, 9).toString('base64');
    expect(Array.from(decodeBase64Float32(text))).toEqual([1.5, -2.25]);
  });

  it('accepts the URL-safe alphabet', () => {
    const vector = new Float32Array([-1.0000001, 3.4e38, 1e-30]);
    const urlSafe = Buffer.from(vector.buffer).toString('base64url');
    expect(decodeBase64Float32(urlSafe)).toEqual(vector);
  });

  it('refuses bad lengths and characters', () => {
    expect(() => decodeBase64Float32('A')).toThrow(ShapeError);
    expect(() => decodeBase64Float32('AAA=')).toThrow(/2 bytes of base64, not a multiple of 4/);
    expect(() => decodeBase64Float32('AA AAA==')).toThrow(/not valid base64/);
  });

  it('decodes 1,000 vectors of 1,536 dims quickly', () => {
    const texts = Array.from({ length: 1000 }, () =>
      Buffer.from(randomVector(1536).buffer).toString('base64'),
    );
    const start = performance.now();
    for (const text of texts) decodeBase64Float32(text);
    expect(performance.now() - start).toBeLessThan(1000);
  });
});

describe('decodeEmbeddings: base64 answers', () => {
  const item = (vector: Float32Array, index: number) => ({
    index,
    embedding: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64'),
  });

  it('decodes every vector of an answer into one buffer, each placed by its index', () => {
    const vectors = [randomVector(8), randomVector(8), randomVector(8)];
    const result = decodeEmbeddings(
      { data: [item(vectors[2]!, 2), item(vectors[0]!, 0), item(vectors[1]!, 1)] },
      3,
    );
    expect(result.vectors).toEqual(vectors);
    expect(new Set(result.vectors.map((v) => v.buffer)).size).toBe(1);
    expect(result.vectors.every((v) => v.length === 8)).toBe(true);
  });

  it('still refuses a vector of another length in the middle', () => {
    const data = [item(randomVector(8), 0), item(randomVector(6), 1), item(randomVector(8), 2)];
    expect(() => decodeEmbeddings({ data }, 3)).toThrow('data[1].embedding has 6 dimensions, data[0] has 8');
  });

  it('decodes an answer of 128 vectors as each alone decodes, with every bit pattern that is finite', () => {
    const vectors = Array.from({ length: 128 }, () => randomVector(384));
    // Extremes of float32: the largest, the smallest subnormal, negative zero.
    vectors[7]!.set([3.4028234663852886e38, -3.4028234663852886e38, 1e-45, -0]);
    const data = vectors.map((vector, index) => item(vector, index));
    const result = decodeEmbeddings({ data }, 128);
    expect(result.encoding).toBe('base64');
    expect(result.dims).toBe(384);
    for (const [i, vector] of result.vectors.entries()) {
      expect(vector).toEqual(decodeBase64Float32(data[i]!.embedding));
      expect(Object.is(vector[3], -0) || i !== 7).toBe(true);
    }
  });

  it.each([
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
  ])('names the item and the value of a %s in the middle of an answer', (value, shown) => {
    const vectors = Array.from({ length: 5 }, () => randomVector(16));
    vectors[3]![11] = value;
    const data = vectors.map((vector, index) => item(vector, index));
    expect(() => decodeEmbeddings({ data }, 5)).toThrow(`data[3].embedding[11] is ${shown}, not finite`);
  });

  it('names an item whose base64 holds a character outside the alphabet', () => {
    const data = [item(randomVector(8), 0), item(randomVector(8), 1)];
    const text = data[1]!.embedding;
    data[1]!.embedding = `${text.slice(0, 5)}*${text.slice(6)}`;
    expect(() => decodeEmbeddings({ data }, 2)).toThrow('data[1].embedding is not valid base64');
  });
});
