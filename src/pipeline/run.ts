/**
 * `embedpipe run`: the whole pipeline in one process. This is the only place the stages meet:
 *
 *   corpus ─► chunker ─► planner ─► in-process queue ─► embedder ─► part committer ─► manifest
 *
 * Resume: batch ids are deterministic, so a re-run plans the same batches and skips every batch
 * whose part file exists (its accounting is read back from the part's metadata). The manifest is
 * written last, and only once every planned batch has its part.
 */
import { access, constants, mkdir } from 'node:fs/promises';
import { CLASSES, TokenCalibration } from '../chunking/index.js';
import { DEFAULTS } from '../config/defaults.js';
import { checkGatewayTransport, type RunSettings } from '../config/settings.js';
import { isTextFileName } from '../corpus/text-folder.js';
import type { Batch, Chunk, ChunkFailure, EmbeddedBatch } from '../domain.js';
import { EncodingPolicy } from '../embedding/encoding-policy.js';
import { BatchFailedError, GatewayEmbedder } from '../embedding/gateway-embedder.js';
import { ProviderRouter } from '../embedding/provider-router.js';
import { outputFolderError, UsageError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import {
  DatasetWriter,
  digestInput,
  FAILURES_FILE,
  formatUsd,
  REJECTS_FILE,
  readManifest,
  redactBaseUrl,
  sideFile,
  writeManifest,
} from '../output/index.js';
import { VectorIndex } from '../output/vector-index.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import {
  type BatchRecord,
  batchRecordFrom,
  batchRecordMetadata,
  batchRecordOf,
  DatasetTally,
  repairBatchOf,
} from './batch-record.js';
import { type CalibrationCost, calibrate, readCalibration, writeCalibration } from './calibrate.js';
import { compactDataset, RetainedRows } from './finalize.js';
import { GroupCommitter } from './group-committer.js';
import { findModel, makePlan, plannedBatches, type RunPlan } from './plan.js';
import { RunSizing } from './sizing.js';
import { type RunSummary, type SizingSummary, summarize } from './summary.js';
import { TOOL } from './tool.js';

export type { RunSummary } from './summary.js';

export interface RunDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
  /** Aborting stops the run: nothing new starts, batches already paid for are still written. */
  readonly signal?: AbortSignal;
}

export async function runPipeline(settings: RunSettings, deps: RunDependencies): Promise<RunSummary> {
  checkGatewayTransport(settings);
  const model = await findModel(deps.client, settings.model);
  const plan = makePlan(settings, model);
  const calibration = TokenCalibration.restore(
    await readCalibration(settings.outDir),
    model.id,
    plan.budgetTokens,
  );
  const sizing = new RunSizing({
    model: model.id,
    calibration,
    overlapTokens: settings.overlap,
    contextLength: model.contextLength,
    margin: DEFAULTS.contextSafetyMargin,
  });
  deps.logger.info(
    { model: model.id, contextLength: model.contextLength, budgetTokens: plan.budgetTokens },
    'planning',
  );
  return settings.dryRun
    ? dryRun(settings, plan, sizing, deps.stats)
    : embedCorpus(settings, plan, sizing, deps);
}

/** Plans the whole corpus and prices it; calls no embeddings and writes nothing. */
async function dryRun(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  stats: RunStats,
): Promise<RunSummary> {
  // What a real run would send: the planned batches the output folder does not hold yet.
  const committed = await new DatasetWriter({
    dir: settings.outDir,
    format: settings.outputFormat,
    metadata: {},
  }).batchFiles();
  const price = plan.model.pricing?.promptPerToken ?? 0;
  const toSend = { batches: 0, chunks: 0, tokens: 0, cost: 0 };
  for await (const batch of plannedBatches(settings, plan, sizing, stats, () => {})) {
    stats.batchesPlanned += 1;
    if (committed.has(batch.batchId)) {
      stats.batchesSkipped += 1;
      continue;
    }
    toSend.batches += 1;
    toSend.chunks += batch.chunks.length;
    toSend.tokens += batch.tokens;
  }
  stats.planningDone = true;
  toSend.cost = toSend.tokens * price;
  const cost = stats.tokens * price;
  return summarize('dry-run', settings, stats, {
    cost,
    files: [],
    rows: 0,
    failures: 0,
    sizing: sizingSummary(sizing),
    toSend,
  });
}

async function embedCorpus(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  deps: RunDependencies,
): Promise<RunSummary> {
  const { client, logger, stats } = deps;
  const model = plan.model.id;
  const startedAt = Date.now();
  await mkdir(settings.outDir, { recursive: true })
    .then(() => access(settings.outDir, constants.W_OK))
    .catch((error: unknown) => {
      throw outputFolderError(settings.outDir, error);
    });
  const previous = await readManifest(settings.outDir);
  if (previous && previous.model !== model) {
    throw new UsageError(
      `${settings.outDir} holds a dataset of model ${previous.model}; write ${model} vectors to another --out ` +
        '(one dataset never mixes models)',
    );
  }

  const writer = new DatasetWriter({
    dir: settings.outDir,
    format: settings.outputFormat,
    metadata: {
      'embedpipe.model': model,
      'embedpipe.plan': plan.key,
      'embedpipe.tool': `${TOOL.name}@${TOOL.version}`,
    },
    ...(previous?.dims ? { dims: previous.dims } : {}),
  });
  if (!settings.force) await refuseForeignLeftovers(writer, previous?.files ?? [], model, plan.key);
  // Temp files of killed runs; a minute's grace for a run that may still be writing.
  const tempsRemoved = await writer.removeStaleTempFiles(startedAt - 60_000);
  if (tempsRemoved.length > 0)
    logger.info({ removed: tempsRemoved.length }, 'removed temp files of killed runs');
  // Committed batches of earlier runs, with their accounting (footers only): skipped when planned
  // again, and the documents they re-planned are theirs.
  const committed = new Map<string, BatchRecord | undefined>();
  const committedIn = await writer.batchFiles();
  for (const batchId of committedIn.keys()) {
    const record = batchRecordFrom(await writer.readPartMetadata(batchId));
    committed.set(batchId, record);
    for (const documentId of record?.replanned ?? []) sizing.restoreOwner(documentId, batchId);
  }
  const rejects = sideFile(settings.outDir, REJECTS_FILE);
  const pricePerToken = plan.model.pricing?.promptPerToken;
  const embedder = new GatewayEmbedder({
    client,
    model,
    router: new ProviderRouter(settings.provider),
    encoding: new EncodingPolicy(settings.encodingFormat),
    gate: client.retryAfterGate,
    retry: settings.retry,
    sizing,
    stats,
    logger,
    ...(pricePerToken !== undefined ? { pricePerToken } : {}),
  });

  const signal = deps.signal ?? new AbortController().signal;
  const calibrationCost = { requests: 0, tokens: 0, cost: 0 };
  sizing.measureWith(async (text) => {
    const measured = await embedder.measure(text, signal);
    calibrationCost.requests += 1;
    calibrationCost.tokens += measured.tokens ?? 0;
    calibrationCost.cost += measured.cost;
    return measured.tokens;
  });
  if (sizing.calibration.isPrior) {
    const spent = await calibrate(settings, sizing, embedder, logger, signal);
    calibrationCost.requests += spent.requests;
    calibrationCost.tokens += spent.tokens;
    calibrationCost.cost += spent.cost;
    if (sizing.calibration.takeChange()) await writeCalibration(settings.outDir, sizing);
  }
  // Epochs opened by the answers of batches are persisted before any later part is written, so a
  // part never exists without the calibration that planned the documents after it.
  let persisting: Promise<void> = Promise.resolve();
  const persistCalibration = (): Promise<void> => {
    if (sizing.calibration.takeChange()) {
      persisting = persisting.then(() => writeCalibration(settings.outDir, sizing));
    }
    return persisting;
  };

  const tally = new DatasetTally();
  const retained = new RetainedRows();
  const planned = new Set<string>();
  /** Batches whose retries ran out this run: not committed, so a re-run sends them again. */
  const failedBatches = new Map<Batch, BatchFailedError>();

  const committer = new GroupCommitter(
    async (committed) => {
      // A document re-planned by another batch keeps only that batch's rows.
      const group = committed.map(({ batch, embedded }) => ({
        batch,
        embedded: withoutStaleRows(embedded, (chunk) => sizing.isStale(chunk, batch.batchId)),
      }));
      const records = group.map(({ batch, embedded }) => batchRecordOf(batch, embedded));
      await persistCalibration();
      await writer.writeGroup(
        group.map(({ batch, embedded }, i) => ({
          batchId: batch.batchId,
          batch: embedded,
          extra: batchRecordMetadata(records[i]!),
        })),
      );
      group.forEach(({ batch }, i) => {
        tally.add(records[i]!);
        sizing.release(batch.chunks);
        stats.rowsWritten += records[i]!.rows;
        stats.batchesDone += 1;
      });
    },
    {
      concurrency: 2,
      maxBacklog: 2,
      groupBytes: DEFAULTS.commit.groupBytes,
      maxDelayMs: settings.commitIntervalMs,
    },
  );
  // Vectors the folder already holds, by content hash: a batch of another plan (another version's
  // chunking, other limits, a changed corpus) pays only for texts not embedded before.
  let index: Promise<VectorIndex | undefined> | undefined;
  const reusable = (): Promise<VectorIndex | undefined> => {
    index ??=
      committedIn.size > 0 && settings.outputFormat === 'parquet'
        ? VectorIndex.build(settings.outDir, [...new Set(committedIn.values())])
        : Promise.resolve(undefined);
    return index;
  };
  const embedWithReuse = async (batch: Batch, signal: AbortSignal): Promise<EmbeddedBatch> => {
    const vectors = await reusable();
    const found = new Map<Chunk, Float32Array>();
    for (const chunk of batch.chunks) {
      if (!vectors?.has(chunk.hash) || sizing.isStale(chunk, batch.batchId)) continue;
      const vector = await vectors.vector(chunk.hash);
      if (vector) found.set(chunk, vector);
    }
    if (found.size === 0) return embedder.embedBatch(batch, signal);
    const rest = batch.chunks.filter((chunk) => !found.has(chunk));
    const sent =
      rest.length > 0
        ? await embedder.embedBatch({ ...batch, chunks: rest }, signal)
        : embedder.nothingSent(batch);
    // A document the request re-planned keeps only its new rows.
    const replanned = new Set(sent.replanned);
    const reused = [...found].filter(([chunk]) => !replanned.has(chunk.documentId));
    stats.chunksReused += reused.length;
    return {
      ...sent,
      chunks: [...reused.map(([chunk]) => chunk), ...sent.chunks],
      vectors: [...reused.map(([, vector]) => vector), ...sent.vectors],
    };
  };
  const queue = new InProcessQueue(
    async (batch, signal) => {
      try {
        await committer.add(batch, await embedWithReuse(batch, signal));
      } catch (error) {
        if (!(error instanceof BatchFailedError)) throw error;
        sizing.release(batch.chunks);
        stats.batchesFailed += 1;
        failedBatches.set(batch, error);
        logger.error({ batchId: batch.batchId }, error.message);
      }
    },
    // With the client capping requests on the wire, a second window of batches waits at its door with
    // their requests built, so a freed slot is refilled at once.
    {
      concurrency: client.maxInFlight !== undefined ? settings.concurrency * 2 : settings.concurrency,
      // Enough ready batches that a freed handler never waits on the producer; more is only memory.
      maxWaiting: Math.ceil(settings.concurrency / 2),
    },
  );

  let finishedEmbedding: number | undefined;
  const onAbort = () => queue.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const batch of plannedBatches(settings, plan, sizing, stats, (reject) =>
      rejects.add(reject),
    )) {
      stats.batchesPlanned += 1;
      planned.add(batch.batchId);
      // A committed batch is skipped; if its record lists chunk failures, exactly those chunks are
      // sent again as its repair batch (and a committed repair with failures gets one in turn).
      let current: Batch | undefined = batch;
      while (current !== undefined && committed.has(current.batchId)) {
        stats.batchesSkipped += 1;
        const record = committed.get(current.batchId);
        const file = committedIn.get(current.batchId)!;
        if (!file.startsWith('part-')) retained.add(file, current.chunks);
        const repair: ReturnType<typeof repairBatchOf> = record ? repairBatchOf(current, record) : undefined;
        if (record) {
          tally.add(
            repair ? { ...record, failures: record.failures.filter((f) => !repair.repaired.has(f)) } : record,
          );
        }
        if (!repair) {
          sizing.release(current.chunks);
          current = undefined;
          break;
        }
        const again = new Set(repair.repair.chunks);
        sizing.release(current.chunks.filter((chunk) => !again.has(chunk)));
        const next: Batch = repair.repair;
        planned.add(next.batchId);
        if (!committed.has(next.batchId)) stats.batchesPlanned += 1;
        current = next;
      }
      if (current === undefined) continue;
      await queue.push(current);
    }
    stats.planningDone = true;
    await queue.drain();
    await committer.drain();
    await persistCalibration();
    finishedEmbedding = Date.now();
  } finally {
    // Even when the run stops (402, Ctrl-C), every batch already paid for is written.
    await committer.drain().catch(() => {});
    signal.removeEventListener('abort', onAbort);
  }
  await rejects.close();

  const failures: ChunkFailure[] = [...tally.failures];
  for (const [batch, error] of failedBatches) {
    for (const chunk of batch.chunks) {
      failures.push({
        documentId: chunk.documentId,
        chunkIndex: chunk.index,
        batchId: batch.batchId,
        status: error.cause.status,
        message: error.cause.message,
      });
    }
  }
  const failuresFile = sideFile(settings.outDir, FAILURES_FILE);
  for (const failure of failures) failuresFile.add(failure);
  await failuresFile.close();

  const failedIds = new Set([...failedBatches.keys()].map((b) => b.batchId));
  let files = [...planned]
    .filter((id) => !failedIds.has(id))
    .map((id) => committedIn.get(id) ?? writer.partFileName(id));
  let rows = tally.rows;
  const complete = failedIds.size === 0;
  if (complete) {
    const removed = await writer.removeStaleParts(planned);
    if (removed.length > 0) logger.info({ removed: removed.length }, 'removed part files of an earlier plan');
    ({ files, rows } = await compactDataset({
      writer,
      planned: [...planned],
      owners: sizing.owners(),
      retained,
    }));
    await writeManifest(settings.outDir, {
      version: 2,
      tool: TOOL,
      createdAt: new Date().toISOString(),
      model,
      dims: tally.dims || embedder.dims || previous?.dims || 0,
      format: settings.outputFormat,
      providers: [...tally.providers].sort(),
      input: await digestInput(settings.input, { include: isTextFileName }),
      gateway: { baseUrl: redactBaseUrl(client.baseUrl), emulator: settings.emulator },
      plan: { ...plan.parameters, sizing: sizingSummary(sizing, calibrationCost) },
      counts: {
        documents: stats.documents,
        chunks: stats.chunks,
        rows,
        rejects: stats.rejects,
        failures: failures.length,
        tokens: tally.promptTokens,
        costUsd: formatUsd(tally.cost),
        requests: tally.requests,
        retries: tally.retries,
      },
      files,
    });
  }
  stats.embeddingEndedAt = finishedEmbedding;
  const dims = tally.dims || embedder.dims;
  // Chunks in _failures.jsonl make the run incomplete (exit 5) even with every batch committed: a
  // re-run sends them again (failed batches whole, chunk failures as repair batches).
  if (failures.length > 0)
    logger.warn({ failures: failures.length }, 'chunks failed (_failures.jsonl); re-run to retry them');
  return summarize(complete && failures.length === 0 ? 'done' : 'incomplete', settings, stats, {
    cost: stats.cost,
    files,
    rows,
    failures: failures.length,
    sizing: sizingSummary(sizing, calibrationCost),
    ...(dims ? { dims } : {}),
  });
}

/**
 * Files of an unfinished run (in no manifest) that another model or another plan wrote: this run
 * would delete them at its end as stale, and they were paid for. Refused (UsageError) unless
 * --force; the data files' own metadata says who wrote them (the manifest is written last).
 */
async function refuseForeignLeftovers(
  writer: DatasetWriter,
  finished: readonly string[],
  model: string,
  planKey: string,
): Promise<void> {
  const listed = new Set(finished);
  const foreign = (await writer.dataFileOrigins()).filter(
    (origin) =>
      !listed.has(origin.file) &&
      ((origin.model !== undefined && origin.model !== model) ||
        (origin.plan !== undefined && origin.plan !== planKey)),
  );
  if (foreign.length === 0) return;
  const otherModel = foreign.find((origin) => origin.model !== undefined && origin.model !== model);
  const shown = foreign.slice(0, 3).map((origin) => origin.file);
  if (foreign.length > 3) shown.push(`… ${foreign.length - 3} more`);
  const whose = otherModel
    ? `model ${otherModel.model} (this run: ${model})`
    : `model ${model} with other plan parameters (--max-tokens, --overlap, batching…)`;
  throw new UsageError(
    `${writer.dir} holds ${foreign.length} file(s) of an unfinished run of ${whose}: ${shown.join(', ')}. ` +
      'This run would delete them, and they were paid for: re-run that run with its own settings to finish it, ' +
      'write to another --out, or pass --force to delete them',
  );
}

/** The batch without the rows of chunks `isStale` names (its accounting stays: it was paid). */
function withoutStaleRows(embedded: EmbeddedBatch, isStale: (chunk: Chunk) => boolean): EmbeddedBatch {
  if (!embedded.chunks.some(isStale)) return embedded;
  const keep = embedded.chunks.map((chunk) => !isStale(chunk));
  return {
    ...embedded,
    chunks: embedded.chunks.filter((_, i) => keep[i]),
    vectors: embedded.vectors.filter((_, i) => keep[i]),
  };
}

/** The chunk budget used and why: for the summary and the manifest. */
function sizingSummary(sizing: RunSizing, calibration?: CalibrationCost): SizingSummary {
  const { calibration: state } = sizing;
  const current = state.current;
  return {
    budgetTokens: current.budgetTokens,
    tokensPerChar: Object.fromEntries(
      CLASSES.map((name, k) => [name, Number(current.weights[k]!.toFixed(4))]),
    ),
    basis: state.isPrior ? 'byte-bound' : current.reason,
    epochs: state.epochs.length,
    ...(calibration && calibration.requests > 0 ? { calibration } : {}),
  };
}
