/**
 * Where a gateway client's Retry-After waits are shared. The client holds the wait (one gate per key,
 * see retry-after-gate.ts); a store only carries it between clients: the client publishes each wait
 * the gateway asked of it, and is told of the waits others publish. The default is in memory (clients
 * given the same store share their waits); queue/shared-retry-after.ts carries them over Redis to
 * every worker of a distributed run.
 *
 * Instants are ms since the epoch by the clients' clock. A store that carries them between machines
 * turns them into durations on the way (see SharedRetryAfter): wall clocks are never compared.
 */

/** The keys a gateway client holds a gate for. */
export type GateKey = 'api' | 'management';

/** Told of a wait: nothing goes out on `key` before `untilMs`. */
export type RetryAfterListener = (key: GateKey, untilMs: number) => void;

export interface RetryAfterStore {
  /**
   * Shares a wait the gateway asked of this client. Never throws nor rejects: a store reports its
   * own failures (a wait not shared only costs the others a 429 of their own).
   */
  publish(key: GateKey, untilMs: number): void;
  /**
   * Tells `listener` of every wait published from now on, and at once of the latest one the store
   * knows (a client made during a wait waits too). Returns what ends the subscription.
   */
  subscribe(listener: RetryAfterListener): () => void;
}

/** The default store: waits shared by the clients of this process that were given it. */
export class MemoryRetryAfterStore implements RetryAfterStore {
  readonly #latest = new Map<GateKey, number>();
  readonly #listeners = new Set<RetryAfterListener>();

  publish(key: GateKey, untilMs: number): void {
    this.#latest.set(key, Math.max(this.#latest.get(key) ?? 0, untilMs));
    // The publisher hears its own wait too: its gate already holds that instant, so nothing changes.
    for (const listener of [...this.#listeners]) listener(key, untilMs);
  }

  subscribe(listener: RetryAfterListener): () => void {
    this.#listeners.add(listener);
    for (const [key, until] of this.#latest) listener(key, until);
    return () => {
      this.#listeners.delete(listener);
    };
  }
}
