/**
 * `embedpipe enqueue`: `produce` into BullMQ. Plans the corpus exactly as `run` does (same version
 * folder, calibration, batch ids) and adds one job per batch the version does not hold yet, waiting
 * while the queue holds more than a high-water mark of waiting jobs, so Redis memory stays bounded
 * whatever the corpus size. Workers embed and commit; the last one to finish queues `finalize`.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { calibrateRun, readCalibration, writeCalibration } from '../chunking/calibrate.js';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import { embedderFor } from '../embedding/embedder.js';
import type { EmbeddingModel, GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { ExpectedRows } from '../output/contract.js';
import { REJECTS_FILE, sideFile, writeFileAtomic } from '../output/index.js';
import { committedBatches, type OutputSession, openOutput } from '../output/session.js';
import { findModel, makePlan, type RunPlan } from '../planning/plan.js';
import { produce } from '../planning/produce.js';
import { sizingFor } from '../planning/to-send.js';
import {
  type BatchJobData,
  batchJobId,
  batchJobOptions,
  checkEvictionPolicy,
  connectRedis,
  finalizeJobId,
  JOB,
  type QueueAddress,
  type RunSpec,
  RunStore,
} from '../queue/distributed.js';
import { OutageBound, RedisOutage } from '../queue/outage.js';

/** The plan of a distributed run, for finalize: every batch id in plan order, and the corpus counts. */
export const PLAN_FILE = '_plan.json';
/** Every chunk of the plan, per document (ExpectedRows.lines): what finalize checks the version against. */
export const PLAN_CHUNKS_FILE = '_plan-chunks.jsonl';

export interface PlanFile {
  readonly runId: string;
  readonly planned: readonly string[];
  readonly documents: number;
  readonly chunks: number;
  readonly rejects: number;
  readonly tokens: number;
}

export interface EnqueueSummary {
  readonly runId: string;
  readonly version: string;
  readonly outDir: string;
  readonly documents: number;
  readonly rejects: number;
  readonly chunks: number;
  readonly batches: { readonly planned: number; readonly enqueued: number; readonly committed: number };
  readonly elapsedMs: number;
}

export interface EnqueueDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
  readonly address: QueueAddress;
  readonly highWater?: number;
  readonly signal?: AbortSignal;
  /** Hears of Redis outages (one line each way); the producer rides one out for `redisOutageMs`. */
  readonly outage?: RedisOutage;
  /** Default DEFAULTS.distributed.redisOutageMs. */
  readonly redisOutageMs?: number;
  /**
   * Bridges the client's Retry-After gate to the queue's workers over this connection (see
   * SharedRetryAfter), so the producer's requests (calibration) and the workers' wait out each
   * other's 429s: they share one key. Resolves to what closes the bridge.
   */
  readonly shareRetryAfter?: (redis: Redis) => Promise<{ close(): Promise<void> }>;
}

/** A run's id: its dataset and version, so enqueueing the same version again is the same run. */
export function runIdOf(outDir: string, version: string): string {
  return `${version}-${createHash('sha256').update(outDir).digest('hex').slice(0, 12)}`;
}

export async function enqueueCorpus(
  settings: RunSettings,
  deps: EnqueueDependencies,
): Promise<EnqueueSummary> {
  const { client, logger, stats, address } = deps;
  const started = Date.now();
  const outage = deps.outage ?? new RedisOutage(address.redisUrl, logger);
  const redis = await connectRedis(address.redisUrl, 'producer', outage);
  // Rides out a Redis restart; past the bound, one clear error (exit 10) instead of a hang, and
  // `status` sees the producer's heartbeat stop (`bound.beat`, set once the run exists).
  const bound = new OutageBound(
    outage,
    address.redisUrl,
    {
      maxMs: deps.redisOutageMs ?? DEFAULTS.distributed.redisOutageMs,
      everyMs: DEFAULTS.distributed.producerBeatMs,
    },
    () => redis.disconnect(),
  );
  let shared: { close(): Promise<void> } | undefined;
  try {
    shared = await deps.shareRetryAfter?.(redis);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  const queue = new Queue<BatchJobData>(address.queue, {
    connection: redis,
    prefix: address.prefix,
    defaultJobOptions: batchJobOptions(),
  });
  queue.on('error', (error) => outage.error(error, 'queue'));
  // The run, raced against giving up on Redis: BullMQ waits for a lost connection forever.
  let opened: { release(): Promise<void> } | undefined;
  const enqueueRun = async (): Promise<EnqueueSummary> => {
    await checkEvictionPolicy(redis, logger);
    const model = await findModel(client, settings.model);
    const plan = makePlan(settings, model);
    const session = await openOutput({
      outDir: settings.outDir,
      model: model.id,
      planKey: plan.key,
      format: settings.outputFormat,
      force: settings.force,
      logger,
      onLockLost: (error) => logger.error({ err: error.message }, 'lost the dataset lock while enqueueing'),
    });
    opened = session;
    try {
      const dir = session.writer.dir;
      const runId = runIdOf(settings.outDir, session.version.name);
      const sizing = sizingFor(settings, plan, await readCalibration(dir));
      const signal = deps.signal ?? new AbortController().signal;
      const embedder = embedderFor(settings, {
        client,
        model: model.id,
        sizing,
        stats,
        logger,
        pricePerToken: model.pricing?.promptPerToken,
      });
      const persistCalibration = async () => {
        if (sizing.calibration.takeChange()) await writeCalibration(dir, sizing);
      };
      await calibrateRun(settings, sizing, embedder, logger, signal, persistCalibration);
      await persistCalibration();
      const spec = runSpecOf(settings, { model, plan, session, runId });
      const runs = new RunStore(redis, address);
      await runs.open(spec);
      const feed = new JobFeed(queue, deps.highWater ?? DEFAULTS.distributed.highWater, signal);
      bound.beat = () =>
        runs.producing(runId, {
          enqueued: feed.enqueued,
          planned: stats.ledger.planned.size,
          read: stats.bytesTotal > 0 ? stats.bytesRead / stats.bytesTotal : 0,
        });
      // What the version holds, read again after the run's done-count was reset: a batch workers
      // committed before this point is skipped here, one committed after is counted there.
      const { committed } = await committedBatches(session.writer);
      logger.info({ runId, version: session.version.name }, 'enqueueing');

      const rejects = sideFile(dir, REJECTS_FILE);
      const expected = new ExpectedRows();
      const batches = produce(
        {
          settings,
          plan,
          sizing,
          stats,
          committed,
          onReject: (reject) => rejects.add(reject),
        },
        expected,
      );
      for await (const batch of batches) {
        signal.throwIfAborted();
        await feed.add({
          name: JOB.batch,
          data: { runId, batch },
          opts: { jobId: batchJobId(runId, batch.batchId) },
        });
        // The producer never re-plans: the documents of an enqueued batch are done with here.
        sizing.release(batch.chunks);
      }
      await feed.flush();
      await rejects.close();
      const planFile: PlanFile = {
        runId,
        planned: [...stats.ledger.planned],
        documents: stats.documents,
        chunks: stats.chunks,
        rejects: stats.rejects,
        tokens: stats.tokens,
      };
      // The chunks first: finalize reads them once the plan file says planning is done.
      await writeFileAtomic(join(dir, PLAN_CHUNKS_FILE), [...expected.lines()].join(''));
      await writeFileAtomic(join(dir, PLAN_FILE), `${JSON.stringify(planFile)}\n`);
      await persistCalibration();
      await runs.produced(runId, feed.enqueued);
      // Nothing left to embed (everything committed already): finalize now.
      if (await runs.settled(runId)) {
        await queue.add(JOB.finalize, { runId } as never, { jobId: finalizeJobId(runId) });
      }
      return {
        runId,
        version: session.version.name,
        outDir: settings.outDir,
        documents: stats.documents,
        rejects: stats.rejects,
        chunks: stats.chunks,
        batches: {
          planned: stats.ledger.planned.size,
          enqueued: feed.enqueued,
          committed: stats.ledger.carried.batches,
        },
        elapsedMs: Date.now() - started,
      };
    } finally {
      await session.release();
    }
  };
  try {
    return await Promise.race([enqueueRun(), bound.givenUp]);
  } catch (error) {
    throw bound.error ?? error;
  } finally {
    bound.stop();
    if (bound.error) {
      // Nothing to close gracefully without Redis: drop the sockets, let the process end.
      void shared?.close().catch(() => {});
      void queue.disconnect().catch(() => {});
      await opened?.release().catch(() => {});
    } else {
      await shared?.close();
      await queue.close();
    }
    redis.disconnect();
  }
}

/** Jobs added in bulk, waiting while the queue holds more than `highWater` waiting jobs (backpressure). */
class JobFeed {
  enqueued = 0;
  #pending: { name: string; data: BatchJobData; opts: { jobId: string } }[] = [];
  constructor(
    private readonly queue: Queue<BatchJobData>,
    private readonly highWater: number,
    private readonly signal: AbortSignal,
  ) {}

  async add(job: { name: string; data: BatchJobData; opts: { jobId: string } }): Promise<void> {
    this.#pending.push(job);
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

/** What every worker needs to know about the run (no secrets): stored once in Redis. */
function runSpecOf(
  settings: RunSettings,
  run: { model: EmbeddingModel; plan: RunPlan; session: OutputSession; runId: string },
): RunSpec {
  const { model, plan, session, runId } = run;
  const current = session.current;
  return {
    runId,
    outDir: settings.outDir,
    versionDir: session.writer.dir,
    versionName: session.version.name,
    model: model.id,
    planKey: plan.key,
    format: settings.outputFormat,
    encodingFormat: settings.encodingFormat,
    provider: settings.provider,
    retry: settings.retry,
    overlap: settings.overlap,
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    budgetTokens: plan.budgetTokens,
    ...(model.pricing?.promptPerToken !== undefined ? { pricePerToken: model.pricing.promptPerToken } : {}),
    ...(current?.manifest.model === model.id && current.manifest.dims ? { dims: current.manifest.dims } : {}),
    linkedFiles: [...new Set(session.fileOf.values())],
    keepVersions: settings.keepVersions,
    input: settings.input,
    createdAt: new Date().toISOString(),
  };
}
