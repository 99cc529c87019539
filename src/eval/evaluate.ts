/**
 * Retrieval quality of dataset versions, side by side: the same queries embedded by each version's
 * model and searched exactly over its vectors; metrics with bootstrap intervals, each version
 * against the first (paired), the overlap of their results, and the scores of relevant and other
 * results (what a similarity threshold becomes under each model). Reproducible from the seed.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { CostBudget } from '../embedding/cost-budget.js';
import type { GatewayClient } from '../gateway/index.js';
import { documentIndex, QUERY_BLOCK, type RankLevel, rankTop, scoreBlock } from './exact-search.js';
import {
  comparePaired,
  type MetricTable,
  meanOverlapAtK,
  metricTable,
  type QueryResult,
  type ScoreDistribution,
  type ScoredItem,
  scoreDistribution,
  seededRandom,
  summarize,
  type VersionMetrics,
} from './metrics.js';
import { drawKnownItems, type QuerySet, readQueryFile } from './queries.js';
import { embedQueries } from './query-vectors.js';
import type { ReportComparison } from './report-html.js';
import { applyVariant, applyVariantToQueries, bytesPerVector, type Variant } from './variants.js';
import { loadVersionVectors, type VersionVectors, versionsToEvaluate } from './version-vectors.js';

export interface EvaluateOptions {
  /** The dataset (a run's `--out`). */
  readonly dir: string;
  /** Versions to compare, the first the baseline; none: the current one and the newest other. */
  readonly versions: readonly string[];
  /** A queries file; without one, known-item queries are drawn from the baseline. */
  readonly queriesFile?: string | undefined;
  /** Known-item queries drawn (default DEFAULTS.eval.sample). */
  readonly sample?: number;
  /** Default DEFAULTS.eval.seed. */
  readonly seed?: number;
  /** Results looked at per query (at least DEFAULTS.eval.k: the deepest metric cut-off). */
  readonly k?: number;
  readonly replicates?: number;
  /** Smaller vectors of each version, measured beside it (`dims:N`, float16, int8, binary). */
  readonly variants?: readonly Variant[];
  readonly client: GatewayClient;
  readonly budget?: CostBudget | undefined;
  readonly signal?: AbortSignal;
}

export interface EvaluatedVersion {
  readonly name: string;
  readonly model: string;
  readonly dims: number;
  readonly current: boolean;
  /** Rows searched, and the bytes their float32 vectors take. */
  readonly rows: number;
  readonly vectorBytes: number;
  /** A smaller form of the version's vectors (see variants.ts), and the bytes one vector takes. */
  readonly variant?: string;
  readonly bytesPerVector: number;
  readonly metrics: VersionMetrics;
  readonly scores: ScoreDistribution;
  /** What embedding the queries took under this model. */
  readonly queries: { readonly requests: number; readonly costUsd: number; readonly cached: number };
}

export interface Evaluation {
  readonly dataset: string;
  readonly level: RankLevel;
  readonly queries: number;
  /** How the queries were made. */
  readonly how: string;
  readonly seed: number;
  readonly k: number;
  readonly replicates: number;
  readonly versions: readonly EvaluatedVersion[];
  /** Each version against the first: B − A with paired intervals, and overlap@k. */
  readonly comparisons: readonly ReportComparison[];
}

export async function evaluate(options: EvaluateOptions): Promise<Evaluation> {
  const seed = options.seed ?? DEFAULTS.eval.seed;
  const k = Math.max(DEFAULTS.eval.k, options.k ?? DEFAULTS.eval.k);
  const replicates = options.replicates ?? 1000;
  const names = await versionsToEvaluate(options.dir, options.versions);
  const tables: MetricTable[] = [];
  const rankings: string[][][] = [];
  const versions: EvaluatedVersion[] = [];
  let querySet: QuerySet | undefined;
  for (const name of names) {
    // One version's vectors in memory at a time: only its rankings are kept.
    const version = await loadVersionVectors(options.dir, name);
    querySet ??= options.queriesFile
      ? await readQueryFile(options.queriesFile)
      : drawKnownItems(version, options.sample ?? DEFAULTS.eval.sample, sampler(seed), seed);
    const { queries } = querySet;
    const embedded = await embedQueries(
      queries.map((q) => q.text),
      {
        client: options.client,
        model: version.model,
        dims: version.dims,
        keptDims: version.form.dims,
        root: `${options.dir}.versions`,
        ...(options.budget ? { budget: options.budget } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    const queryCost = { requests: embedded.requests, costUsd: embedded.costUsd, cached: embedded.cached };
    const forms: [VersionVectors, Float32Array, Variant | undefined][] = [
      [version, embedded.matrix, undefined],
    ];
    for (const variant of variantsOf(version, options.variants ?? []))
      forms.push([
        applyVariant(version, variant),
        applyVariantToQueries(embedded.matrix, version.dims, variant),
        variant,
      ]);
    for (const [form, queryMatrix, variant] of forms) {
      const measured = measure(form, queryMatrix, querySet, k);
      tables.push(measured.table);
      rankings.push(measured.rankings);
      versions.push({
        name: form.name,
        model: version.model,
        dims: form.dims,
        current: version.current,
        rows: form.rows,
        vectorBytes: form.vectorBytes,
        ...(variant ? { variant: variant.label } : {}),
        bytesPerVector: bytesPerVector(variant, version.dims),
        metrics: summarize(measured.table, { rng: seededRandom(seed), replicates }),
        scores: scoreDistribution(measured.scored, { range: [-1, 1] }),
        queries: queryCost,
      });
    }
  }
  const comparisons: ReportComparison[] = versions.slice(1).map((version, i) => ({
    base: versions[0]!.name,
    candidate: version.name,
    differences: comparePaired(tables[0]!, tables[i + 1]!, { rng: seededRandom(seed), replicates }),
    overlap: meanOverlapAtK(rankings[0]!, rankings[i + 1]!, k),
  }));
  return {
    dataset: options.dir,
    level: querySet!.level,
    queries: querySet!.queries.length,
    how: querySet!.how,
    seed,
    k,
    replicates,
    versions,
    comparisons,
  };
}

/** The queries searched over one form of a version: per-query metrics, rankings, scored results. */
function measure(
  version: VersionVectors,
  queryMatrix: Float32Array,
  querySet: QuerySet,
  k: number,
): { table: MetricTable; rankings: string[][]; scored: ScoredItem[][] } {
  const results: QueryResult[] = [];
  const scored: ScoredItem[][] = [];
  const rankings: string[][] = [];
  const documents = querySet.level === 'document' ? documentIndex(version) : undefined;
  const { queries } = querySet;
  for (let first = 0; first < queries.length; first += QUERY_BLOCK) {
    const count = Math.min(QUERY_BLOCK, queries.length - first);
    for (const [i, scores] of scoreBlock(version, queryMatrix, first, count).entries()) {
      const query = queries[first + i]!;
      const ranking = rankTop(version, scores, k, querySet.level, documents);
      rankings.push(ranking.keys);
      results.push({ ranked: ranking.keys, relevant: query.relevant });
      scored.push(
        ranking.keys.map((key, r) => ({ score: ranking.scores[r]!, relevant: query.relevant.has(key) })),
      );
    }
  }
  return { table: metricTable(results), rankings, scored };
}

/** Uniform [0, 1) from the seed, for drawing queries (the bootstrap draws its own). */
function sampler(seed: number): () => number {
  const rng = seededRandom(`queries:${seed}`);
  return () => rng.nextInt(2 ** 30) / 2 ** 30;
}

/**
 * The variants measured of a version: those asked for, then the quantized columns it stores
 * (`--vector-type`) not among them. A stored column holds what the variant computes (one rounding,
 * embedding/vector-form.ts), so its figures are the column's.
 */
function variantsOf(version: VersionVectors, asked: readonly Variant[]): Variant[] {
  const stored = version.form.types
    .filter((type) => !asked.some((variant) => variant.kind === type))
    .map((type): Variant => ({ kind: type, label: type }));
  return [...asked, ...stored];
}
