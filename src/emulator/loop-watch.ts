import { performance } from 'node:perf_hooks';

/** How often the watch notes that the event loop turned. */
const TICK_MS = 10;

/**
 * When this thread's event loop last turned. A request read after a stall (the thread busy, or not
 * scheduled on a loaded machine) may have reached the socket at any moment of it: judged by the
 * instant it was read, a request the client sent before it could know of a Retry-After counted as
 * breaking it. The Retry-After honour check takes the stall's start instead.
 */
export class LoopWatch {
  #lastTurn: number;
  readonly #timer: NodeJS.Timeout;

  constructor(now: () => number = () => performance.now()) {
    this.#lastTurn = now();
    this.#timer = setInterval(() => {
      this.#lastTurn = now();
    }, TICK_MS);
    this.#timer.unref();
  }

  /** The earliest instant a request read at `readAt` may have arrived. */
  earliestArrival(readAt: number): number {
    return Math.min(readAt, this.#lastTurn + TICK_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
