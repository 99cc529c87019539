/**
 * The Retry-After wait, held by the gateway client alone: one gate per key, shared by every request
 * on it. A response with Retry-After closes its key's gate, and no request on that key goes out until
 * it reopens, whoever sends: retrying only the request that got the 429, while the others keep
 * sending, breaks the server's Retry-After over and over. The retry loop (retry/retry.ts) keeps no
 * wait of its own: a retry after a 429 goes again at once, and the client holds it here.
 *
 * Waits travel through a store (retry-after-store.ts): each wait the gateway asks of this client is
 * published, and a wait another client (another worker) publishes closes this client's gate. Waiting
 * is bounded (`--max-retry-after`): a gate closed for longer fails the caller at once with a
 * RetryAfterTooLongError instead of waiting an hour in silence.
 */

import { type Clock, now as defaultNow, sleep as defaultSleep } from '../retry/timing.js';
import { RetryAfterTooLongError } from './errors.js';
import { type GateKey, MemoryRetryAfterStore, type RetryAfterStore } from './retry-after-store.js';

export type { RetryAfterEvent } from '../domain.js';

/** The state of a gate, for those who only read it. */
export interface GateState {
  /** The instant (ms since the epoch, by the gate's clock) from which requests may go out again. */
  readonly openAt: number;
  readonly isOpen: boolean;
}

export class RetryAfterGate implements GateState {
  #openAt = 0;
  readonly #now: Clock['now'];
  readonly #sleep: Clock['sleep'];

  constructor({ now = defaultNow, sleep = defaultSleep }: Partial<Clock> = {}) {
    this.#now = now;
    this.#sleep = sleep;
  }

  get openAt(): number {
    return this.#openAt;
  }

  get isOpen(): boolean {
    return this.#now() >= this.#openAt;
  }

  /** Keeps the gate closed until `untilMs` at least: extends the closed time, never shortens it. */
  closeUntil(untilMs: number): void {
    this.#openAt = Math.max(this.#openAt, untilMs);
  }

  /** Keeps the gate closed for at least `ms` from now. */
  closeFor(ms: number): void {
    this.closeUntil(this.#now() + Math.max(0, ms));
  }

  /**
   * Resolves once the gate is open; rejects with the signal's reason if it aborts first, and at once
   * with RetryAfterTooLongError when the gate stays closed longer than `maxWaitMs`.
   */
  async waitUntilOpen(signal?: AbortSignal, maxWaitMs = Number.POSITIVE_INFINITY): Promise<void> {
    // A loop, because another request (or worker) may extend the closed time while we sleep.
    for (;;) {
      signal?.throwIfAborted();
      const now = this.#now();
      const wait = this.#openAt - now;
      if (wait <= 0) return;
      if (wait > maxWaitMs) throw new RetryAfterTooLongError(this.#openAt, maxWaitMs, now);
      // The default sleep registers one abort listener per signal, however many wait (see onAbort).
      await this.#sleep(wait, signal);
    }
  }
}

export interface RetryAfterGatesOptions {
  /** Longest wait a caller is held for (the client's --max-retry-after). */
  readonly maxWaitMs: number;
  /** Where waits are shared (default: in memory, this client's own). */
  readonly store?: RetryAfterStore | undefined;
  readonly clock?: Partial<Clock> | undefined;
}

/** A client's gates, one per key, fed by its responses and by its store. */
export class RetryAfterGates {
  readonly maxWaitMs: number;
  readonly #gates: Readonly<Record<GateKey, RetryAfterGate>>;
  readonly #store: RetryAfterStore;
  readonly #unsubscribe: () => void;

  constructor({ maxWaitMs, store = new MemoryRetryAfterStore(), clock }: RetryAfterGatesOptions) {
    this.maxWaitMs = maxWaitMs;
    this.#gates = { api: new RetryAfterGate(clock), management: new RetryAfterGate(clock) };
    this.#store = store;
    // A wait another client published closes ours; our own comes back as the instant we hold already.
    this.#unsubscribe = store.subscribe((key, untilMs) => this.#gates[key]?.closeUntil(untilMs));
  }

  gate(key: GateKey): RetryAfterGate {
    return this.#gates[key];
  }

  /**
   * The gateway asked `key` to wait `ms` (a response's Retry-After): its gate closes and the wait is
   * published. Returns the instant the gate opens and whether it was open before.
   */
  asked(key: GateKey, ms: number): { until: number; newWait: boolean } {
    const gate = this.#gates[key];
    const newWait = gate.isOpen;
    gate.closeFor(ms);
    this.#store.publish(key, gate.openAt);
    return { until: gate.openAt, newWait };
  }

  /** Holds `key` for `ms` in this client only: a back-off its caller chose, not the gateway's ask. */
  hold(key: GateKey, ms: number): void {
    this.#gates[key].closeFor(ms);
  }

  /** Resolves once `key` may send; RetryAfterTooLongError at once when that is past maxWaitMs. */
  waitUntilOpen(key: GateKey, signal?: AbortSignal): Promise<void> {
    return this.#gates[key].waitUntilOpen(signal, this.maxWaitMs);
  }

  /** Stops hearing the store (the client is closed). */
  close(): void {
    this.#unsubscribe();
  }
}
