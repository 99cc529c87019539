/** What `embedpipe enqueue` does; loaded only when the command runs (see enqueue.ts). */
import { resolveBaseUrl } from '../config/base-url.js';
import { readEnvironment } from '../config/env.js';
import { type RunFlags, readJobFile, resolveRunSettings } from '../config/settings.js';
import { resolveCorpusFormat } from '../corpus/index.js';
import { InterruptedError, MissingKeyError, UsageError } from '../errors.js';
import { createLogger } from '../observability/logger.js';
import { holdMemoryTarget } from '../observability/memory-target.js';
import { RunStats } from '../observability/stats.js';
import { enqueueCorpus } from '../pipeline/enqueue.js';
import { RedisOutage } from '../queue/outage.js';
import { SharedPaceStore } from '../queue/shared-pace.js';
import { RetryAfterSharing } from '../queue/shared-retry-after.js';
import { printJson } from './format.js';
import { createGateway } from './gateway-edge.js';
import { type QueueFlags, queueAddress } from './queue-options.js';

export interface EnqueueFlags extends RunFlags, QueueFlags {
  highWater?: number;
  /** Seconds of Redis outage the producer rides out before it stops (exit 10). */
  redisWait?: number;
  json?: boolean;
}

/**
 * `run` options enqueue shares (addRunOptions) but a distributed run cannot honour: refused, never
 * ignored. Workers are separate processes, each with its own key and gateway (EMBEDPIPE_API_KEY,
 * EMBEDPIPE_BASE_URL or worker --base-url), spending on their own.
 */
function refuseRunOnlyFlags(flags: Pick<EnqueueFlags, 'maxCost' | 'emulator'>): void {
  if (flags.maxCost !== undefined) {
    throw new UsageError(
      '--max-cost: enqueue does not take it: workers spend on their own, each with its own key and gateway, ' +
        'and none stops at a total, so a cap would not be enforced across workers (`embedpipe status` shows ' +
        'what a run spent). For a run capped at a cost, use `embedpipe run --max-cost USD` (one process)',
    );
  }
  if (flags.emulator) {
    throw new UsageError(
      '--emulator: enqueue does not take it: each worker calls its own gateway with its own key ' +
        '(EMBEDPIPE_BASE_URL or worker --base-url, EMBEDPIPE_API_KEY), and none could reach an emulator inside ' +
        'this process. Start one with `embedpipe gateway` and pass the URL it prints as --base-url here and to ' +
        'every worker, or use `embedpipe run --emulator` (one process)',
    );
  }
}

export async function enqueueAction(jobPath: string | undefined, flags: EnqueueFlags): Promise<void> {
  refuseRunOnlyFlags(flags);
  const env = readEnvironment();
  const job = await readJobFile(jobPath);
  const address = queueAddress(flags, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  // Workers must reach the gateway: an in-process emulator would live only as long as this producer.
  if (job?.gateway?.emulator && !flags.baseUrl && !env.baseUrl) {
    throw new UsageError(
      'enqueue cannot use an in-process emulator (workers could not reach it): start `embedpipe gateway` and pass its --base-url',
    );
  }
  // Resolved here, not taken from the run's settings: enqueue's message must not offer --emulator.
  const baseUrl = resolveBaseUrl({ flag: flags.baseUrl, job: job?.gateway?.baseUrl, env: env.baseUrl });
  const resolved = resolveRunSettings(flags, job, env);
  if (resolved.maxCostUsd !== undefined) {
    // A job file shared with `run` (jobs/nightly.example.json) keeps working, but never silently.
    logger.warn(
      { maxCostUsd: resolved.maxCostUsd },
      "the job file's maxCostUsd is not enforced by a distributed run (each worker spends on its own): " +
        'watch the cost with `embedpipe status`, or use `embedpipe run` for a capped run',
    );
  }
  if (resolved.dryRun) throw new UsageError('--dry-run: use embedpipe run --dry-run to price a corpus');
  const format = resolveCorpusFormat({
    path: resolved.input,
    format: resolved.format,
    imageField: resolved.imageField,
    audioField: resolved.audioField,
  });
  if (format === 'audio' || resolved.audioField !== undefined) {
    throw new UsageError(
      'distributed mode does not transcribe audio yet: embed an audio corpus with `embedpipe run` ' +
        '(its transcripts are kept in the dataset, so a later run never pays for them again)',
    );
  }
  const settings = { ...resolved, baseUrl, emulator: false };
  if (!env.apiKey) throw new MissingKeyError('EMBEDPIPE_API_KEY');
  const outage = new RedisOutage(address.redisUrl, logger);
  const sharing = new RetryAfterSharing(outage.error, outage.ready);
  const pace = new SharedPaceStore(settings.rateLimits, outage.error, outage.ready);
  const client = createGateway(settings, env, {
    // The workers of this queue use the same key: a 429 seen here holds them back too, and theirs this.
    retryAfterStore: sharing,
    // And one rate budget: the producer's requests (calibration) count in the workers' pace.
    paceStore: pace,
  });
  const stats = new RunStats();
  stats.pacing = () => client.pacing;
  const controller = new AbortController();
  const interrupt = () =>
    controller.abort(new InterruptedError('interrupted; re-run the same command to finish enqueueing'));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const memory = holdMemoryTarget(settings.memoryTargetMb, logger);
  try {
    const summary = await enqueueCorpus(settings, {
      client,
      logger,
      stats,
      address,
      ...(flags.highWater !== undefined ? { highWater: flags.highWater } : {}),
      outage,
      ...(flags.redisWait !== undefined ? { redisOutageMs: flags.redisWait * 1000 } : {}),
      signal: controller.signal,
      shareRetryAfter: async (redis) => {
        await pace.connect(address.redisUrl, address);
        return sharing.connect(redis, address);
      },
    });
    if (flags.json) printJson(summary);
    else {
      process.stdout.write(
        `enqueued run ${summary.runId}: ${summary.batches.enqueued} batches (${summary.batches.committed} already committed) ` +
          `of ${summary.documents} documents, ${summary.chunks} chunks, into version ${summary.version} of ${summary.outDir}\n` +
          `  follow it: embedpipe status ${summary.runId}\n`,
      );
    }
  } finally {
    memory.stop();
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await client.close();
    await pace.close();
  }
}
