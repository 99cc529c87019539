import { describe, expect, it } from 'vitest';
import { chunkDocument } from '../../src/chunking/index.js';
import { randomDocument, seeded } from './generate.js';
import { doc, expectValidChunks } from './helpers.js';

const BUDGETS = [4, 7, 16, 40, 120, 600];

describe('chunkDocument on generated documents', () => {
  it('tiles every document with exact, in-budget, non-empty chunks, deterministically', () => {
    for (let seed = 1; seed <= 160; seed++) {
      const rand = seeded(seed);
      const text = randomDocument(rand);
      const maxTokens = BUDGETS[seed % BUDGETS.length]!;
      const options = { model: 'm', maxTokens };
      const chunks = chunkDocument(doc(text), options);
      try {
        expectValidChunks(text, chunks, maxTokens);
      } catch (error) {
        throw new Error(`seed ${seed}, maxTokens ${maxTokens}: ${(error as Error).message}`);
      }
      expect(chunkDocument(doc(text), options)).toEqual(chunks);
    }
  });

  it('covers every document in order with overlap, within budget', () => {
    for (let seed = 1000; seed < 1080; seed++) {
      const rand = seeded(seed);
      const text = randomDocument(rand);
      const maxTokens = [16, 40, 120, 600][seed % 4]!;
      const overlapTokens = Math.floor(rand() * (maxTokens / 2));
      const options = { model: 'm', maxTokens, overlapTokens };
      const chunks = chunkDocument(doc(text), options);
      try {
        expectValidChunks(text, chunks, maxTokens, true);
      } catch (error) {
        throw new Error(
          `seed ${seed}, maxTokens ${maxTokens}, overlap ${overlapTokens}: ${(error as Error).message}`,
        );
      }
      expect(chunkDocument(doc(text), options)).toEqual(chunks);
    }
  });
});
