/** The GatewayEmbedder as the embedding tests build it, and the emulator they build it against. */
import { afterAll, beforeAll } from 'vitest';
import type { ProviderSettings } from '../../src/config/settings.js';
import type { ChunkSizing } from '../../src/embedding/chunk-sizing.js';
import type { CostBudget } from '../../src/embedding/cost-budget.js';
import { EncodingPolicy } from '../../src/embedding/encoding-policy.js';
import { GatewayEmbedder } from '../../src/embedding/gateway-embedder.js';
import { ProviderRouter } from '../../src/embedding/provider-router.js';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { GatewayClient } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { RunStats } from '../../src/observability/stats.js';
import { sizingFor } from './sizing.js';

export interface EmulatorWithClient {
  readonly emulator: RunningEmulator;
  readonly client: GatewayClient;
}

/**
 * The emulator over HTTP and a client of it with the emulator's key, for the test file that calls
 * this at its top level: started before its tests, closed after them. Read both once tests run.
 */
export function useEmulatorClient(): EmulatorWithClient {
  let emulator: RunningEmulator | undefined;
  let client: GatewayClient | undefined;
  beforeAll(async () => {
    emulator = await startEmulator();
    client = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY });
  });
  afterAll(async () => {
    await client?.close();
    await emulator?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the emulator is started in beforeAll: use it in a test');
    return value;
  };
  return {
    get emulator() {
      return started(emulator);
    },
    get client() {
      return started(client);
    },
  };
}

export interface TestEmbedderOptions {
  /** Default emu/embed-small. */
  readonly model?: string;
  /** Default {} (no provider preferences). */
  readonly provider?: ProviderSettings;
  /** Default base64. */
  readonly encoding?: 'base64' | 'float';
  /** Default 2. Retries wait baseDelayMs 1 and at most `maxDelayMs`. */
  readonly maxAttempts?: number;
  /** Default 2. */
  readonly maxDelayMs?: number;
  /** Default `sizingFor(model, 7000, 0.3)`. */
  readonly sizing?: ChunkSizing;
  /** Default none. */
  readonly pricePerToken?: number;
  /** Default none. */
  readonly budget?: CostBudget;
}

/** A GatewayEmbedder over `client` with a silent logger and fast retries, and the RunStats it counts into. */
export function testEmbedder(
  client: GatewayClient,
  options: TestEmbedderOptions = {},
): { instance: GatewayEmbedder; stats: RunStats } {
  const model = options.model ?? 'emu/embed-small';
  const stats = new RunStats();
  const instance = new GatewayEmbedder({
    client,
    model,
    router: new ProviderRouter(options.provider ?? {}),
    encoding: new EncodingPolicy(options.encoding ?? 'base64'),
    retry: { maxAttempts: options.maxAttempts ?? 2, baseDelayMs: 1, maxDelayMs: options.maxDelayMs ?? 2 },
    sizing: options.sizing ?? sizingFor(model, 7000, 0.3),
    stats,
    logger: silentLogger(),
    ...(options.pricePerToken === undefined ? {} : { pricePerToken: options.pricePerToken }),
    ...(options.budget === undefined ? {} : { budget: options.budget }),
  });
  return { instance, stats };
}
