/** What `embedpipe enqueue` does; loaded only when the command runs (see enqueue.ts). */
import { readEnvironment } from '../config/env.js';
import { type RunFlags, readJobFile, resolveRunSettings } from '../config/settings.js';
import { resolveCorpusFormat } from '../corpus/index.js';
import { InterruptedError, MissingKeyError, UsageError } from '../errors.js';
import { GatewayClient, retryAfterTooLong } from '../gateway/index.js';
import { createLogger } from '../observability/logger.js';
import { RunStats } from '../observability/stats.js';
import { enqueueCorpus } from '../pipeline/enqueue.js';
import { RetryAfterSharing } from '../queue/shared-retry-after.js';
import { attribution } from './context.js';
import { printJson } from './format.js';
import { type QueueFlags, queueAddress } from './queue-options.js';

export interface EnqueueFlags extends RunFlags, QueueFlags {
  highWater?: number;
  json?: boolean;
}

export async function enqueueAction(jobPath: string | undefined, flags: EnqueueFlags): Promise<void> {
  const env = readEnvironment();
  const job = await readJobFile(jobPath);
  const address = queueAddress(flags, env);
  const resolved = resolveRunSettings(flags, job, env);
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  // Workers must reach the gateway: an in-process emulator would live only as long as this producer.
  if (resolved.emulator && !flags.baseUrl && !env.baseUrl) {
    throw new UsageError(
      'enqueue cannot use an in-process emulator (workers could not reach it): start `embedpipe gateway` and pass its --base-url',
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
  const settings = { ...resolved, emulator: false };
  if (!env.apiKey) throw new MissingKeyError('EMBEDPIPE_API_KEY');
  const sharing = new RetryAfterSharing((message, error) => logger.warn({ err: String(error) }, message));
  const client = new GatewayClient({
    baseUrl: settings.baseUrl,
    apiKey: env.apiKey,
    allowInsecureHttp: settings.allowInsecureHttp,
    timeoutMs: settings.timeoutMs,
    maxInFlight: settings.concurrency,
    maxRetryAfterMs: settings.retry.maxRetryAfterMs,
    // The workers of this queue use the same key: a 429 seen here holds them back too, and theirs this.
    onRetryAfter: (event) => sharing.publish(event.until),
    ...attribution(env),
  });
  const controller = new AbortController();
  const interrupt = () =>
    controller.abort(new InterruptedError('interrupted; re-run the same command to finish enqueueing'));
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    const summary = await enqueueCorpus(settings, {
      client,
      logger,
      stats: new RunStats(),
      address,
      ...(flags.highWater !== undefined ? { highWater: flags.highWater } : {}),
      signal: controller.signal,
      shareRetryAfter: (redis) => sharing.connect(redis, address, client.retryAfterGate, retryAfterTooLong),
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
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await client.close();
  }
}
