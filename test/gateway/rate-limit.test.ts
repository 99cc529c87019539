/**
 * The client under rate limits, against the emulator over real HTTP: Retry-After held for the whole
 * window by every request (zero violations), a 429 storm adding no abort listeners, the adaptive
 * window shrinking to what the gateway accepts, and a Retry-After past the cap failing at once.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { EMULATOR_API_KEY, type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { GatewayClient, RateLimitError, type RetryAfterEvent } from '../../src/gateway/index.js';
import { withRetry } from '../../src/retry/index.js';

const MODEL = 'emu/embed-small';
let emulator: RunningEmulator | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  await client?.close();
  await emulator?.close();
  client = undefined;
  emulator = undefined;
});

function embedAll(c: GatewayClient, count: number, signal?: AbortSignal, maxAttempts = 8) {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      // The client holds every retry at its key's gate: withRetry keeps no wait of its own.
      withRetry(
        () => c.embeddings({ model: MODEL, input: [`text number ${i}`] }, { ...(signal && { signal }) }),
        {
          maxAttempts,
          baseDelayMs: 10,
          maxDelayMs: 50,
          ...(signal && { signal }),
        },
      ),
    ),
  );
}

describe('Retry-After under fault injection', () => {
  it('holds every request back for the whole window: the emulator records zero violations', async () => {
    emulator = await startEmulator({
      recordRequests: false,
      faults: {
        seed: 11,
        probabilities: { 429: 0.2, 500: 0.05 },
        retryAfterSeconds: 1,
        latencyMs: { min: 5, max: 60 },
      },
    });
    client = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY, maxInFlight: 8 });
    // A busy thread, as a run's is (decoding, Parquet encoding): a 429 waits in its socket while
    // the emulator's clock runs, so any request let out in the same turn as that 429 is a violation.
    const hog = setInterval(() => {
      const until = performance.now() + 150;
      while (performance.now() < until);
    }, 200);
    const results = await embedAll(client, 60).finally(() => clearInterval(hog));
    expect(results).toHaveLength(60);
    const stats = emulator.stats;
    expect(stats.faults['429']).toBeGreaterThan(5);
    expect(stats.retryAfterViolations).toEqual({});
  }, 60_000);
});

describe('a 429 storm', () => {
  it('adds at most one abort listener to the run signal, and none once it is over', async () => {
    emulator = await startEmulator({
      recordRequests: false,
      faults: { seed: 3, probabilities: { 429: 0.5 }, retryAfterSeconds: 0.2, latencyMs: 5 },
      retryAfterFormat: 'ms',
    });
    client = new GatewayClient({ baseUrl: emulator.baseUrl, apiKey: EMULATOR_API_KEY, maxInFlight: 32 });
    const controller = new AbortController();
    let most = 0;
    const sampler = setInterval(() => {
      most = Math.max(most, getEventListeners(controller.signal, 'abort').length);
    }, 5);
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      await embedAll(client, 64, controller.signal, 100);
    } finally {
      clearInterval(sampler);
      process.off('warning', onWarning);
    }
    expect(emulator.stats.faults['429']).toBeGreaterThan(20);
    expect(most).toBeLessThanOrEqual(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    // Only ours: the in-process emulator's own latency pauses (server.ts) warn on its signal.
    const ours = warnings.filter((w) => (w as Error & { target?: unknown }).target === controller.signal);
    expect(ours).toEqual([]);
  }, 60_000);
});

describe('the adaptive window', () => {
  it('shrinks to what a key may have in flight, and no 429 spends an attempt', async () => {
    emulator = await startEmulator({
      recordRequests: false,
      keys: [{ key: EMULATOR_API_KEY, name: 'default', limits: { maxInFlight: 2 } }],
      faults: { latencyMs: 40 },
      retryAfterFormat: 'ms',
    });
    const events: RetryAfterEvent[] = [];
    client = new GatewayClient({
      baseUrl: emulator.baseUrl,
      apiKey: EMULATOR_API_KEY,
      maxInFlight: 16,
      onRetryAfter: (event) => events.push(event),
    });
    // maxAttempts 1: any 429 spending an attempt would fail the call.
    const results = await embedAll(client, 40, undefined, 1);
    expect(results).toHaveLength(40);
    const refused = emulator.stats.byStatus['429'] ?? 0;
    // A fixed window of 16 would meet ~14 refusals per round of 2 answers.
    expect(refused).toBeLessThan(40);
    expect(client.window).toBeLessThanOrEqual(4);
    expect(events.length).toBe(refused);
    expect(emulator.stats.retryAfterViolations).toEqual({});
  }, 60_000);
});

describe('--max-retry-after', () => {
  it('fails at once, with a retryable 429, when the gateway asks for longer than the cap', async () => {
    emulator = await startEmulator({
      recordRequests: false,
      faults: { script: ['429'], retryAfterSeconds: 3600 },
    });
    const events: RetryAfterEvent[] = [];
    client = new GatewayClient({
      baseUrl: emulator.baseUrl,
      apiKey: EMULATOR_API_KEY,
      maxInFlight: 4,
      maxRetryAfterMs: 300_000,
      onRetryAfter: (event) => events.push(event),
    });
    const started = Date.now();
    const first = embedAll(client, 1);
    await expect(first).rejects.toBeInstanceOf(RateLimitError);
    // A request sent afterwards does not wait an hour either: the gate refuses it at once.
    const error = await embedAll(client, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryable).toBe(true);
    expect((error as RateLimitError).message).toMatch(/--max-retry-after/);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(emulator.stats.requests).toBe(1);
    expect(events).toMatchObject([{ status: 429, retryAfterMs: 3_600_000, pastCap: true }]);
  }, 30_000);
});
