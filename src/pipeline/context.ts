/**
 * What `run`, `enqueue` and `worker` share before their first batch. `run` and `enqueue` open the
 * version: the model and its plan, the output session (locked), the sizing restored from the
 * version's calibration, and the embedding stage. A worker joins a run from its spec in Redis: the
 * version's writer, the producer's sizing, and the same embedding stage.
 */
import {
  type CalibrationCost,
  calibrateRun,
  readCalibration,
  writeCalibration,
} from '../chunking/calibrate.js';
import type { RunSizing } from '../chunking/run-sizing.js';
import type { RunSettings } from '../config/settings.js';
import type { CostBudget } from '../embedding/cost-budget.js';
import { type EmbedderDependencies, type EmbedderSettings, embedderFor } from '../embedding/embedder.js';
import type { GatewayEmbedder } from '../embedding/gateway-embedder.js';
import { ReusingEmbedder } from '../embedding/reuse.js';
import { sendPoolLimits } from '../embedding/send-pool.js';
import { formOfPlanKey } from '../embedding/vector-form.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import type { DatasetWriter, OutputFormat } from '../output/index.js';
import { type OutputSession, openOutput, versionWriter } from '../output/session.js';
import { VectorIndex } from '../output/vector-index.js';
import { findModel, makePlan, type RunPlan } from '../planning/plan.js';
import { sizingFor } from '../planning/to-send.js';
import { type RunSpec, sizingOfSpec } from '../queue/run-spec.js';

export interface ContextDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
}

/** The embedder of a version, and around it the reuse of the vectors the dataset holds. */
export interface EmbeddingStage {
  readonly embedder: GatewayEmbedder;
  readonly reuse: ReusingEmbedder;
  /** The index of the version's vectors, once reuse needed it (finalize reuses its row keys). */
  index(): Promise<VectorIndex> | undefined;
}

export interface RunContext extends EmbeddingStage {
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly session: OutputSession;
  /** The version folder this run builds. */
  readonly dir: string;
  readonly sizing: RunSizing;
  /**
   * Writes the calibration when it changed since the last write. Writes are chained in order, so a
   * part is never written before the calibration that planned the documents after it.
   */
  persistCalibration(): Promise<void>;
  /** The calibration probes (a dataset's first run), persisted; what they cost. */
  calibrate(signal: AbortSignal): Promise<CalibrationCost>;
}

/** The model looked up at the gateway, and the plan of the corpus for it. */
export async function planRun(settings: RunSettings, deps: ContextDependencies): Promise<RunPlan> {
  const model = await findModel(deps.client, settings.model);
  const plan = makePlan(settings, model);
  deps.logger.info(
    { model: model.id, contextLength: model.contextLength, budgetTokens: plan.budgetTokens },
    'planning',
  );
  return plan;
}

/** Opens (and locks) the version the run builds; the caller releases `session`. */
export async function openRunContext(
  settings: RunSettings,
  plan: RunPlan,
  deps: ContextDependencies & {
    readonly budget?: CostBudget;
    readonly onLockLost: (error: Error) => void;
  },
): Promise<RunContext> {
  const { client, logger, stats } = deps;
  const model = plan.model.id;
  const session = await openOutput({
    outDir: settings.outDir,
    model,
    planKey: plan.key,
    format: settings.outputFormat,
    force: settings.force,
    logger,
    onLockLost: deps.onLockLost,
  });
  const dir = session.writer.dir;
  try {
    const sizing = sizingFor(settings, plan, await readCalibration(dir));
    const pricePerToken = plan.model.pricing?.promptPerToken;
    const stage = embeddingStage(
      { ...settings, pool: sendPoolLimits(settings) },
      { client, model, sizing, stats, logger, pricePerToken, budget: deps.budget },
      {
        dir,
        // Read when reuse first needs the index: after a killed run's spill was committed.
        files: () => [...new Set(session.fileOf.values())],
        format: settings.outputFormat,
        dims: settings.vectors.dims,
      },
    );
    let persisting: Promise<void> = Promise.resolve();
    const persistCalibration = (): Promise<void> => {
      if (sizing.calibration.takeChange()) persisting = persisting.then(() => writeCalibration(dir, sizing));
      return persisting;
    };
    const calibrate = async (signal: AbortSignal) => {
      const cost = await calibrateRun(settings, sizing, stage.embedder, logger, signal, persistCalibration);
      await persistCalibration();
      return cost;
    };
    return { ...stage, settings, plan, session, dir, sizing, persistCalibration, calibrate };
  } catch (error) {
    await session.release();
    throw error;
  }
}

/** What a worker keeps per run, built on the run's first job from its spec. */
export interface JoinedRun extends EmbeddingStage {
  readonly spec: RunSpec;
  readonly writer: DatasetWriter;
}

/** A worker joins a run: the run's writer, the producer's sizing, the embedding stage. */
export async function joinRunContext(spec: RunSpec, deps: ContextDependencies): Promise<JoinedRun> {
  const writer = versionWriter({
    dir: spec.versionDir,
    format: spec.format,
    model: spec.model,
    planKey: spec.planKey,
    ...(spec.dims ? { dims: spec.dims } : {}),
  });
  // The producer's calibration; a worker learns from its own answers too, but never re-plans a
  // document (its chunks are in other jobs): a chunk the gateway cut is a failure, never stored.
  const sizing = sizingOfSpec(spec, await readCalibration(spec.versionDir));
  const stage = embeddingStage(
    spec,
    { ...deps, model: spec.model, sizing, pricePerToken: spec.pricePerToken },
    {
      dir: spec.versionDir,
      files: () => spec.linkedFiles,
      format: spec.format,
      dims: formOfPlanKey(spec.planKey).dims,
    },
  );
  return { ...stage, spec, writer };
}

/** Where reuse finds the vectors a version holds. */
interface VectorSource {
  readonly dir: string;
  readonly files: () => readonly string[];
  readonly format: OutputFormat;
  /** `--dims`: the dimensions kept of every vector (undefined: all of them). */
  readonly dims: number | undefined;
}

function embeddingStage(
  settings: EmbedderSettings,
  deps: EmbedderDependencies,
  source: VectorSource,
): EmbeddingStage {
  const embedder = embedderFor(settings, deps);
  let built: Promise<VectorIndex> | undefined;
  const index = (): Promise<VectorIndex> =>
    (built ??= VectorIndex.build(source.dir, source.files(), source.format));
  const { sizing, stats } = deps;
  const { dims } = source;
  const reuse = new ReusingEmbedder({ embedder, sizing, stats, index, dims, pool: settings.pool });
  return { embedder, reuse, index: () => built };
}
