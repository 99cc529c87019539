/**
 * Refuses to pay for work that cannot be written: before a batch is sent, the output folder's file
 * system must have room for what the run still holds in memory and its spill, with a margin. A run
 * on a full disk used to embed thousands of inputs, fail to write them, and pay for them again on
 * the next run (which failed the same way). Checked at most once a second (statfs is a syscall).
 */
import { statfs } from 'node:fs/promises';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';

const mb = (bytes: number) => `${Math.floor(bytes / 2 ** 20)} MB`;

export class FreeSpaceGuard {
  readonly #dir: string;
  readonly #reserveBytes: number;
  readonly #now: () => number;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #checking: Promise<void> | undefined;

  constructor(dir: string, reserveBytes: number, now: () => number = Date.now) {
    this.#dir = dir;
    this.#reserveBytes = reserveBytes;
    this.#now = now;
  }

  /** Throws OutputError (exit 7) when the folder's file system has less than the reserve free. */
  check(): Promise<void> {
    if (this.#now() - this.#checkedAt < 1_000) return Promise.resolve();
    this.#checking ??= this.#measure().finally(() => {
      this.#checkedAt = this.#now();
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #measure(): Promise<void> {
    let free: number;
    try {
      const fs = await statfs(this.#dir);
      free = fs.bavail * fs.bsize;
    } catch (error) {
      throw new OutputError(`cannot tell the free space of ${this.#dir}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    if (free >= this.#reserveBytes) return;
    throw new OutputError(
      `only ${mb(free)} free on the file system of ${this.#dir}: the run stops before paying for vectors ` +
        `it could not write (it needs ${mb(this.#reserveBytes)} free). Free some space and re-run: ` +
        'what is committed is kept',
    );
  }
}
