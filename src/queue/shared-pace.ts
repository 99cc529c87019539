/**
 * The rate budget of a distributed run, shared by every worker through Redis: one state (rules in
 * gateway/rate-pace.ts) under one key, so N workers on N machines together pace to one gateway
 * limit, and what one learns from a 429 or a header every other one paces to at once.
 *
 * Each change is a transaction (WATCH, read the state and Redis `TIME`, apply, MULTI/SET/EXEC,
 * again on a conflict): the rules are written once, in TypeScript, for this store and the
 * in-memory one alike. Instants are Redis's clock only; a worker is told durations (how long to
 * wait), so skew between machines cannot break the pace. Changes from one process go one at a
 * time (a WATCH belongs to the connection). When Redis cannot be reached, the worker paces on its
 * own state until it can (and says so once): a request is never failed for the budget's sake.
 */
import type { Redis } from 'ioredis';
import { MemoryPaceStore, type PaceStore } from '../gateway/rate-budget.js';
import {
  emptyPaceState,
  type PaceState,
  type PerMinute,
  type RateView,
  viewOf,
} from '../gateway/rate-pace.js';
import { connectRedis } from './distributed.js';

/** A budget nobody touched for this long is forgotten: the next run learns the gateway afresh. */
const STATE_TTL_MS = 10 * 60_000;
/** Conflicting transactions in a row before this change is applied locally instead. */
const MAX_CONFLICTS = 100;

/** The budget a queue's workers share, as `status` shows it; undefined when none is kept. */
export async function readSharedPace(
  redis: Redis,
  address: { readonly queue: string; readonly prefix: string },
): Promise<RateView | undefined> {
  const [[, raw], [, time]] = (await redis.pipeline().get(paceKey(address)).time().exec()) as [
    [Error | null, string | null],
    [Error | null, [string, string]],
  ];
  if (!raw) return undefined;
  return viewOf(JSON.parse(raw) as PaceState, redisNow(time));
}

const paceKey = (address: { readonly queue: string; readonly prefix: string }) =>
  `${address.prefix}:${address.queue}:pace`;
const redisNow = (time: [string, string]) => Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);

export class SharedPaceStore implements PaceStore {
  readonly #configured: PerMinute;
  readonly #local: MemoryPaceStore;
  readonly #warn: (error: unknown, message: string) => void;
  readonly #ready: () => void;
  #redis: Redis | undefined;
  #key = '';
  /** Changes wait their turn here: one transaction at a time on the connection. */
  #turn: Promise<unknown> = Promise.resolve();
  #seen: { state: PaceState; now: number; at: number } | undefined;
  #failing = false;

  /** `warn` hears the first failure of an outage (RedisOutage.error), `ready` the end of it. */
  constructor(
    configured: PerMinute,
    warn: (error: unknown, message: string) => void,
    ready: () => void = () => {},
  ) {
    this.#configured = configured;
    this.#local = new MemoryPaceStore(configured);
    this.#warn = warn;
    this.#ready = ready;
  }

  /** Starts sharing: the key is the queue's, beside BullMQ's (`<prefix>:<queue>:pace`). */
  async connect(redis: string, address: { readonly queue: string; readonly prefix: string }): Promise<void> {
    this.#redis = await connectRedis(redis, 'client');
    this.#key = paceKey(address);
  }

  update<T>(change: (state: PaceState, now: number) => T): Promise<T> {
    const run = this.#turn.then(() => this.#apply(change));
    this.#turn = run.catch(() => undefined);
    return run;
  }

  peek(): { state: PaceState; now: number } | undefined {
    if (this.#seen === undefined) return this.#local.peek();
    // The view is taken at the last change, moved on by the time passed here since.
    return { state: this.#seen.state, now: this.#seen.now + (Date.now() - this.#seen.at) };
  }

  async close(): Promise<void> {
    await this.#turn;
    await this.#redis?.quit().catch(() => undefined);
    this.#redis = undefined;
  }

  async #apply<T>(change: (state: PaceState, now: number) => T): Promise<T> {
    const redis = this.#redis;
    if (redis === undefined) return this.#local.update(change);
    try {
      for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
        await redis.watch(this.#key);
        const [[, raw], [, time]] = (await redis.pipeline().get(this.#key).time().exec()) as [
          [Error | null, string | null],
          [Error | null, [string, string]],
        ];
        const state: PaceState = raw ? (JSON.parse(raw) as PaceState) : emptyPaceState(this.#configured);
        const now = redisNow(time);
        const result = change(state, now);
        const done = await redis.multi().set(this.#key, JSON.stringify(state), 'PX', STATE_TTL_MS).exec();
        if (done === null) continue;
        this.#seen = { state, now, at: Date.now() };
        if (this.#failing) {
          this.#failing = false;
          this.#ready();
        }
        return result;
      }
      throw new Error(`${MAX_CONFLICTS} conflicting changes in a row`);
    } catch (error) {
      await redis.unwatch().catch(() => undefined);
      if (!this.#failing) {
        this.#failing = true;
        this.#warn(
          error,
          'the shared rate budget cannot be reached: pacing this worker on its own meanwhile',
        );
      }
      return this.#local.update(change);
    }
  }
}
