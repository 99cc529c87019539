/** What `status`, `finalize`, `resume` and `retry-failed` do; loaded only when one runs. */
import type { Redis } from 'ioredis';
import { resolveBaseUrl } from '../config/base-url.js';
import { DEFAULTS } from '../config/defaults.js';
import { readEnvironment } from '../config/env.js';
import { UsageError } from '../errors.js';
import type { RateDimension, RateView } from '../gateway/rate-pace.js';
import { createLogger } from '../observability/logger.js';
import { formatUsd, type ManifestCounts, readManifest } from '../output/index.js';
import { finalizeRun } from '../pipeline/finalize-run.js';
import { BatchJobs } from '../queue/batch-jobs.js';
import { connectRedis, type RunProgress, RunStore } from '../queue/distributed.js';
import { readSharedPace } from '../queue/shared-pace.js';
import { printJson, printTable } from './format.js';
import { type QueueFlags, queueAddress } from './queue-options.js';

export interface AdminFlags extends QueueFlags {
  json?: boolean;
  baseUrl?: string;
}

async function withQueue<T>(
  flags: AdminFlags,
  use: (parts: { redis: Redis; queue: BatchJobs; runs: RunStore }) => Promise<T>,
): Promise<T> {
  const address = queueAddress(flags, readEnvironment());
  const redis = await connectRedis(address.redisUrl, 'client');
  const queue = new BatchJobs(redis, address);
  try {
    return await use({ redis, queue, runs: new RunStore(redis, address) });
  } finally {
    await queue.close();
    redis.disconnect();
  }
}

async function known(runs: RunStore, runId: string): Promise<RunProgress> {
  const progress = await runs.progress(runId);
  if (!progress) {
    const ids = await runs.runIds();
    throw new UsageError(`no run ${runId} in this queue (runs: ${ids.slice(0, 5).join(', ') || 'none'})`);
  }
  return progress;
}

export async function statusAction(runId: string | undefined, flags: AdminFlags): Promise<void> {
  await withQueue(flags, async ({ redis, queue, runs }) => {
    const ids = runId ? [runId] : await runs.runIds();
    const counts = await queue.counts('waiting', 'active', 'delayed', 'failed', 'prioritized');
    const queuePaused = await queue.isPaused();
    const rate = await readSharedPace(redis, queueAddress(flags, readEnvironment()));
    const rows = [];
    for (const id of ids) {
      const progress = await known(runs, id);
      rows.push({ ...describe(progress, queuePaused), ...(await finishedVersion(progress)) });
    }
    if (flags.json) {
      const shared = rate ? { rate } : {};
      printJson(runId ? { ...rows[0], queue: counts, ...shared } : { runs: rows, queue: counts, ...shared });
      return;
    }
    printTable(
      ['RUN', 'STATE', 'PLANNED', 'DONE', 'FAILED', 'INPUTS/S', 'COST USD', 'ETA', 'OUT'],
      rows.map((r) => [
        r.runId,
        r.state,
        r.planned !== undefined
          ? String(r.planned)
          : r.plannedEstimate !== undefined
            ? `~${r.plannedEstimate}`
            : r.plannedSoFar !== undefined
              ? `${r.plannedSoFar}+`
              : '…',
        String(r.done),
        String(r.failed),
        r.inputsPerSecond === undefined ? '-' : r.inputsPerSecond.toFixed(0),
        Number(r.costUsd).toFixed(6),
        r.etaSeconds === undefined ? '-' : `${Math.round(r.etaSeconds)} s`,
        r.outDir,
      ]),
    );
    process.stdout.write(
      `queue: ${counts['waiting'] ?? 0} waiting, ${counts['active'] ?? 0} in flight, ${counts['delayed'] ?? 0} delayed, ` +
        `${counts['failed'] ?? 0} failed${queuePaused ? ', PAUSED' : ''}\n`,
    );
    if (rate) process.stdout.write(`rate: ${describeSharedRate(rate)}\n`);
    for (const r of rows)
      if (r.state === 'producer gone')
        process.stdout.write(
          `${r.runId}: its producer stopped before it finished planning (${r.enqueued ?? 0} batches enqueued): ` +
            're-run the same `embedpipe enqueue` command to enqueue the rest\n',
        );
    for (const r of rows)
      if (r.paused)
        process.stdout.write(
          `${r.runId} is paused: ${r.paused}\n  continue with: embedpipe resume ${r.runId}\n`,
        );
  });
}

/**
 * A finalized run's version, counted as its manifest counts it (the ledger of its batch records):
 * the Redis counters above are this run's work, these are what the version holds.
 */
async function finishedVersion(p: RunProgress): Promise<{ dataset?: ManifestCounts }> {
  if (!p.finalized) return {};
  const manifest = await readManifest(p.spec.versionDir).catch(() => undefined);
  return manifest?.version === 2 ? { dataset: manifest.counts } : {};
}

/** Heartbeats a producer may miss before `status` calls it gone. */
const PRODUCER_GONE_BEATS = 10;

/** One run's state in words and numbers. */
function describe(p: RunProgress, queuePaused: boolean, now = Date.now()) {
  const elapsed = p.startedAt && p.lastDoneAt ? (p.lastDoneAt - p.startedAt) / 1000 : undefined;
  const perBatch = elapsed && p.done > 0 ? elapsed / p.done : undefined;
  // While the producer plans (it waits on backpressure), the total is estimated from the share of
  // the corpus it has read; the ETA runs from that.
  const producer = p.planned === undefined ? p.producer : undefined;
  const producerGone =
    producer !== undefined && now - producer.at > PRODUCER_GONE_BEATS * DEFAULTS.distributed.producerBeatMs;
  const estimate =
    producer && producer.read >= 0.01
      ? Math.max(producer.planned, Math.round(producer.planned / producer.read))
      : undefined;
  const total = p.planned ?? estimate;
  const left = total !== undefined ? Math.max(0, total - p.done - p.failed) : undefined;
  const state = p.finalized
    ? p.finalized === 'switched'
      ? 'done'
      : p.finalized
    : p.paused || queuePaused
      ? 'paused'
      : producerGone
        ? 'producer gone'
        : p.planned === undefined
          ? 'enqueueing'
          : left === 0
            ? 'finalizing'
            : 'running';
  return {
    runId: p.spec.runId,
    state,
    ...(p.paused ? { paused: p.paused } : {}),
    outDir: p.spec.outDir,
    version: p.spec.versionName,
    model: p.spec.model,
    ...(p.planned !== undefined ? { planned: p.planned } : {}),
    ...(producer ? { plannedSoFar: producer.planned, enqueued: producer.enqueued } : {}),
    ...(estimate !== undefined && p.planned === undefined ? { plannedEstimate: estimate } : {}),
    done: p.done,
    failed: p.failed,
    inputs: p.inputs,
    tokens: p.tokens,
    // Redis sums floats (HINCRBYFLOAT): the decimal form, as everywhere else money is printed.
    costUsd: formatUsd(p.costUsd),
    ...(elapsed && elapsed > 0 ? { inputsPerSecond: p.inputs / elapsed } : {}),
    ...(perBatch !== undefined && left !== undefined && left > 0 ? { etaSeconds: perBatch * left } : {}),
  };
}

export async function finalizeAction(runId: string, flags: AdminFlags): Promise<void> {
  const env = readEnvironment();
  const logger = createLogger({ ...(env.logLevel ? { level: env.logLevel } : {}) });
  await withQueue(flags, async ({ queue, runs }) => {
    await known(runs, runId);
    // Only recorded in the manifest (finalize calls no gateway): unknown rather than refused or guessed.
    const baseUrl = resolveBaseUrl({ flag: flags.baseUrl, env: env.baseUrl }, { optional: true });
    const result = await finalizeRun({ runs, runId, logger, client: { baseUrl }, jobs: queue });
    if (flags.json) printJson(result);
    else {
      const what: Record<string, string> = {
        switched:
          `the dataset now reads version ${result.version}: ${result.rows} rows in ${result.files.length} files` +
          (result.chunkFailures
            ? `; ${result.chunkFailures} chunks could not be embedded (_failures.jsonl)`
            : ''),
        'already-current': `version ${result.version} is already finished`,
        incomplete: `${result.failed} batches failed for good: version ${result.version} is not current; embedpipe retry-failed ${runId}`,
        waiting: `${result.missing} batches are still in the queue; finalize runs by itself when they are done`,
      };
      process.stdout.write(`${what[result.status]}\n`);
    }
    if (result.status === 'incomplete' || (result.chunkFailures ?? 0) > 0) process.exitCode = 5;
  });
}

export async function resumeAction(runId: string, flags: AdminFlags): Promise<void> {
  await withQueue(flags, async ({ queue, runs }) => {
    const progress = await known(runs, runId);
    await runs.resume(runId);
    await queue.resume();
    process.stdout.write(
      `${runId}: resumed${progress.paused ? ` (it was paused: ${progress.paused})` : ''}\n`,
    );
  });
}

export async function retryFailedAction(runId: string, flags: AdminFlags): Promise<void> {
  await withQueue(flags, async ({ queue, runs }) => {
    await known(runs, runId);
    const failed = await runs.failures(runId);
    let retried = 0;
    for (const batchId of failed.keys()) {
      if (await queue.retryFailed(runId, batchId)) retried += 1;
      await runs.clearFailure(runId, batchId);
    }
    // The run is unfinished again (a finished run stays as it is: nothing was queued).
    if (failed.size > 0) await runs.finalized(runId, '');
    process.stdout.write(`${runId}: ${retried} failed batches queued again\n`);
  });
}

/** The workers' shared budget in one line: what it paces to, what the gateway let through, what holds. */
function describeSharedRate(rate: RateView): string {
  const paced = Object.entries(rate.paced).map(
    ([d, v]) => `${v} ${d}/min (${rate.source[d as RateDimension]})`,
  );
  return (
    `${paced.length > 0 ? `paced to ${paced.join(', ')}` : 'not paced (no limit known)'}; ` +
    `last minute ${rate.measured.requests} requests, ${rate.measured.tokens} tokens; ` +
    `${rate.holding ? 'held by the gateway rate' : 'not held by the rate'}`
  );
}
