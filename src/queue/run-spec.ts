/**
 * A distributed run's spec (what every worker needs to know, stored once by the producer) and the
 * chunk sizing a worker restores from it. Apart from distributed.ts so that `run`, which shares
 * the run context with workers, does not load the Redis client.
 */
import type { CalibrationState } from '../chunking/calibration.js';
import { RunSizing } from '../chunking/run-sizing.js';
import type { ProviderSettings } from '../config/settings.js';

/** What every worker needs to know about a run, stored once by the producer (no secrets). */
export interface RunSpec {
  readonly runId: string;
  /** The dataset's link (`--out`) and the version the run builds. */
  readonly outDir: string;
  readonly versionDir: string;
  readonly versionName: string;
  readonly model: string;
  readonly planKey: string;
  readonly format: 'parquet' | 'arrow';
  readonly encodingFormat: 'base64' | 'float';
  readonly provider: ProviderSettings;
  readonly retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
  /**
   * The run's per-request deadline (`gateway.timeoutMs`): a worker's client serves every run, so it
   * is applied per call. Absent in specs of older producers: the client's default.
   */
  readonly timeoutMs?: number;
  readonly overlap: number;
  readonly contextLength?: number;
  readonly budgetTokens: number;
  readonly pricePerToken?: number;
  /** Dims of the version it replaces (same model), so a worker refuses vectors of other dims. */
  readonly dims?: number;
  /** Data files linked from the current version: texts they hold are reused, not sent. */
  readonly linkedFiles: readonly string[];
  readonly keepVersions: number;
  readonly input: string;
  readonly createdAt: string;
}

/** The producer's chunk sizing, as a worker restores it from the spec and the version's calibration. */
export function sizingOfSpec(spec: RunSpec, calibration: CalibrationState | undefined): RunSizing {
  return RunSizing.restore(
    {
      model: spec.model,
      budgetTokens: spec.budgetTokens,
      contextLength: spec.contextLength,
      overlapTokens: spec.overlap,
    },
    calibration,
  );
}
