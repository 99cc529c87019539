/**
 * `embedpipe run`: the whole pipeline in one process. It wires the three verbs every mode shares,
 * with the in-process queue between them:
 *
 *   produce (plan − committed) ─► in-process queue ─► embed (reuse, gateway) ─► group commit ─► finalize
 *
 * The run builds the dataset's next version (output/session.ts): readers keep the current one
 * until finalize switches. Resume: batch ids are deterministic, so a re-run plans the same batches
 * and skips every batch its version holds; texts the dataset holds under any batch are reused.
 */
import { setImmediate } from 'node:timers/promises';
import { type CalibrationCost, sizingSummary } from '../chunking/calibrate.js';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import type { Batch, ChunkFailure, TranscriptionFailure } from '../domain.js';
import { CostBudget } from '../embedding/cost-budget.js';
import { BatchFailedError } from '../embedding/gateway-embedder.js';
import { knownDims } from '../embedding/vector-form.js';
import { DatasetContractError, EmbedpipeError, OutputLockedError, RunStoppedError } from '../errors.js';
import { type SwitchGate, switchGate } from '../eval/switch-gate.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { type RunSummary, summarize } from '../observability/summary.js';
import { failuresOfBatch } from '../output/batch-record.js';
import { DurableCommit } from '../output/durable-commit.js';
import { type FinalizedVersion, finalizeVersion } from '../output/finalize.js';
import { FreeSpaceGuard } from '../output/free-space.js';
import { REJECTS_FILE, sideFile } from '../output/index.js';
import { datasetDims, manifestOf, versionCounts } from '../output/manifest-of.js';
import { PlannedChunks } from '../output/planned-chunks.js';
import { replansAtSwitch, restoreReplans } from '../output/replans.js';
import type { SpillLog } from '../output/spill.js';
import { replaySpill } from '../output/spill-replay.js';
import type { VersionedDataset } from '../output/versions.js';
import { dryRun, remainingWork } from '../planning/dry-run.js';
import type { RunPlan } from '../planning/plan.js';
import { produce } from '../planning/produce.js';
import { InProcessQueue } from '../queue/in-process-queue.js';
import { runTranscription, transcriptDirs } from '../transcription/audio.js';
import { openRunContext, planRun, type RunContext } from './context.js';

export type { RunSummary } from '../observability/summary.js';

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
  const plan = await planRun(settings, deps);
  return settings.dryRun ? dryRun(settings, plan, deps.stats) : embedCorpus(settings, plan, deps);
}

async function embedCorpus(settings: RunSettings, plan: RunPlan, deps: RunDependencies): Promise<RunSummary> {
  // One signal for every reason to stop: the caller's (Ctrl-C), and the lock lost to another run.
  const stop = new AbortController();
  const onCallerAbort = () => stop.abort(deps.signal?.reason);
  if (deps.signal?.aborted) onCallerAbort();
  deps.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const budget = settings.maxCostUsd !== undefined ? new CostBudget(settings.maxCostUsd) : undefined;
  try {
    const run = await openRunContext(settings, plan, {
      ...deps,
      ...(budget ? { budget } : {}),
      onLockLost: (error) =>
        stop.abort(
          new OutputLockedError(`lost the lock of ${settings.outDir} to another run: ${error.message}`),
        ),
    });
    try {
      const stages = await openStages(run, deps, budget, stop.signal);
      try {
        return await embedInto(stages);
      } finally {
        // The files beside the dataset (the index's, the plan's chunks) are freed.
        (await run.index()?.catch(() => undefined))?.close();
        stages.expected.close();
      }
    } finally {
      await run.session.release();
    }
  } finally {
    deps.signal?.removeEventListener('abort', onCallerAbort);
  }
}

/** The stages a run's batches go through, from reuse and the gateway to the durable commit. */
interface RunStages {
  readonly run: RunContext;
  readonly deps: RunDependencies;
  readonly budget: CostBudget | undefined;
  readonly signal: AbortSignal;
  readonly spill: SpillLog;
  readonly space: FreeSpaceGuard;
  readonly commit: DurableCommit;
  readonly rejects: ReturnType<typeof sideFile>;
  /** The chunks planned (what the version must hold), on disk as they are planned. */
  readonly expected: PlannedChunks;
  readonly audio: Awaited<ReturnType<typeof runTranscription>>;
  readonly versions: Awaited<ReturnType<VersionedDataset['list']>>;
  /** Batches whose retries ran out this run: not committed, so a re-run sends them again. */
  readonly failedBatches: Map<Batch, BatchFailedError>;
}

async function openStages(
  run: RunContext,
  deps: RunDependencies,
  budget: CostBudget | undefined,
  signal: AbortSignal,
): Promise<RunStages> {
  const { session, sizing, dir, settings } = run;
  const { client, logger, stats } = deps;
  await restoreReplans(dir, session, sizing);
  // What a killed run paid for and spilled is committed first; this run spills as it goes.
  const spill = await replaySpill(session, sizing, logger);
  const space = new FreeSpaceGuard(dir, deps.minFreeBytes ?? DEFAULTS.commit.minFreeBytes);
  await space.check();
  const commit = new DurableCommit({
    writer: session.writer,
    spill,
    sizing,
    ledger: stats.ledger,
    reuse: run.reuse,
    persistCalibration: run.persistCalibration,
    groupBytes: DEFAULTS.commit.groupBytes,
    maxDelayMs: settings.commitIntervalMs,
  });
  // Audio corpora: transcribed on the way from the reader to the chunker (transcription/audio.ts).
  const versions = await session.dataset.list();
  const audio = await runTranscription(settings, run.plan, {
    client,
    logger,
    stats,
    signal,
    budget,
    dir,
    versions,
  });
  const rejects = sideFile(dir, REJECTS_FILE);
  const failedBatches = new Map<Batch, BatchFailedError>();
  const expected = new PlannedChunks(dir);
  return {
    run,
    deps,
    budget,
    signal,
    spill,
    space,
    commit,
    rejects,
    expected,
    audio,
    versions,
    failedBatches,
  };
}

/** One batch, embedded (reusing what the dataset holds) and handed to the durable commit. */
async function embedAndCommit(stages: RunStages, batch: Batch, signal: AbortSignal): Promise<void> {
  const { space, commit, run, deps } = stages;
  try {
    await space.check();
    await commit.add(batch, await run.reuse.embed(batch, signal));
  } catch (error) {
    if (!(error instanceof BatchFailedError)) throw error;
    run.sizing.release(batch.chunks);
    deps.stats.ledger.failed();
    stages.failedBatches.set(batch, error);
    deps.logger.error({ batchId: batch.batchId }, error.message);
  }
}

/**
 * Calibrates, then plans and embeds every batch the version does not hold; returns what calibration
 * cost and, when the run stopped (402, Ctrl-C, --max-cost…), why. Every batch paid for is written.
 */
async function embedBatches(
  stages: RunStages,
): Promise<{ calibrationCost: CalibrationCost; stopped?: EmbedpipeError }> {
  const { run, deps, signal, commit, spill } = stages;
  const { settings, plan, sizing, session } = run;
  const { stats } = deps;
  const queue = new InProcessQueue((batch, stop) => embedAndCommit(stages, batch, stop), {
    // With the client capping requests on the wire, a second window of batches waits at its door with
    // their requests built, so a freed slot is refilled at once.
    concurrency: deps.client.maxInFlight !== undefined ? settings.concurrency * 2 : settings.concurrency,
    // Enough ready batches that a freed handler never waits on the producer; more is only memory.
    maxWaiting: Math.ceil(settings.concurrency / 2),
  });
  const onAbort = () => queue.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  let calibrationCost: CalibrationCost = { probes: 0, requests: 0, tokens: 0, cost: 0 };
  try {
    calibrationCost = await run.calibrate(signal);
    const onReject = stages.rejects.add.bind(stages.rejects);
    const transcribe = stages.audio ? { transcribe: stages.audio.stage } : {};
    const input = {
      settings,
      plan,
      sizing,
      stats,
      committed: session.committed,
      inherited: session.inherited,
      onReject,
      ...transcribe,
      batchStarts: { dir: run.dir, ...(session.current ? { formerDir: session.current.dir } : {}) },
      // This process writes the manifest: the input is hashed as planning reads it.
      digestInput: true,
    };
    for await (const batch of produce(input, stages.expected)) {
      await queue.push(batch);
      // Planning runs as one chain of microtasks: let answers that arrived meanwhile be read first.
      await setImmediate();
    }
    await queue.drain();
    await commit.drain();
    await spill.remove();
    await run.persistCalibration();
    stats.embeddingEndedAt = Date.now();
    return { calibrationCost };
  } catch (error) {
    if (!(error instanceof EmbedpipeError)) throw error;
    return { calibrationCost, stopped: error };
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Even when the run stops (402, Ctrl-C, --max-cost), every batch already paid for is written.
    await queue.drain().catch(() => {});
    await commit.drain().catch(() => {});
    await run.persistCalibration().catch(() => {});
  }
}

type Outcome = Parameters<typeof summarize>[3];

async function embedInto(stages: RunStages): Promise<RunSummary> {
  const { run, deps } = stages;
  const { settings, plan, session, sizing, dir } = run;
  const { stats, logger } = deps;
  const { calibrationCost, stopped } = await embedBatches(stages);
  await stages.rejects.close();
  await stages.audio?.close();
  const rows = stats.ledger.dataset().rows;
  const known = knownDims(settings.vectors, plan.model.id, session.current?.manifest);
  const dims = datasetDims(stats.ledger.dataset().dims, settings.vectors.dims ?? run.embedder.dims, known);
  const pricePerToken = plan.model.pricing?.promptPerToken;
  const outcome: Outcome = {
    cost: stats.cost,
    failures: 0,
    files: [],
    rows,
    sizing: sizingSummary(sizing, calibrationCost),
    ...(pricePerToken !== undefined ? { pricePerToken } : {}),
    ...(dims ? { dims } : {}),
    version: { name: session.version.name, dir, current: false },
    ...(stages.audio ? { transcription: { model: stages.audio.model } } : {}),
  };
  if (!stopped) return finishRun(stages, outcome, dims, calibrationCost);
  logger.warn({ reason: stopped.message }, 'run stopped; the dataset still reads its previous version');
  // Over the cap: what a re-run would still send (counted like a dry run, against what is committed).
  const remaining =
    stages.budget?.exceeded === true
      ? await remainingWork(settings, plan, sizing, dir, transcriptDirs(stages.versions, dir))
      : undefined;
  const summary = summarize('stopped', settings, stats, {
    ...outcome,
    stop: { exitCode: stopped.exitCode, message: stopped.message },
    ...(remaining ? { remaining } : {}),
  });
  throw new RunStoppedError(stopped, summary);
}

/**
 * Finalizes the run's version (the contract checked, the manifest written, the switch) and returns
 * the summary; a version that breaks the contract stops the run (exit 5) with its summary.
 */
async function finishRun(
  stages: RunStages,
  outcome: Outcome,
  dims: number,
  calibrationCost: CalibrationCost,
): Promise<RunSummary> {
  const { run, deps, audio } = stages;
  const { settings, session } = run;
  const { stats, logger } = deps;
  const tally = stats.ledger.dataset();
  const failures: (ChunkFailure | TranscriptionFailure)[] = [...tally.failures, ...(audio?.failures ?? [])];
  for (const [batch, error] of stages.failedBatches) {
    failures.push(...failuresOfBatch(batch.batchId, batch.chunks, error.cause));
  }
  const counts = { documents: stats.documents, rejects: stats.rejects, failures: failures.length };
  // A version that breaks the dataset contract is not switched: the run stops with its summary (exit
  // 5; cron gets its JSON), readers keep the previous version.
  const refused = (error: unknown): never => {
    if (!(error instanceof DatasetContractError)) throw error;
    logger.error({ version: session.version.name }, error.message);
    const stop = { exitCode: error.exitCode, message: error.message };
    throw new RunStoppedError(error, summarize('stopped', settings, stats, { ...outcome, stop }));
  };
  // A corpus with no document (emptied, or every row rejected) never replaces the dataset.
  const gate = settings.switchIf
    ? switchGate(settings.switchIf, { dir: settings.outDir, client: deps.client, budget: stages.budget })
    : undefined;
  const finalized: FinalizedVersion =
    stats.documents === 0
      ? { switched: false, files: [], rows: 0, pruned: [] }
      : await finalizeRunVersion(stages, failures, counts, dims, calibrationCost, gate).catch(refused);
  // Chunks in _failures.jsonl make the run incomplete (exit 5) even with every batch committed: a
  // re-run sends them again (failed batches whole, chunk failures as repair batches).
  if (failures.length > 0)
    logger.warn({ failures: failures.length }, 'chunks failed (_failures.jsonl); re-run to retry them');
  const current = session.current;
  const complete = finalized.switched && failures.length === 0;
  const status = finalized.held ? 'held' : complete ? 'done' : 'incomplete';
  return summarize(status, settings, stats, {
    ...(gate?.verdict ? { switchIf: gate.verdict } : {}),
    ...outcome,
    files: [...finalized.files],
    rows: finalized.switched ? finalized.rows : tally.rows,
    failures: failures.length,
    dataset: finalized.counts ?? versionCounts({ counts, tally }, tally.rows),
    version: {
      name: session.version.name,
      dir: run.dir,
      current: finalized.switched,
      ...(current ? { replaces: current.name } : {}),
      ...(finalized.pruned.length > 0 ? { pruned: finalized.pruned } : {}),
    },
    ...(finalized.changes ? { changes: finalized.changes } : {}),
  });
}

/** The version checked against the plan, its manifest written, and switched to. */
async function finalizeRunVersion(
  stages: RunStages,
  failures: readonly (ChunkFailure | TranscriptionFailure)[],
  counts: { documents: number; rejects: number; failures: number },
  dims: number,
  calibrationCost: CalibrationCost,
  gate: SwitchGate | undefined,
): Promise<FinalizedVersion> {
  const { run, deps, audio, commit } = stages;
  const { settings, plan, session, sizing } = run;
  const { stats, logger, client } = deps;
  const model = plan.model.id;
  const tally = stats.ledger.dataset();
  return finalizeVersion({
    dataset: session.dataset,
    version: session.version.name,
    model,
    writer: session.writer,
    ...(session.current ? { current: session.current } : {}),
    planned: [...stats.ledger.planned],
    ...replansAtSwitch(sizing),
    expected: stages.expected,
    writtenHere: commit.writtenHere,
    replannedHere: commit.replannedHere,
    failures,
    dims,
    // An audio file not transcribed (retries ran out) is a document missing like a batch.
    missingBatches: stages.failedBatches.size + (audio?.failures.length ?? 0),
    keepVersions: settings.keepVersions,
    ...(gate ? { gate: gate.gate } : {}),
    logger,
    chunks: { sent: tally.sent, reused: tally.reused, deduplicated: tally.deduplicated },
    manifest: (done) =>
      manifestOf(
        {
          model,
          dims,
          format: settings.outputFormat,
          input: settings.input,
          ...(stats.inputRead ? { inputRead: stats.inputRead } : {}),
          gateway: { baseUrl: client.baseUrl, emulator: settings.emulator },
          plan: { ...plan.parameters, sizing: sizingSummary(sizing, calibrationCost) },
          counts,
          tally,
          ...(audio ? { transcription: audio.manifest() } : {}),
        },
        done,
      ),
  });
}
