/**
 * The rate budget of a gateway client: when a request may leave, by requests and tokens per minute
 * (rules in rate-pace.ts). The state lives in a store: this process's (MemoryPaceStore), or Redis for
 * every worker of a distributed run (queue/shared-rate-budget.ts), so N workers together hold one
 * rate instead of each finding the limit on its own.
 */
import { DEFAULTS } from '../config/defaults.js';
import { type Clock, sleep as defaultSleep } from '../retry/timing.js';
import {
  type AnnouncedLimits,
  answered,
  emptyPaceState,
  type PaceAnswer,
  type PaceState,
  type PerMinute,
  type RateCost,
  type RateTuning,
  type RateView,
  reserve,
  viewOf,
} from './rate-pace.js';

/** Where the state is kept; `update` applies a change atomically at the store's clock. */
export interface PaceStore {
  /** `change` may run more than once (a shared store retries on a conflict): it must only touch `state`. */
  update<T>(change: (state: PaceState, now: number) => T): Promise<T>;
  /** The state as last seen, and the store's clock then (for views; may be a moment old). */
  peek(): { state: PaceState; now: number } | undefined;
}

export class MemoryPaceStore implements PaceStore {
  readonly #state: PaceState;
  readonly #now: () => number;

  constructor(configured: PerMinute = {}, now: () => number = Date.now) {
    this.#state = emptyPaceState(configured);
    this.#now = now;
  }

  update<T>(change: (state: PaceState, now: number) => T): Promise<T> {
    return Promise.resolve(change(this.#state, this.#now()));
  }

  peek(): { state: PaceState; now: number } {
    return { state: this.#state, now: this.#now() };
  }
}

export interface RateBudgetOptions {
  /** Limits the user knows (`--rpm`, `--tpm`); the rest is read from headers or learned. */
  readonly configured?: PerMinute;
  readonly store?: PaceStore;
  readonly clock?: Partial<Clock>;
  /** Default DEFAULTS.rate; a test of a gateway with a short window scales its times (scaledTuning). */
  readonly tuning?: RateTuning;
}

export class RateBudget {
  readonly #store: PaceStore;
  readonly #sleep: Clock['sleep'];
  readonly #now: Clock['now'];
  readonly #tuning: RateTuning;

  constructor({ configured, store, clock, tuning = DEFAULTS.rate }: RateBudgetOptions = {}) {
    this.#tuning = tuning;
    this.#now = clock?.now ?? Date.now;
    this.#store = store ?? new MemoryPaceStore(configured, this.#now);
    this.#sleep = clock?.sleep ?? defaultSleep;
  }

  /** Waits until `cost` is on pace (rejects with the signal's reason if it aborts first). */
  async take(cost: RateCost, signal?: AbortSignal): Promise<void> {
    const waitMs = await this.#store.update((state, now) => reserve(state, cost, now, this.#tuning));
    if (waitMs > 0) await this.#sleep(waitMs, signal);
  }

  /** A successful answer: the tokens it was billed settle the estimate; its headers are adopted. */
  async succeeded(estimatedTokens: number, billedTokens: number | undefined, announced: AnnouncedLimits) {
    const answer: PaceAnswer = {
      ok: true,
      estimatedTokens,
      ...(billedTokens !== undefined ? { billedTokens } : {}),
      announced,
    };
    await this.#store.update((state, now) => answered(state, answer, now, this.#tuning));
  }

  /** A 429: the pace steps down (once per congestion) and resumes after the wait. */
  async limited(
    sentAtMs: number,
    estimatedTokens: number,
    retryAfterMs: number | undefined,
    announced: AnnouncedLimits,
  ) {
    const answer: PaceAnswer = {
      ok: false,
      sentAgoMs: Math.max(0, this.#now() - sentAtMs),
      estimatedTokens,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      announced,
    };
    await this.#store.update((state, now) => answered(state, answer, now, this.#tuning));
  }

  /** What the budget holds now (the shared store's last known state). */
  view(): RateView | undefined {
    const seen = this.#store.peek();
    return seen === undefined ? undefined : viewOf(seen.state, seen.now, this.#tuning);
  }
}
