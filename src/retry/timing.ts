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

/** setTimeout's ceiling (about 24.8 days); longer waits are cut and callers re-check the clock. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(Math.max(0, ms), MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export const now: Now = Date.now;
export const random: Random = Math.random;
