/**
 * Commits embedded batches off the request path, several to a file: a request slot is free again
 * the moment its response is in, while encoding and fsyncs run here. Batches wait until their
 * vectors reach a size (or the oldest an age), then go to one file together: a file per batch cost
 * much CPU in file-system work alone (docs/benchmarks.md, "Design figures") and left thousands of small
 * files. A bounded backlog keeps memory flat when the disk is slower than the gateway; `drain`
 * commits what waits (a run that stops still writes every batch it paid for).
 */
import { setImmediate } from 'node:timers/promises';
import pLimit from 'p-limit';
import type { Batch, EmbeddedBatch } from '../domain.js';

export interface Committed {
  readonly batch: Batch;
  readonly embedded: EmbeddedBatch;
}

export type CommitGroup = (group: readonly Committed[]) => Promise<void>;

export interface GroupCommitterOptions {
  /** Files written at once. */
  readonly concurrency: number;
  /** Groups waiting to be written before `add` waits. */
  readonly maxBacklog: number;
  /** A group is written once its vectors hold this many bytes… */
  readonly groupBytes: number;
  /** …or its oldest batch waited this long. */
  readonly maxDelayMs: number;
}

export class GroupCommitter {
  readonly #limit;
  readonly #commit: CommitGroup;
  readonly #options: GroupCommitterOptions;
  readonly #pending = new Set<Promise<void>>();
  #group: Committed[] = [];
  #groupBytes = 0;
  #timer: NodeJS.Timeout | undefined;
  #failure: unknown;
  #hasFailure = false;

  constructor(commit: CommitGroup, options: GroupCommitterOptions) {
    this.#limit = pLimit(options.concurrency);
    this.#commit = commit;
    this.#options = options;
  }

  /** Adds a batch to the open group; waits only while the backlog is full. Throws the first commit failure. */
  async add(batch: Batch, embedded: EmbeddedBatch): Promise<void> {
    this.#throwIfFailed();
    this.#group.push({ batch, embedded });
    const { vectors } = embedded;
    for (let i = 0; i < vectors.length; i++) this.#groupBytes += vectors[i]!.byteLength;
    if (this.#groupBytes >= this.#options.groupBytes) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), this.#options.maxDelayMs).unref();
    while (this.#pending.size > this.#options.maxBacklog) await Promise.race(this.#pending);
    this.#throwIfFailed();
  }

  /** Writes the open group and waits for every queued write; throws the first failure. */
  async drain(): Promise<void> {
    this.#flush();
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
    this.#throwIfFailed();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#group.length === 0) return;
    const group = this.#group;
    this.#group = [];
    this.#groupBytes = 0;
    const task: Promise<void> = this.#limit(async () => {
      // Encoding is CPU work on this thread: let the request that just freed a slot go out first.
      await setImmediate();
      await this.#commit(group);
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
  }

  #throwIfFailed(): void {
    if (this.#hasFailure) throw this.#failure;
  }
}
