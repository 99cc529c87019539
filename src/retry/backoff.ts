/**
 * Exponential backoff with full jitter: the delay is uniform between 0 and the exponential cap, so
 * many clients that failed together do not retry together.
 */
import { random as defaultRandom, type Random } from './timing.js';

export interface BackoffOptions {
  /** Cap of the first retry's delay. */
  baseMs: number;
  /** Cap of every delay. */
  maxMs: number;
}

/** Delay before retry number `attempt` (1 = after the first failure): random() * min(maxMs, baseMs * 2^(attempt-1)). */
export function fullJitterDelay(
  attempt: number,
  { baseMs, maxMs }: BackoffOptions,
  random: Random = defaultRandom,
): number {
  const cap = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return random() * cap;
}
