/**
 * `produce`: corpus → chunks → batches, less what the dataset version already holds. Shared by
 * `run` (into the in-process queue) and `enqueue` (into BullMQ).
 *
 * A planned batch that is committed is skipped and its record counted; if that record lists chunk
 * failures, exactly those chunks are produced again as its repair batch (and a committed repair
 * with failures gets one in turn).
 */

import type { RunSizing } from '../chunking/run-sizing.js';
import type { RunSettings } from '../config/settings.js';
import type { Batch, Reject } from '../domain.js';
import type { RunStats } from '../observability/stats.js';
import { type BatchRecord, repairBatchOf } from '../output/batch-record.js';
import type { PlanSink } from '../output/contract.js';
import type { TranscriptionStage } from '../transcription/stage.js';
import { BatchStartsFile, readBatchStarts } from './batch-starts.js';
import { plannedBatches, type RunPlan } from './plan.js';

export interface ProduceInput {
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly sizing: RunSizing;
  readonly stats: RunStats;
  /** Batches the version holds, with their records. */
  readonly committed: ReadonlyMap<string, BatchRecord | undefined>;
  /** Those of them that came with the version replaced (none sent for this one). */
  readonly inherited?: ReadonlySet<string>;
  readonly onReject: (reject: Reject) => void;
  /** Audio corpora: the stage that transcribes audio documents before they are chunked. */
  readonly transcribe?: TranscriptionStage;
  /**
   * The folder of the version being built, where this plan's batch starts are recorded for the
   * next one, and the version replaced's, whose starts the packing falls back in step with
   * (batch-starts.ts).
   */
  readonly batchStarts?: { readonly dir: string; readonly formerDir?: string };
  /** Hash the input as it is read, for the manifest this process writes (PlanningOptions.digestInput). */
  readonly digestInput?: boolean;
}

/**
 * Yields the batches to embed. The plan's batch ids and the committed batches' records go into
 * `stats.ledger`; every chunk of the plan (what the version must hold) into `expected`.
 */
export async function* produce(input: ProduceInput, expected: PlanSink): AsyncGenerator<Batch> {
  const { settings, plan, sizing, stats } = input;
  const startsPlan = {
    model: plan.model.id,
    planKey: plan.key,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
  };
  const { dir, formerDir } = input.batchStarts ?? {};
  // The version replaced's, never this one's own: a resumed attempt plans exactly what the first did.
  const formerStarts = formerDir ? await readBatchStarts(formerDir, startsPlan) : undefined;
  const starts = dir ? new BatchStartsFile(dir, startsPlan) : undefined;
  assumeInheritedReplans(input);
  const batches = plannedBatches(settings, plan, sizing, stats, input.onReject, {
    transcribe: input.transcribe,
    formerStarts,
    digestInput: input.digestInput ?? false,
  });
  try {
    yield* carriedOrSent(input, batches, expected, starts);
  } finally {
    await starts?.close();
  }
  sizing.corpusEnded();
  stats.planningDone = true;
}

/**
 * The documents the version replaced holds as re-planned, planned so (RunSizing.assumeReplanned)
 * when its calibration does not record how (written before re-plans were recorded): planned as
 * first planned, the batches holding their chunks were carried without their rows, which lived in
 * the batch that re-planned them, and that batch was not always carried with them.
 */
function assumeInheritedReplans({ sizing, committed, inherited }: ProduceInput): void {
  for (const batchId of inherited ?? []) {
    for (const documentId of committed.get(batchId)?.replanned ?? []) sizing.assumeReplanned(documentId);
  }
}

/** The planned batches less those the version holds (their repairs instead, when they failed chunks). */
async function* carriedOrSent(
  input: ProduceInput,
  batches: AsyncIterable<Batch>,
  expected: PlanSink,
  starts: BatchStartsFile | undefined,
): AsyncGenerator<Batch> {
  const { sizing, stats, committed } = input;
  const { ledger } = stats;
  for await (const batch of batches) {
    ledger.plan(batch.batchId);
    starts?.add(batch);
    const { chunks } = batch;
    for (let c = 0; c < chunks.length; c++) {
      const chunk = chunks[c]!;
      expected.add(chunk.documentId, chunk.index, chunk.hash);
    }
    let current: Batch | undefined = batch;
    while (current !== undefined && committed.has(current.batchId)) {
      const record = committed.get(current.batchId);
      // (What it re-planned was restored before planning: output/replans.ts.)
      const repair: ReturnType<typeof repairBatchOf> = record ? repairBatchOf(current, record) : undefined;
      // A repaired failure is no longer the version's: its repair batch holds the chunk.
      ledger.carry(
        record && repair
          ? { ...record, failures: record.failures.filter((f) => !repair.repaired.has(f)) }
          : record,
        input.inherited?.has(current.batchId),
      );
      if (!repair) {
        sizing.release(current.chunks);
        current = undefined;
        break;
      }
      const again = new Set(repair.repair.chunks);
      sizing.release(current.chunks.filter((chunk) => !again.has(chunk)));
      current = repair.repair;
      ledger.plan(current.batchId);
    }
    if (current !== undefined) yield current;
  }
}
