/** What `embedpipe worker` does; loaded only when the command runs (see worker.ts). */
import { readEnvironment } from '../config/env.js';
import { resolveWorkerSettings, type WorkerFlags } from '../config/settings.js';
import { MissingKeyError } from '../errors.js';
import { createLogger } from '../observability/logger.js';
import { holdMemoryTarget } from '../observability/memory-target.js';
import { startMetricsServer, WorkerMetrics } from '../observability/metrics.js';
import { RunStats } from '../observability/stats.js';
import { startWorker } from '../pipeline/work.js';
import { connectRedis } from '../queue/distributed.js';
import { RedisOutage } from '../queue/outage.js';
import { SharedPaceStore } from '../queue/shared-pace.js';
import { RetryAfterSharing } from '../queue/shared-retry-after.js';
import { createGateway } from './gateway-edge.js';
import { queueAddress } from './queue-options.js';

export async function workerAction(flags: WorkerFlags): Promise<void> {
  const env = readEnvironment();
  const address = queueAddress(flags, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  const settings = resolveWorkerSettings(flags, env);
  if (!env.apiKey) throw new MissingKeyError('EMBEDPIPE_API_KEY');
  const { concurrency } = settings;
  const metrics = new WorkerMetrics();
  // A wrong or stopped Redis is one line and exit 10 at once, not a minute of reconnect warnings.
  await (await connectRedis(address.redisUrl, 'client')).quit();
  const outage = new RedisOutage(address.redisUrl, logger);
  const sharing = new RetryAfterSharing(outage.error, outage.ready);
  // Every worker of the queue paces to one budget: together they stay under the gateway's limit.
  const pace = new SharedPaceStore(settings.rateLimits, outage.error, outage.ready);
  const client = createGateway(settings, env, {
    // A 429 seen here holds back every worker of the queue, on every machine, for its Retry-After.
    retryAfterStore: sharing,
    paceStore: pace,
    onRetryAfter: (event) => {
      if (event.status === 429) metrics.rateLimited();
    },
    onResponse: (event) => {
      if (event.path.endsWith('/embeddings')) metrics.observeRequest(event.seconds);
    },
  });
  metrics.pacing(() => client.pacing);
  await sharing.connect(address.redisUrl, address);
  await pace.connect(address.redisUrl, address);
  const running = await startWorker({
    client,
    logger,
    address,
    concurrency: settings.batchConcurrency,
    metrics,
    stats: new RunStats(),
    outage,
    lockDurationMs: settings.lockDurationMs,
  });
  const server =
    settings.metricsPort !== undefined
      ? await startMetricsServer({ port: settings.metricsPort, metrics })
      : undefined;
  const memory = holdMemoryTarget(settings.memoryTargetMb, logger);
  logger.info({ queue: address.queue, concurrency, metricsPort: server?.port }, 'worker started');
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping: taking no new jobs, finishing the ones in flight');
      resolve();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  await running.close();
  memory.stop();
  await sharing.close();
  await pace.close();
  await server?.close();
  await client.close();
  logger.info('worker stopped');
}
