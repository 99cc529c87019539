/**
 * Distributed runs on BullMQ + Redis: connections, the job shapes, and a run's shared state.
 *
 * One BullMQ queue carries the batches of every run (job id `<runId>.<batchId>`, so enqueueing a
 * batch twice adds nothing) and one `finalize` job per run. Beside it, embedpipe keeps per run:
 *
 *   <prefix>:<queue>:run:<runId>          hash: spec (JSON), planned, produced, paused, counters
 *   <prefix>:<queue>:run:<runId>:done     set of committed batch ids (at-least-once: SADD counts once)
 *   <prefix>:<queue>:run:<runId>:failed   hash: batch id → why it failed for good
 *
 * Job data holds what a worker needs to embed the batch (its chunks) and never a key: workers read
 * keys from their own environment.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import type { Batch } from '../domain.js';
import { knownDims } from '../embedding/vector-form.js';
import { RedisError } from '../errors.js';
import type { RecordTotals } from '../observability/ledger.js';
import type { Logger } from '../observability/logger.js';
import type { ManifestFacts } from '../output/manifest-of.js';
import type { PlanFile } from '../output/plan-file.js';
import type { OutputSession } from '../output/session.js';
import type { RunPlan } from '../planning/plan.js';
import type { RedisOutage } from './outage.js';
import { redactRedisUrl } from './redis-url.js';
import type { RunSpec } from './run-spec.js';

export { redactRedisUrl } from './redis-url.js';
export type { RunSpec } from './run-spec.js';

/** KEYS: run hash, done set, failed hash; ARGV: batch id, inputs, tokens, cost, now. */
const COUNT_DONE = `
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'inputs', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[3])
redis.call('HINCRBYFLOAT', KEYS[1], 'costUsd', ARGV[4])
redis.call('HSET', KEYS[1], 'lastDoneAt', ARGV[5])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1`;

export interface QueueAddress {
  readonly redisUrl: string;
  readonly queue: string;
  readonly prefix: string;
}

export interface BatchJobData {
  readonly runId: string;
  readonly batch: Batch;
}

export interface FinalizeJobData {
  readonly runId: string;
}

export const JOB = { batch: 'batch', finalize: 'finalize' } as const;

/**
 * Queue attempts with exponential backoff for crashes and long outages (HTTP retries happen inside
 * each attempt); finished jobs are removed so Redis does not grow; failed ones are kept for
 * `retry-failed`.
 */
export function batchJobOptions() {
  return {
    attempts: DEFAULTS.distributed.attempts,
    backoff: { type: 'exponential', delay: DEFAULTS.distributed.backoffMs },
    removeOnComplete: true,
    removeOnFail: false,
  };
}

/** Job ids may not hold `:` (BullMQ's key separator); run and batch ids are hex and `-`. */
export const batchJobId = (runId: string, batchId: string) => `${runId}.${batchId}`;
export const finalizeJobId = (runId: string) => `${runId}.finalize`;

/**
 * A connection for `role`. Every role fails fast when Redis cannot be reached at the start. Once
 * connected, workers and the producer wait out outages (commands wait for the reconnect; BullMQ
 * requires `maxRetriesPerRequest: null` for workers; the producer bounds the wait itself, see
 * enqueue.ts), and commands fail fast with a clear message. `outage` hears of each outage.
 */
export async function connectRedis(
  url: string,
  role: 'worker' | 'producer' | 'client',
  outage?: RedisOutage,
): Promise<Redis> {
  const options: RedisOptions =
    role === 'client'
      ? { maxRetriesPerRequest: 2, lazyConnect: true, connectTimeout: 5_000, retryStrategy: () => null }
      : {
          maxRetriesPerRequest: null,
          lazyConnect: true,
          connectTimeout: 5_000,
          retryStrategy: (times) => Math.min(times * 200, 1_000),
        };
  const redis = new Redis(url, options);
  redis.on('error', () => {}); // reported by the failing command, or reconnected from
  try {
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    throw new RedisError(
      `cannot reach Redis at ${redactRedisUrl(url)}: ${(error as Error).message}. ` +
        'Start it (docker-compose up -d redis), or pass --redis URL / set REDIS_URL',
      { cause: error },
    );
  }
  if (role === 'client') redis.options.retryStrategy = (times) => Math.min(times * 200, 2_000);
  outage?.watch(redis);
  return redis;
}

/**
 * BullMQ keeps its state in Redis keys that must never be evicted: warn unless `maxmemory-policy`
 * is `noeviction` (a managed Redis may forbid CONFIG: then say it could not be checked).
 */
export async function checkEvictionPolicy(redis: Redis, logger: Logger): Promise<void> {
  try {
    const [, policy] = (await redis.config('GET', 'maxmemory-policy')) as [string, string];
    if (policy !== 'noeviction') {
      logger.warn(
        { policy },
        `Redis maxmemory-policy is ${policy}: under memory pressure it may evict queue keys and lose jobs; set it to noeviction`,
      );
    }
  } catch {
    logger.warn('could not read Redis maxmemory-policy (CONFIG refused); make sure it is noeviction');
  }
}

export interface RunProgress {
  readonly spec: RunSpec;
  /** Batches the producer planned that were not already committed; undefined while it still produces. */
  readonly planned?: number;
  readonly done: number;
  readonly failed: number;
  readonly paused?: string;
  readonly finalized?: string;
  readonly inputs: number;
  readonly tokens: number;
  readonly costUsd: number;
  readonly startedAt?: number;
  readonly lastDoneAt?: number;
  /** The producer's last heartbeat while it plans (see RunStore.producing). */
  readonly producer?: {
    readonly at: number;
    readonly enqueued: number;
    readonly planned: number;
    readonly read: number;
  };
}

/** A run's shared state in Redis. */
export class RunStore {
  readonly #redis: Redis;
  readonly #base: string;

  constructor(redis: Redis, address: Pick<QueueAddress, 'queue' | 'prefix'>) {
    this.#redis = redis;
    this.#base = `${address.prefix}:${address.queue}:run`;
  }

  #key(runId: string, part?: 'done' | 'failed'): string {
    return part ? `${this.#base}:${runId}:${part}` : `${this.#base}:${runId}`;
  }

  /**
   * Starts (or, for the same version, resumes) a run: its spec, and the count of done batches
   * started afresh, since the producer counts as planned only the batches not committed yet.
   */
  async open(spec: RunSpec): Promise<void> {
    await this.#redis
      .multi()
      .hset(this.#key(spec.runId), { spec: JSON.stringify(spec), startedAt: String(Date.now()) })
      .hdel(
        this.#key(spec.runId),
        'produced',
        'planned',
        'finalized',
        'inputs',
        'tokens',
        'costUsd',
        'lastDoneAt',
        'producerAt',
        'enqueued',
        'plannedSoFar',
        'read',
      )
      .del(this.#key(spec.runId, 'done'), this.#key(spec.runId, 'failed'))
      .exec();
  }

  async spec(runId: string): Promise<RunSpec | undefined> {
    const text = await this.#redis.hget(this.#key(runId), 'spec');
    return text ? (JSON.parse(text) as RunSpec) : undefined;
  }

  /** The producer's heartbeat while it plans: batches enqueued and planned so far, share of the corpus read. */
  async producing(runId: string, now: { enqueued: number; planned: number; read: number }): Promise<void> {
    await this.#redis.hset(this.#key(runId), {
      producerAt: String(Date.now()),
      enqueued: String(now.enqueued),
      plannedSoFar: String(now.planned),
      read: now.read.toFixed(4),
    });
  }

  /** The producer is done: `planned` batches were left to embed. */
  async produced(runId: string, planned: number): Promise<void> {
    await this.#redis.hset(this.#key(runId), { produced: '1', planned: String(planned) });
  }

  /**
   * Counts a committed batch once, however often its job ran; true when it was new. One script, so
   * a worker killed in between cannot leave the batch counted and its usage not.
   */
  async done(
    runId: string,
    batchId: string,
    usage: { inputs: number; tokens: number; costUsd: number },
  ): Promise<boolean> {
    const keys = [this.#key(runId), this.#key(runId, 'done'), this.#key(runId, 'failed')];
    const args = [batchId, usage.inputs, usage.tokens, usage.costUsd, Date.now()];
    return (await this.#redis.eval(COUNT_DONE, keys.length, ...keys, ...args)) === 1;
  }

  /** Whether the batch was counted committed (by this or an earlier delivery of its job). */
  async isDone(runId: string, batchId: string): Promise<boolean> {
    return (await this.#redis.sismember(this.#key(runId, 'done'), batchId)) === 1;
  }

  async failed(runId: string, batchId: string, reason: string): Promise<void> {
    await this.#redis.hset(this.#key(runId, 'failed'), batchId, reason);
  }

  async failures(runId: string): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.#key(runId, 'failed'))));
  }

  async clearFailure(runId: string, batchId: string): Promise<void> {
    await this.#redis.hdel(this.#key(runId, 'failed'), batchId);
  }

  async pause(runId: string, reason: string): Promise<void> {
    await this.#redis.hset(this.#key(runId), 'paused', reason);
  }

  async resume(runId: string): Promise<void> {
    await this.#redis.hdel(this.#key(runId), 'paused');
  }

  async finalized(runId: string, outcome: string): Promise<void> {
    await this.#redis.hset(this.#key(runId), 'finalized', outcome);
  }

  /** Whether every planned batch is committed or failed for good (finalize can run). Four small reads. */
  async settled(runId: string): Promise<boolean> {
    const [[produced, planned], done, failed] = await Promise.all([
      this.#redis.hmget(this.#key(runId), 'produced', 'planned'),
      this.#redis.scard(this.#key(runId, 'done')),
      this.#redis.hlen(this.#key(runId, 'failed')),
    ]);
    return produced === '1' && done + failed >= Number(planned ?? 0);
  }

  /**
   * What a job needs to know before it starts, without reading the whole spec: whether the run
   * exists, and why it is paused (undefined: not paused).
   */
  async state(runId: string): Promise<{ known: boolean; paused?: string }> {
    const [startedAt, paused] = await this.#redis.hmget(this.#key(runId), 'startedAt', 'paused');
    return { known: startedAt !== null, ...(paused ? { paused } : {}) };
  }

  async progress(runId: string): Promise<RunProgress | undefined> {
    const [hash, done, failed] = await Promise.all([
      this.#redis.hgetall(this.#key(runId)),
      this.#redis.scard(this.#key(runId, 'done')),
      this.#redis.hlen(this.#key(runId, 'failed')),
    ]);
    if (!hash['spec']) return undefined;
    const number = (name: string) => (hash[name] !== undefined ? Number(hash[name]) : undefined);
    return {
      spec: JSON.parse(hash['spec']) as RunSpec,
      ...(hash['produced'] ? { planned: number('planned') ?? 0 } : {}),
      done,
      failed,
      ...(hash['paused'] ? { paused: hash['paused'] } : {}),
      ...(hash['finalized'] ? { finalized: hash['finalized'] } : {}),
      inputs: number('inputs') ?? 0,
      tokens: number('tokens') ?? 0,
      costUsd: number('costUsd') ?? 0,
      ...(hash['startedAt'] ? { startedAt: Number(hash['startedAt']) } : {}),
      ...(hash['lastDoneAt'] ? { lastDoneAt: Number(hash['lastDoneAt']) } : {}),
      ...(hash['producerAt']
        ? {
            producer: {
              at: Number(hash['producerAt']),
              enqueued: number('enqueued') ?? 0,
              planned: number('plannedSoFar') ?? 0,
              read: number('read') ?? 0,
            },
          }
        : {}),
    };
  }

  /** Runs known to this queue, newest first. */
  async runIds(): Promise<string[]> {
    const ids = new Set<string>();
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', `${this.#base}:*`, 'COUNT', 200);
      cursor = next;
      for (const key of keys) {
        const id = key.slice(this.#base.length + 1).split(':')[0];
        if (id) ids.add(id);
      }
    } while (cursor !== '0');
    return [...ids].sort().reverse();
  }
}

/** What every worker needs to know about the run (no secrets): stored once in Redis. */
export function runSpecOf(run: {
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly session: OutputSession;
  readonly runId: string;
}): RunSpec {
  const { settings, plan, session, runId } = run;
  const model = plan.model;
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
    timeoutMs: settings.timeoutMs,
    overlap: settings.overlap,
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    budgetTokens: plan.budgetTokens,
    ...(model.pricing?.promptPerToken !== undefined ? { pricePerToken: model.pricing.promptPerToken } : {}),
    ...spreadDims(knownDims(settings.vectors, model.id, current?.manifest)),
    linkedFiles: [...new Set(session.fileOf.values())],
    keepVersions: settings.keepVersions,
    input: settings.input,
    createdAt: new Date().toISOString(),
  };
}

function spreadDims(dims: number | undefined): { dims?: number } {
  return dims ? { dims } : {};
}

/** What the manifest says of a distributed run's version. */
export function distributedManifest(
  spec: RunSpec,
  plan: PlanFile,
  found: { baseUrl: string; tally: RecordTotals; failures: number },
): ManifestFacts {
  const { tally } = found;
  return {
    model: spec.model,
    dims: tally.dims || spec.dims || 0,
    format: spec.format,
    input: spec.input,
    gateway: { baseUrl: found.baseUrl, emulator: false },
    plan: { ...(JSON.parse(spec.planKey) as Record<string, unknown>), distributed: { runId: spec.runId } },
    counts: { documents: plan.documents, rejects: plan.rejects, failures: found.failures },
    tally,
  };
}
