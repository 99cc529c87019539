/** What `embedpipe worker` does; loaded only when the command runs (see worker.ts). */
import { gatewayBaseUrl } from '../config/base-url.js';
import { DEFAULTS } from '../config/defaults.js';
import { readEnvironment } from '../config/env.js';
import { MissingKeyError } from '../errors.js';
import { retryAfterTooLong } from '../gateway/index.js';
import { createLogger } from '../observability/logger.js';
import { startMetricsServer, WorkerMetrics } from '../observability/metrics.js';
import { RunStats } from '../observability/stats.js';
import { startWorker } from '../pipeline/work.js';
import { connectRedis } from '../queue/distributed.js';
import { RedisOutage } from '../queue/outage.js';
import { RetryAfterSharing } from '../queue/shared-retry-after.js';
import { createGateway } from './gateway-edge.js';
import { type QueueFlags, queueAddress } from './queue-options.js';

export interface WorkerFlags extends QueueFlags {
  concurrency?: number;
  baseUrl?: string;
  metricsPort?: number;
  maxRetryAfter?: number;
  lockDuration?: number;
  allowInsecureHttp?: boolean;
}

export async function workerAction(flags: WorkerFlags): Promise<void> {
  const env = readEnvironment();
  const address = queueAddress(flags, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  const baseUrl = gatewayBaseUrl(flags.baseUrl, env.baseUrl);
  if (!env.apiKey) throw new MissingKeyError('EMBEDPIPE_API_KEY');
  const concurrency = flags.concurrency ?? DEFAULTS.distributed.concurrency;
  const metrics = new WorkerMetrics();
  // A wrong or stopped Redis is one line and exit 10 at once, not a minute of reconnect warnings.
  await (await connectRedis(address.redisUrl, 'client')).quit();
  const outage = new RedisOutage(address.redisUrl, logger);
  const sharing = new RetryAfterSharing(outage.error, outage.ready);
  const client = createGateway({
    baseUrl,
    env,
    allowInsecureHttp: flags.allowInsecureHttp ?? false,
    maxInFlight: concurrency,
    ...(flags.maxRetryAfter !== undefined ? { maxRetryAfterMs: flags.maxRetryAfter * 1000 } : {}),
    // A 429 seen here holds back every worker of the queue, on every machine, for its Retry-After.
    onRetryAfter: (event) => {
      if (event.status === 429) metrics.rateLimited();
      sharing.publish(event.until);
    },
    onResponse: (event) => {
      if (event.path.endsWith('/embeddings')) metrics.observeRequest(event.seconds);
    },
  });
  await sharing.connect(address.redisUrl, address, client.retryAfterGate, retryAfterTooLong);
  const running = await startWorker({
    client,
    logger,
    address,
    concurrency,
    metrics,
    stats: new RunStats(),
    outage,
    ...(flags.lockDuration !== undefined ? { lockDurationMs: flags.lockDuration * 1000 } : {}),
  });
  const server =
    flags.metricsPort !== undefined
      ? await startMetricsServer({ port: flags.metricsPort, metrics })
      : undefined;
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
  await sharing.close();
  await server?.close();
  await client.close();
  logger.info('worker stopped');
}
