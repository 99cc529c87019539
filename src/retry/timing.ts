/**
 * The side effects of time, injected into the retry layer so tests drive a fake clock instead of
 * waiting for real seconds.
 */

/** Resolves after `ms`; rejects promptly with the signal's reason when it aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;
/** Milliseconds since the epoch (Retry-After dates are wall-clock dates). */
export type Now = () => number;
/** Uniform in [0, 1). */
export type Random = () => number;
/** What a wait needs of time: the gateway client's Retry-After gates take one (tests pass a fake). */
export interface Clock {
  readonly now: Now;
  readonly sleep: Sleep;
}

/** setTimeout's ceiling (about 24.8 days); longer waits are cut and callers re-check the clock. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface AbortFanOut {
  readonly callbacks: Set<() => void>;
  readonly listener: () => void;
}

/** One abort listener per signal, whatever the number of waiters on it (see onAbort). */
const fanOuts = new WeakMap<AbortSignal, AbortFanOut>();

/**
 * Calls `callback` once when `signal` aborts; returns the function that unregisters it. However
 * many waiters register (a 429 storm parks every queued request at the Retry-After gate), the signal
 * carries at most one listener of ours, removed when the last waiter leaves: one `addEventListener`
 * per waiter is what made Node warn "MaxListenersExceededWarning: 11 abort listeners".
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let fanOut = fanOuts.get(signal);
  if (!fanOut) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      fanOuts.delete(signal);
      for (const fn of [...callbacks]) fn();
      callbacks.clear();
    };
    fanOut = { callbacks, listener };
    fanOuts.set(signal, fanOut);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = fanOut;
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return;
    if (fanOuts.get(signal)?.listener === listener) fanOuts.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const off = signal
      ? onAbort(signal, () => {
          clearTimeout(timer);
          reject(signal.reason);
        })
      : undefined;
    const timer = setTimeout(
      () => {
        off?.();
        resolve();
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
  });

export const now: Now = Date.now;
export const random: Random = Math.random;
