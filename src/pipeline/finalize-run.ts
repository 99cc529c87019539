/**
 * `finalize` of a distributed run (the job the last worker queues, or `embedpipe finalize RUN`):
 * checks that every planned batch has its part in the run's version, totals the committed batch
 * records, and hands over to `finalizeVersion` (failures, compaction of the many small parts into
 * large files, manifest, atomic switch, pruning), under the dataset's lock. Idempotent: a version
 * already current is left alone; a batch still missing (in the queue, or failed) holds the switch.
 */
import { UsageError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import { finalizeVersion } from '../output/finalize.js';
import { lockDataset } from '../output/lock.js';
import { manifestOf } from '../output/manifest-of.js';
import { CODECS } from '../output/part-file.js';
import { failuresOf, tallyParts } from '../output/part-tally.js';
import { type PlanFile, readPlanChunks, readPlanFile } from '../output/plan-file.js';
import { readingOnce } from '../output/reading-once.js';
import { inheritedBatches, versionWriter } from '../output/session.js';
import { VersionedDataset } from '../output/versions.js';
import type { BatchJobs } from '../queue/batch-jobs.js';
import { distributedManifest, type RunSpec, type RunStore } from '../queue/distributed.js';

export interface FinalizeRunOptions {
  readonly runs: RunStore;
  readonly runId: string;
  readonly logger: Logger;
  /** For the manifest's gateway URL. */
  readonly client: Pick<GatewayClient, 'baseUrl'>;
  /** To read failed jobs' chunks for `_failures.jsonl`. */
  readonly jobs?: BatchJobs;
}

export interface FinalizeRunResult {
  readonly status: 'switched' | 'already-current' | 'incomplete' | 'waiting';
  readonly version: string;
  readonly planned: number;
  /** Planned batches without a part: failed for good, or still in the queue. */
  readonly missing: number;
  readonly failed: number;
  /** Chunks of committed batches the gateway would not embed (in `_failures.jsonl`). */
  readonly chunkFailures?: number;
  readonly rows: number;
  readonly files: readonly string[];
}

export async function finalizeRun(options: FinalizeRunOptions): Promise<FinalizeRunResult> {
  const { runs, runId } = options;
  const spec = await runs.spec(runId);
  if (!spec) throw new UsageError(`run ${runId} is unknown to this queue (embedpipe status lists the runs)`);
  const plan = await readPlanFile(spec.versionDir, runId);
  const dataset = new VersionedDataset(spec.outDir);
  const lock = await lockDataset(dataset.root);
  try {
    return await finalizeLocked(options, spec, plan, dataset);
  } finally {
    await lock.release();
  }
}

async function finalizeLocked(
  options: FinalizeRunOptions,
  spec: RunSpec,
  plan: PlanFile,
  dataset: VersionedDataset,
): Promise<FinalizeRunResult> {
  const { runs, runId, logger } = options;
  const versions = await dataset.list();
  const result = (status: FinalizeRunResult['status'], more: Partial<FinalizeRunResult> = {}) => ({
    status,
    version: spec.versionName,
    planned: plan.planned.length,
    missing: 0,
    failed: 0,
    rows: 0,
    files: [],
    ...more,
  });
  const manifest = versions.find((v) => v.name === spec.versionName)?.manifest;
  if (manifest) return result('already-current', { files: manifest.files, rows: manifest.counts.rows });
  const writer = versionWriter({
    dir: spec.versionDir,
    format: spec.format,
    model: spec.model,
    planKey: spec.planKey,
    // The tally reads every part's footer, and the compaction's survey needs them again.
    readMetadata: readingOnce(CODECS[spec.format].readMetadata),
  });
  const fileOf = await writer.batchFiles();
  const failedBatches = await runs.failures(runId);
  const missing = plan.planned.filter((id) => !fileOf.has(id));
  const stillQueued = missing.filter((id) => !failedBatches.has(id));
  if (stillQueued.length > 0) {
    logger.info(
      { runId, waiting: stillQueued.length },
      'batches still in the queue: finalize waits for them',
    );
    return result('waiting', { missing: missing.length, failed: failedBatches.size });
  }
  const committed = plan.planned.filter((batchId) => fileOf.has(batchId));
  const inherited = inheritedBatches(fileOf, spec.linkedFiles);
  const { tally, replans } = await tallyParts(committed, (id) => writer.readPartMetadata(id), inherited);
  const failures = await failuresOf(
    tally,
    failedBatches,
    async (batchId) => (await options.jobs?.chunksOf(runId, batchId)) ?? [],
  );
  const current = versions.find((v) => v.current && v.manifest);
  const dims = tally.dims || spec.dims || 0;
  const finalized = await finalizeVersion({
    dataset,
    version: spec.versionName,
    model: spec.model,
    writer,
    ...(current?.manifest ? { current: { ...current, manifest: current.manifest } } : {}),
    planned: plan.planned,
    ...replans,
    expected: await readPlanChunks(spec.versionDir, runId),
    failures,
    dims,
    missingBatches: missing.length,
    keepVersions: spec.keepVersions,
    logger,
    chunks: { sent: tally.sent, reused: tally.reused, deduplicated: tally.deduplicated },
    manifest: (done) =>
      manifestOf(
        distributedManifest(spec, plan, {
          baseUrl: options.client.baseUrl,
          tally,
          failures: failures.length,
        }),
        done,
      ),
  });
  const status = finalized.switched ? 'switched' : 'incomplete';
  const chunkFailures = tally.failures.length;
  await recordOutcome(options, status, chunkFailures, failedBatches.size);
  const { rows, files } = finalized;
  return result(status, { missing: missing.length, failed: failedBatches.size, chunkFailures, rows, files });
}

/** The run's outcome, in Redis for `status`, and in the log. */
async function recordOutcome(
  { runs, runId, logger }: FinalizeRunOptions,
  status: 'switched' | 'incomplete',
  chunkFailures: number,
  failedBatches: number,
): Promise<void> {
  // Chunks the gateway would not embed (in _failures.jsonl) do not hold the switch back, but
  // `status` must say so: the run is done with failures, not done.
  await runs.finalized(runId, status === 'switched' && chunkFailures > 0 ? 'done-with-failures' : status);
  if (chunkFailures > 0) {
    logger.warn(
      { runId, failures: chunkFailures },
      `${chunkFailures} chunks could not be embedded (listed in the version's _failures.jsonl)`,
    );
  }
  logger.info({ runId, status, failed: failedBatches }, 'finalized');
}
