/**
 * The gateway client as the one holder of the Retry-After wait, on an injected dispatcher (undici's
 * MockAgent) and an injected fake clock: a retry after a 429 goes again at once and the client holds
 * it exactly as long as asked; a wait another client publishes to the store closes this one's gate,
 * and its own publication does not make it wait twice; a wait past the cap fails at once; aborting
 * stops the wait, and a paid request already sent finishes.
 */
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayClient, type GatewayClientOptions } from '../../src/gateway/client.js';
import { RateLimitError, RetryAfterTooLongError } from '../../src/gateway/errors.js';
import {
  type GateKey,
  MemoryRetryAfterStore,
  type RetryAfterListener,
  type RetryAfterStore,
} from '../../src/gateway/retry-after-store.js';
import { withRetry } from '../../src/retry/retry.js';
import { FakeTime } from '../retry/fake-time.js';

const ORIGIN = 'http://gw.localhost';
const MODELS = JSON.stringify({ data: [{ id: 'emu/embed-small' }] });
/** Turns of the event loop a mocked answer may take, before the fake clock moves on. */
const TURNS = 20;

let agent: MockAgent;
const clients: GatewayClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await agent?.close();
});

/** Scripted answers to GET /v1/embeddings/models, each arrival recorded by the fake clock. */
function script(time: FakeTime, ...answers: Array<{ status: number; headers?: Record<string, string> }>) {
  agent = new MockAgent();
  agent.disableNetConnect();
  const arrivals: number[] = [];
  const pool = agent.get(ORIGIN);
  for (const { status, headers = {} } of answers) {
    pool.intercept({ path: '/v1/embeddings/models', method: 'GET' }).reply(() => {
      arrivals.push(time.current);
      const data =
        status === 200 ? MODELS : JSON.stringify({ error: { code: status, message: 'slow down' } });
      return { statusCode: status, data, responseOptions: { headers } };
    });
  }
  return arrivals;
}

function clientOn(time: FakeTime, extra: Partial<GatewayClientOptions> = {}): GatewayClient {
  const client = new GatewayClient({
    baseUrl: `${ORIGIN}/v1`,
    apiKey: 'sk-test-retry-after',
    dispatcher: agent,
    clock: { now: time.now, sleep: time.sleep },
    ...extra,
  });
  clients.push(client);
  return client;
}

/** A store that records what it is given and lets the test publish as another worker would. */
class RecordingStore implements RetryAfterStore {
  readonly published: Array<[GateKey, number]> = [];
  readonly #listeners = new Set<RetryAfterListener>();
  publish(key: GateKey, untilMs: number): void {
    this.published.push([key, untilMs]);
  }
  subscribe(listener: RetryAfterListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  /** Another worker's wait arriving. */
  deliver(key: GateKey, untilMs: number): void {
    for (const listener of this.#listeners) listener(key, untilMs);
  }
}

const policy = (time: FakeTime) => ({ sleep: time.sleep, random: () => 0.99, baseDelayMs: 100 });

describe('the client holds the Retry-After wait', () => {
  it('holds a retry at the gate exactly as long as asked, on its clock; withRetry adds no wait', async () => {
    const time = new FakeTime();
    const arrivals = script(
      time,
      { status: 429, headers: { 'retry-after-ms': '2500' } },
      { status: 429, headers: { 'retry-after': '0' } },
      { status: 200 },
    );
    const client = clientOn(time);
    const t0 = time.current;
    const models = await time.settle(
      withRetry(() => client.listEmbeddingModels(), { ...policy(time), maxAttempts: 1 }),
      { turns: TURNS },
    );
    expect(models.map((m) => m.id)).toEqual(['emu/embed-small']);
    // Neither 429 spent the one attempt; the only wait is the gate's, exactly 2.5 s, no jitter.
    expect(arrivals).toEqual([t0, t0 + 2500, t0 + 2500]);
    expect(time.sleeps).toEqual([2500]);
    expect(client.retryAfterGate.isOpen).toBe(true);
  });

  it('shares its waits through the store, and closes its gate for the waits others publish', async () => {
    const time = new FakeTime();
    const arrivals = script(time, { status: 429, headers: { 'retry-after-ms': '1000' } }, { status: 200 });
    const store = new RecordingStore();
    const client = clientOn(time, { retryAfterStore: store });
    const t0 = time.current;
    await time.settle(
      withRetry(() => client.listEmbeddingModels(), policy(time)),
      { turns: TURNS },
    );
    // Its own wait is published once, and not waited twice: the retry left at the instant asked.
    expect(store.published).toEqual([['api', t0 + 1000]]);
    expect(arrivals).toEqual([t0, t0 + 1000]);

    // Another worker's 429: this client's next request waits for it, though it saw no 429 itself.
    script(time, { status: 200 });
    const second = clientOn(time, { retryAfterStore: store });
    const t1 = time.current;
    store.deliver('api', t1 + 4000);
    expect(second.retryAfterGate.openAt).toBe(t1 + 4000);
    await time.settle(second.listEmbeddingModels(), { turns: TURNS });
    expect(time.current).toBe(t1 + 4000);
  });

  it('two clients given one in-memory store wait out each other’s 429', async () => {
    const time = new FakeTime();
    const arrivals = script(time, { status: 429, headers: { 'retry-after-ms': '700' } }, { status: 200 });
    const store = new MemoryRetryAfterStore();
    const a = clientOn(time, { retryAfterStore: store });
    const b = clientOn(time, { retryAfterStore: store });
    const t0 = time.current;
    await expect(time.settle(a.listEmbeddingModels(), { turns: TURNS })).rejects.toBeInstanceOf(
      RateLimitError,
    );
    expect(b.retryAfterGate.openAt).toBe(t0 + 700);
    await time.settle(b.listEmbeddingModels(), { turns: TURNS });
    expect(arrivals).toEqual([t0, t0 + 700]);
  });

  it('fails at once past --max-retry-after: the answer retryLater, later calls refused unsent', async () => {
    const time = new FakeTime();
    const arrivals = script(time, { status: 429, headers: { 'retry-after': '3600' } });
    const events: unknown[] = [];
    const client = clientOn(time, { maxRetryAfterMs: 300_000, onRetryAfter: (e) => events.push(e) });
    const first = await time
      .settle(
        withRetry(() => client.listEmbeddingModels(), policy(time)),
        { turns: TURNS },
      )
      .catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RateLimitError);
    expect(first).toMatchObject({ retryable: true, retryLater: true, retryAfterMs: 3_600_000, attempts: 1 });
    const later = await time
      .settle(
        withRetry(() => client.listEmbeddingModels(), policy(time)),
        { turns: TURNS },
      )
      .catch((e: unknown) => e);
    expect(later).toBeInstanceOf(RetryAfterTooLongError);
    expect(later).toMatchObject({ retryable: true, retryLater: true, status: 429 });
    expect((later as Error).message).toMatch(/--max-retry-after \(300 s\)/);
    expect(arrivals).toHaveLength(1);
    expect(time.sleeps).toEqual([]);
    expect(events).toMatchObject([{ status: 429, retryAfterMs: 3_600_000, pastCap: true, newWait: true }]);
  });

  it('holds a back-off its caller chose without publishing it', async () => {
    const time = new FakeTime();
    script(time, { status: 200 });
    const store = new RecordingStore();
    const client = clientOn(time, { retryAfterStore: store });
    const t0 = time.current;
    client.backOff(1500);
    await time.settle(client.listEmbeddingModels(), { turns: TURNS });
    expect(time.current).toBe(t0 + 1500);
    expect(store.published).toEqual([]);
  });
});

describe('aborting', () => {
  it('stops a call waiting at the gate, before anything is sent', async () => {
    const time = new FakeTime();
    const arrivals = script(time, { status: 429, headers: { 'retry-after': '60' } }, { status: 200 });
    const client = clientOn(time);
    const controller = new AbortController();
    const call = withRetry(
      () => client.listEmbeddingModels({ signal: controller.signal, letRequestFinish: true }),
      {
        ...policy(time),
        signal: controller.signal,
        letAttemptFinish: true,
        onRetry: () => setImmediate(() => controller.abort('stop')),
      },
    );
    await expect(time.settle(call, { turns: TURNS })).rejects.toBe('stop');
    expect(arrivals).toHaveLength(1);
  });

  it('lets a paid request already sent finish (letRequestFinish), and returns its answer', async () => {
    agent = new MockAgent();
    agent.disableNetConnect();
    const controller = new AbortController();
    agent
      .get(ORIGIN)
      .intercept({ path: '/v1/embeddings/models', method: 'GET' })
      .reply(() => {
        // The run stops while the request is on the wire.
        controller.abort('stop');
        return { statusCode: 200, data: MODELS };
      })
      .delay(30);
    const client = clientOn(new FakeTime());
    const paid = withRetry(
      () => client.listEmbeddingModels({ signal: controller.signal, letRequestFinish: true }),
      { signal: controller.signal, letAttemptFinish: true },
    );
    await expect(paid).resolves.toMatchObject([{ id: 'emu/embed-small' }]);
    // Without it, the same abort cancels the request.
    const cancelled = new AbortController();
    agent
      .get(ORIGIN)
      .intercept({ path: '/v1/embeddings/models', method: 'GET' })
      .reply(() => {
        cancelled.abort('stop');
        return { statusCode: 200, data: MODELS };
      })
      .delay(30);
    await expect(client.listEmbeddingModels({ signal: cancelled.signal })).rejects.toBe('stop');
  });
});

describe('an injected dispatcher', () => {
  it('is the caller’s: closing the client leaves it open', async () => {
    const time = new FakeTime();
    script(time, { status: 200 }, { status: 200 });
    const first = clientOn(time);
    await time.settle(first.listEmbeddingModels(), { turns: TURNS });
    await first.close();
    const second = clientOn(time);
    await expect(time.settle(second.listEmbeddingModels(), { turns: TURNS })).resolves.toHaveLength(1);
  });
});
