/**
 * The Retry-After wait of a distributed run, shared by every worker through Redis. Each process keeps
 * its one RetryAfterGate per key (retry/gate.ts); this bridges it to the others': a 429 seen by one
 * worker closes every worker's gate, and a worker that joins during a wait waits too. Without it,
 * the workers that did not get the 429 keep sending and break the Retry-After for all.
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
import type { RetryAfterGate, TooLongError } from '../retry/gate.js';
import { now as defaultNow, type Now } from '../retry/timing.js';

export interface SharedRetryAfterOptions {
  /** A Redis URL, or a connection to copy: this class opens (and closes) two of its own. */
  redis: string | Redis;
  /** The run's queue name. */
  queue: string;
  /** Key prefix, like BullMQ's `prefix` option (default 'embedpipe'). */
  prefix?: string;
  /** This process's gate: the gateway client's `retryAfterGate`. */
  gate: RetryAfterGate;
  /**
   * What a caller unwilling to wait that long is thrown (see RetryAfterGate.closeFor): pass the
   * client's own, so a shared wait past --max-retry-after fails a request as the local one would.
   */
  tooLong?: TooLongError;
  /** The gate's clock (default Date.now). */
  now?: Now;
  /** Failures in the background (connection errors, a malformed message). ioredis reconnects by itself. */
  onError?: (error: Error) => void;
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

export class SharedRetryAfter {
  /** Holds the wait's end instant (Redis clock) and expires with it. */
  readonly key: string;
  /** Carries each extension of the wait (pub/sub channels have their own namespace: same name). */
  readonly channel: string;
  readonly #id = randomUUID();
  readonly #commands: Redis;
  /** A subscribed connection can issue no other command: a second one for PTTL and EVAL. */
  readonly #subscriber: Redis;
  readonly #gate: RetryAfterGate;
  readonly #tooLong: TooLongError | undefined;
  readonly #now: Now;
  readonly #onError: (error: Error) => void;
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
    this.#gate = options.gate;
    this.#tooLong = options.tooLong;
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
    this.#commands.on('error', this.#onError);
    this.#subscriber.on('error', this.#onError);
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
          if (!this.#closed) this.#onError(error);
        });
      }
      connectedOnce = true;
    });
  }

  /**
   * Shares this process's wait, an instant by the gate's clock (RetryAfterEvent.until). Resolves to
   * the milliseconds left of the run's wait, which may be a longer one another worker stored; the
   * local gate is closed for that too.
   */
  async publish(untilMs: number): Promise<number> {
    const ms = Math.ceil(untilMs - this.#now());
    if (ms <= 0) return this.remainingMs();
    const message: WaitMessage = { ms, from: this.#id };
    // Plain EVAL: one call per 429 is too rare for EVALSHA caching to matter.
    const left = Number(
      await this.#commands.eval(EXTEND_WAIT, 1, this.key, ms, this.channel, JSON.stringify(message)),
    );
    // Our own wait: the local gate holds it already (closing it again would push it by the round
    // trip). A longer one another worker stored: this process waits for that too.
    if (left > ms) this.#close(left);
    return left;
  }

  /** Milliseconds left of the run's wait (0 when none), by Redis's clock. */
  async remainingMs(): Promise<number> {
    // -2: no key (no wait, or it ended); -1 cannot happen, the key is always set with an expiry.
    return Math.max(0, await this.#commands.pttl(this.key));
  }

  /** Quits both connections. The local gate keeps whatever wait it was told. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([quit(this.#subscriber), quit(this.#commands)]);
  }

  /** Subscribed first, read second: a wait stored in between is in one or the other. */
  async #subscribeAndSync(): Promise<void> {
    await this.#subscriber.subscribe(this.channel);
    this.#close(await this.remainingMs());
  }

  #receive(text: string): void {
    const message = parseWaitMessage(text);
    if (!message) {
      this.#onError(new Error(`${this.channel}: not a wait message: ${JSON.stringify(text.slice(0, 80))}`));
      return;
    }
    if (message.from !== this.#id) this.#close(message.ms);
  }

  #close(ms: number): void {
    if (ms > 0) this.#gate.closeFor(ms, this.#tooLong);
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
 * A gateway client's side of the sharing, for the commands that make one (`enqueue`, `worker`):
 * `publish` goes into the client's `onRetryAfter` before Redis is reached (a wait seen before then
 * is simply not shared), `connect` bridges the client's gate once it is, with the client's own
 * error for a wait past --max-retry-after. Failures to share are logged, never thrown.
 */
export class RetryAfterSharing {
  #shared: SharedRetryAfter | undefined;
  readonly #warn: (error: unknown, message: string) => void;
  readonly #ready: (() => void) | undefined;

  /** `warn` hears every failure to share; `ready`, a connection back after an outage. */
  constructor(warn: (error: unknown, message: string) => void, ready?: () => void) {
    this.#warn = warn;
    this.#ready = ready;
  }

  readonly publish = (untilMs: number): void => {
    this.#shared
      ?.publish(untilMs)
      .catch((error: unknown) => this.#warn(error, 'could not share a Retry-After'));
  };

  async connect(
    redis: string | Redis,
    address: { readonly queue: string; readonly prefix: string },
    gate: RetryAfterGate,
    tooLong: TooLongError,
  ): Promise<SharedRetryAfter> {
    this.#shared = await SharedRetryAfter.start({
      redis,
      queue: address.queue,
      prefix: address.prefix,
      gate,
      tooLong,
      onError: (error) => this.#warn(error, 'shared Retry-After'),
      ...(this.#ready ? { onReady: this.#ready } : {}),
    });
    return this.#shared;
  }

  async close(): Promise<void> {
    await this.#shared?.close();
  }
}
