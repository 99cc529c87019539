/**
 * The adaptive in-flight window (AIMD, as TCP does it): at most `limit` requests on the wire, where
 * `limit` halves when the gateway answers 429 and grows back by one per window of successes, up to
 * `max` (`--concurrency`). Under a requests-per-minute limit the window shrinks until requests leave
 * at about the rate the gateway accepts them (each answer lets the next one out), instead of the whole
 * queue going out when a Retry-After ends and meeting the next 429.
 *
 * A burst of 429s answering requests sent together counts as one congestion event: only a request
 * sent after the last decrease can decrease the window again.
 */
import { onAbort } from './timing.js';

export type WindowOutcome = 'ok' | 'limited' | 'other';

/** A slot of the window; give it back with `release`. */
export interface WindowTicket {
  readonly seq: number;
}

interface Waiter {
  grant: (ticket: WindowTicket) => void;
}

export class AdaptiveWindow {
  readonly max: number;
  readonly min: number;
  #limit: number;
  #active = 0;
  #issued = 0;
  /** Tickets up to this one were sent before the last decrease. */
  #decreasedBefore = 0;
  readonly #queue: Waiter[] = [];

  constructor(max: number, { min = 1 }: { min?: number } = {}) {
    if (!(Number.isInteger(max) && max >= 1))
      throw new RangeError(`window max must be an integer ≥ 1, got ${max}`);
    this.max = max;
    this.min = Math.min(Math.max(1, min), max);
    this.#limit = max;
  }

  /** Requests allowed on the wire now. */
  get limit(): number {
    return Math.max(this.min, Math.floor(this.#limit));
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Waits for a slot (FIFO); rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<WindowTicket> {
    signal?.throwIfAborted();
    if (this.#active < this.limit && this.#queue.length === 0) return Promise.resolve(this.#issue());
    return new Promise<WindowTicket>((resolve, reject) => {
      let off: (() => void) | undefined;
      const waiter: Waiter = {
        grant: (ticket) => {
          off?.();
          resolve(ticket);
        },
      };
      if (signal) {
        off = onAbort(signal, () => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          reject(signal.reason);
        });
      }
      this.#queue.push(waiter);
    });
  }

  /** Gives the slot back, saying how the request went: 'limited' for a 429. */
  release(ticket: WindowTicket, outcome: WindowOutcome): void {
    this.#active--;
    if (outcome === 'limited') {
      if (ticket.seq > this.#decreasedBefore) {
        this.#limit = Math.max(this.min, this.#limit / 2);
        this.#decreasedBefore = this.#issued;
      }
    } else if (outcome === 'ok') {
      this.#limit = Math.min(this.max, this.#limit + 1 / this.#limit);
    }
    this.#pump();
  }

  #issue(): WindowTicket {
    this.#active++;
    this.#issued++;
    return { seq: this.#issued };
  }

  #pump(): void {
    while (this.#active < this.limit && this.#queue.length > 0) this.#queue.shift()!.grant(this.#issue());
  }
}
