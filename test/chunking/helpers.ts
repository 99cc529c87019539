import { expect } from 'vitest';
import { utf8Length } from '../../src/chunking/index.js';
import type { Chunk } from '../../src/domain.js';

export const doc = (text: string, id = 'doc-1') => ({ id, text, source: 'test.txt', line: 1 });

/**
 * The chunker's contract, checked on one result: text is the slice it claims, bytes are its exact
 * UTF-8 length and within budget, nothing is empty, indexes are 0..k-1, starts increase, the chunks cover
 * the whole text in order — and, without overlap, tile it exactly.
 */
export function expectValidChunks(
  text: string,
  chunks: readonly Chunk[],
  maxTokens: number,
  overlap = false,
): void {
  if (text.length === 0) {
    expect(chunks).toEqual([]);
    return;
  }
  expect(chunks.length).toBeGreaterThan(0);
  expect(chunks[0]!.start).toBe(0);
  expect(chunks.at(-1)!.end).toBe(text.length);
  let covered = 0;
  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.documentId).toBe('doc-1');
    expect(chunk.text.length).toBeGreaterThan(0);
    expect(chunk.text).toBe(text.slice(chunk.start, chunk.end));
    expect(chunk.bytes).toBe(utf8Length(chunk.text));
    expect(chunk.bytes).toBeLessThanOrEqual(maxTokens);
    expect(chunk.tokens).toBe(chunk.bytes);
    if (overlap) {
      expect(chunk.start).toBeLessThanOrEqual(covered);
      if (i > 0) expect(chunk.start).toBeGreaterThan(chunks[i - 1]!.start);
    } else {
      expect(chunk.start).toBe(covered);
    }
    expect(chunk.end).toBeGreaterThan(covered);
    expect(splitsPair(text, chunk.start) || splitsPair(text, chunk.end)).toBe(false);
    covered = chunk.end;
  });
  if (!overlap) expect(chunks.map((c) => c.text).join('')).toBe(text);
}

function splitsPair(text: string, i: number): boolean {
  const before = text.charCodeAt(i - 1);
  const after = text.charCodeAt(i);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}
