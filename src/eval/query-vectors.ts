/**
 * The queries' vectors under a version's model: embedded through the gateway once, then kept by
 * content hash in the dataset (`<out>.versions/_eval/<model>.json`), so a second `eval` of the same
 * queries pays nothing. Every request counts in the cost, and `--max-cost` stops before a request
 * that would pass it.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULTS } from '../config/defaults.js';
import type { CostBudget } from '../embedding/cost-budget.js';
import { keepDims } from '../embedding/vector-form.js';
import { UsageError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import { writeFileAtomic } from '../output/atomic.js';
import { normalizeRows } from './version-vectors.js';

/** Queries per request: small answers, few requests. */
const QUERIES_PER_REQUEST = 64;

export interface QueryVectors {
  /** queries × dims, unit rows, in the order asked. */
  readonly matrix: Float32Array;
  readonly dims: number;
  /** What this call paid: requests sent, USD, and queries found in the cache. */
  readonly requests: number;
  readonly costUsd: number;
  readonly cached: number;
}

const textHash = (model: string, text: string) =>
  createHash('sha256').update(model).update('\0').update(text).digest('hex').slice(0, 32);

export async function embedQueries(
  texts: readonly string[],
  options: {
    readonly client: GatewayClient;
    readonly model: string;
    readonly dims: number;
    /** The version keeps this many of the model's dims (`--dims`): the cached vectors are cut to them. */
    readonly keptDims?: number | undefined;
    /** The dataset's versions folder (`<out>.versions`): the cache lives in its `_eval/`. */
    readonly root: string;
    readonly budget?: CostBudget;
    readonly pricePerToken?: number;
    readonly signal?: AbortSignal;
  },
): Promise<QueryVectors> {
  const { client, model, dims, budget } = options;
  const cacheFile = join(options.root, '_eval', `${model.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
  const cache = await readCache(cacheFile);
  const hashes = texts.map((text) => textHash(model, text));
  const missing = [...new Set(hashes.filter((hash) => !cache.has(hash)))];
  const textOf = new Map(hashes.map((hash, i) => [hash, texts[i]!]));
  let requests = 0;
  let costUsd = 0;
  for (let start = 0; start < missing.length; start += QUERIES_PER_REQUEST) {
    const group = missing.slice(start, start + QUERIES_PER_REQUEST);
    const input = group.map((hash) => textOf.get(hash)!);
    const bytes = input.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    const reservation = budget?.reserve(bytes * (options.pricePerToken ?? 0), `${group.length} queries`);
    let result: Awaited<ReturnType<GatewayClient['embeddings']>>;
    try {
      result = await client.embeddings(
        { model, input, encoding_format: DEFAULTS.encodingFormat },
        { ...(options.signal ? { signal: options.signal } : {}), tokens: Math.ceil(bytes / 3) },
      );
    } catch (error) {
      reservation?.release();
      throw error;
    }
    requests += 1;
    const cost = result.usage?.cost ?? (result.usage?.promptTokens ?? 0) * (options.pricePerToken ?? 0);
    costUsd += cost;
    reservation?.settle(cost);
    group.forEach((hash, i) => {
      const vector = result.vectors[i];
      if (!vector)
        throw new Error(`the gateway returned no vector for query ${i + 1} of a request (model ${model})`);
      cache.set(hash, Float32Array.from(vector));
    });
  }
  if (missing.length > 0) await writeCache(cacheFile, cache);
  const matrix = new Float32Array(texts.length * dims);
  hashes.forEach((hash, i) => {
    const cached = cache.get(hash)!;
    const vector = keepDims(cached, options.keptDims);
    if (vector?.length !== dims)
      throw new UsageError(
        `model ${model} gives ${cached.length}-dimensional query vectors; the version holds ${dims} dims`,
      );
    matrix.set(vector, i * dims);
  });
  normalizeRows(matrix, dims);
  return { matrix, dims, requests, costUsd, cached: texts.length - missing.length };
}

async function readCache(file: string): Promise<Map<string, Float32Array>> {
  let raw: string;
  try {
    raw = await readFile(file, 'utf8');
  } catch {
    return new Map(); // none yet
  }
  const cache = new Map<string, Float32Array>();
  try {
    for (const [hash, base64] of Object.entries(JSON.parse(raw) as Record<string, string>)) {
      const bytes = Buffer.from(base64, 'base64');
      cache.set(
        hash,
        new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)),
      );
    }
  } catch {
    return new Map(); // unreadable: embedded again, and rewritten
  }
  return cache;
}

async function writeCache(file: string, cache: Map<string, Float32Array>): Promise<void> {
  await mkdir(join(file, '..'), { recursive: true });
  const entries: Record<string, string> = {};
  for (const [hash, vector] of cache)
    entries[hash] = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
  await writeFileAtomic(file, JSON.stringify(entries));
}
