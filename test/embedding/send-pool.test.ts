/**
 * The split of a shared request's answer back to the batches that shared it (embedding/send-pool.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Chunk, EmbeddedBatch } from '../../src/domain.js';
import { splitAnswer } from '../../src/embedding/send-pool.js';
import { batchOf, textChunk } from '../helpers/chunks.js';

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
