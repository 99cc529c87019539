/**
 * `embedpipe run`: the whole pipeline in one process. It wires the three verbs every mode shares,
 * with the in-process queue between them:
 *
 *   produce (plan − committed) ─► in-process queue ─► embed (reuse, gateway) ─► group commit ─► finalize
 *
 * The run builds the dataset's next version (output-session.ts): readers keep the current one
 * until finalize switches. Resume: batch ids are deterministic, so a re-run plans the same batches
 * and skips every batch its version holds; texts the dataset holds under any batch are reused.
 */
import { setImmediate } from 'node:timers/promises';
import {
  type CalibrationCost,
  calibrateRun,
  readCalibration,
  writeCalibration,
} from '../chunking/calibrate.js';
import { CLASSES } from '../chunking/index.js';
import type { RunSizing } from '../chunking/run-sizing.js';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import type { Batch, ChunkFailure, TranscriptionFailure } from '../domain.js';
import { CostBudget } from '../embedding/cost-budget.js';
import { embedderFor } from '../embedding/embedder.js';
import { BatchFailedError } from '../embedding/gateway-embedder.js';
import { ReusingEmbedder } from '../embedding/reuse.js';
import { DatasetContractError, EmbedpipeError, OutputLockedError, RunStoppedError } from '../errors.js';
import type { GatewayClient } from '../gateway/index.js';
import type { RecordTotals } from '../observability/ledger.js';
import type { Logger } from '../observability/logger.js';
import { RunStats } from '../observability/stats.js';
import { failuresOfBatch } from '../output/batch-record.js';
import { ExpectedRows } from '../output/contract.js';
import { DurableCommit } from '../output/durable-commit.js';
import { type FinalizedVersion, finalizeVersion, linkedFrom } from '../output/finalize.js';
import { FreeSpaceGuard } from '../output/free-space.js';
import { REJECTS_FILE, sideFile } from '../output/index.js';
import { manifestOf, versionCounts } from '../output/manifest-of.js';
import { type OutputSession, openOutput } from '../output/session.js';
import { replaySpill } from '../output/spill-replay.js';
import { VectorIndex } from '../output/vector-index.js';
import { VersionedDataset } from '../output/versions.js';
import { findModel, makePlan, type RunPlan } from '../planning/plan.js';
import { produce } from '../planning/produce.js';
import { countWorkToSend, sizingFor } from '../planning/to-send.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import { estimatedTranscription, runTranscription, transcriptDirs } from '../transcription/audio.js';
import { type RunSummary, type SizingSummary, summarize, type WorkToSend } from './summary.js';

export type { RunSummary } from './summary.js';

export interface RunDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
  /** Aborting stops the run: nothing new starts, batches already paid for are still written. */
  readonly signal?: AbortSignal;
  /** Free space kept on the output folder's disk (default DEFAULTS.commit.minFreeBytes). */
  readonly minFreeBytes?: number;
}

export async function runPipeline(settings: RunSettings, deps: RunDependencies): Promise<RunSummary> {
  const model = await findModel(deps.client, settings.model);
  const plan = makePlan(settings, model);
  deps.logger.info(
    { model: model.id, contextLength: model.contextLength, budgetTokens: plan.budgetTokens },
    'planning',
  );
  return settings.dryRun ? dryRun(settings, plan, deps.stats) : embedCorpus(settings, plan, deps);
}

/** Plans the whole corpus and prices what a real run would send; calls no embeddings, writes nothing. */
async function dryRun(settings: RunSettings, plan: RunPlan, stats: RunStats): Promise<RunSummary> {
  const versions = await new VersionedDataset(settings.outDir).list().catch(() => []);
  const current = versions.find((v) => v.current && v.manifest?.model === plan.model.id);
  const unfinished = versions.filter((v) => !v.manifest && !v.current).at(-1);
  const dirs = [current?.dir, unfinished?.dir].filter((dir): dir is string => dir !== undefined);
  const calibration = await readCalibration(unfinished?.dir ?? current?.dir ?? settings.outDir);
  // Audio: transcripts the dataset holds are planned as text; the rest are counted, never sent.
  const audio = await estimatedTranscription(
    settings,
    plan,
    stats,
    transcriptDirs(versions, unfinished?.dir),
  );
  const counted = await countWorkToSend({
    settings,
    plan,
    calibration,
    dirs,
    stats,
    ...(audio ? { transcribe: audio.stage } : {}),
  }).finally(() => audio?.close());
  const { sizing, toSend } = counted;
  return summarize('dry-run', settings, stats, {
    cost: stats.tokens * (plan.model.pricing?.promptPerToken ?? 0),
    files: [],
    rows: 0,
    failures: 0,
    sizing: sizingSummary(sizing),
    toSend,
    ...(audio ? { transcription: { model: audio.model, estimate: audio.estimate() } } : {}),
  });
}

async function embedCorpus(settings: RunSettings, plan: RunPlan, deps: RunDependencies): Promise<RunSummary> {
  const { logger } = deps;
  const model = plan.model.id;
  // One signal for every reason to stop: the caller's (Ctrl-C), and the lock lost to another run.
  const stop = new AbortController();
  const onCallerAbort = () => stop.abort(deps.signal?.reason);
  if (deps.signal?.aborted) onCallerAbort();
  deps.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const session = await openOutput({
    outDir: settings.outDir,
    model,
    planKey: plan.key,
    format: settings.outputFormat,
    force: settings.force,
    logger,
    onLockLost: (error) =>
      stop.abort(
        new OutputLockedError(`lost the lock of ${settings.outDir} to another run: ${error.message}`),
      ),
  });
  try {
    return await embedInto(session, settings, plan, deps, stop.signal);
  } finally {
    deps.signal?.removeEventListener('abort', onCallerAbort);
    await session.release();
  }
}

async function embedInto(
  session: OutputSession,
  settings: RunSettings,
  plan: RunPlan,
  deps: RunDependencies,
  signal: AbortSignal,
): Promise<RunSummary> {
  const { client, logger, stats } = deps;
  const { writer } = session;
  const dir = writer.dir;
  const model = plan.model.id;
  const sizing = sizingFor(settings, plan, await readCalibration(dir));
  // Re-plans recorded by this version's earlier attempts (same plan, same batch ids). A batch in a
  // file carried over from the current version was planned by another run: its re-plans say
  // nothing of this plan's batches (restored, they made every chunk of the document stale).
  const carried = await linkedFrom(dir, session.current);
  for (const [batchId, record] of session.committed) {
    if (carried.has(session.fileOf.get(batchId) ?? '')) continue;
    for (const documentId of record?.replanned ?? []) sizing.restoreOwner(documentId, batchId);
  }
  // What a killed run paid for and spilled is committed first; this run spills as it goes.
  const spill = await replaySpill(session, sizing, logger);
  const space = new FreeSpaceGuard(dir, deps.minFreeBytes ?? DEFAULTS.commit.minFreeBytes);
  await space.check();
  const rejects = sideFile(dir, REJECTS_FILE);
  const pricePerToken = plan.model.pricing?.promptPerToken;
  const budget = settings.maxCostUsd !== undefined ? new CostBudget(settings.maxCostUsd) : undefined;
  const embedder = embedderFor(settings, { client, model, sizing, stats, logger, pricePerToken, budget });

  // Audio corpora: transcribed on the way from the reader to the chunker (transcription/audio.ts).
  const versions = await session.dataset.list();
  const audio = await runTranscription(settings, plan, {
    client,
    logger,
    stats,
    signal,
    budget,
    dir,
    versions,
  });
  let calibrationCost: CalibrationCost = { probes: 0, requests: 0, tokens: 0, cost: 0 };
  const { ledger } = stats;
  const expected = new ExpectedRows();
  /** Batches whose retries ran out this run: not committed, so a re-run sends them again. */
  const failedBatches = new Map<Batch, BatchFailedError>();
  let index: Promise<VectorIndex> | undefined;
  const vectors = (): Promise<VectorIndex> =>
    (index ??= VectorIndex.build(dir, [...new Set(session.fileOf.values())], settings.outputFormat));
  const reuse = new ReusingEmbedder({ embedder, sizing, stats, index: vectors });

  // Epochs opened by the answers of batches are persisted before any later part is written, so a
  // part never exists without the calibration that planned the documents after it.
  let persisting: Promise<void> = Promise.resolve();
  const persistCalibration = (): Promise<void> => {
    if (sizing.calibration.takeChange()) persisting = persisting.then(() => writeCalibration(dir, sizing));
    return persisting;
  };
  const commit = new DurableCommit({
    writer,
    spill,
    sizing,
    ledger,
    reuse,
    persistCalibration,
    groupBytes: DEFAULTS.commit.groupBytes,
    maxDelayMs: settings.commitIntervalMs,
  });
  const queue = new InProcessQueue(
    async (batch, signal) => {
      try {
        await space.check();
        await commit.add(batch, await reuse.embed(batch, signal));
      } catch (error) {
        if (!(error instanceof BatchFailedError)) throw error;
        sizing.release(batch.chunks);
        ledger.failed();
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

  let stopped: EmbedpipeError | undefined;
  const onAbort = () => queue.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    calibrationCost = await calibrateRun(settings, sizing, embedder, logger, signal, persistCalibration);
    const batches = produce(
      {
        settings,
        plan,
        sizing,
        stats,
        committed: session.committed,
        onReject: (reject) => rejects.add(reject),
        ...(audio ? { transcribe: audio.stage } : {}),
      },
      expected,
    );
    for await (const batch of batches) {
      await queue.push(batch);
      // Planning runs as one chain of microtasks: let answers that arrived meanwhile be read first.
      await setImmediate();
    }
    await queue.drain();
    await commit.drain();
    await spill.remove();
    await persistCalibration();
    stats.embeddingEndedAt = Date.now();
  } catch (error) {
    if (!(error instanceof EmbedpipeError)) throw error;
    stopped = error;
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Even when the run stops (402, Ctrl-C, --max-cost), every batch already paid for is written.
    await queue.drain().catch(() => {});
    await commit.drain().catch(() => {});
    await persisting.catch(() => {});
  }
  await rejects.close();
  await audio?.close();

  // The vector length, from one place: the committed records, else this run's answers, else the
  // version this one replaces (same model); 0 when nothing says.
  const current = session.current;
  const tally = ledger.dataset();
  const dims =
    tally.dims || embedder.dims || (current?.manifest.model === model ? current.manifest.dims : 0) || 0;
  const outcome = {
    cost: stats.cost,
    failures: 0,
    files: [] as string[],
    rows: tally.rows,
    sizing: sizingSummary(sizing, calibrationCost),
    ...(pricePerToken !== undefined ? { pricePerToken } : {}),
    ...(dims ? { dims } : {}),
    version: { name: session.version.name, dir, current: false },
    ...(audio ? { transcription: { model: audio.model } } : {}),
  };
  if (stopped) {
    logger.warn({ reason: stopped.message }, 'run stopped; the dataset still reads its previous version');
    // Over the cap: what a re-run would still send (counted like a dry run, against what is committed).
    const remaining =
      budget?.exceeded === true
        ? await remainingWork(settings, plan, sizing, dir, transcriptDirs(versions, dir))
        : undefined;
    const summary = summarize('stopped', settings, stats, {
      ...outcome,
      stop: { exitCode: stopped.exitCode, message: stopped.message },
      ...(remaining ? { remaining } : {}),
    });
    throw new RunStoppedError(stopped, summary);
  }

  return finishRun({
    session,
    settings,
    plan,
    deps,
    sizing,
    expected,
    commit,
    failedBatches,
    outcome,
    tally,
    dims,
    calibrationCost,
    ...(index ? { index } : {}),
    ...(audio ? { audio } : {}),
  });
}

/** What a run knows once its batches are in: enough to finalize its version and say how it went. */
interface FinishedRun {
  readonly session: OutputSession;
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly deps: RunDependencies;
  readonly sizing: RunSizing;
  readonly expected: ExpectedRows;
  readonly commit: DurableCommit;
  readonly failedBatches: ReadonlyMap<Batch, BatchFailedError>;
  readonly outcome: Parameters<typeof summarize>[3];
  readonly tally: RecordTotals;
  readonly dims: number;
  readonly calibrationCost: CalibrationCost;
  readonly index?: Promise<VectorIndex>;
  readonly audio?: NonNullable<Awaited<ReturnType<typeof runTranscription>>>;
}

/**
 * Finalizes the run's version (the contract checked, the manifest written, the switch) and returns
 * the summary; a version that breaks the contract stops the run (exit 5) with its summary.
 */
async function finishRun(run: FinishedRun): Promise<RunSummary> {
  const { session, settings, plan, sizing, expected, commit, failedBatches, outcome, tally, dims } = run;
  const { client, logger, stats } = run.deps;
  const { audio, calibrationCost } = run;
  const { ledger } = stats;
  const { writer } = session;
  const dir = writer.dir;
  const model = plan.model.id;
  const current = session.current;
  const index = run.index;
  const failures: (ChunkFailure | TranscriptionFailure)[] = [...tally.failures, ...(audio?.failures ?? [])];
  const countsOf = (failed: number) => ({
    documents: stats.documents,
    rejects: stats.rejects,
    failures: failed,
  });
  for (const [batch, error] of failedBatches) {
    failures.push(...failuresOfBatch(batch.batchId, batch.chunks, error.cause));
  }

  // A version that breaks the dataset contract is not switched: the run stops with its summary (exit
  // 5; cron gets its JSON), readers keep the previous version.
  const refused = (error: unknown): never => {
    if (!(error instanceof DatasetContractError)) throw error;
    logger.error({ version: session.version.name }, error.message);
    const stop = { exitCode: error.exitCode, message: error.message };
    throw new RunStoppedError(error, summarize('stopped', settings, stats, { ...outcome, stop }));
  };
  // A corpus with no document (emptied, or every row rejected) never replaces the dataset.
  const finalized: FinalizedVersion =
    stats.documents === 0
      ? { switched: false, files: [], rows: 0, pruned: [] }
      : await finalizeVersion({
          dataset: session.dataset,
          version: session.version.name,
          model,
          writer,
          ...(current ? { current } : {}),
          planned: [...ledger.planned],
          owners: sizing.owners(),
          expected,
          writtenHere: commit.writtenHere,
          // The index read the row keys of the files it was built from (carried over, resumed).
          ...(index ? { readKeys: await index } : {}),
          failures,
          dims,
          // An audio file not transcribed (retries ran out) is a document missing like a batch.
          missingBatches: failedBatches.size + (audio?.failures.length ?? 0),
          keepVersions: settings.keepVersions,
          logger,
          chunks: {
            sent: Math.max(0, stats.chunks - stats.chunksReused - stats.chunksDeduplicated),
            reused: stats.chunksReused,
            deduplicated: stats.chunksDeduplicated,
          },
          manifest: (done) =>
            manifestOf(
              {
                model,
                dims,
                format: settings.outputFormat,
                input: settings.input,
                gateway: { baseUrl: client.baseUrl, emulator: settings.emulator },
                plan: { ...plan.parameters, sizing: sizingSummary(sizing, calibrationCost) },
                counts: countsOf(failures.length),
                tally,
                ...(audio ? { transcription: audio.manifest() } : {}),
              },
              done,
            ),
        }).catch(refused);
  // Chunks in _failures.jsonl make the run incomplete (exit 5) even with every batch committed: a
  // re-run sends them again (failed batches whole, chunk failures as repair batches).
  if (failures.length > 0)
    logger.warn({ failures: failures.length }, 'chunks failed (_failures.jsonl); re-run to retry them');
  return summarize(finalized.switched && failures.length === 0 ? 'done' : 'incomplete', settings, stats, {
    ...outcome,
    files: [...finalized.files],
    rows: finalized.switched ? finalized.rows : tally.rows,
    failures: failures.length,
    dataset: finalized.counts ?? versionCounts({ counts: countsOf(failures.length), tally }, tally.rows),
    version: {
      name: session.version.name,
      dir,
      current: finalized.switched,
      ...(current ? { replaces: current.name } : {}),
      ...(finalized.pruned.length > 0 ? { pruned: finalized.pruned } : {}),
    },
    ...(finalized.changes ? { changes: finalized.changes } : {}),
  });
}

/** What a run stopped by --max-cost leaves to send: counted like a dry run, against its version. */
async function remainingWork(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  dir: string,
  transcriptFolders: readonly string[],
): Promise<WorkToSend> {
  const stats = new RunStats();
  const audio = await estimatedTranscription(settings, plan, stats, transcriptFolders);
  const { toSend } = await countWorkToSend({
    settings,
    plan,
    calibration: sizing.calibration.state(),
    dirs: [dir],
    stats,
    ...(audio ? { transcribe: audio.stage } : {}),
  }).finally(() => audio?.close());
  return audio ? { ...toSend, transcription: audio.estimate() } : toSend;
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
