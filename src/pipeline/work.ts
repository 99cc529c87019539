/**
 * `embedpipe worker`: `embedAndWritePart` per job. Each batch job is embedded (reusing texts the
 * dataset already holds) and written as its own part file named by its batch id, atomically: a job
 * that runs twice (BullMQ delivers at least once) writes the same file again, never a second one.
 * The group commit of `run` is not used here: a group file of several jobs' batches could not be
 * rewritten by one of them alone.
 *
 * Two retry layers: HTTP retries inside the job (seconds, the embedder's), queue attempts with
 * backoff for crashes and long outages (minutes). A non-retryable gateway answer fails the job once
 * (UnrecoverableError). 402 (or 401) pauses the queue for every worker until `embedpipe resume`.
 */
import { DEFAULTS } from '../config/defaults.js';
import { accountProblem } from '../embedding/account-problem.js';
import { BatchFailedError } from '../embedding/gateway-embedder.js';
import { OutputLockedError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { WorkerMetrics } from '../observability/metrics.js';
import { RunStats } from '../observability/stats.js';
import {
  type BatchRecord,
  batchRecordFrom,
  batchRecordMetadata,
  batchRecordOf,
} from '../output/batch-record.js';
import {
  BatchJobs,
  delayJob,
  extendJobLock,
  type Job,
  startJobWorker,
  type TakenJob,
  unrecoverable,
} from '../queue/batch-jobs.js';
import { checkEvictionPolicy, connectRedis, type QueueAddress, RunStore } from '../queue/distributed.js';
import type { RedisOutage } from '../queue/outage.js';
import { type ContextDependencies, type JoinedRun, joinRunContext } from './context.js';
import { finalizeRun } from './finalize-run.js';

export interface WorkerOptions {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly address: QueueAddress;
  readonly concurrency: number;
  readonly metrics?: WorkerMetrics;
  /** Counters of this worker process (requests, retries, cost), for metrics and logs. */
  readonly stats?: RunStats;
  /**
   * How long a job stays locked to a worker that stopped renewing it (killed, or its host died);
   * default DEFAULTS.distributed.lockDurationMs. Stalled jobs are looked for as often, at most every
   * 30 s, so a dead worker's jobs go back to the queue within about two to three times this.
   */
  readonly lockDurationMs?: number;
  /** Hears of Redis outages: one line when Redis goes, one when it is back. */
  readonly outage?: RedisOutage;
}

export interface RunningWorker {
  /** Takes no new job, finishes the ones in flight, then closes its connections. */
  close(): Promise<void>;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const { client, logger, address, metrics } = options;
  const stats = options.stats ?? new RunStats();
  const connection = await connectRedis(address.redisUrl, 'worker', options.outage);
  await checkEvictionPolicy(connection, logger);
  const runs = new RunStore(connection, address);
  const jobs = new BatchJobs(connection, address);
  const contexts = new Map<string, Promise<JoinedRun>>();
  const context = (runId: string): Promise<JoinedRun> => {
    let found = contexts.get(runId);
    if (!found) {
      found = joinRun(runs, runId, { client, logger, stats });
      found.catch(() => contexts.delete(runId));
      contexts.set(runId, found);
    }
    return found;
  };
  const lockDuration = options.lockDurationMs ?? DEFAULTS.distributed.lockDurationMs;
  const finalizeWhenSettled = async (runId: string) => {
    if (await runs.settled(runId)) await jobs.queueFinalize(runId);
  };
  const work: BatchWork = { runs, jobs, context, logger, metrics, lockDuration, finalizeWhenSettled };
  /** Batch jobs this process is working on now (the jobs_active gauge). */
  let active = 0;
  const worker = startJobWorker({
    connection,
    address,
    concurrency: options.concurrency,
    lockDurationMs: lockDuration,
    handle: async (taken, token) => {
      if (taken.kind === 'finalize') return finalizeJob(work, taken.runId, taken.job, token, client);
      metrics?.active(++active);
      try {
        await processBatch(work, taken, token);
      } finally {
        metrics?.active(--active);
      }
    },
    onFailed: (taken, error, final) => onJobFailed(work, taken, error, final),
    onError: (error) => {
      // A lock lost in an outage is said once, by the job that finds out ("lost the lock of job …").
      // "Missing key for job" follows a finish whose reply an outage cut: ioredis sends it again and
      // finds the job already finished and removed. The batch was committed before either.
      if (/could not renew lock|Missing lock for job|Missing key for job/.test(error.message))
        logger.debug({ err: error.message }, 'worker error');
      else if (options.outage) options.outage.error(error, 'worker error');
      else logger.error({ err: error.message }, 'worker error');
    },
  });
  return {
    async close() {
      await worker.close();
      await jobs.close();
      connection.disconnect();
    },
  };
}

async function finalizeJob(
  work: BatchWork,
  runId: string,
  job: Job,
  token: string | undefined,
  client: GatewayClient,
): Promise<void> {
  const { runs, logger, jobs } = work;
  try {
    await finalizeRun({ runs, runId, logger, client, jobs });
  } catch (error) {
    // The dataset is locked for a moment (its producer finishing, a finalize by hand): the job
    // waits its turn instead of failing, which would leave the run unfinished for good.
    if (error instanceof OutputLockedError) return delayJob(job, token, 2_000);
    throw error;
  }
}

/** A signal that never aborts. */
const NEVER = new AbortController().signal;

/** What processing a job needs from its worker. */
interface BatchWork {
  readonly runs: RunStore;
  readonly jobs: BatchJobs;
  readonly context: (runId: string) => Promise<JoinedRun>;
  readonly logger: Logger;
  readonly metrics: WorkerMetrics | undefined;
  readonly lockDuration: number;
  readonly finalizeWhenSettled: (runId: string) => Promise<void>;
}

type BatchJob = Extract<TakenJob, { kind: 'batch' }>;

/**
 * One batch job: embedded (reusing what the dataset holds) and written as its part, counted once
 * in Redis however often BullMQ delivers it; a 402 or 401 pauses the queue for every worker.
 */
async function processBatch(work: BatchWork, taken: BatchJob, token: string | undefined): Promise<void> {
  const { runs, context, logger, finalizeWhenSettled } = work;
  const { runId, batch, job } = taken;
  const state = await runs.state(runId);
  if (!state.known) throw unrecoverable(`run ${runId} is unknown to this queue (its state was removed)`);
  if (state.paused) return delayJob(job, token, 5_000);
  // BullMQ delivers at least once: an earlier delivery of this job may have committed the batch
  // and died before the job was marked complete. Its run may be finalized already (its part
  // compacted away): embedding it again would pay twice and write its rows a second time.
  if (await runs.isDone(runId, batch.batchId)) {
    logger.info({ runId, jobId: job.id }, 'batch already committed by an earlier delivery of its job');
    return finalizeWhenSettled(runId);
  }
  const run = await context(runId);
  // Or it wrote the part and died before counting it: count it from the part's own record.
  if (await run.writer.hasPart(batch.batchId)) {
    const record = batchRecordFrom(await run.writer.readPartMetadata(batch.batchId));
    if (record) {
      logger.info(
        { runId, jobId: job.id },
        'batch part written by an earlier delivery of its job: counted, not sent again',
      );
      await runs.done(runId, batch.batchId, usageOf(record));
      return finalizeWhenSettled(runId);
    }
  }
  try {
    await embedAndWritePart(work, run, taken, token);
    // Also when an earlier run of this job counted it first: that run may have died before it
    // looked, and then nobody else would queue finalize.
    await finalizeWhenSettled(runId);
  } catch (error) {
    const why = accountProblem(error);
    if (!why) {
      if (error instanceof BatchFailedError && !error.cause.retryable) throw unrecoverable(error.message);
      throw error;
    }
    // Every worker's next request would fail the same way: pause the queue for all of them.
    await runs.pause(runId, why);
    await work.jobs.pause();
    logger.error({ runId }, `${why}; the queue is paused: fix it, then run embedpipe resume ${runId}`);
    return delayJob(job, token, 5_000);
  }
}

/** The batch embedded and written as its own part, then counted in Redis (once, whoever counts first). */
async function embedAndWritePart(
  work: BatchWork,
  run: JoinedRun,
  { runId, batch, job }: BatchJob,
  token: string | undefined,
): Promise<void> {
  const { runs, logger, metrics } = work;
  // No signal that aborts: a request already sent is paid for, so a job never abandons it.
  const embedded = await run.reuse.embed(batch, NEVER);
  // A job whose lock lapsed (this process froze, or stalled past the lock's duration) is done
  // again by another worker, and its run may be finalized already: a part written now would
  // add its rows to the dataset a second time. Still ours, the lock is extended for the write.
  if (!(await extendJobLock(job, token, work.lockDuration))) {
    const message = `lost the lock of job ${job.id} (this worker stalled longer than its lock): another worker does this batch; its part is not written`;
    logger.warn({ runId, jobId: job.id }, message);
    throw new Error(message);
  }
  const record = batchRecordOf(batch.chunks.length, embedded);
  const written = await run.writer.writePart(batch.batchId, embedded, batchRecordMetadata(record));
  await run.reuse.committed(
    written.file,
    embedded.chunks.map((chunk) => chunk.hash),
    embedded.vectors,
  );
  const usage = usageOf(record);
  metrics?.jobCompleted(usage);
  // This batch's own retries (the process's counter also moves with its other jobs').
  for (let i = 0; i < record.retries; i++) metrics?.retry();
  if (await runs.done(runId, batch.batchId, usage)) return;
  // Counted first by another delivery of this job: this worker stalled past its lock after the
  // check before embedding. If finalize already compacted the batch, this part is a second copy.
  if (await run.writer.withdrawCompactedPart(batch.batchId))
    logger.warn(
      { runId, jobId: job.id },
      'batch committed meanwhile by another worker: this late part was removed',
    );
}

/** A job attempt failed: the queue retries it, or it failed for good (recorded; the run may finalize). */
function onJobFailed(work: BatchWork, taken: TakenJob, error: Error, final: boolean): void {
  const { runs, logger, metrics, finalizeWhenSettled } = work;
  const { runId, job } = taken;
  if (taken.kind === 'finalize') {
    logger.error(
      { runId },
      `finalize failed: ${error.message}; finish the run with embedpipe finalize ${runId}`,
    );
    return;
  }
  if (!final) {
    metrics?.jobRetried();
    logger.warn(
      { jobId: job.id, attempt: job.attemptsMade },
      `batch failed, the queue retries it later: ${error.message}`,
    );
    return;
  }
  metrics?.jobFailed();
  logger.error({ jobId: job.id }, `batch failed for good: ${error.message}`);
  void runs
    .failed(runId, taken.batch.batchId, error.message)
    .then(() => finalizeWhenSettled(runId))
    .catch((e: unknown) => logger.error({ err: String(e) }, 'could not record a failed batch'));
}

const usageOf = (record: BatchRecord) => ({
  inputs: record.rows,
  tokens: record.promptTokens,
  costUsd: record.cost,
});

/** A worker joins a run on its first job. */
async function joinRun(runs: RunStore, runId: string, deps: ContextDependencies): Promise<JoinedRun> {
  const spec = await runs.spec(runId);
  if (!spec) throw unrecoverable(`run ${runId} is unknown to this queue`);
  const joined = await joinRunContext(spec, deps);
  deps.logger.info({ runId, version: spec.versionName, model: spec.model }, 'joined run');
  return joined;
}
