import { describe, expect, it } from 'vitest';
import {
  comparePaired,
  METRICS,
  type MetricTable,
  meanOverlapAtK,
  metricTable,
  overlapAtK,
  type QueryResult,
  quantileSorted,
  queryMetrics,
  type ScoredItem,
  scoreDistribution,
  seededRandom,
  suggestThreshold,
  summarize,
} from '../../src/eval/metrics.js';

/** Ten keys `d1`..`d10` with the given keys put at the given 1-based ranks. */
function ranking(placed: Record<number, string> = {}, length = 10): string[] {
  return Array.from({ length }, (_, i) => placed[i + 1] ?? `d${i + 1}`);
}

describe('queryMetrics', () => {
  it('scores a single relevant item at rank 1 as perfect', () => {
    expect(queryMetrics({ ranked: ranking({ 1: 'x' }), relevant: new Set(['x']) })).toEqual({
      'recall@1': 1,
      'recall@5': 1,
      'recall@10': 1,
      mrr: 1,
      'ndcg@10': 1,
    });
  });

  it('discounts a relevant item at rank 3', () => {
    const m = queryMetrics({ ranked: ranking({ 3: 'x' }), relevant: new Set(['x']) });
    expect(m['recall@1']).toBe(0);
    expect(m['recall@5']).toBe(1);
    expect(m['recall@10']).toBe(1);
    expect(m.mrr).toBeCloseTo(1 / 3, 12);
    expect(m['ndcg@10']).toBeCloseTo(0.5, 12); // 1 / log2(4)
  });

  it('gives zeros when no relevant item is retrieved', () => {
    const m = queryMetrics({ ranked: ranking(), relevant: new Set(['x']) });
    for (const name of METRICS) expect(m[name]).toBe(0);
  });

  it('divides recall by all relevant items when there are several', () => {
    // a at 1, b at 7, c not retrieved.
    const m = queryMetrics({ ranked: ranking({ 1: 'a', 7: 'b' }), relevant: new Set(['a', 'b', 'c']) });
    expect(m['recall@1']).toBeCloseTo(1 / 3, 12);
    expect(m['recall@5']).toBeCloseTo(1 / 3, 12);
    expect(m['recall@10']).toBeCloseTo(2 / 3, 12);
    expect(m.mrr).toBe(1);
    // DCG = 1 + 1/log2(8) = 4/3; IDCG = 1 + 1/log2(3) + 1/log2(4).
    expect(m['ndcg@10']).toBeCloseTo(4 / 3 / (1 + 1 / Math.log2(3) + 0.5), 12);
    expect(m['ndcg@10']).toBeCloseTo(0.625705, 5);
  });

  it('uses graded gains for nDCG and treats gain 0 as not relevant', () => {
    const relevant = new Map([
      ['a', 3],
      ['b', 1],
      ['c', 0],
    ]);
    const m = queryMetrics({ ranked: ranking({ 1: 'b', 2: 'c', 3: 'a' }), relevant });
    expect(m['recall@1']).toBe(0.5);
    expect(m['recall@5']).toBe(1);
    expect(m.mrr).toBe(1);
    // DCG = 1/log2(2) + 3/log2(4) = 2.5; IDCG = 3 + 1/log2(3).
    expect(m['ndcg@10']).toBeCloseTo(2.5 / (3 + 1 / Math.log2(3)), 12);
    expect(m['ndcg@10']).toBeCloseTo(0.688531, 5);
  });

  it('finds the reciprocal rank beyond rank 10 but no recall or gain there', () => {
    const m = queryMetrics({ ranked: ranking({ 12: 'x', 14: 'y' }, 15), relevant: new Set(['x', 'y']) });
    expect(m.mrr).toBeCloseTo(1 / 12, 12);
    expect(m['recall@10']).toBe(0);
    expect(m['ndcg@10']).toBe(0);
  });

  it('counts a key listed twice once', () => {
    const m = queryMetrics({ ranked: ['x', 'x', ...ranking()].slice(0, 10), relevant: new Set(['x']) });
    expect(m['recall@10']).toBe(1);
    expect(m['ndcg@10']).toBe(1);
  });

  it('refuses a query without relevant items', () => {
    expect(() => queryMetrics({ ranked: ranking(), relevant: new Set() })).toThrow(RangeError);
    expect(() => queryMetrics({ ranked: ranking(), relevant: new Map([['x', 0]]) })).toThrow(RangeError);
  });
});

/** Queries whose single relevant item sits at `rankOf(q)` (0: not retrieved). */
function results(count: number, rankOf: (q: number) => number): QueryResult[] {
  return Array.from({ length: count }, (_, q) => {
    const rank = rankOf(q);
    return { ranked: ranking(rank > 0 ? { [rank]: `rel${q}` } : {}), relevant: new Set([`rel${q}`]) };
  });
}

function randomTable(count: number, seed: number): MetricTable {
  const rng = seededRandom(seed);
  return metricTable(results(count, () => rng.nextInt(12)));
}

describe('summarize', () => {
  const table = randomTable(200, 7);

  it('reports the plain mean and an interval around it', () => {
    const summary = summarize(table, { rng: seededRandom(1) });
    expect(summary.queries).toBe(200);
    for (const m of METRICS) {
      const { mean, low, high } = summary.metrics[m];
      expect(mean).toBeCloseTo(table[m].reduce((s, v) => s + v, 0) / 200, 12);
      expect(low).toBeLessThan(mean);
      expect(high).toBeGreaterThan(mean);
    }
  });

  it('is reproducible from the seed and changes with another', () => {
    const first = summarize(table, { rng: seededRandom(1) });
    expect(summarize(table, { rng: seededRandom(1) })).toEqual(first);
    const other = summarize(table, { rng: seededRandom(2) });
    expect(other.metrics.mrr.mean).toBe(first.metrics.mrr.mean);
    expect([other.metrics.mrr.low, other.metrics.mrr.high]).not.toEqual([
      first.metrics.mrr.low,
      first.metrics.mrr.high,
    ]);
  });

  it('gives a zero-width interval when every query scores the same', () => {
    const summary = summarize(metricTable(results(50, () => 1)), { rng: seededRandom(3), replicates: 200 });
    for (const m of METRICS) expect(summary.metrics[m]).toEqual({ mean: 1, low: 1, high: 1 });
  });

  it('widens with the confidence asked for', () => {
    const narrow = summarize(table, { rng: seededRandom(1), confidence: 0.5 }).metrics.mrr;
    const wide = summarize(table, { rng: seededRandom(1), confidence: 0.99 }).metrics.mrr;
    expect(wide.high - wide.low).toBeGreaterThan(narrow.high - narrow.low);
  });

  it('refuses an empty query set', () => {
    expect(() => summarize(metricTable([]), { rng: seededRandom(1) })).toThrow(RangeError);
  });
});

describe('comparePaired', () => {
  it('puts the interval above 0 when B is clearly better', () => {
    const rng = seededRandom(11);
    // A finds the relevant item late or not at all in a third of the queries; B at rank 1 or 2.
    const a = metricTable(results(300, (q) => (q % 3 === 0 ? 0 : 3 + rng.nextInt(8))));
    const b = metricTable(results(300, () => 1 + rng.nextInt(2)));
    const diff = comparePaired(a, b, { rng: seededRandom(5) });
    for (const m of METRICS) {
      expect(diff[m].low).toBeGreaterThan(0);
      expect(diff[m].excludesZero).toBe(true);
    }
    const reverse = comparePaired(b, a, { rng: seededRandom(5) });
    expect(reverse.mrr.high).toBeLessThan(0);
    expect(reverse.mrr.excludesZero).toBe(true);
  });

  it('gives [0, 0] for identical versions', () => {
    const table = randomTable(100, 4);
    const diff = comparePaired(table, table, { rng: seededRandom(5) });
    for (const m of METRICS) expect(diff[m]).toEqual({ mean: 0, low: 0, high: 0, excludesZero: false });
  });

  it('is narrower than unpaired intervals when the versions share query difficulty', () => {
    const rng = seededRandom(12);
    const ranks = Array.from({ length: 200 }, () => rng.nextInt(11));
    const a = metricTable(results(200, (q) => ranks[q]!));
    // B is A one rank better where it can be: a small shift, large shared spread.
    const b = metricTable(results(200, (q) => Math.max(ranks[q]! - 1, ranks[q]! === 0 ? 0 : 1)));
    const paired = comparePaired(a, b, { rng: seededRandom(1) }).mrr;
    const single = summarize(a, { rng: seededRandom(1) }).metrics.mrr;
    expect(paired.high - paired.low).toBeLessThan(single.high - single.low);
    expect(paired.low).toBeGreaterThan(0);
  });

  it('refuses different query counts', () => {
    expect(() => comparePaired(randomTable(5, 1), randomTable(6, 1), { rng: seededRandom(1) })).toThrow(
      RangeError,
    );
  });
});

describe('overlap@k', () => {
  it('counts the shared top-k items over k', () => {
    expect(overlapAtK(['a', 'b', 'c', 'x'], ['c', 'd', 'a', 'b'], 3)).toBeCloseTo(2 / 3, 12);
    expect(overlapAtK(['a', 'b'], ['a', 'b'], 2)).toBe(1);
    expect(overlapAtK(['a', 'b'], ['c', 'd'], 2)).toBe(0);
  });

  it('averages over queries', () => {
    expect(
      meanOverlapAtK(
        [
          ['a', 'b'],
          ['a', 'b'],
        ],
        [
          ['b', 'a'],
          ['a', 'z'],
        ],
        2,
      ),
    ).toBe(0.75);
  });
});

describe('score distributions', () => {
  const separable: ScoredItem[][] = [
    [
      { score: 0.9, relevant: true },
      { score: 0.5, relevant: false },
      { score: 0.3, relevant: false },
    ],
    [
      { score: 0.85, relevant: true },
      { score: 0.4, relevant: false },
      { score: 0.2, relevant: false },
    ],
    [
      { score: 0.8, relevant: true },
      { score: 0.45, relevant: false },
    ],
  ];

  it('suggests a threshold between separable groups', () => {
    const t = suggestThreshold(separable.flat())!;
    expect(t.threshold).toBeGreaterThan(0.5);
    expect(t.threshold).toBeLessThan(0.8);
    expect(t.threshold).toBeCloseTo(0.65, 12);
    expect(t).toMatchObject({ j: 1, truePositiveRate: 1, falsePositiveRate: 0 });
  });

  it('trades true against false positives when the groups overlap', () => {
    const items = [0.9, 0.7, 0.5].map((score) => ({ score, relevant: true }));
    items.push(...[0.6, 0.4, 0.3, 0.2].map((score) => ({ score, relevant: false })));
    // ≥ 0.45 keeps 3/3 relevant and 1/4 other: J = 0.75, the best.
    const t = suggestThreshold(items)!;
    expect(t.threshold).toBeCloseTo(0.45, 12);
    expect(t.j).toBeCloseTo(0.75, 12);
  });

  it('suggests nothing without relevant or without other results', () => {
    expect(suggestThreshold([{ score: 0.5, relevant: true }])).toBeNull();
    expect(suggestThreshold([])).toBeNull();
  });

  it('bins both groups over the observed range with their quantiles', () => {
    const d = scoreDistribution(separable);
    expect(d.edges).toHaveLength(21);
    expect(d.edges[0]).toBe(0.2);
    expect(d.edges[20]).toBe(0.9);
    expect(d.relevant.counts.reduce((s, c) => s + c, 0)).toBe(3);
    expect(d.other.counts.reduce((s, c) => s + c, 0)).toBe(5);
    expect(d.relevant.counts.slice(17)).toEqual([1, 1, 1]); // 0.8, 0.85, and 0.9 in the closed last bin
    expect(d.other.counts[0]).toBe(1);
    expect(d.relevant.p50).toBeCloseTo(0.85, 12);
    expect(d.other.p50).toBeCloseTo(0.4, 12);
    expect(d.threshold?.threshold).toBeCloseTo(0.65, 12);
  });

  it('bins over a fixed range, scores outside going to the end bins', () => {
    const d = scoreDistribution(
      [
        [
          { score: -2, relevant: false },
          { score: 0.99, relevant: true },
        ],
      ],
      {
        bins: 4,
        range: [-1, 1],
      },
    );
    expect(d.edges).toEqual([-1, -0.5, 0, 0.5, 1]);
    expect(d.other.counts).toEqual([1, 0, 0, 0]);
    expect(d.relevant.counts).toEqual([0, 0, 0, 1]);
  });

  it('interpolates quantiles linearly', () => {
    expect(quantileSorted([1, 2, 3, 4, 5], 0.05)).toBeCloseTo(1.2, 12);
    expect(quantileSorted([1, 2, 3, 4, 5], 0.5)).toBe(3);
    expect(quantileSorted([7], 0.95)).toBe(7);
    expect(quantileSorted([], 0.5)).toBeNaN();
  });
});

describe('cost', () => {
  it('measures 1,000 queries with B = 1,000 quickly', () => {
    const rng = seededRandom(21);
    const a = results(1000, () => rng.nextInt(12));
    const b = results(1000, () => rng.nextInt(12));
    const started = performance.now();
    const tableA = metricTable(a);
    const tableB = metricTable(b);
    summarize(tableA, { rng: seededRandom(1) });
    summarize(tableB, { rng: seededRandom(1) });
    comparePaired(tableA, tableB, { rng: seededRandom(1) });
    const elapsed = performance.now() - started;
    console.log(`1,000 queries, B = 1,000: 2 summaries + 1 paired comparison in ${elapsed.toFixed(1)} ms`);
  });
});
