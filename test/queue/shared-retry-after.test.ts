import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RetryAfterTooLongError } from '../../src/gateway/errors.js';
import { type RetryAfterGate, RetryAfterGates } from '../../src/gateway/retry-after-gate.js';
import {
  RetryAfterSharing,
  SharedRetryAfter,
  type SharedRetryAfterOptions,
} from '../../src/queue/shared-retry-after.js';
import { type RedisServer, startRedisServer } from '../helpers/redis-server.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer({ appendonly: false });
});
afterAll(async () => {
  await server?.stop();
});

const opened: SharedRetryAfter[] = [];
const clients: RetryAfterGates[] = [];
afterEach(async () => {
  for (const gates of clients.splice(0)) gates.close();
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

let queues = 0;
/**
 * A worker of one run: its gateway client's gates (what GatewayClient holds), with the run's wait in
 * Redis as their store. `gate` is the API key's.
 */
async function worker(
  queue: string,
  extra: Partial<SharedRetryAfterOptions> = {},
  maxWaitMs = Number.POSITIVE_INFINITY,
): Promise<{ gate: RetryAfterGate; gates: RetryAfterGates; shared: SharedRetryAfter }> {
  const shared = await SharedRetryAfter.start({ redis: server.url, queue, ...extra });
  opened.push(shared);
  const gates = new RetryAfterGates({ maxWaitMs, store: shared });
  clients.push(gates);
  return { gate: gates.gate('api'), gates, shared };
}

/** Resolves with the ms it took until `check` holds, polling on every turn of the event loop. */
async function msUntil(check: () => boolean, timeoutMs = 1_000): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error('condition never held');
    await new Promise((resolve) => setImmediate(resolve));
  }
  return performance.now() - start;
}

describe('SharedRetryAfter', () => {
  it("closes every worker's gate when one publishes, at once (pub/sub, not polling)", async () => {
    const queue = `q${++queues}`;
    const a = await worker(queue);
    const b = await worker(queue);
    expect(b.gate.isOpen).toBe(true);

    const until = Date.now() + 2_000;
    a.gate.closeFor(2_000); // what A's client did on the 429
    const left = await a.shared.publish('api', until);
    expect(left).toBeGreaterThan(1_950);
    expect(left).toBeLessThanOrEqual(2_000);

    // Bounds wide enough for a loaded 2-core machine running the whole suite; polling would be seconds.
    expect(await msUntil(() => !b.gate.isOpen)).toBeLessThan(250);
    // Same instant up to the delivery latency (and never earlier than A's, beyond rounding).
    expect(b.gate.openAt).toBeGreaterThanOrEqual(until - 5);
    expect(b.gate.openAt).toBeLessThan(until + 250);
    // A skips its own echo: its gate is not pushed later by the round trip.
    expect(a.gate.openAt).toBeLessThan(until + 2);
  });

  it('stores the wait under the queue prefix, expiring with it', async () => {
    const queue = `q${++queues}`;
    const a = await worker(queue, { prefix: 'custom' });
    expect(a.shared.key).toBe(`custom:${queue}:retry-after`);
    await a.shared.publish('api', Date.now() + 1_500);
    const redis = new Redis(server.url);
    const [value, ttl, [seconds, micros]] = await Promise.all([
      redis.get(a.shared.key),
      redis.pttl(a.shared.key),
      redis.time(),
    ]);
    redis.disconnect();
    const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    // The value is the end instant by Redis's clock; the expiry counts down to it.
    expect(Number(value) - redisNow).toBeGreaterThan(1_400);
    expect(Math.abs(Number(value) - redisNow - ttl)).toBeLessThan(5);
  });

  it('makes a worker that joins during a wait wait for what remains', async () => {
    const queue = `q${++queues}`;
    const a = await worker(queue);
    await a.shared.publish('api', Date.now() + 1_000);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const c = await worker(queue);
    expect(c.gate.isOpen).toBe(false);
    const remaining = c.gate.openAt - Date.now();
    expect(remaining).toBeGreaterThan(600);
    expect(remaining).toBeLessThan(720);
    expect(await c.shared.remainingMs()).toBeGreaterThan(600);

    // And once it is over, nothing is left to wait for.
    const d = await worker(`q${++queues}`);
    expect(d.gate.isOpen).toBe(true);
    expect(await d.shared.remainingMs()).toBe(0);
  });

  it('never shortens a wait: a shorter publish leaves the longer one, and learns it', async () => {
    const queue = `q${++queues}`;
    const a = await worker(queue);
    const b = await worker(queue);
    const c = await worker(queue);

    await a.shared.publish('api', Date.now() + 3_000);
    await msUntil(() => !c.gate.isOpen);
    const longUntil = c.gate.openAt;

    // B saw a 429 asking for less: the run's wait stays, B's gate takes the longer one too.
    const left = await b.shared.publish('api', Date.now() + 500);
    expect(left).toBeGreaterThan(2_800);
    expect(b.gate.openAt - Date.now()).toBeGreaterThan(2_800);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(c.gate.openAt).toBe(longUntil); // nothing was published
    expect(await a.shared.remainingMs()).toBeGreaterThan(2_800);

    // A longer one extends it for everyone.
    await b.shared.publish('api', Date.now() + 5_000);
    await msUntil(() => c.gate.openAt > longUntil + 1_500);
    expect(await c.shared.remainingMs()).toBeGreaterThan(4_800);
  });

  it("fails a shared wait past the client's cap with the client's own error", async () => {
    const queue = `q${++queues}`;
    const a = await worker(queue);
    const b = await worker(queue, {}, 1_000);
    const plain = await worker(queue);
    await a.shared.publish('api', Date.now() + 60_000);
    await msUntil(() => !b.gate.isOpen && !plain.gate.isOpen);
    // As a local wait past --max-retry-after would: a retryable 429, left for a re-run.
    const refused = await b.gates.waitUntilOpen('api').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RetryAfterTooLongError);
    expect(refused).toMatchObject({ retryable: true, retryLater: true, status: 429 });
    expect((refused as Error).message).toMatch(/wait until .*--max-retry-after/);
    await expect(plain.gate.waitUntilOpen(undefined, 1_000)).rejects.toBeInstanceOf(RetryAfterTooLongError);
  });

  it('ignores other runs and publishes nothing for a wait already over', async () => {
    const a = await worker(`q${++queues}`);
    const other = await worker(`q${++queues}`);
    await a.shared.publish('api', Date.now() + 1_000);
    expect(await a.shared.publish('api', Date.now() - 10)).toBeGreaterThan(900);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(other.gate.isOpen).toBe(true);
  });

  it('reads the wait again after a reconnect (messages sent meanwhile are lost)', async () => {
    const queue = `q${++queues}`;
    const b = await worker(queue);
    const a = await worker(queue);
    // Drop the subscriber connections from the server side; store a wait while they reconnect.
    await killSubscribers();
    await a.shared.publish('api', Date.now() + 2_000);
    await msUntil(() => !b.gate.isOpen, 3_000);
    expect(b.gate.openAt - Date.now()).toBeGreaterThan(1_000);
  });

  it('closes cleanly while reconnecting (no unhandled rejection)', async () => {
    const errors: Error[] = [];
    const a = await worker(`q${++queues}`, { onError: (e) => errors.push(e) });
    await killSubscribers();
    // Across ioredis's first reconnect (50 ms after the drop): before, during and after it.
    for (let delay = 0; delay < 70; delay += 5) {
      const b = await worker(`q${++queues}`, { onError: (e) => errors.push(e) });
      await killSubscribers();
      await new Promise((resolve) => setTimeout(resolve, delay));
      await b.shared.close();
    }
    await a.shared.close();
    expect(errors).toEqual([]);
  });

  it('reports a malformed message and keeps listening', async () => {
    const queue = `q${++queues}`;
    const errors: Error[] = [];
    const a = await worker(queue);
    const b = await worker(queue, { onError: (e) => errors.push(e) });
    const redis = new Redis(server.url);
    for (const junk of ['not json', 'null', '{"ms":"soon","from":"x"}'])
      await redis.publish(b.shared.channel, junk);
    redis.disconnect();
    await a.shared.publish('api', Date.now() + 1_000);
    await msUntil(() => !b.gate.isOpen);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringContaining('not a wait message: "not json"'),
      expect.stringContaining('not a wait message: "null"'),
      expect.stringContaining('not a wait message'),
    ]);
  });

  it('copies a given connection and leaves it open', async () => {
    const redis = new Redis(server.url);
    const queue = `q${++queues}`;
    const a = await worker(queue, { redis });
    const b = await worker(queue);
    await a.shared.publish('api', Date.now() + 1_000);
    await msUntil(() => !b.gate.isOpen);
    await a.shared.close();
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();
  });
});

describe('RetryAfterSharing (the store a command makes its client with, before Redis is reached)', () => {
  it('shares nothing before connect; once connected, learns the running wait and shares both ways', async () => {
    const queue = `q${++queues}`;
    const address = { queue, prefix: 'embedpipe' };
    const other = await worker(queue);
    const warnings: string[] = [];
    const sharing = new RetryAfterSharing((_error, message) => warnings.push(message));
    const gates = new RetryAfterGates({ maxWaitMs: Number.POSITIVE_INFINITY, store: sharing });
    clients.push(gates);
    try {
      // A 429 before Redis is reached: held here, not shared.
      gates.asked('api', 500);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(other.gate.isOpen).toBe(true);

      // Another worker's wait, running when this one connects: its gate closes for what remains.
      await other.shared.publish('api', Date.now() + 2_000);
      await sharing.connect(server.url, address);
      expect(gates.gate('api').openAt - Date.now()).toBeGreaterThan(1_800);

      // A longer wait of this one's reaches the other worker.
      gates.asked('api', 5_000);
      await msUntil(() => other.gate.openAt - Date.now() > 4_500);
      expect(warnings).toEqual([]);
    } finally {
      await sharing.close();
    }
  });
});

/** Drops every subscribed connection from the server side, as a network blip would. */
async function killSubscribers(): Promise<void> {
  const admin = new Redis(server.url);
  const clients = String(await admin.client('LIST', 'TYPE', 'PUBSUB'));
  for (const [, id] of clients.matchAll(/^id=(\d+)/gm)) await admin.client('KILL', 'ID', id!);
  admin.disconnect();
}
