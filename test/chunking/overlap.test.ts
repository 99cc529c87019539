import { describe, expect, it } from 'vitest';
import { chunkDocument, utf8Length } from '../../src/chunking/index.js';
import type { ConfigError } from '../../src/errors.js';
import { doc, expectValidChunks } from './helpers.js';

const text = Array.from(
  { length: 60 },
  (_, i) => `Sentence ${i} talks about embeddings, batching and resumable runs at some length.`,
).join(' ');

describe('chunkDocument with overlap', () => {
  it('starts each chunk about overlapTokens back, at a word start, within budget', () => {
    const chunks = chunkDocument(doc(text), { model: 'm', maxTokens: 480, overlapTokens: 80 });
    expectValidChunks(text, chunks, 480, true);
    expect(chunks.length).toBeGreaterThan(3);
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!;
      const chunk = chunks[i]!;
      expect(chunk.start).toBeLessThan(previous.end);
      expect(chunk.start).toBeGreaterThan(previous.start);
      expect(text[chunk.start - 1]).toBe(' ');
      const shared = utf8Length(text.slice(chunk.start, previous.end));
      expect(shared).toBeGreaterThanOrEqual(40);
      expect(shared).toBeLessThanOrEqual(80);
    }
  });

  it('leaves the chunk boundaries of the non-overlapping plan under a reduced budget', () => {
    const plain = chunkDocument(doc(text), { model: 'm', maxTokens: 400 });
    const overlapped = chunkDocument(doc(text), { model: 'm', maxTokens: 480, overlapTokens: 80 });
    expect(overlapped.map((c) => c.end)).toEqual(plain.map((c) => c.end));
  });

  it('does not change a document that fits', () => {
    const short = 'One short paragraph.';
    expect(chunkDocument(doc(short), { model: 'm', maxTokens: 100, overlapTokens: 40 })).toEqual(
      chunkDocument(doc(short), { model: 'm', maxTokens: 100 }),
    );
  });

  it('overlaps text without spaces at a character boundary', () => {
    const cjk = '我们今天讨论向量管道的设计和批次编号以及恢复运行的方法'.repeat(30);
    const chunks = chunkDocument(doc(cjk), { model: 'm', maxTokens: 180, overlapTokens: 30 });
    expectValidChunks(cjk, chunks, 180, true);
    expect(chunks.slice(1).every((c, i) => c.start < chunks[i]!.end)).toBe(true);
  });

  it('requires overlap below half the budget', () => {
    for (const overlapTokens of [50, 60, -1, Number.NaN]) {
      let error: ConfigError | undefined;
      try {
        chunkDocument(doc(text), { model: 'm', maxTokens: 100, overlapTokens });
      } catch (caught) {
        error = caught as ConfigError;
      }
      expect(error?.field).toBe('overlap');
    }
    expect(() => chunkDocument(doc(text), { model: 'm', maxTokens: 100, overlapTokens: 49 })).not.toThrow();
  });
});
