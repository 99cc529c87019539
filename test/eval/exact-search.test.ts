import { describe, expect, it } from 'vitest';
import { documentIndex, QUERY_BLOCK, rankTop, scoreAll, scoreBlock } from '../../src/eval/exact-search.js';
import { seeded } from '../helpers/corpus.js';
import { versionOf as version } from './versions.js';

describe('exact search', () => {
  const v = version([
    { id: 'a', index: 0, v: [1, 0, 0, 0, 0] },
    { id: 'a', index: 1, v: [0.9, 0.1, 0, 0, 0] },
    { id: 'b', index: 0, v: [0, 1, 0, 0, 0] },
    { id: 'c', index: 0, v: [0.7, 0.7, 0, 0, 0] },
    { id: 'd', index: 0, v: [0.7, 0.7, 0, 0, 0] },
  ]);
  const query = Float32Array.from([1, 0, 0, 0, 0]);

  it('scores every row by cosine (odd dims too)', () => {
    const scores = scoreAll(v, query);
    expect(scores[0]).toBeCloseTo(1, 6);
    expect(scores[2]).toBeCloseTo(0, 6);
    expect(scores[3]).toBeCloseTo(Math.SQRT1_2, 5);
  });

  it('ranks chunks, ties to the smaller key', () => {
    expect(rankTop(v, scoreAll(v, query), 4, 'chunk').keys).toEqual(['a#0', 'a#1', 'c#0', 'd#0']);
  });

  it('ranks documents by their best chunk', () => {
    const ranking = rankTop(v, scoreAll(v, query), 3, 'document', documentIndex(v));
    expect(ranking.keys).toEqual(['a', 'c', 'd']);
    expect(ranking.scores[0]).toBeCloseTo(1, 6);
    expect(documentIndex(v)).toMatchObject({ ids: ['a', 'b', 'c', 'd'] });
  });
});

describe('scoreBlock', () => {
  it('gives every query of a block, a partial last block too, the scores scoreAll gives it', () => {
    const rand = seeded(3);
    const dims = 37;
    const v = version(
      Array.from({ length: 50 }, (_, i) => ({
        id: `d${i}`,
        v: Array.from({ length: dims }, () => rand() - 0.5),
      })),
    );
    const queries = version(
      Array.from({ length: 11 }, (_, i) => ({
        id: `q${i}`,
        v: Array.from({ length: dims }, () => rand() - 0.5),
      })),
    ).matrix;
    const blocked = [...scoreBlock(v, queries, 0, QUERY_BLOCK), ...scoreBlock(v, queries, QUERY_BLOCK, 3)];
    expect(blocked).toHaveLength(11);
    for (const [i, scores] of blocked.entries())
      expect(scores).toEqual(scoreAll(v, queries.subarray(i * dims, (i + 1) * dims)));
  });
});
