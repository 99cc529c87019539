/**
 * ReusingEmbedder: vectors from the dataset, from other batches' requests in flight, and from
 * earlier chunks of the same batch; only the other texts are sent. The embedder is a stub recording
 * what it is sent (the collaborator of the unit under test); the vector index is real, over real
 * parquet files.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Batch, Chunk, EmbeddedBatch } from '../../src/domain.js';
import { BatchFailedError } from '../../src/embedding/gateway-embedder.js';
import { ReusingEmbedder } from '../../src/embedding/reuse.js';
import type { SendPoolLimits } from '../../src/embedding/send-pool.js';
import { GatewayError } from '../../src/gateway/errors.js';
import { RunStats } from '../../src/observability/stats.js';
import { DatasetWriter } from '../../src/output/dataset.js';
import { VectorIndex } from '../../src/output/vector-index.js';
import { batchOf, embeddedBatch, textChunk } from '../helpers/chunks.js';
import { tempFolder } from '../helpers/temp.js';

const MODEL = 'test/model-1';

const root = await tempFolder('embedpipe-reuse-');
let n = 0;

/** A chunk of `text`; its hash is the text's sha256 (same text, same hash), as content hashes are. */
function chunk(documentId: string, index: number, text: string, tokens = 10): Chunk {
  return textChunk(documentId, index, text, tokens, createHash('sha256').update(text).digest('hex'));
}

function batch(batchId: string, chunks: Chunk[]): Batch {
  return batchOf(batchId, MODEL, chunks);
}

/** The vector the stub embedder answers for a text (distinct per text). */
function answerFor(text: string): Float32Array {
  let code = 0;
  for (const char of text) code = (code * 31 + char.codePointAt(0)!) % 100_000;
  return Float32Array.of(code, -code, 0.5);
}

function outcome(b: Batch, chunks: readonly Chunk[], vectors: readonly Float32Array[]): EmbeddedBatch {
  return embeddedBatch(
    b.batchId,
    b.model,
    chunks,
    vectors,
    chunks.reduce((s, c) => s + c.tokens, 0),
  );
}

interface Call {
  readonly batch: Batch;
  readonly texts: string[];
  answer(result?: EmbeddedBatch): void;
  fail(error: Error): void;
}

/** A stub embedder recording every request; answers at once, or when the test says (`manual`). */
class StubEmbedder {
  readonly calls: Call[] = [];
  nothingSentCalls = 0;
  constructor(private readonly manual = false) {}

  embedBatch(b: Batch, _signal: AbortSignal): Promise<EmbeddedBatch> {
    return new Promise((resolve, reject) => {
      const call: Call = {
        batch: b,
        texts: b.chunks.map((c) => c.text),
        answer: (result) =>
          resolve(
            result ??
              outcome(
                b,
                b.chunks,
                b.chunks.map((c) => answerFor(c.text)),
              ),
          ),
        fail: reject,
      };
      this.calls.push(call);
      if (!this.manual) call.answer();
    });
  }

  nothingSent(b: Batch): EmbeddedBatch {
    this.nothingSentCalls += 1;
    return { ...outcome(b, [], []), usage: { promptTokens: 0, cost: 0, requests: 0, retries: 0 } };
  }

  /** Every text sent, over all requests. */
  get sentTexts(): string[] {
    return this.calls.flatMap((c) => c.texts);
  }
}

/** Stored rows: text → vector, written as a real parquet file, and the index over it. */
async function indexOver(stored: Record<string, number[]>): Promise<{ index: VectorIndex; dir: string }> {
  const dir = join(root, `d${n++}`);
  const file = await writeRows(dir, 'stored', stored);
  return { index: await VectorIndex.build(dir, [file]), dir };
}

async function writeRows(dir: string, batchId: string, rows: Record<string, number[]>): Promise<string> {
  const chunks = Object.keys(rows).map((text, i) => chunk(`stored-${i}`, 0, text));
  const writer = new DatasetWriter({ dir, format: 'parquet', metadata: {} });
  const b = batch(batchId, chunks);
  const part = await writer.writePart(
    batchId,
    outcome(
      b,
      chunks,
      Object.values(rows).map((v) => Float32Array.from(v)),
    ),
  );
  return part.file;
}

function reusing(
  index: VectorIndex,
  opts: { manual?: boolean; stale?: (c: Chunk) => boolean; pool?: SendPoolLimits } = {},
): { reuse: ReusingEmbedder; embedder: StubEmbedder; stats: RunStats } {
  const embedder = new StubEmbedder(opts.manual);
  const stats = new RunStats();
  const stale = opts.stale ?? (() => false);
  const reuse = new ReusingEmbedder({
    embedder,
    sizing: { isStale: (c) => stale(c) },
    stats,
    index: async () => index,
    pool: opts.pool,
  });
  return { reuse, embedder, stats };
}

const signal = new AbortController().signal;

/** Resolves once `condition` holds (polled on the macrotask queue), or fails after a while. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Tracks whether a promise has settled. */
function watch<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  tracked.catch(() => {});
  return { promise: tracked, settled: () => done };
}

const rows = (result: EmbeddedBatch) => result.chunks.map((c) => `${c.documentId}#${c.index}`);
const vectorsOf = (result: EmbeddedBatch) => result.vectors.map((v) => Array.from(v));

describe('ReusingEmbedder', () => {
  it('takes stored vectors from the dataset and sends only the other texts, rows in batch order', async () => {
    const { index } = await indexOver({ 'stored one': [1, 2, 3], 'stored two': [4, 5, 6] });
    const { reuse, embedder, stats } = reusing(index);
    const chunks = [
      chunk('d1', 0, 'stored one', 7),
      chunk('d1', 1, 'new text', 11),
      chunk('d2', 0, 'stored two', 13),
      chunk('d3', 0, 'another new text', 17),
    ];
    const result = await reuse.embed(batch('b1', chunks), signal);

    expect(embedder.sentTexts).toEqual(['new text', 'another new text']);
    expect(result.batchId).toBe('b1');
    expect(rows(result)).toEqual(['d1#0', 'd1#1', 'd2#0', 'd3#0']);
    expect(result.chunks).toEqual(chunks);
    expect(vectorsOf(result)).toEqual([
      [1, 2, 3],
      Array.from(answerFor('new text')),
      [4, 5, 6],
      Array.from(answerFor('another new text')),
    ]);
    expect(result.reused).toBe(2);
    expect(result.deduplicated ?? 0).toBe(0);
    expect(stats.tokensReused).toBe(7 + 13);
  });

  it('sends nothing when the dataset holds every text', async () => {
    const { index } = await indexOver({ a: [1, 1, 1], b: [2, 2, 2] });
    const { reuse, embedder } = reusing(index);
    const result = await reuse.embed(batch('b1', [chunk('d', 0, 'b'), chunk('d', 1, 'a')]), signal);
    expect(embedder.calls).toEqual([]);
    expect(embedder.nothingSentCalls).toBe(1);
    expect(vectorsOf(result)).toEqual([
      [2, 2, 2],
      [1, 1, 1],
    ]);
    expect(result.reused).toBe(2);
  });

  it('counts rows committed by this run as deduplicated, not reused', async () => {
    const { index, dir } = await indexOver({ old: [1, 1, 1] });
    const { reuse, embedder, stats } = reusing(index);
    const file = await writeRows(dir, 'run1', { 'written this run': [9, 8, 7] });
    await reuse.committed(file, [chunk('x', 0, 'written this run').hash]);
    const result = await reuse.embed(
      batch('b2', [chunk('d', 0, 'written this run', 5), chunk('d', 1, 'old', 3)]),
      signal,
    );
    expect(embedder.calls).toEqual([]);
    expect(vectorsOf(result)).toEqual([
      [9, 8, 7],
      [1, 1, 1],
    ]);
    expect(result.deduplicated).toBe(1);
    expect(result.reused).toBe(1);
    expect(stats.tokensReused).toBe(8);
  });

  it('sends a text present twice in one batch once, and gives both rows its vector', async () => {
    const { index } = await indexOver({});
    const { reuse, embedder, stats } = reusing(index);
    const result = await reuse.embed(
      batch('b1', [chunk('d1', 0, 'same', 4), chunk('d1', 1, 'other', 5), chunk('d2', 0, 'same', 6)]),
      signal,
    );
    expect(embedder.sentTexts).toEqual(['same', 'other']);
    expect(rows(result)).toEqual(['d1#0', 'd1#1', 'd2#0']);
    expect(result.vectors[2]).toEqual(result.vectors[0]);
    expect(Array.from(result.vectors[2]!)).toEqual(Array.from(answerFor('same')));
    expect(result.deduplicated).toBe(1);
    expect(result.reused ?? 0).toBe(0);
    expect(stats.tokensReused).toBe(6);
  });

  it('makes a batch wait for the answer of another batch sending the same text, not send it', async () => {
    const { index } = await indexOver({});
    const { reuse, embedder, stats } = reusing(index, { manual: true });
    const first = watch(
      reuse.embed(batch('b1', [chunk('a', 0, 'shared', 9), chunk('a', 1, 'only one')]), signal),
    );
    const second = watch(
      reuse.embed(batch('b2', [chunk('b', 0, 'shared', 9), chunk('b', 1, 'only two')]), signal),
    );
    await until(() => embedder.calls.length === 2, 'both requests');
    expect(embedder.calls.map((c) => c.texts)).toEqual([['shared', 'only one'], ['only two']]);

    // The second batch's own request is answered: it still waits for the first's.
    embedder.calls[1]!.answer();
    await new Promise((r) => setTimeout(r, 20));
    expect(second.settled()).toBe(false);

    embedder.calls[0]!.answer();
    const [one, two] = await Promise.all([first.promise, second.promise]);
    expect(embedder.calls.length).toBe(2);
    expect(rows(two)).toEqual(['b#0', 'b#1']);
    expect(vectorsOf(two)).toEqual([Array.from(answerFor('shared')), Array.from(answerFor('only two'))]);
    expect(vectorsOf(one)[0]).toEqual(Array.from(answerFor('shared')));
    expect((one.deduplicated ?? 0) + (two.deduplicated ?? 0)).toBe(1);
    expect(stats.tokensReused).toBe(9);
  });

  it('lets the waiting batch send the text itself when the other batch’s request fails', async () => {
    const { index } = await indexOver({});
    const { reuse, embedder } = reusing(index, { manual: true });
    const first = watch(
      reuse.embed(batch('b1', [chunk('a', 0, 'shared'), chunk('a', 1, 'only one')]), signal),
    );
    const second = watch(
      reuse.embed(batch('b2', [chunk('b', 0, 'only two'), chunk('b', 1, 'shared')]), signal),
    );
    await until(() => embedder.calls.length === 2, 'both requests');
    embedder.calls[1]!.answer();
    embedder.calls[0]!.fail(new Error('gateway down'));
    await expect(first.promise).rejects.toThrow('gateway down');

    await until(() => embedder.calls.length === 3, 'the second batch sending the shared text');
    expect(embedder.calls[2]!.texts).toEqual(['shared']);
    expect(embedder.calls[2]!.batch.batchId).toBe('b2');
    embedder.calls[2]!.answer();
    const two = await second.promise;
    expect(rows(two)).toEqual(['b#0', 'b#1']);
    expect(vectorsOf(two)).toEqual([Array.from(answerFor('only two')), Array.from(answerFor('shared'))]);
    expect(two.usage.requests).toBe(2);
    expect(two.deduplicated ?? 0).toBe(0);

    // Nothing of the failed request stays in flight: a later batch sends its text.
    const third = reuse.embed(batch('b3', [chunk('c', 0, 'only one')]), signal);
    await until(() => embedder.calls.length === 4, 'the third batch');
    expect(embedder.calls[3]!.texts).toEqual(['only one']);
    embedder.calls[3]!.answer();
    await third;
  });

  it('lets the waiting batch send a text the other batch’s answer left out (its input failed), and copies within it', async () => {
    const { index } = await indexOver({});
    const { reuse, embedder } = reusing(index, { manual: true });
    const firstChunks = [chunk('a', 0, 'kept'), chunk('a', 1, 'refused'), chunk('a', 2, 'kept')];
    const first = watch(reuse.embed(batch('b1', firstChunks), signal));
    const second = watch(
      reuse.embed(
        batch('b2', [chunk('b', 0, 'refused'), chunk('b', 1, 'kept'), chunk('b', 2, 'own')]),
        signal,
      ),
    );
    await until(() => embedder.calls.length === 2, 'both requests');
    expect(embedder.calls.map((c) => c.texts)).toEqual([['kept', 'refused'], ['own']]);
    // The first request answers 'kept' alone: 'refused' failed there.
    const sent = embedder.calls[0]!.batch;
    const keptChunk = sent.chunks[0]!;
    embedder.calls[0]!.answer({
      ...outcome(sent, [keptChunk], [answerFor('kept')]),
      failures: [{ documentId: 'a', chunkIndex: 1, batchId: 'b1', message: 'refused' }],
    });
    embedder.calls[1]!.answer();
    const one = await first.promise;
    expect(rows(one)).toEqual(['a#0', 'a#2']);
    expect(vectorsOf(one)).toEqual([Array.from(answerFor('kept')), Array.from(answerFor('kept'))]);

    await until(() => embedder.calls.length === 3, 'the second batch sending the refused text');
    expect(embedder.calls[2]!.texts).toEqual(['refused']);
    embedder.calls[2]!.answer();
    const two = await second.promise;
    expect(rows(two)).toEqual(['b#0', 'b#1', 'b#2']);
    expect(vectorsOf(two)).toEqual([
      Array.from(answerFor('refused')),
      Array.from(answerFor('kept')),
      Array.from(answerFor('own')),
    ]);

    // The refused text is not in flight any more: a later batch sends it.
    const third = reuse.embed(batch('b3', [chunk('c', 0, 'refused')]), signal);
    await until(() => embedder.calls.length === 4, 'the third batch');
    expect(embedder.calls[3]!.texts).toEqual(['refused']);
    embedder.calls[3]!.answer();
    await third;
  });

  it.each([
    ['before', true],
    ['after', false],
  ])(
    'does not send a text twice when the batch sending it also reuses a stored vector (%s it)',
    async (_, sharedFirst) => {
      const { index } = await indexOver({ stored: [1, 2, 3] });
      const { reuse, embedder } = reusing(index, { manual: true });
      const firstChunks = [chunk('a', 0, 'stored'), chunk('a', 1, 'shared', 9)];
      if (sharedFirst) firstChunks.reverse();
      const first = reuse.embed(batch('b1', firstChunks), signal);
      const second = reuse.embed(batch('b2', [chunk('b', 0, 'shared', 9)]), signal);
      await until(() => embedder.calls.length >= 1, 'a request');
      await new Promise((r) => setTimeout(r, 20));
      for (const call of embedder.calls) call.answer();
      const [one, two] = await Promise.all([first, second]);
      expect(embedder.sentTexts).toEqual(['shared']);
      expect(vectorsOf(one)).toContainEqual(Array.from(answerFor('shared')));
      expect(vectorsOf(one)).toContainEqual([1, 2, 3]);
      expect(vectorsOf(two)).toEqual([Array.from(answerFor('shared'))]);
      expect((one.reused ?? 0) + (two.reused ?? 0)).toBe(1);
      expect((one.deduplicated ?? 0) + (two.deduplicated ?? 0)).toBe(1);
    },
  );

  it('sends a stale chunk as planned, even when its text is stored or in the same batch', async () => {
    const { index } = await indexOver({ stored: [1, 2, 3] });
    const staleDoc = 'replanned-elsewhere';
    const { reuse, embedder, stats } = reusing(index, { stale: (c) => c.documentId === staleDoc });
    const result = await reuse.embed(
      batch('b1', [chunk(staleDoc, 0, 'stored'), chunk('d', 0, 'dup'), chunk(staleDoc, 1, 'dup')]),
      signal,
    );
    expect(embedder.sentTexts).toEqual(['stored', 'dup', 'dup']);
    expect(rows(result)).toEqual([`${staleDoc}#0`, 'd#0', `${staleDoc}#1`]);
    expect((result.reused ?? 0) + (result.deduplicated ?? 0) + stats.tokensReused).toBe(0);
  });

  it('puts the rows of a document the request re-planned after the batch’s rows', async () => {
    const { index } = await indexOver({ stored: [1, 2, 3] });
    const embedder = new StubEmbedder();
    const pieces = [chunk('long', 0, 'long part one'), chunk('long', 1, 'long part two')];
    embedder.embedBatch = async (b: Batch) => {
      embedder.calls.push({ batch: b, texts: b.chunks.map((c) => c.text), answer: () => {}, fail: () => {} });
      const kept = b.chunks.filter((c) => c.documentId !== 'long');
      const sent = [...kept, ...pieces];
      return {
        ...outcome(
          b,
          sent,
          sent.map((c) => answerFor(c.text)),
        ),
        replanned: ['long'],
      };
    };
    const stats = new RunStats();
    const reuse = new ReusingEmbedder({
      embedder,
      sizing: { isStale: () => false },
      stats,
      index: async () => index,
    });
    const result = await reuse.embed(
      batch('b1', [chunk('long', 0, 'long text'), chunk('d', 0, 'stored'), chunk('e', 0, 'short')]),
      signal,
    );
    expect(rows(result)).toEqual(['d#0', 'e#0', 'long#0', 'long#1']);
    expect(result.chunks.slice(2)).toEqual(pieces);
    expect(vectorsOf(result)[0]).toEqual([1, 2, 3]);
    expect(result.replanned).toEqual(['long']);
  });
});

describe('VectorIndex', () => {
  it('never answers another text’s vector when two hashes share the 52-bit key prefix', async () => {
    const { index } = await indexOver({ 'stored one': [1, 2, 3] });
    const stored = chunk('d', 0, 'stored one').hash;
    const impostor = `${stored.slice(0, 13)}${'f'.repeat(51)}`;
    expect(impostor).not.toBe(stored);
    expect(index.has(impostor)).toBe(true); // the key may collide…
    expect(await index.vector(impostor)).toBeUndefined(); // …the full hash decides
    expect([...(await index.vector(stored))!]).toEqual([1, 2, 3]);
  });
});

describe('batches with a few texts left to send share a request', () => {
  const pool: SendPoolLimits = { maxInputs: 8, maxTokens: 10_000, waitMs: 20 };
  const stored = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`old ${i}`, [i, i, i]]));
  /** A batch of four chunks: three the dataset holds, one new text. */
  const mostlyHeld = (id: string, k: number) =>
    batch(id, [
      chunk(`${id}-a`, 0, `old ${3 * k}`),
      chunk(`${id}-a`, 1, `new ${id}`),
      chunk(`${id}-b`, 0, `old ${3 * k + 1}`),
      chunk(`${id}-c`, 0, `old ${3 * k + 2}`),
    ]);

  it('sends the new texts of batches in flight together; each batch gets its own rows and share of the tokens', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool });
    const batches = [0, 1, 2].map((k) => mostlyHeld(`b${k}`, k));
    const results = await Promise.all(batches.map((b) => reuse.embed(b, signal)));
    expect(embedder.calls.map((c) => [...c.texts].sort())).toEqual([['new b0', 'new b1', 'new b2']]);
    const host = embedder.calls[0]!.batch.batchId;
    results.forEach((result, k) => {
      expect(result.batchId).toBe(`b${k}`);
      expect(rows(result)).toEqual(batches[k]!.chunks.map((c) => `${c.documentId}#${c.index}`));
      expect(vectorsOf(result)[1]).toEqual(Array.from(answerFor(`new b${k}`)));
      expect(result.reused).toBe(3);
    });
    // The request went as the first batch to join, which counts it; tokens are shared by texts.
    expect(results.map((r) => r.usage.requests)).toEqual(results.map((r) => (r.batchId === host ? 1 : 0)));
    expect(results.map((r) => r.usage.promptTokens)).toEqual([10, 10, 10]);
  });

  it('sends a batch with nothing reused on its own, at once', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool });
    const fresh = batch('f', [chunk('f', 0, 'fresh one'), chunk('f', 1, 'fresh two')]);
    const [few, all] = await Promise.all([
      reuse.embed(mostlyHeld('b0', 0), signal),
      reuse.embed(fresh, signal),
    ]);
    expect(embedder.calls.map((c) => c.texts).sort()).toEqual([['fresh one', 'fresh two'], ['new b0']]);
    expect(rows(few)).toHaveLength(4);
    expect(rows(all)).toEqual(['f#0', 'f#1']);
  });

  it('gives each batch the failures of its own chunks, under its own id', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool, manual: true });
    const batches = [0, 1].map((k) => mostlyHeld(`b${k}`, k));
    const pending = Promise.all(batches.map((b) => reuse.embed(b, signal)));
    await until(() => embedder.calls.length === 1, 'the shared request');
    const call = embedder.calls[0]!;
    const refused = call.batch.chunks.find((c) => c.documentId === 'b1-a')!;
    const answered = call.batch.chunks.filter((c) => c !== refused);
    call.answer({
      ...outcome(
        call.batch,
        answered,
        answered.map((c) => answerFor(c.text)),
      ),
      failures: [{ documentId: 'b1-a', chunkIndex: 1, batchId: call.batch.batchId, message: 'refused' }],
    });
    const [one, two] = (await pending) as [EmbeddedBatch, EmbeddedBatch];
    expect(one.failures).toEqual([]);
    expect(two.failures).toEqual([{ documentId: 'b1-a', chunkIndex: 1, batchId: 'b1', message: 'refused' }]);
    expect(rows(two)).toEqual(['b1-a#0', 'b1-b#0', 'b1-c#0']);
    expect(rows(one)).toHaveLength(4);
  });

  it('never puts an image in a shared request (its inputs are multimodal blocks)', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool });
    const withImage = (b: Batch): Batch => ({
      ...b,
      chunks: b.chunks.map((c) =>
        c.index === 1
          ? { ...c, image: { kind: 'url', source: 'x', url: `https://x/${c.documentId}`, urlBytes: 20 } }
          : c,
      ),
    });
    await Promise.all([0, 1].map((k) => reuse.embed(withImage(mostlyHeld(`b${k}`, k)), signal)));
    expect(embedder.calls.map((c) => c.batch.batchId).sort()).toEqual(['b0', 'b1']);
  });

  it('fails every batch of a request whose retries ran out, each under its own id', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool, manual: true });
    const pending = [0, 1].map((k) => reuse.embed(mostlyHeld(`b${k}`, k), signal));
    await until(() => embedder.calls.length === 1, 'the shared request');
    const host = embedder.calls[0]!.batch.batchId;
    const cause = new GatewayError({ status: 503, gatewayMessage: 'unavailable' });
    embedder.calls[0]!.fail(new BatchFailedError(host, cause));
    for (const [k, result] of pending.entries()) {
      await expect(result).rejects.toMatchObject({ batchId: `b${k}`, cause });
    }
  });

  it('fails every batch of a request that failed', async () => {
    const { index } = await indexOver(stored);
    const { reuse, embedder } = reusing(index, { pool, manual: true });
    const pending = [0, 1].map((k) => reuse.embed(mostlyHeld(`b${k}`, k), signal));
    await until(() => embedder.calls.length === 1, 'the shared request');
    embedder.calls[0]!.fail(new Error('gateway down'));
    for (const result of pending) await expect(result).rejects.toThrow('gateway down');
  });
});
