/**
 * The split of a shared request's answer back to the batches that shared it, and a dry run's
 * estimate of the requests the pool makes (embedding/send-pool.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Batch, Chunk, EmbeddedBatch } from '../../src/domain.js';
import { RequestEstimate, SendPool, sharesRequest, splitAnswer } from '../../src/embedding/send-pool.js';
import { batchOf, embeddedBatch, textChunk } from '../helpers/chunks.js';

const chunk = (documentId: string, index: number, tokens: number): Chunk =>
  textChunk(documentId, index, `${documentId}#${index}`, tokens, `h-${documentId}-${index}`);

describe('splitAnswer', () => {
  const members = [
    { batch: batchOf('host', 'm', []), chunks: [chunk('a', 0, 10)] },
    { batch: batchOf('g1', 'm', []), chunks: [chunk('b', 0, 20), chunk('b', 1, 10)] },
    { batch: batchOf('g2', 'm', []), chunks: [chunk('c', 3, 60)] },
  ];
  const [a0, b0, b1] = members.flatMap((m) => m.chunks) as [Chunk, Chunk, Chunk];
  // The host re-planned document x (new chunk objects no member planned); c#3 was refused.
  const x0 = chunk('x', 0, 5);
  const answer: EmbeddedBatch = {
    batchId: 'host',
    model: 'm',
    chunks: [a0, b0, x0, b1],
    vectors: [a0, b0, x0, b1].map((_, i) => Float32Array.of(i)),
    failures: [{ documentId: 'c', chunkIndex: 3, batchId: 'host', message: 'refused' }],
    usage: { promptTokens: 101, cost: 0.3, requests: 2, retries: 1 },
    replanned: ['x'],
    provider: 'p',
  };

  it('gives each batch its own rows and failures, under its own id; re-planned rows stay with the host', () => {
    const [host, g1, g2] = splitAnswer(answer, members);
    expect(host!.chunks).toEqual([a0, x0]);
    expect(host!.replanned).toEqual(['x']);
    expect(g1!.chunks).toEqual([b0, b1]);
    expect(Array.from(g1!.vectors, (v) => v[0])).toEqual([1, 3]);
    expect(g1!.replanned).toEqual([]);
    expect(g2!.chunks).toEqual([]);
    expect(g2!.failures).toEqual([{ documentId: 'c', chunkIndex: 3, batchId: 'g2', message: 'refused' }]);
    expect([host, g1, g2].map((s) => s!.batchId)).toEqual(['host', 'g1', 'g2']);
    expect([host, g1, g2].map((s) => s!.provider)).toEqual(['p', 'p', 'p']);
  });

  it('shares the tokens and cost by estimated tokens, the sums exact; the host counts the request', () => {
    const usages = splitAnswer(answer, members).map((s) => s.usage);
    expect(usages.map((u) => u.promptTokens)).toEqual([101 - 30 - 60, 30, 60]);
    expect(usages.reduce((sum, u) => sum + u.cost, 0)).toBeCloseTo(0.3, 12);
    expect(usages[2]!.cost).toBeCloseTo(0.18, 12);
    expect(usages.map((u) => u.requests)).toEqual([2, 0, 0]);
    expect(usages.map((u) => u.retries)).toEqual([1, 0, 0]);
  });
});

describe('RequestEstimate', () => {
  const limits = { maxInputs: 16, maxTokens: 100 };

  /** A batch of `planned` chunks of which the first `left` are sent, each of `tokens` tokens. */
  function planned(id: string, planned: number, left: number, tokens: number) {
    const chunks = Array.from({ length: planned }, (_, i) => chunk(id, i, tokens));
    return { batch: batchOf(id, 'm', chunks), left: chunks.slice(0, left) };
  }

  /** The requests a real SendPool (and the batches sent whole) makes when every batch comes at once. */
  async function poolRequests(batches: { batch: Batch; left: Chunk[] }[]): Promise<number> {
    let requests = 0;
    const embedder = {
      embedBatch: async (sent: Batch): Promise<EmbeddedBatch> => {
        requests += 1;
        return embeddedBatch(
          sent.batchId,
          'm',
          sent.chunks,
          sent.chunks.map(() => Float32Array.of(1)),
        );
      },
    };
    const pool = new SendPool(embedder, { ...limits, waitMs: 5 });
    const signal = new AbortController().signal;
    const shared: Promise<unknown>[] = [];
    for (const { batch, left } of batches) {
      if (left.length === 0) continue;
      if (pool.shares(batch, left)) shared.push(pool.send(batch, left, signal));
      else requests += 1;
    }
    await Promise.all(shared);
    return requests;
  }

  function estimate(batches: { batch: Batch; left: Chunk[] }[]): number {
    const requests = new RequestEstimate(limits);
    for (const { batch, left } of batches) requests.add(batch.chunks.length, left);
    return requests.requests;
  }

  it('counts a batch sent whole as a request, and packs the few texts of others as the pool does', async () => {
    const cases = [
      // Nothing held: every batch its own request.
      [planned('a', 16, 16, 5), planned('b', 10, 10, 5)],
      // Nightly: a few texts left in each batch, by inputs (3 × 5 = 15 ≤ 16, then a new group).
      [planned('a', 16, 5, 1), planned('b', 16, 5, 1), planned('c', 16, 5, 1), planned('d', 16, 5, 1)],
      // By tokens: 40 + 40 fit in 100, the third does not.
      [planned('a', 16, 2, 20), planned('b', 16, 2, 20), planned('c', 16, 2, 20)],
      // More than half the cap left: sent alone; nothing left: no request; a group full at 16 goes.
      [planned('a', 16, 9, 1), planned('b', 16, 0, 1), planned('c', 16, 8, 1), planned('d', 16, 8, 1)],
      [planned('a', 16, 8, 1), planned('b', 16, 16, 1), planned('c', 16, 1, 1)],
    ];
    for (const batches of cases) expect(estimate(batches)).toBe(await poolRequests(batches));
    expect(cases.map(estimate)).toEqual([2, 2, 2, 2, 2]);
  });

  it('agrees with the pool on random mixes of whole and partly held batches', async () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 25; round++) {
      const batches = Array.from({ length: 1 + random(30) }, (_, i) => {
        const size = 1 + random(16);
        return planned(`r${round}-${i}`, size, random(size + 1), 1 + random(30));
      });
      expect(estimate(batches)).toBe(await poolRequests(batches));
    }
  });

  it('never shares a batch of images or one left whole', () => {
    const image: Chunk = {
      ...chunk('i', 0, 1),
      image: { kind: 'url', source: 'x', url: 'https://x/i.png', urlBytes: 15 },
    };
    expect(sharesRequest(4, [image], 16)).toBe(false);
    expect(sharesRequest(2, [chunk('a', 0, 1), chunk('a', 1, 1)], 16)).toBe(false);
    expect(sharesRequest(3, [chunk('a', 0, 1)], 16)).toBe(true);
  });
});
