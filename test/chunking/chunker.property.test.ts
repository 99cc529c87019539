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
      const maxBytes = BUDGETS[seed % BUDGETS.length]!;
      const options = { model: 'm', maxBytes };
      const chunks = chunkDocument(doc(text), options);
      try {
        expectValidChunks(text, chunks, maxBytes);
      } catch (error) {
        throw new Error(`seed ${seed}, maxBytes ${maxBytes}: ${(error as Error).message}`);
      }
      expect(chunkDocument(doc(text), options)).toEqual(chunks);
    }
  });

  it('covers every document in order with overlap, within budget', () => {
    for (let seed = 1000; seed < 1080; seed++) {
      const rand = seeded(seed);
      const text = randomDocument(rand);
      const maxBytes = [16, 40, 120, 600][seed % 4]!;
      const overlapBytes = Math.floor(rand() * (maxBytes / 2));
      const options = { model: 'm', maxBytes, overlapBytes };
      const chunks = chunkDocument(doc(text), options);
      try {
        expectValidChunks(text, chunks, maxBytes, true);
      } catch (error) {
        throw new Error(
          `seed ${seed}, maxBytes ${maxBytes}, overlap ${overlapBytes}: ${(error as Error).message}`,
        );
      }
      expect(chunkDocument(doc(text), options)).toEqual(chunks);
    }
  });
});
