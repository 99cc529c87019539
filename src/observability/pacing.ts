/**
 * What holds a run's requests back, in words for the progress line, `status` and /metrics: the
 * gateway's rate (the rate budget is making requests wait), the in-flight window (every slot is
 * taken and requests queue for one), or neither: then the producer (reading, planning) is the limit.
 */
import type { Pacing, RateView } from '../domain.js';

export type Holder = 'gateway rate' | 'in-flight window' | 'producer';
export const HOLDERS: readonly Holder[] = ['gateway rate', 'in-flight window', 'producer'];

export interface PacingReading {
  readonly limitedBy: Holder;
  /** Successful requests and billed tokens per minute over the last minute. */
  readonly requestsPerMinute: number;
  readonly tokensPerMinute: number;
  /** The rates paced to, per minute, and where their limits come from (absent: not paced). */
  readonly paced: RateView['paced'];
  readonly source: RateView['source'];
}

export function readPacing(pacing: Pacing): PacingReading {
  const { rate, window } = pacing;
  const limitedBy: Holder = rate?.holding
    ? 'gateway rate'
    : window !== undefined && window.active >= window.limit && window.queued > 0
      ? 'in-flight window'
      : 'producer';
  return {
    limitedBy,
    requestsPerMinute: rate?.measured.requests ?? 0,
    tokensPerMinute: rate?.measured.tokens ?? 0,
    paced: rate?.paced ?? {},
    source: rate?.source ?? {},
  };
}

/** One short phrase: "114/min paced (learned), held by the gateway rate". */
export function describePacing(reading: PacingReading): string {
  const paced = reading.paced.requests ?? reading.paced.tokens;
  const unit = reading.paced.requests !== undefined ? 'req/min' : 'tok/min';
  const source = reading.paced.requests !== undefined ? reading.source.requests : reading.source.tokens;
  const pace = paced === undefined ? 'not paced' : `paced ${Math.round(paced)} ${unit} (${source})`;
  return `${pace}, held by ${reading.limitedBy}`;
}
