/**
 * Virtual time for retry tests: `sleep` registers a timer, and `settle` advances the clock from
 * timer to timer until the promise under test settles. No real waiting.
 */
import type { Sleep } from '../../src/retry/timing.js';

interface Timer {
  at: number;
  resolve: () => void;
}

export class FakeTime {
  current = 1_700_000_000_000;
  /** Every sleep requested, in ms, in order. */
  readonly sleeps: number[] = [];
  readonly #timers: Timer[] = [];

  readonly now = (): number => this.current;

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      signal?.throwIfAborted();
      this.sleeps.push(ms);
      const timer: Timer = { at: this.current + ms, resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.#timers.splice(this.#timers.indexOf(timer), 1);
          reject(signal.reason);
        },
        { once: true },
      );
    });

  /**
   * Fires timers in time order until `promise` settles; fails if it waits on nothing. `turns`: turns
   * of the event loop let run before each step, for real I/O in between (a mocked dispatcher's answer).
   */
  async settle<T>(promise: Promise<T>, { turns = 1 }: { turns?: number } = {}): Promise<T> {
    let settled = false;
    promise.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    for (;;) {
      for (let i = 0; i < turns && !settled; i++) await turn();
      if (settled) return promise;
      this.#timers.sort((a, b) => a.at - b.at);
      const next = this.#timers.shift();
      if (!next) throw new Error('FakeTime: the promise waits, but no timer is pending');
      this.current = Math.max(this.current, next.at);
      next.resolve();
    }
  }

  get pendingTimers(): number {
    return this.#timers.length;
  }
}

/** Lets every queued microtask (and the I/O callbacks before it) run. */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
