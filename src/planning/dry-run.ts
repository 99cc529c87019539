/**
 * `run --dry-run`: the whole corpus planned and priced as a real run would send it; and, for a run
 * stopped by `--max-cost`, what a re-run would still send. Calls no embeddings, writes nothing.
 */
import { tmpdir } from 'node:os';
import { readCalibration, sizingSummary } from '../chunking/calibrate.js';
import type { RunSizing } from '../chunking/run-sizing.js';
import type { RunSettings } from '../config/settings.js';
import type { DocumentChanges } from '../domain.js';
import { RunStats } from '../observability/stats.js';
import { type RunSummary, summarize, type WorkToSend } from '../observability/summary.js';
import { changesToPlan } from '../output/document-changes.js';
import { PlannedChunks } from '../output/planned-chunks.js';
import { reuseBase, VersionedDataset } from '../output/versions.js';
import { estimatedTranscription, transcriptDirs } from '../transcription/audio.js';
import type { RunPlan } from './plan.js';
import { countWorkToSend } from './to-send.js';

/** Plans the whole corpus and prices what a real run would send; calls no embeddings, writes nothing. */
export async function dryRun(settings: RunSettings, plan: RunPlan, stats: RunStats): Promise<RunSummary> {
  const versions = await new VersionedDataset(settings.outDir).list().catch(() => []);
  const base = reuseBase(versions, {
    model: plan.model.id,
    format: settings.outputFormat,
    form: settings.vectors,
  });
  const unfinished = versions.filter((v) => !v.manifest && !v.current).at(-1);
  const dirs = [base?.dir, unfinished?.dir].filter((dir): dir is string => dir !== undefined);
  const calibration = await readCalibration(unfinished?.dir ?? base?.dir ?? settings.outDir);
  // Audio: transcripts the dataset holds are planned as text; the rest are counted, never sent.
  const audio = await estimatedTranscription(
    settings,
    plan,
    stats,
    transcriptDirs(versions, unfinished?.dir),
  );
  const current = versions.find((v) => v.current && v.manifest);
  // What a version of this corpus would hold, beside the current one's: the documents it would
  // add, change and delete (none, right after a run: its version holds the corpus).
  const planned = current ? new PlannedChunks(tmpdir()) : undefined;
  try {
    const counted = await countWorkToSend({
      settings,
      plan,
      calibration,
      dirs,
      stats,
      ...(audio ? { transcribe: audio.stage } : {}),
      ...(planned ? { planned } : {}),
    }).finally(() => audio?.close());
    const asPlanned = planned?.asPlanned();
    const changes = current && asPlanned ? await changesToPlan(current.dir, asPlanned.lines) : undefined;
    return dryRunSummary(settings, plan, stats, counted, audio, changes);
  } finally {
    planned?.close();
  }
}

function dryRunSummary(
  settings: RunSettings,
  plan: RunPlan,
  stats: RunStats,
  { sizing, toSend }: Awaited<ReturnType<typeof countWorkToSend>>,
  audio: Awaited<ReturnType<typeof estimatedTranscription>>,
  changes: DocumentChanges | undefined,
): RunSummary {
  return summarize('dry-run', settings, stats, {
    cost: stats.tokens * (plan.model.pricing?.promptPerToken ?? 0),
    files: [],
    rows: 0,
    failures: 0,
    sizing: sizingSummary(sizing),
    toSend,
    ...(changes ? { changes } : {}),
    ...(audio ? { transcription: { model: audio.model, estimate: audio.estimate() } } : {}),
  });
}

/** What a run stopped by --max-cost leaves to send: counted like a dry run, against its version. */
export async function remainingWork(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  dir: string,
  transcriptFolders: readonly string[],
): Promise<WorkToSend> {
  const stats = new RunStats();
  const audio = await estimatedTranscription(settings, plan, stats, transcriptFolders);
  const { toSend } = await countWorkToSend({
    settings,
    plan,
    calibration: sizing.calibration.state(),
    dirs: [dir],
    stats,
    ...(audio ? { transcribe: audio.stage } : {}),
  }).finally(() => audio?.close());
  return audio ? { ...toSend, transcription: audio.estimate() } : toSend;
}
