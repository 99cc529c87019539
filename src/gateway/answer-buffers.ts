/**
 * Answer bodies read into buffers that are used again. An embeddings answer is hundreds of KB: read
 * through undici's `arrayBuffer()`, each was a fresh zero-filled allocation, and glibc mapped the
 * memory anew after every collection had freed the last ones, page faults and zeroing on the run's
 * own core (docs/benchmarks.md, "a thirty-second session"). Here a body is read into a kept buffer
 * and given back once it is parsed; what is kept is bounded.
 *
 * A body handed out must be given back once, after nothing reads it any more: the next answer is
 * written into the same memory.
 */
import type { Readable } from 'node:stream';
import { KeptBuffers } from './kept-buffers.js';

/**
 * Buffers kept for the next answers. An answer's body is held from its first byte until it is
 * parsed, so a few are in use at once even with many requests in flight.
 */
const KEPT_BUFFERS = 4;
/** A buffer larger than this (a rare, huge answer) is let go rather than kept. */
const LARGEST_KEPT = 8 * 2 ** 20;
/** Room for a body of unannounced length, to begin with. */
const FIRST_BYTES = 64 * 2 ** 10;

export class AnswerBuffers {
  readonly #kept = new KeptBuffers({ count: KEPT_BUFFERS, largest: LARGEST_KEPT, step: FIRST_BYTES });

  /**
   * The stream's bytes in one buffer of the pool; `expectedBytes` (the content-length, when sent)
   * sizes it at once, up to LARGEST_KEPT (a larger body grows it as it arrives). Rejects as the
   * stream fails, or when it closes before its end.
   */
  read(stream: Readable, expectedBytes: number | undefined): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      // An announced length is a hint, not a promise: never more room than a kept buffer up front.
      let store = this.#kept.take(Math.min(expectedBytes ?? FIRST_BYTES, LARGEST_KEPT));
      let view = Buffer.from(store);
      let length = 0;
      let settled = false;
      const settle = (error: unknown) => {
        if (settled) return;
        settled = true;
        stream.off('data', onData);
        if (error === undefined) resolve(view.subarray(0, length));
        else {
          this.#kept.keep(store);
          reject(error);
        }
      };
      const onData = (chunk: Buffer) => {
        if (length + chunk.length > view.length) {
          const bigger = this.#kept.take(Math.max(2 * view.length, length + chunk.length));
          const biggerView = Buffer.from(bigger);
          view.copy(biggerView, 0, 0, length);
          this.#kept.keep(store);
          store = bigger;
          view = biggerView;
        }
        length += chunk.copy(view, length);
      };
      stream.on('data', onData);
      stream.once('end', () => settle(undefined));
      stream.once('error', (error) => settle(error));
      stream.once('close', () => settle(new Error('the answer ended before its body did')));
    });
  }

  /** A body from `read` is no longer read: its buffer serves the next answer. */
  giveBack(body: Buffer): void {
    this.#kept.keep(body.buffer as ArrayBuffer);
  }
}
