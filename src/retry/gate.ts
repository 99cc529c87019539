/**
 * One gate per API key, shared by every request of a run. A 429 with Retry-After closes it, and no
 * request on that key goes out until it reopens: retrying only the request that got the 429, while
 * the other workers keep sending, breaks the server's Retry-After over and over.
 */
import { now as defaultNow, sleep as defaultSleep, type Now, type Sleep } from './timing.js';

export interface GateOptions {
  now?: Now;
  sleep?: Sleep;
}

export class RetryAfterGate {
  #openAt = 0;
  readonly #now: Now;
  readonly #sleep: Sleep;

  constructor({ now = defaultNow, sleep = defaultSleep }: GateOptions = {}) {
    this.#now = now;
    this.#sleep = sleep;
  }

  /** The instant (ms since the epoch, by the gate's clock) from which requests may go out again. */
  get openAt(): number {
    return this.#openAt;
  }

  get isOpen(): boolean {
    return this.#now() >= this.#openAt;
  }

  /** Keeps the gate closed for at least `ms` from now. Extends the closed time, never shortens it. */
  closeFor(ms: number): void {
    this.#openAt = Math.max(this.#openAt, this.#now() + Math.max(0, ms));
  }

  /** Resolves once the gate is open; rejects with the signal's reason if it aborts first. */
  async waitUntilOpen(signal?: AbortSignal): Promise<void> {
    // A loop, because another request may extend the closed time while we sleep.
    for (;;) {
      signal?.throwIfAborted();
      const wait = this.#openAt - this.#now();
      if (wait <= 0) return;
      await this.#sleep(wait, signal);
    }
  }
}
