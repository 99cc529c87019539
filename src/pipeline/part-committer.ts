/**
 * Commits embedded batches (part file with its accounting) off the request path: a request slot is
 * free again the moment its response is in, while encoding and fsyncs run here. A bounded backlog
 * keeps memory flat when the disk is slower than the gateway.
 */
import { setImmediate } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Batch, EmbeddedBatch } from '../domain.js';

export type Commit = (batch: Batch, embedded: EmbeddedBatch) => Promise<void>;

export class PartCommitter {
  readonly #limit;
  readonly #commit: Commit;
  readonly #maxBacklog: number;
  readonly #pending = new Set<Promise<void>>();
  #failure: unknown;
  #hasFailure = false;

  constructor(commit: Commit, options: { concurrency: number; maxBacklog: number }) {
    this.#limit = pLimit(options.concurrency);
    this.#commit = commit;
    this.#maxBacklog = options.maxBacklog;
  }

  /** Queues a commit; waits only while the backlog is full. Throws the first commit failure. */
  async add(batch: Batch, embedded: EmbeddedBatch): Promise<void> {
    this.#throwIfFailed();
    const task: Promise<void> = this.#limit(async () => {
      // Encoding is CPU work on this thread: let the request that just freed a slot go out first.
      await setImmediate();
      await this.#commit(batch, embedded);
    }).then(
      () => {
        this.#pending.delete(task);
      },
      (error: unknown) => {
        this.#pending.delete(task);
        if (!this.#hasFailure) {
          this.#hasFailure = true;
          this.#failure = error;
        }
      },
    );
    this.#pending.add(task);
    while (this.#pending.size > this.#maxBacklog) await Promise.race(this.#pending);
    this.#throwIfFailed();
  }

  /** Waits for every queued commit; throws the first failure. */
  async drain(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    if (this.#hasFailure) throw this.#failure;
  }
}
