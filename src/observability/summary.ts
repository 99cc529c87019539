/** What a run reports at its end: printed for people, or as JSON with `--json`. */
import type { RunSettings } from '../config/settings.js';
import type {
  DocumentChanges,
  ManifestCounts,
  SizingSummary,
  SyncReport,
  TranscriptionEstimate,
} from '../domain.js';
import type { RunStats } from './stats.js';

export interface RunSummary {
  /**
   * done: the dataset reads this run's version; incomplete: batches or chunks failed (a re-run
   * retries them); stopped: interrupted, out of credits, over --max-cost… (`stop` says which; a
   * re-run resumes); held: the version is finished but `--switch-if` did not hold (`switchIf` says
   * why; `datasets --switch` switches it by hand); dry-run: nothing was sent.
   */
  readonly status: 'done' | 'incomplete' | 'stopped' | 'held' | 'dry-run';
  /** `--switch-if`: the new version's evaluation against the current one, and the verdict. */
  readonly switchIf?: {
    readonly rule: string;
    readonly holds: boolean;
    readonly reason: string;
    /** The metric's value for the current version and for the new one. */
    readonly current: number;
    readonly candidate: number;
    /** The evaluation's HTML report. */
    readonly report: string;
  };
  /** Why a stopped run stopped: its exit code and message. */
  readonly stop?: { readonly exitCode: number; readonly message: string };
  readonly model: string;
  readonly dims?: number;
  readonly outDir: string;
  readonly documents: number;
  readonly rejects: number;
  readonly chunks: number;
  /** The planner's token estimate of the corpus's chunks (the gateway's count: `dataset.tokens`). */
  readonly tokens: number;
  readonly batches: {
    readonly planned: number;
    readonly embedded: number;
    readonly resumed: number;
    readonly failed: number;
  };
  /** Rows in the dataset (this run's and earlier runs'). */
  readonly rows: number;
  /**
   * The version this run built, counted from its ledger (the batch records committed with its
   * data): a switched version's manifest `counts`, word for word. `tokens`, `costUsd`, `requests`
   * and `retries` there are the version's, whichever run paid; `requests`, `retries` and `cost`
   * at the top are this run's spend (calibration and failed batches included).
   */
  readonly dataset?: ManifestCounts;
  /** Chunks whose vectors the dataset already held (same model and text): not sent again. */
  readonly reused: number;
  /** Chunks whose text another chunk of this run had: embedded once, written for each. */
  readonly deduplicated: number;
  /** Estimated tokens and USD of the reused and deduplicated chunks: what was not paid again. */
  readonly saved: { readonly tokens: number; readonly cost: number };
  /** The dataset version this run built (`v000003`), and whether the dataset now reads it. */
  readonly version?: {
    readonly name: string;
    /** Its folder: where its side files (`_rejects.jsonl`, `_failures.jsonl`) are. */
    readonly dir: string;
    readonly current: boolean;
    readonly replaces?: string;
    readonly pruned?: readonly string[];
  };
  /** Documents against the version this run replaced (same model). */
  readonly changes?: DocumentChanges;
  /** A run stopped by --max-cost: what is left to embed (a dry run's count of what a re-run would send). */
  readonly remaining?: WorkToSend;
  /** Chunks that could not be embedded (_failures.jsonl). */
  readonly failures: number;
  /** This run's requests and retries (calibration probes included). */
  readonly requests: number;
  readonly retries: number;
  /** USD: this run's spend on embeddings (dry run: the estimate); transcription: `transcription.cost`. */
  readonly cost: number;
  /** Audio corpora: this run's transcription (dry run: what it would transcribe, `estimate`). */
  readonly transcription?: TranscriptionSummary;
  readonly elapsedMs: number;
  /** From the first embeddings request to the last commit: the part of the run that throughput is about. */
  readonly embeddingMs: number;
  readonly files: readonly string[];
  /** `--sync-to`: what the sync of the store to the switched version did. */
  readonly sync?: SyncReport;
  /** The chunk budget used, and why (see TokenCalibration). */
  readonly sizing?: SizingSummary;
  /**
   * Dry run: what running for real would send, i.e. the planned batches the output folder does not
   * hold yet (`batches.resumed` are those it holds), with their chunks, tokens and estimated cost.
   */
  readonly toSend?: WorkToSend;
}

export interface WorkToSend {
  /** Planned batches with a chunk to send. */
  readonly batches: number;
  /** The requests those make (batches with a few texts left share one: embedding/send-pool.ts), estimated. */
  readonly requests: number;
  readonly chunks: number;
  /** Chunks whose vectors the dataset already holds (same model and text): not sent. */
  readonly held: number;
  /** Chunks whose text an earlier chunk of the corpus has: sent once. */
  readonly repeated: number;
  readonly tokens: number;
  /** USD, estimated. */
  readonly cost: number;
  /**
   * Audio corpora: the files a run would transcribe first (their chunks, unknown until then, are
   * not in the counts above), with seconds and estimated cost.
   */
  readonly transcription?: TranscriptionEstimate;
}

export interface TranscriptionSummary {
  /** The speech-to-text model. */
  readonly model: string;
  /** Audio documents read (corrupt or unsupported audio files are rejects). */
  readonly files: number;
  /** Transcripts the gateway made in this run. */
  readonly transcribed: number;
  /** Transcripts the dataset already held (`_transcripts.jsonl`): not paid again. */
  readonly reused: number;
  /** Files whose transcription failed after retries (`_failures.jsonl`; a re-run transcribes them). */
  readonly failed: number;
  readonly requests: number;
  readonly retries: number;
  /** Seconds of audio transcribed in this run. */
  readonly seconds: number;
  /** USD this run's transcriptions cost. */
  readonly cost: number;
  /** Dry run: what a real run would transcribe. */
  readonly estimate?: TranscriptionEstimate;
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
    dataset?: ManifestCounts;
    dims?: number;
    sizing?: SizingSummary;
    toSend?: WorkToSend;
    pricePerToken?: number;
    version?: RunSummary['version'];
    changes?: DocumentChanges;
    stop?: RunSummary['stop'];
    remaining?: WorkToSend;
    switchIf?: RunSummary['switchIf'];
    /** Audio corpora: the speech-to-text model (and a dry run's estimate). */
    transcription?: { model: string; estimate?: TranscriptionEstimate };
  },
): RunSummary {
  const { audio, ledger } = stats;
  return {
    status,
    ...(outcome.stop ? { stop: outcome.stop } : {}),
    model: settings.model,
    ...(outcome.dims ? { dims: outcome.dims } : {}),
    outDir: settings.outDir,
    documents: stats.documents,
    rejects: stats.rejects,
    // A switched version's chunks are its rows and its listed failures (checked at the switch): the
    // planner's count also holds the first plan of documents the gateway made it re-plan.
    chunks: outcome.version?.current ? outcome.rows + outcome.failures : stats.chunks,
    tokens: stats.tokens,
    batches: {
      planned: ledger.planned.size,
      embedded: ledger.committed.batches,
      resumed: ledger.carried.batches,
      failed: ledger.failedBatches,
    },
    rows: outcome.rows,
    ...(outcome.dataset ? { dataset: outcome.dataset } : {}),
    reused: ledger.committed.reused,
    deduplicated: ledger.committed.deduplicated,
    saved: { tokens: stats.tokensReused, cost: stats.tokensReused * (outcome.pricePerToken ?? 0) },
    ...(outcome.version ? { version: outcome.version } : {}),
    ...(outcome.changes ? { changes: outcome.changes } : {}),
    ...(outcome.remaining ? { remaining: outcome.remaining } : {}),
    ...(outcome.switchIf ? { switchIf: outcome.switchIf } : {}),
    failures: outcome.failures,
    requests: stats.requests,
    retries: stats.retries,
    cost: outcome.cost,
    ...(outcome.transcription
      ? {
          transcription: {
            model: outcome.transcription.model,
            files: audio.files,
            transcribed: audio.transcribed,
            reused: audio.reused,
            failed: audio.failed,
            requests: audio.requests,
            retries: audio.retries,
            seconds: audio.seconds,
            cost: audio.cost,
            ...(outcome.transcription.estimate ? { estimate: outcome.transcription.estimate } : {}),
          },
        }
      : {}),
    elapsedMs: stats.elapsedMs(),
    embeddingMs:
      stats.firstRequestAt === undefined ? 0 : (stats.embeddingEndedAt ?? Date.now()) - stats.firstRequestAt,
    files: outcome.files,
    ...(outcome.sizing ? { sizing: outcome.sizing } : {}),
    ...(outcome.toSend ? { toSend: outcome.toSend } : {}),
  };
}
