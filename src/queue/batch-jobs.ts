/**
 * A distributed run's jobs on BullMQ: the one module that speaks to it. The producer adds batch
 * jobs (with backpressure), workers take them, the last one queues finalize, and the admin commands
 * pause, resume, count and retry them. The rest of the code sees batches and run ids, not BullMQ.
 */
import { DelayedError, type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULTS } from '../config/defaults.js';
import type { Batch } from '../domain.js';
import {
  type BatchJobData,
  batchJobId,
  batchJobOptions,
  type FinalizeJobData,
  finalizeJobId,
  JOB,
  type QueueAddress,
} from './distributed.js';

export type { Job } from 'bullmq';

type JobCountName = 'waiting' | 'active' | 'delayed' | 'failed' | 'prioritized';

/** The run's queue, as the producer, a worker and the admin commands use it. */
export class BatchJobs {
  readonly #queue: Queue;

  constructor(connection: Redis, address: Pick<QueueAddress, 'queue' | 'prefix'>) {
    this.#queue = new Queue(address.queue, {
      connection,
      prefix: address.prefix,
      defaultJobOptions: batchJobOptions(),
    });
  }

  onError(listener: (error: Error) => void): void {
    this.#queue.on('error', listener);
  }

  /** A feed of the run's batch jobs that waits while more than `highWater` jobs wait in Redis. */
  feed(runId: string, highWater: number, signal: AbortSignal): JobFeed {
    return new JobFeed(this.#queue, runId, highWater, signal);
  }

  /** Queues the run's finalize once (a second call while one is queued is the same job). */
  async queueFinalize(runId: string): Promise<void> {
    const data: FinalizeJobData = { runId };
    await this.#queue.add(JOB.finalize, data, {
      jobId: finalizeJobId(runId),
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  /** The chunks of a batch job still in the queue (a failed one: for `_failures.jsonl`). */
  async chunksOf(runId: string, batchId: string): Promise<Batch['chunks']> {
    const job = await this.#queue.getJob(batchJobId(runId, batchId));
    return (job?.data as BatchJobData | undefined)?.batch.chunks ?? [];
  }

  /** Sends a failed batch job again with its attempts reset; false when the job is gone. */
  async retryFailed(runId: string, batchId: string): Promise<boolean> {
    const job = await this.#queue.getJob(batchJobId(runId, batchId));
    if (!job) return false;
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return true;
  }

  counts(...names: JobCountName[]): Promise<Record<string, number>> {
    return this.#queue.getJobCounts(...names);
  }

  pause(): Promise<void> {
    return this.#queue.pause();
  }

  resume(): Promise<void> {
    return this.#queue.resume();
  }

  isPaused(): Promise<boolean> {
    return this.#queue.isPaused();
  }

  close(): Promise<void> {
    return this.#queue.close();
  }

  /** Drops the connection without waiting on Redis (it is gone). */
  disconnect(): Promise<void> {
    return this.#queue.disconnect();
  }
}

/** Batch jobs added in bulk; waits while the queue holds more than `highWater` waiting jobs. */
export class JobFeed {
  enqueued = 0;
  #pending: { name: string; data: BatchJobData; opts: { jobId: string } }[] = [];

  constructor(
    private readonly queue: Queue,
    private readonly runId: string,
    private readonly highWater: number,
    private readonly signal: AbortSignal,
  ) {}

  async add(batch: Batch): Promise<void> {
    this.signal.throwIfAborted();
    const { runId } = this;
    this.#pending.push({
      name: JOB.batch,
      data: { runId, batch },
      opts: { jobId: batchJobId(runId, batch.batchId) },
    });
    if (this.#pending.length >= DEFAULTS.distributed.addChunk) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.#pending.length === 0) return;
    // Backpressure: Redis holds at most about `highWater` waiting batches of this queue.
    while ((await this.queue.getWaitingCount()) > this.highWater) {
      this.signal.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await this.queue.addBulk(this.#pending);
    this.enqueued += this.#pending.length;
    this.#pending = [];
  }
}

/** A job as a worker's handler sees it: which run, and a batch or the run's finalize. */
export type TakenJob =
  | { readonly kind: 'finalize'; readonly runId: string; readonly job: Job }
  | { readonly kind: 'batch'; readonly runId: string; readonly batch: Batch; readonly job: Job };

export interface JobWorkerOptions {
  readonly connection: Redis;
  readonly address: Pick<QueueAddress, 'queue' | 'prefix'>;
  readonly concurrency: number;
  readonly lockDurationMs: number;
  readonly handle: (taken: TakenJob, token: string | undefined) => Promise<void>;
  /** A job attempt failed: `final` when the queue will not try it again. */
  readonly onFailed: (taken: TakenJob, error: Error, final: boolean) => void;
  readonly onError: (error: Error) => void;
}

export function startJobWorker(options: JobWorkerOptions): Worker {
  const { lockDurationMs } = options;
  const worker = new Worker(
    options.address.queue,
    (job: Job, token?: string) => options.handle(taken(job), token),
    {
      connection: options.connection,
      prefix: options.address.prefix,
      concurrency: options.concurrency,
      lockDuration: lockDurationMs,
      stalledInterval: Math.min(30_000, lockDurationMs),
      // Stalled jobs (their worker died) go back to waiting; counted against the job's attempts.
      maxStalledCount: DEFAULTS.distributed.attempts,
    },
  );
  worker.on('failed', (job, error) => {
    if (!job || (job.name !== JOB.batch && job.name !== JOB.finalize)) return;
    const final = error.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
    options.onFailed(taken(job), error, final);
  });
  worker.on('error', options.onError);
  return worker;
}

function taken(job: Job): TakenJob {
  if (job.name === JOB.finalize) return { kind: 'finalize', runId: (job.data as FinalizeJobData).runId, job };
  const { runId, batch } = job.data as BatchJobData;
  return { kind: 'batch', runId, batch, job };
}

/** Moves the job back to delayed without spending an attempt (BullMQ's DelayedError protocol). */
export async function delayJob(job: Job, token: string | undefined, ms: number): Promise<never> {
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}

/** An error that fails the job for good: the queue does not try it again. */
export function unrecoverable(message: string): Error {
  return new UnrecoverableError(message);
}

/** Extends the job's lock for `ms`; false when this worker no longer holds it. */
export async function extendJobLock(job: Job, token: string | undefined, ms: number): Promise<boolean> {
  return token === undefined || (await job.extendLock(token, ms)) === 1;
}
