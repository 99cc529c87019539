/**
 * `embedpipe run`: the whole pipeline in one process. This is the only place the stages meet:
 *
 *   corpus ─► chunker ─► planner ─► in-process queue ─► embedder ─► ledger + part file ─► manifest
 *
 * Resume: batch ids are deterministic, so a re-run plans the same batches and skips every batch
 * whose part file exists. The manifest is written last, once every planned batch has a part.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunSettings } from '../config/settings.js';
import { chunkDocument, chunkTokenBudget } from '../chunking/index.js';
import { openCorpus } from '../corpus/index.js';
import type { Batch, Chunk, ChunkFailure, CorpusEntry } from '../domain.js';
import { EncodingPolicy } from '../embedding/encoding-policy.js';
import { BatchFailedError, GatewayEmbedder, type Rechunk } from '../embedding/gateway-embedder.js';
import { ProviderRouter } from '../embedding/provider-router.js';
import { UsageError } from '../errors.js';
import type { EmbeddingModel, GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { DatasetWriter, JsonlFile, type Manifest, readManifest, writeManifest } from '../output/index.js';
import { planBatches } from '../planning/index.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import { RetryAfterGate } from '../retry/index.js';
import { BatchLedger } from './batch-ledger.js';
import { TOOL } from './tool.js';

export interface RunDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
  /** Aborting stops the run: nothing new starts, finished parts stay for a resume. */
  readonly signal?: AbortSignal;
}

export interface RunSummary {
  readonly status: 'done' | 'incomplete' | 'dry-run';
  readonly model: string;
  readonly dims?: number;
  readonly outDir: string;
  readonly documents: number;
  readonly rejects: number;
  readonly chunks: number;
  readonly tokens: number;
  readonly batches: { readonly planned: number; readonly embedded: number; readonly resumed: number; readonly failed: number };
  readonly rows: number;
  readonly failures: number;
  readonly requests: number;
  readonly retries: number;
  /** USD: this run's spend (dry run: the estimate for the whole corpus). */
  readonly cost: number;
  readonly elapsedMs: number;
  readonly files: readonly string[];
}

/** The parameters that decide how a corpus is cut into batches: part of every batch id. */
function planParameters(settings: RunSettings, chunkBudget: number) {
  return {
    tokenizer: 'cl100k_base',
    chunkTokens: chunkBudget,
    overlap: settings.overlap,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
  };
}

async function findModel(client: GatewayClient, model: string): Promise<EmbeddingModel> {
  const models = await client.listEmbeddingModels();
  const found = models.find((m) => m.id === model);
  if (!found) {
    const known = models.map((m) => m.id).join(', ');
    throw new UsageError(`unknown embedding model "${model}"; the gateway lists: ${known || '(none)'}`);
  }
  return found;
}

export async function runPipeline(settings: RunSettings, deps: RunDependencies): Promise<RunSummary> {
  const { client, logger, stats } = deps;
  const model = await findModel(client, settings.model);
  const chunkBudget = chunkTokenBudget({
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    ...(settings.maxTokens !== undefined ? { maxTokensOverride: settings.maxTokens } : {}),
  });
  const plan = planParameters(settings, chunkBudget);
  const planKey = JSON.stringify(plan);
  const pricePerToken = model.pricing?.promptPerToken;
  logger.info({ model: model.id, contextLength: model.contextLength, chunkBudget }, 'planning');

  const inputSize = await stat(settings.input).then(
    (s) => (s.isFile() ? s.size : 0),
    () => 0,
  );
  stats.bytesTotal = inputSize;

  const chunksOf = (entries: AsyncIterable<CorpusEntry>, rejects: JsonlFile | undefined) =>
    (async function* (): AsyncGenerator<Chunk> {
      for await (const entry of entries) {
        if (entry.kind === 'reject') {
          stats.rejects += 1;
          rejects?.add(entry.reject);
          continue;
        }
        stats.documents += 1;
        for (const chunk of chunkDocument(entry.document, {
          model: model.id,
          maxTokens: chunkBudget,
          overlapTokens: settings.overlap,
        })) {
          stats.chunks += 1;
          stats.tokens += chunk.tokens;
          yield chunk;
        }
      }
    })();

  const corpus = openCorpus({
    path: settings.input,
    ...(settings.format ? { format: settings.format } : {}),
    idField: settings.idField,
    textField: settings.textField,
    onBytes: (n: number) => {
      stats.bytesRead += n;
    },
  });
  if (settings.dryRun) {
    for await (const _batch of planBatches(chunksOf(corpus, undefined), {
      model: model.id,
      maxInputs: settings.maxInputs,
      maxTokensPerRequest: settings.maxTokensPerRequest,
      planKey,
    })) {
      stats.batchesPlanned += 1;
    }
    stats.planningDone = true;
    return summarize('dry-run', settings, stats, { cost: stats.tokens * (pricePerToken ?? 0), files: [] });
  }

  await mkdir(settings.outDir, { recursive: true });
  const previous = await readManifest(settings.outDir);
  if (previous && previous.model !== model.id) {
    throw new UsageError(
      `${settings.outDir} holds a dataset of model ${previous.model}; write ${model.id} vectors to another --out ` +
        '(one dataset never mixes models)',
    );
  }

  const metadata: Record<string, string> = {
    'embedpipe.model': model.id,
    'embedpipe.plan': planKey,
    'embedpipe.tool': `${TOOL.name}@${TOOL.version}`,
  };
  const writer = new DatasetWriter({ dir: settings.outDir, format: settings.outputFormat, metadata });
  const ledger = new BatchLedger(settings.outDir);
  await ledger.open();
  const done = await writer.existingParts();
  const rejects = new JsonlFile(join(settings.outDir, 'rejects.jsonl'));

  const embedder = new GatewayEmbedder({
    client,
    model: model.id,
    router: new ProviderRouter(settings.provider),
    encoding: new EncodingPolicy(settings.encodingFormat),
    gate: new RetryAfterGate(),
    retry: settings.retry,
    rechunk: rechunker(model.id),
    stats,
    logger,
    ...(pricePerToken !== undefined ? { pricePerToken } : {}),
  });

  const planned = new Set<string>();
  const transientFailures: ChunkFailure[] = [];
  const providers = new Set<string>();
  const resumed: Batch[] = [];

  const queue = new InProcessQueue(
    async (batch, signal) => {
      let embedded: Awaited<ReturnType<GatewayEmbedder['embedBatch']>>;
      try {
        embedded = await embedder.embedBatch(batch, signal);
      } catch (error) {
        if (!(error instanceof BatchFailedError)) throw error;
        stats.batchesFailed += 1;
        for (const chunk of batch.chunks) {
          transientFailures.push({
            documentId: chunk.documentId,
            chunkIndex: chunk.index,
            batchId: batch.batchId,
            status: error.cause.status,
            message: error.cause.message,
          });
        }
        logger.error({ batchId: batch.batchId }, error.message);
        return;
      }
      if (embedded.provider) providers.add(embedded.provider);
      await ledger.record({
        batchId: batch.batchId,
        rows: embedded.chunks.length,
        chunks: batch.chunks.length,
        promptTokens: embedded.usage.promptTokens,
        cost: embedded.usage.cost,
        requests: embedded.usage.requests,
        retries: embedded.usage.retries,
        ...(embedded.provider ? { provider: embedded.provider } : {}),
        failures: embedded.failures,
      });
      const part = await writer.writePart(batch.batchId, embedded);
      stats.rowsWritten += part.rows;
      stats.batchesDone += 1;
    },
    { concurrency: settings.concurrency },
  );

  const onAbort = () => queue.abort(deps.signal?.reason instanceof Error ? deps.signal.reason : new Error('aborted'));
  deps.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const batch of planBatches(chunksOf(corpus, rejects), {
      model: model.id,
      maxInputs: settings.maxInputs,
      maxTokensPerRequest: settings.maxTokensPerRequest,
      planKey,
    })) {
      stats.batchesPlanned += 1;
      planned.add(batch.batchId);
      if (done.has(batch.batchId)) {
        stats.batchesSkipped += 1;
        resumed.push(batch);
        continue;
      }
      await queue.push(batch);
    }
    stats.planningDone = true;
    await queue.drain();
  } finally {
    deps.signal?.removeEventListener('abort', onAbort);
  }
  await rejects.close();

  // Totals of batches committed by earlier runs, from their ledger records.
  const failures: ChunkFailure[] = [...transientFailures];
  let rows = stats.rowsWritten;
  for (const batch of resumed) {
    const record = await ledger.read(batch.batchId);
    if (!record) continue;
    rows += record.rows;
    if (record.provider) providers.add(record.provider);
  }
  for (const batchId of planned) {
    const record = await ledger.read(batchId);
    if (record) failures.push(...record.failures);
  }
  const failuresFile = new JsonlFile(join(settings.outDir, 'failures.jsonl'));
  for (const failure of failures) failuresFile.add(failure);
  await failuresFile.close();

  const complete = stats.batchesFailed === 0;
  const failedBatches = new Set(transientFailures.map((f) => f.batchId));
  const files = [...planned].filter((id) => !failedBatches.has(id)).map((id) => writer.partFileName(id));
  if (complete) {
    const removed = await writer.removeStaleParts(planned);
    if (removed.length > 0) logger.info({ removed: removed.length }, 'removed part files of an earlier plan');
    const dims = embedder.dims ?? previous?.dims ?? 0;
    const manifest: Manifest = {
      version: 1,
      tool: TOOL,
      createdAt: new Date().toISOString(),
      model: model.id,
      dims,
      format: settings.outputFormat,
      providers: [...providers].sort(),
      plan,
      counts: {
        documents: stats.documents,
        chunks: stats.chunks,
        rows,
        rejects: stats.rejects,
        failures: failures.length,
        tokens: stats.tokens,
        cost: stats.cost,
        requests: stats.requests,
        retries: stats.retries,
      },
      files,
    };
    await writeManifest(settings.outDir, manifest);
  }
  return summarize(complete ? 'done' : 'incomplete', settings, stats, {
    cost: stats.cost,
    files,
    rows,
    failures: failures.length,
    ...(embedder.dims !== undefined ? { dims: embedder.dims } : {}),
  });
}

/** Re-chunks a chunk the gateway rejected as too long; pieces keep its index and get subIndex 0..m-1. */
function rechunker(model: string): Rechunk {
  return (chunk, maxTokens) =>
    chunkDocument(
      { id: chunk.documentId, text: chunk.text, source: '', line: 0 },
      { model, maxTokens, overlapTokens: 0 },
    ).map((piece, subIndex) => ({
      ...piece,
      index: chunk.index,
      subIndex,
      start: chunk.start + piece.start,
      end: chunk.start + piece.end,
    }));
}

function summarize(
  status: RunSummary['status'],
  settings: RunSettings,
  stats: RunStats,
  extra: { cost: number; files: readonly string[]; rows?: number; failures?: number; dims?: number },
): RunSummary {
  return {
    status,
    model: settings.model,
    ...(extra.dims !== undefined ? { dims: extra.dims } : {}),
    outDir: settings.outDir,
    documents: stats.documents,
    rejects: stats.rejects,
    chunks: stats.chunks,
    tokens: stats.tokens,
    batches: {
      planned: stats.batchesPlanned,
      embedded: stats.batchesDone,
      resumed: stats.batchesSkipped,
      failed: stats.batchesFailed,
    },
    rows: extra.rows ?? 0,
    failures: extra.failures ?? 0,
    requests: stats.requests,
    retries: stats.retries,
    cost: extra.cost,
    elapsedMs: stats.elapsedMs(),
    files: extra.files,
  };
}
