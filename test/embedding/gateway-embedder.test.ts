import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderSettings } from '../../src/config/settings.js';
import type { Batch, Chunk } from '../../src/domain.js';
import { EncodingPolicy } from '../../src/embedding/encoding-policy.js';
import { BatchFailedError, GatewayEmbedder, type Rechunk } from '../../src/embedding/gateway-embedder.js';
import { ProviderRouter } from '../../src/embedding/provider-router.js';
import {
  EMULATOR_API_KEY,
  type EmulatorOptions,
  embeddingFor,
  type RunningEmulator,
  startEmulator,
} from '../../src/emulator/index.js';
import { GatewayClient, InsufficientCreditsError } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { RunStats } from '../../src/observability/stats.js';
import { RetryAfterGate } from '../../src/retry/index.js';

const chunk = (documentId: string, text: string, index = 0): Chunk => ({
  documentId,
  index,
  text,
  start: 0,
  end: text.length,
  tokens: Math.ceil(text.length / 4),
  hash: `h-${documentId}-${index}`,
});
const batchOf = (chunks: Chunk[], model = 'emu/embed-small'): Batch => ({
  batchId: `batch-${chunks.length}`,
  model,
  chunks,
  tokens: chunks.reduce((s, c) => s + c.tokens, 0),
});
/** Splits a text into pieces of at most maxTokens*4 characters (the tests' stand-in for the chunker). */
const splitRechunk: Rechunk = (c, maxTokens) => {
  const size = maxTokens * 4;
  const pieces: Chunk[] = [];
  for (let start = 0, sub = 0; start < c.text.length; start += size, sub++) {
    const text = c.text.slice(start, start + size);
    pieces.push({
      ...chunk(c.documentId, text, c.index),
      subIndex: sub,
      start: c.start + start,
      end: c.start + start + text.length,
    });
  }
  return pieces;
};

let emulator: RunningEmulator;
let client: GatewayClient;

beforeAll(async () => {
  emulator = await startEmulator();
  client = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY });
});
afterAll(async () => {
  await client.close();
  await emulator.close();
});

function embedder(
  overrides: {
    model?: string;
    provider?: ProviderSettings;
    encoding?: 'base64' | 'float';
    maxAttempts?: number;
  } = {},
) {
  const stats = new RunStats();
  const instance = new GatewayEmbedder({
    client,
    model: overrides.model ?? 'emu/embed-small',
    router: new ProviderRouter(overrides.provider ?? {}),
    encoding: new EncodingPolicy(overrides.encoding ?? 'base64'),
    gate: new RetryAfterGate(),
    retry: { maxAttempts: overrides.maxAttempts ?? 8, baseDelayMs: 1, maxDelayMs: 5 },
    rechunk: splitRechunk,
    stats,
    logger: silentLogger(),
    pricePerToken: 0.00000002,
  });
  return { instance, stats };
}

async function withEmulatorOptions<T>(options: EmulatorOptions, fn: () => Promise<T>): Promise<T> {
  emulator.reset(options);
  try {
    return await fn();
  } finally {
    emulator.reset({});
  }
}

const signal = new AbortController().signal;

describe('GatewayEmbedder', () => {
  it('embeds a batch; every vector is the gateway vector for its chunk', async () => {
    const chunks = ['alpha', 'beta', 'γάμμα', '🚀 rocket'].map((t, i) => chunk(`d${i}`, t));
    const { instance, stats } = embedder();
    const result = await instance.embedBatch(batchOf(chunks), signal);
    expect(result.chunks).toEqual(chunks);
    result.vectors.forEach((v, i) => {
      expect(v).toEqual(embeddingFor('emu/embed-small', chunks[i]!.text, 384));
    });
    expect(result.failures).toEqual([]);
    expect(result.usage.requests).toBe(1);
    expect(stats.cost).toBeGreaterThan(0);
    expect(instance.dims).toBe(384);
  });

  it('retries 429, 5xx, 529 and resets, behind one Retry-After gate, and counts every retry', async () => {
    await withEmulatorOptions(
      {
        faults: { script: ['429', '500', 'reset', '502', '503', '524', '529'], retryAfterSeconds: 1 },
        retryAfterFormat: 'ms',
      },
      async () => {
        const { instance, stats } = embedder();
        const chunks = ['one', 'two'].map((t, i) => chunk(`r${i}`, t));
        const result = await instance.embedBatch(batchOf(chunks), signal);
        expect(result.vectors[1]).toEqual(embeddingFor('emu/embed-small', 'two', 384));
        expect(stats.retries).toBe(7);
        expect(result.usage.retries).toBe(7);
        expect(emulator.stats.retryAfterViolations).toEqual({});
      },
    );
  });

  it('isolates a bad input by halving the batch and keeps the rest', async () => {
    const chunks = ['a', 'b', 'c', '', 'e'].map((t, i) => chunk(`b${i}`, t));
    const { instance, stats } = embedder();
    const result = await instance.embedBatch(batchOf(chunks), signal);
    expect(result.chunks.map((c) => c.documentId)).toEqual(['b0', 'b1', 'b2', 'b4']);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatchObject({ documentId: 'b3', chunkIndex: 0, status: 400 });
    expect(stats.chunkFailures).toBe(1);
  });

  it('re-chunks an input the gateway rejects as too long and embeds the pieces', async () => {
    // emu/embed-nocontext lists no context length but rejects inputs over 4096 tokens.
    const long = 'word '.repeat(6000);
    const chunks = [chunk('short', 'fits easily'), chunk('long', long, 2)];
    const { instance } = embedder({ model: 'emu/embed-nocontext' });
    const result = await instance.embedBatch(batchOf(chunks, 'emu/embed-nocontext'), signal);
    expect(result.failures).toEqual([]);
    const pieces = result.chunks.filter((c) => c.documentId === 'long');
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.map((p) => p.subIndex)).toEqual(pieces.map((_, i) => i));
    expect(pieces.every((p) => p.index === 2)).toBe(true);
    expect(pieces.map((p) => p.text).join('')).toBe(long);
    result.chunks.forEach((c, i) => {
      expect(result.vectors[i]).toEqual(embeddingFor('emu/embed-nocontext', c.text, 256));
    });
  });

  it('moves to the next provider of --provider-order when one stays overloaded with fallbacks off', async () => {
    await withEmulatorOptions({ overloadedProviders: ['alpha'] }, async () => {
      const { instance } = embedder({ provider: { order: ['alpha', 'beta'], allowFallbacks: false } });
      const result = await instance.embedBatch(batchOf([chunk('p', 'provider test')]), signal);
      expect(result.provider).toBe('beta');
      expect(emulator.stats.byStatus['529']).toBe(3);
    });
  });

  it('switches the run to float when base64 answers come back empty', async () => {
    await withEmulatorOptions({ base64Mode: 'empty' }, async () => {
      const { instance } = embedder();
      const result = await instance.embedBatch(batchOf([chunk('f', 'float please')]), signal);
      expect(result.vectors[0]).toEqual(embeddingFor('emu/embed-small', 'float please', 384));
    });
  });

  it('gives up on a batch after the last attempt, without committing any of it', async () => {
    await withEmulatorOptions({ faults: { probabilities: { 500: 1 } } }, async () => {
      const { instance } = embedder({ maxAttempts: 3 });
      await expect(instance.embedBatch(batchOf([chunk('x', 'never')]), signal)).rejects.toBeInstanceOf(
        BatchFailedError,
      );
    });
  });

  it('stops on 402 with the gateway error', async () => {
    await withEmulatorOptions({ keys: [{ key: EMULATOR_API_KEY, credits: 0 }] }, async () => {
      const { instance } = embedder();
      await expect(instance.embedBatch(batchOf([chunk('c', 'costly')]), signal)).rejects.toBeInstanceOf(
        InsufficientCreditsError,
      );
    });
  });
});
