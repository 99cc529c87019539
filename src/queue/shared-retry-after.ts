/**
 * The Retry-After wait of a distributed run, shared by every worker through Redis: the store of each
 * process's gateway client (gateway/retry-after-store.ts). The client holds the wait, one gate per
 * key; this carries it to the others': a 429 seen by one worker closes every worker's gate, and a
 * worker that joins during a wait waits too. Without it, the workers that did not get the 429 keep
 * sending and break the Retry-After for all. Only the API key's waits are shared: the run's workers
 * and producer all send on it.
 *
 * Clocks: only durations cross machines, never instants. The sender turns its local "not before"
 * instant into the milliseconds left by its own clock; Redis holds the wait as a key whose PX expiry
 * counts down on Redis's clock (its value is the end instant by Redis `TIME`, for the atomic max);
 * a receiver turns the milliseconds left back into an instant by its own clock. No two machines'
 * wall clocks are ever compared, so skew between them cannot shorten or stretch the wait; network
 * latency only lengthens it by a few milliseconds, the safe side.
 */
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { GateKey, RetryAfterListener, RetryAfterStore } from '../gateway/retry-after-store.js';
import { now as defaultNow, type Now } from '../retry/timing.js';

/** The gateway key whose waits the run shares. */
const SHARED_KEY: GateKey = 'api';

export interface SharedRetryAfterOptions {
  /** A Redis URL, or a connection to copy: this class opens (and closes) two of its own. */
  redis: string | Redis;
  /** The run's queue name. */
  queue: string;
  /** Key prefix, like BullMQ's `prefix` option (default 'embedpipe'). */
  prefix?: string;
  /** The clock of the clients this store serves (default Date.now): instants are turned into ms by it. */
  now?: Now;
  /**
   * Failures in the background (connection errors, a malformed message, a wait not shared), with
   * what failed in words. ioredis reconnects by itself.
   */
  onError?: (error: Error, what: string) => void;
  /** A connection is ready again after an outage. */
  onReady?: () => void;
}

/** What goes on the channel: the milliseconds left when the sender stored the wait. */
interface WaitMessage {
  ms: number;
  /** The sending process, which skips its own message (its gate is already closed). */
  from: string;
}

/**
 * Extends the stored wait to `ARGV[1]` ms from now, never shortens it, and publishes only a wait
 * that extended it. Returns the milliseconds left of the (possibly longer) stored wait.
 * KEYS[1]: the wait; ARGV[1]: ms left; ARGV[2]: channel; ARGV[3]: message.
 */
const EXTEND_WAIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms = tonumber(ARGV[1])
local stored = tonumber(redis.call('GET', KEYS[1]) or 0)
if now + ms > stored then
  redis.call('SET', KEYS[1], string.format('%d', now + ms), 'PX', ms)
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return ms
end
return math.max(0, stored - now)
`;

export class SharedRetryAfter implements RetryAfterStore {
  /** Holds the wait's end instant (Redis clock) and expires with it. */
  readonly key: string;
  /** Carries each extension of the wait (pub/sub channels have their own namespace: same name). */
  readonly channel: string;
  readonly #id = randomUUID();
  readonly #commands: Redis;
  /** A subscribed connection can issue no other command: a second one for PTTL and EVAL. */
  readonly #subscriber: Redis;
  readonly #now: Now;
  readonly #onError: (error: Error, what: string) => void;
  readonly #listeners = new Set<RetryAfterListener>();
  /** The latest end of the run's wait known here (local clock), told to each new listener. */
  #until = 0;
  #closed = false;

  /** Subscribes, then reads the stored wait: a worker joining during a wait waits too. */
  static async start(options: SharedRetryAfterOptions): Promise<SharedRetryAfter> {
    const shared = new SharedRetryAfter(options);
    try {
      await shared.#subscribeAndSync();
      return shared;
    } catch (error) {
      await shared.close();
      throw error;
    }
  }

  private constructor(options: SharedRetryAfterOptions) {
    const prefix = options.prefix ?? 'embedpipe';
    this.key = `${prefix}:${options.queue}:retry-after`;
    this.channel = this.key;
    this.#now = options.now ?? defaultNow;
    this.#onError = options.onError ?? (() => {});
    const { redis } = options;
    const open = (extra: RedisOptions = {}) =>
      typeof redis === 'string' ? new Redis(redis, extra) : redis.duplicate(extra);
    this.#commands = open();
    // We subscribe again ourselves after a reconnect: ioredis's own resubscribe leaves its promise
    // unhandled, and closing during a reconnect then raised an unhandled "Connection is closed".
    this.#subscriber = open({ autoResubscribe: false });
    // Without a listener ioredis prints every connection error to the console.
    const onError = (error: Error) => this.#onError(error, 'shared Retry-After');
    this.#commands.on('error', onError);
    this.#subscriber.on('error', onError);
    if (options.onReady) {
      this.#commands.on('ready', options.onReady);
      this.#subscriber.on('ready', options.onReady);
    }
    this.#subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.channel) this.#receive(text);
    });
    // Messages sent while the subscriber was disconnected are lost: read the stored wait again.
    let connectedOnce = false;
    this.#subscriber.on('ready', () => {
      if (connectedOnce && !this.#closed) {
        this.#subscribeAndSync().catch((error: Error) => {
          if (!this.#closed) this.#onError(error, 'shared Retry-After');
        });
      }
      connectedOnce = true;
    });
  }

  /**
   * Shares a wait this process's client was told of, an instant by its clock (the key's gate).
   * Resolves to the milliseconds left of the run's wait, which may be a longer one another worker
   * stored: the listeners are told of that one too. Never rejects: a failure goes to onError, and
   * resolves to 0.
   */
  async publish(key: GateKey, untilMs: number): Promise<number> {
    if (key !== SHARED_KEY) return 0;
    // This process's other clients hear it now, as the exact instant (the publisher's gate has it).
    this.#tell(untilMs);
    const ms = Math.ceil(untilMs - this.#now());
    try {
      if (ms <= 0) return await this.remainingMs();
      const message: WaitMessage = { ms, from: this.#id };
      // Plain EVAL: one call per 429 is too rare for EVALSHA caching to matter.
      const left = Number(
        await this.#commands.eval(EXTEND_WAIT, 1, this.key, ms, this.channel, JSON.stringify(message)),
      );
      // Our own wait is never echoed back (that would push it by the round trip); a longer one
      // another worker stored: this process waits for that too.
      if (left > ms) this.#waitFor(left);
      return left;
    } catch (error) {
      this.#onError(
        error instanceof Error ? error : new Error(String(error)),
        'could not share a Retry-After',
      );
      return 0;
    }
  }

  /** Tells `listener` of every wait of the run from now on, and at once of the latest one known here. */
  subscribe(listener: RetryAfterListener): () => void {
    this.#listeners.add(listener);
    if (this.#until > 0) listener(SHARED_KEY, this.#until);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Milliseconds left of the run's wait (0 when none), by Redis's clock. */
  async remainingMs(): Promise<number> {
    // -2: no key (no wait, or it ended); -1 cannot happen, the key is always set with an expiry.
    return Math.max(0, await this.#commands.pttl(this.key));
  }

  /** Quits both connections. The clients' gates keep whatever wait they were told. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([quit(this.#subscriber), quit(this.#commands)]);
  }

  /** Subscribed first, read second: a wait stored in between is in one or the other. */
  async #subscribeAndSync(): Promise<void> {
    await this.#subscriber.subscribe(this.channel);
    this.#waitFor(await this.remainingMs());
  }

  #receive(text: string): void {
    const message = parseWaitMessage(text);
    if (!message) {
      this.#onError(
        new Error(`${this.channel}: not a wait message: ${JSON.stringify(text.slice(0, 80))}`),
        'shared Retry-After',
      );
      return;
    }
    if (message.from !== this.#id) this.#waitFor(message.ms);
  }

  /** The run waits `ms` more (by Redis's count): an instant by the local clock, told to the listeners. */
  #waitFor(ms: number): void {
    if (ms > 0) this.#tell(this.#now() + ms);
  }

  #tell(untilMs: number): void {
    this.#until = Math.max(this.#until, untilMs);
    for (const listener of [...this.#listeners]) listener(SHARED_KEY, untilMs);
  }
}

function parseWaitMessage(text: string): WaitMessage | undefined {
  try {
    const { ms, from } = JSON.parse(text) as Partial<WaitMessage>;
    return typeof ms === 'number' && Number.isFinite(ms) && typeof from === 'string'
      ? { ms, from }
      : undefined;
  } catch {
    return undefined; // not JSON, or null
  }
}

/** QUIT when connected (replies still in flight arrive first); otherwise just drop the socket. */
async function quit(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * The store a command's gateway client is made with (`enqueue`, `worker`), before Redis is reached:
 * a wait published before `connect` is simply not shared; once connected, waits go both ways
 * through SharedRetryAfter (and the client learns of a wait already running). Failures to share
 * are logged, never thrown.
 */
export class RetryAfterSharing implements RetryAfterStore {
  #shared: SharedRetryAfter | undefined;
  readonly #listeners = new Set<RetryAfterListener>();
  readonly #warn: (error: unknown, message: string) => void;
  readonly #ready: (() => void) | undefined;

  /** `warn` hears every failure to share; `ready`, a connection back after an outage. */
  constructor(warn: (error: unknown, message: string) => void, ready?: () => void) {
    this.#warn = warn;
    this.#ready = ready;
  }

  publish(key: GateKey, untilMs: number): void {
    void this.#shared?.publish(key, untilMs);
  }

  subscribe(listener: RetryAfterListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  async connect(
    redis: string | Redis,
    address: { readonly queue: string; readonly prefix: string },
  ): Promise<SharedRetryAfter> {
    const shared = await SharedRetryAfter.start({
      redis,
      queue: address.queue,
      prefix: address.prefix,
      onError: (error, what) => this.#warn(error, what),
      ...(this.#ready ? { onReady: this.#ready } : {}),
    });
    // Told at once of a wait already running (SharedRetryAfter.subscribe), then of every later one.
    shared.subscribe((key, untilMs) => {
      for (const listener of [...this.#listeners]) listener(key, untilMs);
    });
    this.#shared = shared;
    return shared;
  }

  async close(): Promise<void> {
    await this.#shared?.close();
  }
}
