/** What a run reports at its end: printed for people, or as JSON with `--json`. */
import type { RunSettings } from '../config/settings.js';
import type { RunStats } from '../observability/stats.js';

export interface RunSummary {
  readonly status: 'done' | 'incomplete' | 'dry-run';
  readonly model: string;
  readonly dims?: number;
  readonly outDir: string;
  readonly documents: number;
  readonly rejects: number;
  readonly chunks: number;
  readonly tokens: number;
  readonly batches: {
    readonly planned: number;
    readonly embedded: number;
    readonly resumed: number;
    readonly failed: number;
  };
  /** Rows in the dataset (this run's and earlier runs'). */
  readonly rows: number;
  /** Chunks whose vectors the output folder already held (same model and text): not sent again. */
  readonly reused: number;
  /** Chunks that could not be embedded (_failures.jsonl). */
  readonly failures: number;
  /** This run's requests and retries. */
  readonly requests: number;
  readonly retries: number;
  /** USD: this run's spend (dry run: the estimate for the whole corpus). */
  readonly cost: number;
  readonly elapsedMs: number;
  /** From the first embeddings request to the last commit: the part of the run that throughput is about. */
  readonly embeddingMs: number;
  readonly files: readonly string[];
  /** The chunk budget used, and why (see TokenCalibration). */
  readonly sizing?: SizingSummary;
  /**
   * Dry run: what running for real would send, i.e. the planned batches the output folder does not
   * hold yet (`batches.resumed` are those it holds), with their chunks, tokens and estimated cost.
   */
  readonly toSend?: WorkToSend;
}

export interface WorkToSend {
  readonly batches: number;
  readonly chunks: number;
  readonly tokens: number;
  /** USD, estimated. */
  readonly cost: number;
}

export interface SizingSummary {
  /** Gateway tokens per chunk. */
  readonly budgetTokens: number;
  /** The learned envelope: gateway tokens per character of each class (see chunking/profile.ts). */
  readonly tokensPerChar: Readonly<Record<string, number>>;
  /** What set it: "byte-bound" (no evidence), "probes", "usage", "rejection", "cut", "limit". */
  readonly basis: string;
  /** How often it changed during the run(s) of this dataset, plus one. */
  readonly epochs: number;
  /** This run's calibration probes. */
  readonly calibration?: { readonly requests: number; readonly tokens: number; readonly cost: number };
}

export function summarize(
  status: RunSummary['status'],
  settings: RunSettings,
  stats: RunStats,
  outcome: {
    cost: number;
    files: readonly string[];
    rows: number;
    failures: number;
    dims?: number;
    sizing?: SizingSummary;
    toSend?: WorkToSend;
  },
): RunSummary {
  return {
    status,
    model: settings.model,
    ...(outcome.dims ? { dims: outcome.dims } : {}),
    outDir: settings.outDir,
    documents: stats.documents,
    rejects: stats.rejects,
    chunks: stats.chunks,
    tokens: stats.tokens,
    batches: {
      planned: stats.batchesPlanned,
      embedded: stats.batchesDone,
      resumed: stats.batchesSkipped,
      failed: stats.batchesFailed,
    },
    rows: outcome.rows,
    reused: stats.chunksReused,
    failures: outcome.failures,
    requests: stats.requests,
    retries: stats.retries,
    cost: outcome.cost,
    elapsedMs: stats.elapsedMs(),
    embeddingMs:
      stats.firstRequestAt === undefined ? 0 : (stats.embeddingEndedAt ?? Date.now()) - stats.firstRequestAt,
    files: outcome.files,
    ...(outcome.sizing ? { sizing: outcome.sizing } : {}),
    ...(outcome.toSend ? { toSend: outcome.toSend } : {}),
  };
}
