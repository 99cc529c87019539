/**
 * `finalize` of a distributed run (the job the last worker queues, or `embedpipe finalize RUN`):
 * checks that every planned batch has its part in the run's version, totals the committed batch
 * records, and hands over to `finalizeVersion` (failures, compaction of the many small parts into
 * large files, manifest, atomic switch, pruning), under the dataset's lock. Idempotent: a version
 * already current is left alone; a batch still missing (in the queue, or failed) holds the switch.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import pLimit from 'p-limit';
import type { ChunkFailure } from '../domain.js';
import { UsageError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import { Ledger } from '../observability/ledger.js';
import type { Logger } from '../observability/logger.js';
import { batchRecordFrom, failuresOfBatch } from '../output/batch-record.js';
import { ExpectedRows } from '../output/contract.js';
import { finalizeVersion } from '../output/finalize.js';
import { messageOf } from '../output/fs-errors.js';
import { lockDataset } from '../output/lock.js';
import { manifestOf } from '../output/manifest-of.js';
import { CODECS } from '../output/part-file.js';
import { versionWriter } from '../output/session.js';
import { VersionedDataset } from '../output/versions.js';
import { type BatchJobData, batchJobId, type RunStore } from '../queue/distributed.js';
import { PLAN_CHUNKS_FILE, PLAN_FILE, type PlanFile } from './enqueue.js';

export interface FinalizeRunOptions {
  readonly runs: RunStore;
  readonly runId: string;
  readonly logger: Logger;
  /** For the manifest's gateway URL. */
  readonly client: Pick<GatewayClient, 'baseUrl'>;
  /** To read failed jobs' chunks for `_failures.jsonl`. */
  readonly queue?: Queue;
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
  const { runs, runId, logger } = options;
  const spec = await runs.spec(runId);
  if (!spec) throw new UsageError(`run ${runId} is unknown to this queue (embedpipe status lists the runs)`);
  const plan = await readPlan(spec.versionDir, runId);
  const dataset = new VersionedDataset(spec.outDir);
  const lock = await lockDataset(dataset.root);
  try {
    const versions = await dataset.list();
    const version = versions.find((v) => v.name === spec.versionName);
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
    if (version?.manifest)
      return result('already-current', { files: version.manifest.files, rows: version.manifest.counts.rows });
    const writer = versionWriter({
      dir: spec.versionDir,
      format: spec.format,
      model: spec.model,
      planKey: spec.planKey,
      // The tally below reads every part's footer, and the compaction's survey needs them again
      // (782 parts: ~0.5 s a pass, of a ~3.5 s finalize).
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
    const ledger = new Ledger();
    const owners = new Map<string, string>();
    const limit = pLimit(FOOTER_READS_IN_FLIGHT);
    const committed = plan.planned.filter((batchId) => fileOf.has(batchId));
    const records = await Promise.all(
      committed.map((batchId) => limit(async () => batchRecordFrom(await writer.readPartMetadata(batchId)))),
    );
    committed.forEach((batchId, i) => {
      const record = records[i];
      ledger.carry(record);
      for (const documentId of record?.replanned ?? []) owners.set(documentId, batchId);
    });
    const tally = ledger.dataset();
    const failures: ChunkFailure[] = [...tally.failures];
    for (const [batchId, reason] of failedBatches) {
      const job = await options.queue?.getJob(batchJobId(runId, batchId));
      const chunks = (job?.data as BatchJobData | undefined)?.batch.chunks ?? [];
      if (chunks.length === 0) failures.push({ documentId: '', chunkIndex: -1, batchId, message: reason });
      failures.push(...failuresOfBatch(batchId, chunks, { message: reason }));
    }
    const current = versions.find((v) => v.current && v.manifest);
    const finalized = await finalizeVersion({
      dataset,
      version: spec.versionName,
      model: spec.model,
      writer,
      ...(current?.manifest ? { current: { ...current, manifest: current.manifest } } : {}),
      planned: plan.planned,
      owners,
      expected: await readPlanChunks(spec.versionDir, runId),
      failures,
      dims: tally.dims || spec.dims || 0,
      missingBatches: missing.length,
      keepVersions: spec.keepVersions,
      logger,
      chunks: { sent: tally.rows, reused: 0, deduplicated: 0 },
      manifest: (done) =>
        manifestOf(
          {
            model: spec.model,
            dims: tally.dims || spec.dims || 0,
            format: spec.format,
            input: spec.input,
            gateway: { baseUrl: options.client.baseUrl, emulator: false },
            plan: { ...(JSON.parse(spec.planKey) as Record<string, unknown>), distributed: { runId } },
            counts: {
              documents: plan.documents,
              rejects: plan.rejects,
              failures: failures.length,
            },
            tally,
          },
          done,
        ),
    });
    const status = finalized.switched ? 'switched' : 'incomplete';
    // Chunks the gateway would not embed (in _failures.jsonl) do not hold the switch back, but
    // `status` must say so: the run is done with failures, not done.
    const chunkFailures = tally.failures.length;
    await runs.finalized(runId, status === 'switched' && chunkFailures > 0 ? 'done-with-failures' : status);
    if (chunkFailures > 0) {
      logger.warn(
        { runId, failures: chunkFailures },
        `${chunkFailures} chunks could not be embedded (listed in the version's _failures.jsonl)`,
      );
    }
    logger.info({ runId, status, version: spec.versionName, failed: failedBatches.size }, 'finalized');
    return result(status, {
      missing: missing.length,
      failed: failedBatches.size,
      chunkFailures,
      rows: finalized.rows,
      files: finalized.files,
    });
  } finally {
    await lock.release();
  }
}

/** Footers read at once by the tally: each read mostly waits on the file system. */
const FOOTER_READS_IN_FLIGHT = 8;

/** `read`, with each path read once: a second call gets the first call's promise. */
export function readingOnce<T>(read: (path: string) => Promise<T>): (path: string) => Promise<T> {
  const reads = new Map<string, Promise<T>>();
  return (path) => {
    let pending = reads.get(path);
    if (pending === undefined) {
      pending = read(path);
      reads.set(path, pending);
    }
    return pending;
  };
}

async function readPlanChunks(dir: string, runId: string): Promise<ExpectedRows> {
  try {
    return ExpectedRows.fromLines((await readFile(join(dir, PLAN_CHUNKS_FILE), 'utf8')).split('\n'));
  } catch (error) {
    throw new UsageError(
      `run ${runId}: cannot read ${PLAN_CHUNKS_FILE} in ${dir} (${messageOf(error)}): re-run embedpipe enqueue`,
    );
  }
}

async function readPlan(dir: string, runId: string): Promise<PlanFile> {
  try {
    return JSON.parse(await readFile(join(dir, PLAN_FILE), 'utf8')) as PlanFile;
  } catch {
    throw new UsageError(
      `run ${runId} has no ${PLAN_FILE} in ${dir}: its producer has not finished enqueueing (re-run embedpipe enqueue)`,
    );
  }
}
