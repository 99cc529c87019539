/**
 * Audio corpora in a run: the transcription stage with its transcript store, wired for `run` (a
 * real run) and for `--dry-run` (an estimate), so run.ts only passes the stage on and reads what it
 * reports.
 */
import type { RunSettings } from '../config/settings.js';
import type { TranscriptionEstimate, TranscriptionFailure } from '../domain.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { formatUsd, type ManifestTranscription, TranscriptStore } from '../output/index.js';
import type { DatasetVersion } from '../output/versions.js';
import {
  TranscriptionEstimator,
  type TranscriptionStage,
  TranscriptTally,
  transcribingStage,
} from './stage.js';
import { GatewayTranscriber, type SpendingCap } from './transcriber.js';

/** What transcription reads of the run's plan (planning/plan.ts RunPlan): an audio corpus's model. */
export interface AudioPlan {
  readonly audio?: { readonly sttModel: string } | undefined;
}

/**
 * The version folders whose transcripts a run may reuse, best first: `first` (the version a run
 * builds, or a dry run's unfinished one), the current version, then the others, newest first.
 * Transcripts do not depend on the embedding model: every model's versions count.
 */
export function transcriptDirs(versions: readonly DatasetVersion[], first?: string): string[] {
  const rest = [...versions].sort((a, b) => Number(b.current) - Number(a.current) || b.number - a.number);
  return [...new Set([...(first !== undefined ? [first] : []), ...rest.map((v) => v.dir)])];
}

export interface RunTranscription {
  readonly stage: TranscriptionStage;
  /** Files whose retries ran out: `_failures.jsonl`, and the version is not switched. */
  readonly failures: readonly TranscriptionFailure[];
  /** For the summary. */
  readonly model: string;
  /** For the manifest: the version's transcripts. */
  manifest(): ManifestTranscription;
  close(): Promise<void>;
}

/** The transcription of a real run (undefined for a corpus without audio). */
export async function runTranscription(
  settings: RunSettings,
  plan: AudioPlan,
  deps: {
    readonly client: GatewayClient;
    readonly logger: Logger;
    readonly stats: RunStats;
    readonly signal: AbortSignal;
    readonly budget?: SpendingCap | undefined;
    /** The version this run writes (its transcripts are appended there). */
    readonly dir: string;
    readonly versions: readonly DatasetVersion[];
  },
): Promise<RunTranscription | undefined> {
  if (plan.audio === undefined) return undefined;
  const { stats, logger } = deps;
  const model = plan.audio.sttModel;
  const t = settings.transcription;
  const store = await TranscriptStore.open({
    own: deps.dir,
    others: transcriptDirs(deps.versions).filter((dir) => dir !== deps.dir),
  });
  if (store.size > 0) logger.info({ transcripts: store.size }, 'transcripts held by the dataset');
  const observed = store.observedPricePerSecond(model);
  const pricePerSecond = t.pricePerMinute !== undefined ? t.pricePerMinute / 60 : observed;
  const transcriber = new GatewayTranscriber({
    client: deps.client,
    model,
    language: t.language,
    temperature: t.temperature,
    providerOptions: t.providerOptions,
    retry: settings.retry,
    logger,
    pricePerSecond,
    budget: deps.budget,
    onRequest: () => {
      stats.audio.requests += 1;
    },
    onRetry: () => {
      stats.audio.retries += 1;
    },
  });
  const failures: TranscriptionFailure[] = [];
  const tally = new TranscriptTally();
  const stage = transcribingStage({
    transcriber,
    store,
    settings: t,
    stats,
    logger,
    signal: deps.signal,
    onFailure: (failure) => failures.push(failure),
    tally,
  });
  return {
    stage,
    failures,
    model,
    manifest: () => ({
      model,
      ...(t.language !== undefined ? { language: t.language } : {}),
      ...(t.temperature !== undefined ? { temperature: t.temperature } : {}),
      documents: tally.documents,
      seconds: tally.seconds,
      costUsd: formatUsd(tally.cost),
    }),
    close: () => store.close(),
  };
}

export interface DryRunTranscription {
  readonly stage: TranscriptionStage;
  readonly model: string;
  estimate(): TranscriptionEstimate;
  close(): Promise<void>;
}

/** A dry run's (or a stopped run's) count of what is left to transcribe; sends nothing. */
export async function estimatedTranscription(
  settings: RunSettings,
  plan: AudioPlan,
  stats: RunStats,
  dirs: readonly string[],
): Promise<DryRunTranscription | undefined> {
  if (plan.audio === undefined) return undefined;
  const store = await TranscriptStore.open({ others: dirs });
  const estimator = new TranscriptionEstimator({ store, settings: settings.transcription, stats });
  return {
    stage: estimator.stage,
    model: plan.audio.sttModel,
    estimate: () => estimator.estimate(),
    close: () => store.close(),
  };
}
