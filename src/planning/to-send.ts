/**
 * What a run would send: the corpus planned as a run plans it, less every chunk whose text the
 * dataset already holds (by content hash, in the current version or an unfinished one) and less
 * repeated texts. `--dry-run` reports it, and a run stopped by `--max-cost` reports it as what is
 * left to embed. Calls no embeddings and writes nothing.
 */

import { tmpdir } from 'node:os';
import type { CalibrationState } from '../chunking/index.js';
import { RunSizing } from '../chunking/run-sizing.js';
import type { RunSettings } from '../config/settings.js';
import type { Chunk, Reject } from '../domain.js';
import { RequestEstimate } from '../embedding/send-pool.js';
import type { RunStats } from '../observability/stats.js';
import type { WorkToSend } from '../observability/summary.js';
import type { PlanSink } from '../output/contract.js';
import { hashKey } from '../output/hash-key.js';
import { DatasetWriter } from '../output/index.js';
import { SpillingNumberTable } from '../output/spilling-number-table.js';
import { VectorIndex } from '../output/vector-index.js';
import type { TranscriptionStage } from '../transcription/stage.js';
import { plannedBatches, type RunPlan } from './plan.js';

export interface CountInput {
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly calibration: CalibrationState | undefined;
  /** Version folders whose rows count as embedded. */
  readonly dirs: readonly string[];
  /** Counters of the planning (documents, chunks, batches planned and already committed). */
  readonly stats: RunStats;
  readonly onReject?: (reject: Reject) => void;
  /** Audio corpora: plans the transcripts the dataset holds, counts the others (see TranscriptionEstimator). */
  readonly transcribe?: TranscriptionStage;
  /** Is given every planned chunk, in plan order (what a version of this corpus would hold). */
  readonly planned?: PlanSink;
}

export async function countWorkToSend(input: CountInput): Promise<{ toSend: WorkToSend; sizing: RunSizing }> {
  const { settings, plan, stats } = input;
  const sizing = sizingFor(settings, plan, input.calibration);
  const committed = new Set<string>();
  const indexes: VectorIndex[] = [];
  for (const dir of input.dirs) {
    const writer = new DatasetWriter({ dir, format: settings.outputFormat, metadata: {} });
    const files = await writer.batchFiles();
    for (const batchId of files.keys()) committed.add(batchId);
    indexes.push(await VectorIndex.build(dir, [...new Set(files.values())], settings.outputFormat));
  }
  // Texts planned so far, by hash key, most of them on disk: a Set of hashes in memory made a dry
  // run's peak grow with the corpus (docs/benchmarks.md, "Memory"). Two texts sharing a 52-bit key (odds
  // ~n²/2^53) would count as one repeated text: an estimate off by one chunk.
  const seen = new SpillingNumberTable(tmpdir());
  const toSend = { batches: 0, requests: 0, chunks: 0, tokens: 0, cost: 0, held: 0, repeated: 0 };
  const requests = new RequestEstimate({
    maxInputs: settings.maxInputs,
    maxTokens: settings.maxTokensPerRequest,
  });
  const batches = plannedBatches(settings, plan, sizing, stats, input.onReject ?? (() => {}), {
    transcribe: input.transcribe,
  });
  try {
    for await (const batch of batches) {
      stats.ledger.plan(batch.batchId);
      if (committed.has(batch.batchId)) stats.ledger.carry(undefined);
      const sent: Chunk[] = [];
      for (const chunk of batch.chunks) {
        input.planned?.add(chunk.documentId, chunk.index, chunk.hash);
        const key = hashKey(chunk.hash);
        if (seen.has(key)) {
          toSend.repeated += 1;
          continue;
        }
        if (indexes.some((index) => index.has(chunk.hash))) {
          toSend.held += 1;
          continue;
        }
        seen.add(key, 0);
        sent.push(chunk);
        toSend.tokens += chunk.tokens;
      }
      sizing.release(batch.chunks);
      if (sent.length === 0) continue;
      toSend.batches += 1;
      toSend.chunks += sent.length;
      requests.add(batch.chunks.length, sent);
    }
  } finally {
    for (const index of indexes) index.close();
    seen.close();
  }
  stats.planningDone = true;
  toSend.requests = requests.requests;
  toSend.cost = toSend.tokens * (plan.model.pricing?.promptPerToken ?? 0);
  return { toSend, sizing };
}

/** The run's chunk sizing from a dataset's calibration (or the byte bound when it has none). */
export function sizingFor(
  settings: RunSettings,
  plan: RunPlan,
  state: CalibrationState | undefined,
): RunSizing {
  return RunSizing.restore(
    {
      model: plan.model.id,
      budgetTokens: plan.budgetTokens,
      contextLength: plan.model.contextLength,
      overlapTokens: settings.overlap,
    },
    state,
  );
}
