/**
 * Retrieval quality measures for `embedpipe eval`: per-query metrics from ranked keys and relevance
 * judgements, their means with percentile-bootstrap intervals over queries, paired differences
 * between two versions, the overlap of two versions' results, and the distributions of relevant and
 * other scores with a suggested similarity threshold. Pure: no I/O, randomness only from the
 * generator passed in.
 */
import { Sfc32 } from '../emulator/prng.js';

export const METRICS = ['recall@1', 'recall@5', 'recall@10', 'mrr', 'ndcg@10'] as const;
export type MetricName = (typeof METRICS)[number];

export interface QueryResult {
  /** Item keys, best first. Should hold at least 10 (the deepest cut-off); missing ranks count as misses. */
  readonly ranked: readonly string[];
  /**
   * The relevant items: a set (gain 1 each) or graded gains. Gains ≤ 0 mean "judged not relevant",
   * as qrels files often say, and count as absent. At least one gain must be positive.
   */
  readonly relevant: ReadonlySet<string> | ReadonlyMap<string, number>;
}

export type QueryMetrics = Record<MetricName, number>;

/** One value per query for each metric, in query order: computed once, then resampled. */
export type MetricTable = Record<MetricName, Float64Array>;

export interface Interval {
  /** The estimate on the queries as drawn (not the mean of the replicates). */
  readonly mean: number;
  readonly low: number;
  readonly high: number;
}

export interface VersionMetrics {
  readonly queries: number;
  readonly metrics: Record<MetricName, Interval>;
}

/** Mean of B − A over the same queries, with its paired-bootstrap interval. */
export interface PairedDifference extends Interval {
  /** The interval lies wholly above or wholly below 0. */
  readonly excludesZero: boolean;
}

/** Any generator of uniform integers; `Sfc32` from `seededRandom` is one. */
export interface RandomSource {
  /** Uniform integer in [0, n). */
  nextInt(n: number): number;
}

export interface BootstrapOptions {
  /** Consumed by the call: pass a fresh `seededRandom(seed)` so a result does not depend on call order. */
  readonly rng: RandomSource;
  /** Replicates (B). */
  readonly replicates?: number;
  /** Two-sided coverage of the interval. */
  readonly confidence?: number;
}

const DEFAULT_REPLICATES = 1000;
const DEFAULT_CONFIDENCE = 0.95;

/** A reproducible generator for the bootstrap: the emulator's sfc32, keyed by the seed. */
export function seededRandom(seed: number | string): Sfc32 {
  return Sfc32.fromLabel(`embedpipe eval bootstrap ${seed}`);
}

/** Positive gains by key; a set gives each key gain 1. */
function gainsOf(relevant: QueryResult['relevant']): Map<string, number> {
  const gains = new Map<string, number>();
  if (relevant instanceof Map) {
    for (const [key, gain] of relevant) {
      if (!Number.isFinite(gain)) throw new RangeError(`relevance gain of ${key} is not a finite number`);
      if (gain > 0) gains.set(key, gain);
    }
  } else {
    for (const key of relevant as ReadonlySet<string>) gains.set(key, 1);
  }
  return gains;
}

/**
 * The metrics of one query:
 * - recall@k: relevant items in the top k over all relevant items (binary relevance, as BEIR and
 *   MTEB count it). With R > 1 relevant, recall@k cannot exceed k / R: recall@1 of a perfect
 *   ranking with 2 relevant items is 0.5.
 * - mrr: 1 / rank of the first relevant item anywhere in the list, 0 if the list holds none.
 * - ndcg@10: Σ gain_i / log2(i + 1) over ranks i ≤ 10 (linear gains), over the same sum for the
 *   relevant gains sorted best first.
 * A key listed twice counts once, at its first rank, so a faulty list cannot score above 1.
 */
export function queryMetrics(result: QueryResult): QueryMetrics {
  const gains = gainsOf(result.relevant);
  if (gains.size === 0) throw new RangeError('a query needs at least one relevant item to be measured');
  const seen = new Set<string>();
  let found1 = 0;
  let found5 = 0;
  let found10 = 0;
  let firstRank = 0;
  let dcg = 0;
  const ranked = result.ranked;
  for (let i = 0; i < ranked.length; i++) {
    // Past rank 10 only the first relevant item still counts (for MRR).
    if (i >= 10 && firstRank !== 0) break;
    const key = ranked[i]!;
    if (seen.has(key)) continue;
    seen.add(key);
    const gain = gains.get(key);
    if (gain === undefined) continue;
    const rank = i + 1;
    if (firstRank === 0) firstRank = rank;
    if (rank <= 10) {
      found10++;
      if (rank <= 5) found5++;
      if (rank === 1) found1++;
      dcg += gain / Math.log2(rank + 1);
    }
  }
  const ideal = [...gains.values()].sort((a, b) => b - a);
  let idcg = 0;
  for (let i = 0; i < Math.min(10, ideal.length); i++) idcg += ideal[i]! / Math.log2(i + 2);
  const total = gains.size;
  return {
    'recall@1': found1 / total,
    'recall@5': found5 / total,
    'recall@10': found10 / total,
    mrr: firstRank === 0 ? 0 : 1 / firstRank,
    'ndcg@10': dcg / idcg,
  };
}

export function metricTable(results: readonly QueryResult[]): MetricTable {
  const table = Object.fromEntries(METRICS.map((m) => [m, new Float64Array(results.length)])) as MetricTable;
  results.forEach((result, q) => {
    const values = queryMetrics(result);
    for (const m of METRICS) table[m][q] = values[m];
  });
  return table;
}

function rowsOf(table: MetricTable): number {
  return table[METRICS[0]].length;
}

/** Mean of each metric over the queries, with a percentile-bootstrap interval (queries resampled). */
export function summarize(table: MetricTable, options: BootstrapOptions): VersionMetrics {
  return { queries: rowsOf(table), metrics: bootstrapMeans(table, options) };
}

/**
 * B − A per metric over the same queries in the same order. Paired: each replicate draws one set of
 * query indices for both versions, i.e. resamples the per-query differences, so the spread of query
 * difficulty shared by both versions cancels out of the interval.
 */
export function comparePaired(
  a: MetricTable,
  b: MetricTable,
  options: BootstrapOptions,
): Record<MetricName, PairedDifference> {
  const n = rowsOf(a);
  if (rowsOf(b) !== n) throw new RangeError(`paired comparison needs the same queries: ${n} vs ${rowsOf(b)}`);
  const differences = Object.fromEntries(
    METRICS.map((m) => {
      const d = new Float64Array(n);
      for (let q = 0; q < n; q++) d[q] = b[m][q]! - a[m][q]!;
      return [m, d];
    }),
  ) as MetricTable;
  const intervals = bootstrapMeans(differences, options);
  return Object.fromEntries(
    METRICS.map((m) => {
      const i = intervals[m];
      return [m, { ...i, excludesZero: i.low > 0 || i.high < 0 }];
    }),
  ) as Record<MetricName, PairedDifference>;
}

/**
 * Percentile bootstrap of every column's mean. One draw of indices per replicate serves all the
 * columns; the columns are plain arrays, so B × n is a few million additions.
 */
function bootstrapMeans(table: MetricTable, options: BootstrapOptions): Record<MetricName, Interval> {
  const n = rowsOf(table);
  if (n === 0) throw new RangeError('no queries to measure');
  const replicates = options.replicates ?? DEFAULT_REPLICATES;
  const confidence = options.confidence ?? DEFAULT_CONFIDENCE;
  if (!Number.isInteger(replicates) || replicates < 1)
    throw new RangeError(`replicates must be ≥ 1: ${replicates}`);
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence must lie in (0, 1): ${confidence}`);
  const columns = METRICS.map((m) => table[m]);
  const means = columns.map(() => new Float64Array(replicates));
  const indices = new Uint32Array(n);
  for (let r = 0; r < replicates; r++) {
    for (let i = 0; i < n; i++) indices[i] = options.rng.nextInt(n);
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c]!;
      let sum = 0;
      for (let i = 0; i < n; i++) sum += column[indices[i]!]!;
      means[c]![r] = sum / n;
    }
  }
  const tail = (1 - confidence) / 2;
  return Object.fromEntries(
    METRICS.map((m, c) => {
      const sorted = means[c]!.sort();
      return [
        m,
        {
          mean: mean(columns[c]!),
          low: quantileSorted(sorted, tail),
          high: quantileSorted(sorted, 1 - tail),
        },
      ];
    }),
  ) as Record<MetricName, Interval>;
}

function mean(values: Float64Array): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i]!;
  return sum / values.length;
}

/** Quantile p of ascending values, interpolating linearly between order statistics (R's type 7). */
export function quantileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * p;
  const below = Math.floor(at);
  const above = Math.min(below + 1, sorted.length - 1);
  const lower = sorted[below]!;
  return lower + (sorted[above]! - lower) * (at - below);
}

/** |top-k of a ∩ top-k of b| / k: how many of the same items two versions return. */
export function overlapAtK(a: readonly string[], b: readonly string[], k: number): number {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k must be a positive integer: ${k}`);
  const top = new Set(a.slice(0, k));
  const shared = new Set(b.slice(0, k).filter((key) => top.has(key)));
  return shared.size / k;
}

/** overlap@k averaged over queries; `a[q]` and `b[q]` are the two versions' lists for query q. */
export function meanOverlapAtK(
  a: readonly (readonly string[])[],
  b: readonly (readonly string[])[],
  k: number,
): number {
  if (a.length !== b.length)
    throw new RangeError(`overlap needs the same queries: ${a.length} vs ${b.length}`);
  if (a.length === 0) throw new RangeError('no queries to compare');
  let sum = 0;
  for (let q = 0; q < a.length; q++) sum += overlapAtK(a[q]!, b[q]!, k);
  return sum / a.length;
}

export interface ScoredItem {
  readonly score: number;
  readonly relevant: boolean;
}

export interface ScoreHistogram {
  /** Items per bin; bin i covers [edges[i], edges[i + 1]), the last one closed. */
  readonly counts: number[];
  readonly total: number;
  /** Of the scores in this group; NaN when the group is empty. */
  readonly p5: number;
  readonly p50: number;
  readonly p95: number;
}

export interface ThresholdSuggestion {
  /** Keep results scoring ≥ threshold. */
  readonly threshold: number;
  /** Youden's J = truePositiveRate − falsePositiveRate at the threshold. */
  readonly j: number;
  readonly truePositiveRate: number;
  readonly falsePositiveRate: number;
}

export interface ScoreDistribution {
  /** bins + 1 ascending bin edges. */
  readonly edges: number[];
  readonly relevant: ScoreHistogram;
  readonly other: ScoreHistogram;
  /** Null when either group is empty: there is nothing to separate. */
  readonly threshold: ThresholdSuggestion | null;
}

export interface DistributionOptions {
  readonly bins?: number;
  /** Fixed bin range, e.g. [-1, 1] to compare models on one axis; scores outside go to the end bins. By default the observed [min, max]. */
  readonly range?: readonly [number, number];
}

/**
 * Scores of relevant and other results, pooled over queries (`queries[q]` is query q's retrieved
 * items): histograms over shared bins, quantiles, and a threshold (see `suggestThreshold`).
 */
export function scoreDistribution(
  queries: readonly (readonly ScoredItem[])[],
  options: DistributionOptions = {},
): ScoreDistribution {
  const bins = options.bins ?? 20;
  if (!Number.isInteger(bins) || bins < 1) throw new RangeError(`bins must be a positive integer: ${bins}`);
  const items = queries.flat();
  const relevant: number[] = [];
  const other: number[] = [];
  for (const item of items) {
    if (!Number.isFinite(item.score)) throw new RangeError(`score is not a finite number: ${item.score}`);
    (item.relevant ? relevant : other).push(item.score);
  }
  if (options.range && !(options.range[1] > options.range[0]))
    throw new RangeError(`score range must be ascending: [${options.range.join(', ')}]`);
  let [low, high] = options.range ?? observedRange(items);
  if (!(high > low)) {
    // One distinct score (or none): a unit-wide range around it keeps the bins meaningful.
    low -= 0.5;
    high = low + 1;
  }
  const width = (high - low) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => (i === bins ? high : low + i * width));
  const histogram = (scores: number[]): ScoreHistogram => {
    const counts = new Array<number>(bins).fill(0);
    for (const s of scores) {
      const bin = Math.min(bins - 1, Math.max(0, Math.floor((s - low) / width)));
      counts[bin]!++;
    }
    const sorted = Float64Array.from(scores).sort();
    return {
      counts,
      total: scores.length,
      p5: quantileSorted(sorted, 0.05),
      p50: quantileSorted(sorted, 0.5),
      p95: quantileSorted(sorted, 0.95),
    };
  };
  return {
    edges,
    relevant: histogram(relevant),
    other: histogram(other),
    threshold: suggestThreshold(items),
  };
}

function observedRange(items: readonly ScoredItem[]): [number, number] {
  let low = Number.POSITIVE_INFINITY;
  let high = Number.NEGATIVE_INFINITY;
  for (const { score } of items) {
    if (score < low) low = score;
    if (score > high) high = score;
  }
  return items.length === 0 ? [0, 1] : [low, high];
}

/**
 * The similarity threshold that maximises Youden's J (true-positive rate − false-positive rate)
 * over "keep results scoring ≥ t". J rather than F1: it does not depend on the share of relevant
 * items among the results, which k alone changes, so thresholds of two versions or two k compare.
 * Candidates lie midway between consecutive distinct scores, so a separable pair of groups gets a
 * threshold inside the gap; among equal J the highest threshold wins (fewer results kept).
 */
export function suggestThreshold(items: readonly ScoredItem[]): ThresholdSuggestion | null {
  const positives = items.filter((i) => i.relevant).length;
  const negatives = items.length - positives;
  if (positives === 0 || negatives === 0) return null;
  const sorted = [...items].sort((x, y) => y.score - x.score);
  let best: ThresholdSuggestion | null = null;
  let tp = 0;
  let fp = 0;
  for (let i = 0; i < sorted.length; ) {
    const score = sorted[i]!.score;
    // Take every item tied at this score together: a threshold cannot split them.
    for (; i < sorted.length && sorted[i]!.score === score; i++) {
      if (sorted[i]!.relevant) tp++;
      else fp++;
    }
    const next = sorted[i]?.score;
    const threshold = next === undefined ? score : (score + next) / 2;
    const truePositiveRate = tp / positives;
    const falsePositiveRate = fp / negatives;
    const j = truePositiveRate - falsePositiveRate;
    if (best === null || j > best.j) best = { threshold, j, truePositiveRate, falsePositiveRate };
  }
  return best;
}
