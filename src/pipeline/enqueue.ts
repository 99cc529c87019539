/**
 * `embedpipe enqueue`: `produce` into BullMQ. Plans the corpus exactly as `run` does (same version
 * folder, calibration, batch ids) and adds one job per batch the version does not hold yet, waiting
 * while the queue holds more than a high-water mark of waiting jobs, so Redis memory stays bounded
 * whatever the corpus size. Workers embed and commit; the last one to finish queues `finalize`.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { ExpectedRows } from '../output/contract.js';
import { REJECTS_FILE, sideFile } from '../output/index.js';
import { writePlanFiles } from '../output/plan-file.js';
import { committedBatches } from '../output/session.js';
import { produce } from '../planning/produce.js';
import { BatchJobs } from '../queue/batch-jobs.js';
import {
  checkEvictionPolicy,
  connectRedis,
  type QueueAddress,
  RunStore,
  runSpecOf,
} from '../queue/distributed.js';
import { OutageBound, RedisOutage } from '../queue/outage.js';
import { openRunContext, planRun, type RunContext } from './context.js';

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
  const { logger, address } = deps;
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
  const jobs = new BatchJobs(redis, address);
  jobs.onError((error) => outage.error(error, 'queue'));
  const producer: Producer = { settings, deps, redis, jobs, bound, started };
  try {
    // The run, raced against giving up on Redis: BullMQ waits for a lost connection forever.
    return await Promise.race([enqueueRun(producer), bound.givenUp]);
  } catch (error) {
    throw bound.error ?? error;
  } finally {
    bound.stop();
    if (bound.error) {
      // Nothing to close gracefully without Redis: drop the sockets, let the process end.
      void shared?.close().catch(() => {});
      void jobs.disconnect().catch(() => {});
      await producer.opened?.session.release().catch(() => {});
    } else {
      await shared?.close();
      await jobs.close();
    }
    redis.disconnect();
  }
}

/** The producer's connections, and the run once its version is open (released on an outage). */
interface Producer {
  readonly settings: RunSettings;
  readonly deps: EnqueueDependencies;
  readonly redis: Redis;
  readonly jobs: BatchJobs;
  readonly bound: OutageBound;
  readonly started: number;
  opened?: RunContext;
}

async function enqueueRun(producer: Producer): Promise<EnqueueSummary> {
  const { settings, deps, redis, jobs, bound } = producer;
  const { logger, stats, address } = deps;
  await checkEvictionPolicy(redis, logger);
  const plan = await planRun(settings, deps);
  const run = await openRunContext(settings, plan, {
    ...deps,
    onLockLost: (error) => logger.error({ err: error.message }, 'lost the dataset lock while enqueueing'),
  });
  producer.opened = run;
  const { session, sizing, dir } = run;
  try {
    const runId = runIdOf(settings.outDir, session.version.name);
    const signal = deps.signal ?? new AbortController().signal;
    await run.calibrate(signal);
    const runs = new RunStore(redis, address);
    await runs.open(runSpecOf({ ...run, runId }));
    const feed = jobs.feed(runId, deps.highWater ?? DEFAULTS.distributed.highWater, signal);
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
    const onReject = rejects.add.bind(rejects);
    const batchStarts = { dir, ...(session.current ? { formerDir: session.current.dir } : {}) };
    const input = { settings, plan, sizing, stats, committed, onReject, batchStarts };
    for await (const batch of produce(input, expected)) {
      await feed.add(batch);
      // The producer never re-plans: the documents of an enqueued batch are done with here.
      sizing.release(batch.chunks);
    }
    await feed.flush();
    await rejects.close();
    const { documents, chunks, rejects: rejected, tokens } = stats;
    const planned = [...stats.ledger.planned];
    await writePlanFiles(dir, { runId, planned, documents, chunks, rejects: rejected, tokens }, expected);
    await run.persistCalibration();
    await runs.produced(runId, feed.enqueued);
    // Nothing left to embed (everything committed already): finalize now.
    if (await runs.settled(runId)) await jobs.queueFinalize(runId);
    return {
      runId,
      version: session.version.name,
      outDir: settings.outDir,
      documents,
      rejects: rejected,
      chunks,
      batches: { planned: planned.length, enqueued: feed.enqueued, committed: stats.ledger.carried.batches },
      elapsedMs: Date.now() - producer.started,
    };
  } finally {
    await session.release();
  }
}
