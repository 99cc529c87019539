/**
 * A Redis outage, as the logs tell it: one line when the connection goes, one when it is back, not
 * a line per reconnect attempt of every connection (a worker holds four). A producer also gives up
 * once an outage outlasts its bound (`downForMs`).
 */
import type { Redis } from 'ioredis';
import { RedisError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import { redactRedisUrl } from './redis-url.js';

/** Errors that mean "Redis cannot be reached now", as ioredis and the socket report them. */
const UNREACHABLE =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|Connection is closed|connect ETIMEDOUT|Stream isn't writeable/;

export const isUnreachable = (error: unknown): boolean =>
  UNREACHABLE.test(
    error instanceof Error
      ? `${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`
      : String(error),
  );

export class RedisOutage {
  readonly #redis: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  #since: number | undefined;

  constructor(redisUrl: string, logger: Logger, now: () => number = Date.now) {
    this.#redis = redactRedisUrl(redisUrl);
    this.#logger = logger;
    this.#now = now;
  }

  /** How long Redis has been out of reach; 0 while it answers. */
  get downForMs(): number {
    return this.#since === undefined ? 0 : this.#now() - this.#since;
  }

  /** A connection error: the first of an outage is logged; other errors are logged as they come. */
  readonly error = (error: unknown, what = 'Redis'): void => {
    if (!isUnreachable(error)) {
      this.#logger.warn({ err: error instanceof Error ? error.message : String(error) }, what);
      return;
    }
    if (this.#since !== undefined) return;
    this.#since = this.#now();
    this.#logger.warn(
      { redis: this.#redis, err: error instanceof Error ? error.message : String(error) },
      'lost Redis: waiting for it to come back',
    );
  };

  /** A connection is ready again: ends the outage. */
  readonly ready = (): void => {
    if (this.#since === undefined) return;
    const seconds = Math.round(this.downForMs / 100) / 10;
    this.#since = undefined;
    this.#logger.info({ redis: this.#redis, seconds }, `Redis is back after ${seconds} s`);
  };

  /** Reports `redis`'s errors and reconnects here. */
  watch(redis: Redis): Redis {
    redis.on('error', (error: unknown) => this.error(error));
    redis.on('ready', this.ready);
    return redis;
  }
}

/**
 * A producer's bound on an outage: once Redis has been out of reach for longer than `maxMs`,
 * `givenUp` rejects with one clear error and `onGiveUp` drops the connection (BullMQ would wait for
 * it forever); while Redis answers, `beat` runs every `everyMs` (the producer's heartbeat).
 */
export class OutageBound {
  readonly givenUp: Promise<never>;
  error: RedisError | undefined;
  beat: (() => Promise<void>) | undefined;
  readonly #timer: NodeJS.Timeout;

  constructor(
    outage: RedisOutage,
    redisUrl: string,
    bound: { maxMs: number; everyMs: number },
    onGiveUp: () => void,
  ) {
    let reject: (error: RedisError) => void = () => {};
    this.givenUp = new Promise<never>((_, fail) => {
      reject = fail;
    });
    this.givenUp.catch(() => {}); // raced by the producer; unobserved when it ends first
    this.#timer = setInterval(() => {
      if (outage.downForMs > bound.maxMs && !this.error) {
        this.error = new RedisError(
          `Redis at ${redactRedisUrl(redisUrl)} was unreachable for ${Math.round(outage.downForMs / 1000)} s: ` +
            'the producer stopped. What it enqueued stays queued; re-run the same command to enqueue the rest',
        );
        reject(this.error);
        onGiveUp();
      } else if (outage.downForMs === 0) this.beat?.().catch(() => {});
    }, bound.everyMs).unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
