/**
 * The seam of `run` between the producer (planning) and the consumers (embedding + writing): a
 * sliding window of `concurrency` handlers in this process (p-limit). A new batch starts the moment
 * any slot frees up, never in waves; `push` blocks while a full window's worth of batches is already
 * waiting, so memory stays bounded whatever the corpus size. (Distributed runs put their batches on
 * BullMQ instead, batch-jobs.ts: there the producer never waits for a batch to be handled, so the
 * two share no push/drain contract.)
 */
import pLimit from 'p-limit';
import type { Batch } from '../domain.js';

/**
 * Handles one batch to completion. A thrown error is fatal for the whole run (402, 401, …). The
 * signal says the run is stopping: start nothing new, but finish (and keep) what is already paid for.
 */
export type BatchHandler = (batch: Batch, signal: AbortSignal) => Promise<void>;

export class InProcessQueue {
  readonly #limit;
  readonly #handler: BatchHandler;
  readonly #maxWaiting: number;
  readonly #controller = new AbortController();
  readonly #running = new Set<Promise<void>>();
  #fatal: Error | undefined;
  #wakeUp: (() => void) | undefined;

  /** `maxWaiting`: batches queued behind the running ones before `push` blocks (default: concurrency). */
  constructor(handler: BatchHandler, options: { concurrency: number; maxWaiting?: number }) {
    this.#limit = pLimit(options.concurrency);
    this.#handler = handler;
    this.#maxWaiting = Math.max(1, options.maxWaiting ?? options.concurrency);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Hands a batch over; resolves once there is room for more (backpressure), not when it is done. */
  async push(batch: Batch): Promise<void> {
    this.#throwIfFatal();
    const task: Promise<void> = this.#limit(async () => {
      if (this.#controller.signal.aborted) return;
      await this.#handler(batch, this.#controller.signal);
    }).then(
      () => this.#settle(task),
      (error: unknown) => {
        this.abort(error instanceof Error ? error : new Error(String(error)));
        this.#settle(task);
      },
    );
    this.#running.add(task);
    // Keep a bounded number of batches waiting behind the running ones.
    while (this.#limit.pendingCount >= this.#maxWaiting && !this.#fatal) {
      await new Promise<void>((resolve) => {
        this.#wakeUp = resolve;
      });
    }
    this.#throwIfFatal();
  }

  /** Resolves when every pushed batch was handled; rejects with the first fatal error. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running]);
    this.#throwIfFatal();
  }

  /** Stops the run: no new batch starts; batches in flight see the aborted signal and wind down. */
  abort(reason: Error): void {
    if (this.#fatal) return;
    this.#fatal = reason;
    // Waiting tasks are not discarded (their promises would never settle): each sees the aborted
    // signal and returns at once.
    this.#controller.abort(reason);
    this.#wake();
  }

  #settle(task: Promise<void>): void {
    this.#running.delete(task);
    this.#wake();
  }

  #wake(): void {
    const wake = this.#wakeUp;
    this.#wakeUp = undefined;
    wake?.();
  }

  #throwIfFatal(): void {
    if (this.#fatal) throw this.#fatal;
  }
}
