import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Outcome, RequestContext, Route } from './context.js';
import { HttpError } from './http.js';
import type { Account } from './keys.js';
import { IN_FLIGHT_RETRY_MS } from './ratelimit.js';

/**
 * What an ordinary key's requests pass before their handler: the Retry-After honour check (on
 * arrival), the in-flight slot, and the fault paths' latency (inside the slot, so it counts as in flight;
 * the answer is prepared during it).
 */
export async function gated(context: RequestContext, account: Account, route: Route): Promise<Outcome> {
  const { state, path, signal } = context;
  const violation = account.limiter.violation(context.arrivedAfter);
  if (violation) state.recorder.violation(account.label, violation);
  if (!account.limiter.enter()) {
    const max = account.limiter.limits.maxInFlight;
    throw new HttpError(
      429,
      `Too many requests in flight for this key (limit ${max})`,
      undefined,
      IN_FLIGHT_RETRY_MS,
    );
  }
  try {
    if (!state.faults.covers(path)) return await route.handle(context);
    // Latency is the time to answer, work included: the answer is prepared while the clock runs,
    // so a "50 ms" gateway answers in 50 ms whatever its own CPU cost (as long as it keeps up).
    const answerAt = performance.now() + state.faults.latencyMs();
    try {
      return await route.handle(context);
    } finally {
      await pause(Math.max(0, answerAt - performance.now()), signal);
    }
  } finally {
    account.limiter.leave();
  }
}

/** A 429 from the rate windows, whose wait is exact (rateLimitHeaders also gives it as retry-after-ms). */
export class WindowLimited extends HttpError {}

/** Takes `tokens` from the key's rate windows, or answers 429. */
export function admit(account: Account, tokens: number): void {
  const admission = account.limiter.admit(performance.now(), tokens);
  if (admission.ok) return;
  // A request that can never fit gets no Retry-After: waiting would not help.
  const wait = Number.isFinite(admission.waitMs) ? admission.waitMs : undefined;
  throw new WindowLimited(429, admission.message, undefined, wait);
}

export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0) await sleep(ms, undefined, { signal });
}
