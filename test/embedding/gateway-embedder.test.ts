import { describe, expect, it } from 'vitest';
import type { RunSizing } from '../../src/chunking/run-sizing.js';
import type { Batch, Chunk } from '../../src/domain.js';
import { BatchFailedError } from '../../src/embedding/gateway-embedder.js';
import { EMULATOR_API_KEY, type EmulatorOptions, embeddingFor } from '../../src/emulator/index.js';
import { InsufficientCreditsError } from '../../src/gateway/index.js';
import { batchOf as batchFor, textChunk } from '../helpers/chunks.js';
import { type TestEmbedderOptions, testEmbedder, useEmulatorClient } from '../helpers/embedder.js';
import { sizingFor } from '../helpers/sizing.js';

const chunk = (documentId: string, text: string, index = 0): Chunk =>
  textChunk(documentId, index, text, Math.ceil(text.length / 4), `h-${documentId}-${index}`);
const batchOf = (chunks: Chunk[], model = 'emu/embed-small'): Batch =>
  batchFor(`batch-${chunks.length}`, model, chunks);
/** The batch of every chunk the sizing plans for these documents. */
const plannedBatch = (sizing: RunSizing, model: string, texts: Record<string, string>): Batch =>
  batchOf(
    Object.entries(texts).flatMap(([id, text]) => sizing.plan({ id, text, source: 't', line: 1 })),
    model,
  );

const gateway = useEmulatorClient();

function embedder(
  overrides: Pick<TestEmbedderOptions, 'model' | 'provider' | 'encoding' | 'maxAttempts' | 'sizing'> = {},
) {
  return testEmbedder(gateway.client, {
    maxAttempts: 8,
    maxDelayMs: 5,
    pricePerToken: 0.00000002,
    ...overrides,
  });
}

async function withEmulatorOptions<T>(options: EmulatorOptions, fn: () => Promise<T>): Promise<T> {
  gateway.emulator.reset(options);
  try {
    return await fn();
  } finally {
    gateway.emulator.reset({});
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
        expect(gateway.emulator.stats.retryAfterViolations).toEqual({});
      },
    );
  });

  it('isolates a bad input by halving the batch and keeps the rest', async () => {
    const chunks = ['a', 'b', 'c', '', 'e'].map((t, i) => chunk(`b${i}`, t));
    const { instance } = embedder();
    const result = await instance.embedBatch(batchOf(chunks), signal);
    expect(result.chunks.map((c) => c.documentId)).toEqual(['b0', 'b1', 'b2', 'b4']);
    expect(result.failures).toHaveLength(1);
    expect(result.failures[0]).toMatchObject({ documentId: 'b3', chunkIndex: 0, status: 400 });
  });

  it('re-plans a document the gateway rejects as too long, numbered 0..k-1 afresh', async () => {
    // emu/embed-nocontext lists no context length but rejects inputs over 4096 tokens; the sizing
    // believes in a budget of 7372 tokens and a far too low ratio, so the document is one chunk.
    const model = 'emu/embed-nocontext';
    const sizing = sizingFor(model, 7372, 0.01);
    const long = 'word '.repeat(6000);
    const batch = plannedBatch(sizing, model, { short: 'fits easily', long });
    expect(batch.chunks.map((c) => c.documentId)).toEqual(['short', 'long']);
    const { instance } = embedder({ model, sizing });
    const result = await instance.embedBatch(batch, signal);
    expect(result.failures).toEqual([]);
    expect(result.replanned).toEqual(['long']);
    const pieces = result.chunks.filter((c) => c.documentId === 'long');
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.map((p) => p.index)).toEqual(pieces.map((_, i) => i));
    expect(pieces.map((p) => p.text).join('')).toBe(long);
    result.chunks.forEach((c, i) => {
      expect(result.vectors[i]).toEqual(embeddingFor(model, c.text, 256));
    });
    // What the rejection taught: the stated limit (less the margin) is the budget now.
    expect(sizing.calibration.current.budgetTokens).toBe(Math.floor(4096 * 0.9));
  });

  it('gives rows in batch order when a document re-planned is answered after the ones planned after it', async () => {
    // Cut silently (emu/embed-small truncates at 512 tokens), the first document is re-planned once
    // its answer is in, with the others': its rows are answered last.
    const model = 'emu/embed-small';
    const sizing = sizingFor(model, 460, 0.05, 512);
    const prose = Array.from({ length: 120 }, (_, i) => `Phrase ${i} d'un document ordinaire.`).join(' ');
    const batch = plannedBatch(sizing, model, { prose, short: 'fits easily', last: 'ends it' });
    const { instance } = embedder({ model, sizing });
    const result = await instance.embedBatch(batch, signal);
    expect(result.replanned).toEqual(['prose']);
    const pieces = result.chunks.length - 2;
    expect(pieces).toBeGreaterThan(1);
    expect(result.chunks.map((c) => `${c.documentId}:${c.index}`)).toEqual([
      ...Array.from({ length: pieces }, (_, i) => `prose:${i}`),
      'short:0',
      'last:0',
    ]);
    result.chunks.forEach((c, i) => {
      expect(result.vectors[i]).toEqual(embeddingFor(model, c.text, 384));
    });
  });

  it('never keeps the vector of a text the gateway cut silently: the document is re-planned', async () => {
    // emu/embed-small truncates to 512 tokens without an error; the sizing underestimates its count.
    const model = 'emu/embed-small';
    const sizing = sizingFor(model, 460, 0.05, 512);
    const prose = Array.from({ length: 120 }, (_, i) => `Sentence ${i} of a plain English document.`).join(
      ' ',
    );
    const batch = plannedBatch(sizing, model, { prose });
    expect(batch.chunks).toHaveLength(1);
    const { instance } = embedder({ model, sizing });
    const result = await instance.embedBatch(batch, signal);
    expect(result.failures).toEqual([]);
    expect(result.replanned).toEqual(['prose']);
    expect(result.chunks.map((c) => c.index)).toEqual(result.chunks.map((_, i) => i));
    expect(result.chunks.map((c) => c.text).join('')).toBe(prose);
    result.chunks.forEach((c, i) => {
      expect(result.vectors[i]).toEqual(embeddingFor(model, c.text, 384));
    });
    expect(sizing.calibration.estimate(prose)).toBeGreaterThan(Buffer.byteLength(prose) * 0.2);
  });

  it('moves to the next provider of --provider-order when one stays overloaded with fallbacks off', async () => {
    await withEmulatorOptions({ overloadedProviders: ['alpha'] }, async () => {
      const { instance } = embedder({ provider: { order: ['alpha', 'beta'], allowFallbacks: false } });
      const result = await instance.embedBatch(batchOf([chunk('p', 'provider test')]), signal);
      expect(result.provider).toBe('beta');
      expect(gateway.emulator.stats.byStatus['529']).toBe(3);
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
