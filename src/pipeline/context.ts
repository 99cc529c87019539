/**
 * What `run` and `enqueue` share before their first batch: the model and its plan, the version's
 * output session (locked), the sizing restored from the version's calibration, and the embedder.
 * (A worker joins a run from its spec in Redis instead: work.ts.)
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
import { embedderFor } from '../embedding/embedder.js';
import type { GatewayEmbedder } from '../embedding/gateway-embedder.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { type OutputSession, openOutput } from '../output/session.js';
import { findModel, makePlan, type RunPlan } from '../planning/plan.js';
import { sizingFor } from '../planning/to-send.js';

export interface ContextDependencies {
  readonly client: GatewayClient;
  readonly logger: Logger;
  readonly stats: RunStats;
}

export interface RunContext {
  readonly settings: RunSettings;
  readonly plan: RunPlan;
  readonly session: OutputSession;
  /** The version folder this run builds. */
  readonly dir: string;
  readonly sizing: RunSizing;
  readonly embedder: GatewayEmbedder;
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
    const embedder = embedderFor(settings, {
      client,
      model,
      sizing,
      stats,
      logger,
      pricePerToken,
      ...(deps.budget ? { budget: deps.budget } : {}),
    });
    let persisting: Promise<void> = Promise.resolve();
    const persistCalibration = (): Promise<void> => {
      if (sizing.calibration.takeChange()) persisting = persisting.then(() => writeCalibration(dir, sizing));
      return persisting;
    };
    const calibrate = async (signal: AbortSignal) => {
      const cost = await calibrateRun(settings, sizing, embedder, logger, signal, persistCalibration);
      await persistCalibration();
      return cost;
    };
    return { settings, plan, session, dir, sizing, embedder, persistCalibration, calibrate };
  } catch (error) {
    await session.release();
    throw error;
  }
}
