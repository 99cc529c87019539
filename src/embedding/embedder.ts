/** The gateway embedder of a run, built the same way by `run`, `enqueue` (calibration) and `worker`. */

import type { ProviderSettings } from '../config/settings.js';
import type { GatewayClient } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import type { ChunkSizing } from './chunk-sizing.js';
import type { CostBudget } from './cost-budget.js';
import { EncodingPolicy } from './encoding-policy.js';
import { GatewayEmbedder } from './gateway-embedder.js';
import { ProviderRouter } from './provider-router.js';
import type { SendPoolLimits } from './send-pool.js';

export interface EmbedderSettings {
  readonly provider: ProviderSettings;
  readonly encodingFormat: 'base64' | 'float';
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  /** Each request's deadline, when the run's differs from its client's (a worker's client serves many runs). */
  readonly timeoutMs?: number | undefined;
  /** Batches with a few texts left after reuse share requests (`run` only: a worker's are jobs). */
  readonly pool?: SendPoolLimits | undefined;
}

export interface EmbedderDependencies {
  readonly client: GatewayClient;
  readonly model: string;
  readonly sizing: ChunkSizing;
  readonly stats: RunStats;
  readonly logger: Logger;
  /** USD per prompt token, from the model's listing. */
  readonly pricePerToken?: number | undefined;
  readonly budget?: CostBudget | undefined;
}

export function embedderFor(settings: EmbedderSettings, deps: EmbedderDependencies): GatewayEmbedder {
  return new GatewayEmbedder({
    client: deps.client,
    model: deps.model,
    router: new ProviderRouter(settings.provider),
    encoding: new EncodingPolicy(settings.encodingFormat),
    retry: settings.retry,
    ...(settings.timeoutMs !== undefined ? { timeoutMs: settings.timeoutMs } : {}),
    sizing: deps.sizing,
    stats: deps.stats,
    logger: deps.logger,
    ...(deps.pricePerToken !== undefined ? { pricePerToken: deps.pricePerToken } : {}),
    ...(deps.budget ? { budget: deps.budget } : {}),
  });
}
