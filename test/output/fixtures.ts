/** Generated EmbeddedBatch data for the output tests: awkward text and awkward floats. */
import type { Chunk, EmbeddedBatch } from '../../src/domain.js';

/** Deterministic PRNG (mulberry32) so a failing case can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const IDS = [
  'doc-001',
  'é/ü ✓',
  '文档-二',
  '🙂👩‍👩‍👧‍👦',
  'quote "q" \'s\'',
  'line\nbreak',
  'tab\there',
  'back\\slash',
];
const TEXTS = [
  'plain English prose.',
  '中文文本，包含标点。日本語のテキスト、한국어 텍스트',
  'emoji 🚀🔥👍🏽 and ZWJ 👨‍💻',
  'multi\nline\r\ntext\n\n',
  'quotes "double" and \'single\' and `back`, commas, ; semicolons',
  'JSON-ish {"a": [1, 2, 3], "b": null}',
  '',
  'x'.repeat(5000),
  'RTL עברית العربية',
  'combining é vs é',
];

/** Exact float32 values that tend to break writers: signed zero, subnormals, extremes. */
const SPECIAL = [
  -0, 0, 1.401298464324817e-45, -1.401298464324817e-45, 3.4028234663852886e38, -3.4028234663852886e38, 1, -1,
];

export interface BatchSpec {
  batchId: string;
  rows: number;
  dims: number;
  seed: number;
  provider?: string;
}

export function makeBatch(spec: BatchSpec): EmbeddedBatch {
  const rand = random(spec.seed);
  const chunks: Chunk[] = [];
  const vectors: Float32Array[] = [];
  for (let i = 0; i < spec.rows; i++) {
    const text = `${TEXTS[i % TEXTS.length]} #${spec.batchId}/${i}`;
    chunks.push({
      documentId: `${IDS[i % IDS.length]}·${spec.batchId}`,
      index: i,
      text,
      start: 0,
      end: text.length,
      bytes: Buffer.byteLength(text),
      tokens: 1 + Math.floor(rand() * 8000),
      hash: Math.floor(rand() * 2 ** 52)
        .toString(16)
        .padStart(64, '0'),
    });
    const vector = new Float32Array(spec.dims);
    for (let j = 0; j < spec.dims; j++) vector[j] = (rand() * 2 - 1) * 0.1;
    // Spread the special values over rows and positions.
    vector[(i * 7) % spec.dims] = SPECIAL[i % SPECIAL.length]!;
    vectors.push(vector);
  }
  const batch: EmbeddedBatch = {
    batchId: spec.batchId,
    model: 'test/model-1',
    chunks,
    vectors,
    replanned: [],
    failures: [],
    usage: { promptTokens: 0, cost: 0, requests: 1, retries: 0 },
    ...(spec.provider === undefined ? {} : { provider: spec.provider }),
  };
  return batch;
}

/** Index of the first element whose float32 bits differ (NaN- and -0-exact), or -1. */
export function firstBitDifference(actual: ArrayLike<number>, expected: Float32Array): number {
  if (actual.length !== expected.length) return Math.min(actual.length, expected.length);
  const a = new Uint32Array(Float32Array.from(actual).buffer);
  const e = new Uint32Array(expected.buffer, expected.byteOffset, expected.length);
  for (let i = 0; i < e.length; i++) if (a[i] !== e[i]) return i;
  return -1;
}
