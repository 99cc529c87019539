import { describe, expect, it } from 'vitest';
import {
  comparePaired,
  type Interval,
  METRICS,
  type MetricName,
  metricTable,
  type PairedDifference,
  type QueryResult,
  scoreDistribution,
  seededRandom,
  summarize,
} from '../../src/eval/metrics.js';
import { type ReportInput, renderReport } from '../../src/eval/report-html.js';

const interval = (mean: number, low: number, high: number): Interval => ({ mean, low, high });
const byMetric = <T>(make: (m: MetricName, i: number) => T) =>
  Object.fromEntries(METRICS.map((m, i) => [m, make(m, i)])) as Record<MetricName, T>;
const difference = (mean: number, low: number, high: number): PairedDifference => ({
  mean,
  low,
  high,
  excludesZero: low > 0 || high < 0,
});

const hostile = '<script>alert("x")</script> & co';

function input(overrides: Partial<ReportInput> = {}): ReportInput {
  return {
    dataset: `docs ${hostile}`,
    versions: [
      {
        name: 'v000001',
        model: 'old-model',
        current: true,
        metrics: {
          queries: 250,
          metrics: byMetric((_, i) => interval(0.5 + i / 100, 0.45 + i / 100, 0.55 + i / 100)),
        },
        scores: scoreDistribution([
          [
            { score: 0.81, relevant: true },
            { score: 0.52, relevant: false },
            { score: 0.47, relevant: false },
          ],
        ]),
      },
      {
        name: 'v000002',
        model: `new-model ${hostile}`,
        metrics: { queries: 250, metrics: byMetric((_, i) => interval(0.812 + i / 1000, 0.79, 0.834)) },
        scores: scoreDistribution([
          [
            { score: 0.71, relevant: true },
            { score: 0.33, relevant: false },
          ],
        ]),
      },
    ],
    comparisons: [
      {
        base: 'v000001',
        candidate: 'v000002',
        differences: {
          'recall@1': difference(0.031, 0.012, 0.05),
          'recall@5': difference(-0.024, -0.04, -0.008),
          'recall@10': difference(0.004, -0.01, 0.018),
          mrr: difference(0, 0, 0),
          'ndcg@10': difference(0.1, 0.07, 0.13),
        },
        overlap: 0.643,
      },
    ],
    k: 10,
    queriesDrawn: `250 queries from queries.jsonl, sampled with seed 42 ("hard" & <tagged>)`,
    seed: 42,
    replicates: 1000,
    confidence: 0.95,
    generatedAt: new Date('2025-03-04T05:06:07Z'),
    ...overrides,
  };
}

/** Tags that are opened and closed in order, ignoring void elements and self-closed SVG ones. */
function unbalancedTags(html: string): string[] {
  const voids = new Set(['meta', 'br', 'link', 'img', 'hr', 'input']);
  const stack: string[] = [];
  const problems: string[] = [];
  for (const match of html.replace(/<!DOCTYPE[^>]*>/i, '').matchAll(/<(\/?)([a-zA-Z][\w-]*)([^>]*)>/g)) {
    const [, closing, name, rest] = match;
    const tag = name!.toLowerCase();
    if (voids.has(tag) || rest!.endsWith('/')) continue;
    if (!closing) stack.push(tag);
    else if (stack.pop() !== tag) problems.push(`</${tag}> at ${match.index}`);
  }
  return [...problems, ...stack.map((t) => `<${t}> never closed`)];
}

describe('renderReport', () => {
  const html = renderReport(input());

  it('shows the numbers with their intervals', () => {
    expect(html).toContain('0.812 <span class="ci">[0.790, 0.834]</span>');
    expect(html).toContain('+0.031 <span class="ci">[+0.012, +0.050]</span>');
    expect(html).toContain('-0.024');
    expect(html).toContain('0.000 <span class="ci">[0.000, 0.000]</span>');
    expect(html).toContain('overlap@10: 0.643');
    expect(html).toContain('suggested threshold 0.665');
    expect(html).toContain('seed 42');
    expect(html).toContain('B = 1000');
    expect(html).toContain('2025-03-04 05:06 UTC');
    expect(html).toContain('old-model');
  });

  it('colours differences by whether their interval excludes 0', () => {
    expect(html).toMatch(/<tr class="better"><td>Recall@1<\/td>/);
    expect(html).toMatch(/<tr class="worse"><td>Recall@5<\/td>/);
    expect(html).toMatch(/<tr class="ns"><td>Recall@10<\/td>/);
    expect(html).toMatch(/<tr class="ns"><td>MRR<\/td>/);
  });

  it('escapes every piece of input text', () => {
    expect(html).not.toContain('<script');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co');
    expect(html).toContain('(&quot;hard&quot; &amp; &lt;tagged&gt;)');
  });

  it('loads nothing from outside', () => {
    expect(html).not.toMatch(/(src|href)\s*=\s*["']?\s*(https?:)?\/\//i);
    expect(html).not.toMatch(/http/i);
    expect(html).not.toMatch(/@import|url\(/i);
  });

  it('is well formed and small', () => {
    expect(unbalancedTags(html)).toEqual([]);
    expect(html.match(/<svg/g)).toHaveLength(3); // metric bars + one histogram per version
    expect(html.match(/<\/svg>/g)).toHaveLength(3);
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(Buffer.byteLength(html)).toBeLessThan(100_000);
  });

  it('renders one version without comparisons or scores', () => {
    const single = renderReport(
      input({ versions: [{ ...input().versions[0]!, scores: undefined }], comparisons: [] }),
    );
    expect(unbalancedTags(single)).toEqual([]);
    expect(single).not.toContain('Paired differences');
    expect(single.match(/<svg/g)).toHaveLength(1);
  });

  it('stays small for a measured report of 1,000 queries', () => {
    const rng = seededRandom(3);
    const queries = (shift: number): QueryResult[] =>
      Array.from({ length: 1000 }, (_, q) => {
        const rank = Math.max(0, rng.nextInt(12) - shift);
        const ranked = Array.from({ length: 10 }, (_, i) => (i + 1 === rank ? `r${q}` : `d${q}-${i}`));
        return { ranked, relevant: new Set([`r${q}`]) };
      });
    const a = metricTable(queries(0));
    const b = metricTable(queries(2));
    const scores = Array.from({ length: 1000 }, () =>
      Array.from({ length: 10 }, (_, i) => ({ score: rng.nextInt(1000) / 1000, relevant: i === 0 })),
    );
    const version = (name: string, table: typeof a) => ({
      name,
      model: 'm',
      metrics: summarize(table, { rng: seededRandom(1) }),
      scores: scoreDistribution(scores),
    });
    const html = renderReport(
      input({
        versions: [version('v1', a), version('v2', b)],
        comparisons: [
          { base: 'v1', candidate: 'v2', differences: comparePaired(a, b, { rng: seededRandom(1) }) },
        ],
      }),
    );
    expect(unbalancedTags(html)).toEqual([]);
    expect(Buffer.byteLength(html)).toBeLessThan(100_000);
  });
});
