/**
 * The rate budget's state and its rules, as pure functions of a plain object: one place for the
 * logic, whether the state lives in this process (rate-budget.ts) or in Redis for every worker
 * (queue/shared-rate-budget.ts). Times are the store's clock (ms); only durations leave it.
 *
 * Two dimensions, requests and tokens per minute, each paced by GCRA: a request reserves the
 * instant its cost allows at the paced rate (the limit times DEFAULTS.rate.pace), at most burstMs
 * ahead of the even pace. A limit is configured (`--rpm`/`--tpm`, then a ceiling too), read from
 * x-ratelimit-limit-* headers, or learned from a 429: the successful requests (tokens) of the last
 * window over the window plus the Retry-After, which is exact for a window limit met at full speed,
 * bounded by a step down from the limit held. After a quiet stretch in which the pace held requests
 * back, a learned limit grows by a fixed step (additive increase, multiplicative decrease).
 */
import { DEFAULTS } from '../config/defaults.js';
import type { PerMinute, RateDimension, RateSource, RateView } from '../domain.js';

export type { PerMinute, RateDimension, RateView };

export const RATE_DIMENSIONS: readonly RateDimension[] = ['requests', 'tokens'];

export interface DimensionState {
  /** The gateway's limit per minute as far as known; absent: unknown (not paced). */
  limit?: number;
  source?: RateSource;
  /** What the limit may not grow past: the configured or the announced limit. */
  ceiling?: number;
  /** The additive increase, set when the limit is learned. */
  step?: number;
  /** GCRA: the instant from which the next unit is on pace. */
  tat: number;
  /** The gateway said none is left (x-ratelimit-remaining-* = 0). */
  exhausted?: boolean;
  /** The last time this dimension's pace held a request back: only a binding dimension grows. */
  waitedAt?: number;
}

export interface PaceState {
  requests: DimensionState;
  tokens: DimensionState;
  /** The last decrease: a 429 to a request sent before it is the same congestion, not a new one. */
  decreasedAt: number;
  /** The last time a reservation had to wait: the pace is what holds the run. */
  waitedAt: number;
  /** The last change of a limit: the quiet stretch counts from it. */
  changedAt: number;
  /**
   * A 429 not learned from yet: what it says is read a moment later, once the successes other
   * workers had before it are counted too (their counts may still be on their way).
   */
  pending?: { at: number; retryAfterMs: number; dimensions: RateDimension[] };
  /**
   * What the gateway billed of the tokens estimated, a moving average: a request reserves its
   * estimate times this (the planner's estimate is an upper bound; reserving it whole paced a run
   * to a third of a learned token rate until the answers settled it).
   */
  billedShare?: number;
  /** Successful requests and their billed tokens by slice of the window (slice, requests, tokens). */
  recent: [number, number, number][];
}

/** Weight of each answer in the billed share's moving average. */
const SHARE_WEIGHT = 0.1;

/** What a request will be billed in a dimension: its tokens are the estimate times the billed share. */
function expected(state: PaceState, cost: RateCost, d: RateDimension): number {
  return d === 'tokens' ? cost.tokens * (state.billedShare ?? 1) : cost[d];
}

/** The budget's timings and steps (DEFAULTS.rate; tests scale its times down). */
export type RateTuning = { readonly [K in keyof typeof DEFAULTS.rate]: number };

/** The tuning with its times multiplied by `factor`: a gateway whose window is shorter than a minute. */
export function scaledTuning(factor: number, tuning: RateTuning = DEFAULTS.rate): RateTuning {
  const scaled: Record<string, number> = { ...tuning };
  for (const key of ['burstMs', 'windowMs', 'quietMs', 'decreaseSpacingMs'] as const)
    scaled[key] = tuning[key] * factor;
  return scaled as RateTuning;
}

/** "Never" that survives JSON (a shared state is stored as JSON, where -Infinity becomes null). */
const NEVER = -1e15;

export const emptyPaceState = (configured: PerMinute = {}): PaceState => {
  const dimension = (limit: number | undefined): DimensionState =>
    limit === undefined ? { tat: 0 } : { limit, source: 'configured', ceiling: limit, tat: 0 };
  return {
    requests: dimension(configured.requests),
    tokens: dimension(configured.tokens),
    decreasedAt: NEVER,
    waitedAt: NEVER,
    changedAt: 0,
    recent: [],
  };
};

/** What one request will cost: 1 request, and the tokens it will be billed as estimated. */
export type RateCost = Record<RateDimension, number>;

/** The rate a dimension is paced to, per minute; undefined when not paced. */
export function pacedRate(state: DimensionState, tuning: RateTuning = DEFAULTS.rate): number | undefined {
  return state.limit === undefined ? undefined : state.limit * tuning.pace;
}

/**
 * Reserves the earliest instant `cost` fits every paced dimension; returns the ms to wait for it.
 * The reservation stands whatever happens next: a request that does not go gives its slot up.
 */
export function reserve(
  state: PaceState,
  cost: RateCost,
  now: number,
  tuning: RateTuning = DEFAULTS.rate,
): number {
  learnPending(state, now, tuning);
  growIfQuiet(state, now, tuning);
  let at = now;
  for (const d of RATE_DIMENSIONS) {
    if (pacedRate(state[d], tuning) !== undefined) at = Math.max(at, state[d].tat - tuning.burstMs);
  }
  for (const d of RATE_DIMENSIONS) {
    const rate = pacedRate(state[d], tuning);
    if (rate === undefined) continue;
    if (at > now && state[d].tat - tuning.burstMs >= at) state[d].waitedAt = now;
    state[d].tat = Math.max(state[d].tat, at) + (expected(state, cost, d) * 60_000) / rate;
  }
  if (at > now) state.waitedAt = now;
  return at - now;
}

/** What the gateway's rate-limit headers said, by dimension (x-ratelimit-*-requests / -tokens). */
export interface AnnouncedLimits {
  readonly limit?: PerMinute;
  readonly remaining?: PerMinute;
}

export type PaceAnswer =
  | {
      readonly ok: true;
      /** Tokens reserved for the request, and what the gateway billed (usage), when it said. */
      readonly estimatedTokens: number;
      readonly billedTokens?: number;
      readonly announced: AnnouncedLimits;
    }
  | {
      readonly ok: false;
      /** How long ago the request that got the 429 was sent, and the tokens it was to be billed. */
      readonly sentAgoMs: number;
      readonly estimatedTokens: number;
      readonly retryAfterMs?: number;
      readonly announced: AnnouncedLimits;
    };

/** Folds one answer of the gateway into the state: a success, or a 429. */
export function answered(
  state: PaceState,
  answer: PaceAnswer,
  now: number,
  tuning: RateTuning = DEFAULTS.rate,
): void {
  learnPending(state, now, tuning);
  adopt(state, answer.announced);
  if (answer.ok) {
    const reserved = expected(state, { requests: 1, tokens: answer.estimatedTokens }, 'tokens');
    const billed = answer.billedTokens ?? reserved;
    settle(state, billed - reserved, tuning);
    count(state, now, billed, tuning);
    if (answer.billedTokens !== undefined && answer.estimatedTokens > 0) {
      const share = Math.min(2, Math.max(0.05, answer.billedTokens / answer.estimatedTokens));
      state.billedShare = (state.billedShare ?? share) * (1 - SHARE_WEIGHT) + share * SHARE_WEIGHT;
    }
    return;
  }
  const retryAfterMs = answer.retryAfterMs ?? 0;
  // Nothing reserved before the wait ends goes out with it all at once: the pace resumes after it.
  for (const d of RATE_DIMENSIONS) state[d].tat = Math.max(state[d].tat, now + retryAfterMs);
  // One decrease per congestion: not for a request sent before the last one, nor soon after it (a
  // gateway answering 429 at random would otherwise walk the pace down to nothing in seconds).
  if (now - answer.sentAgoMs < state.decreasedAt || now - state.decreasedAt < tuning.decreaseSpacingMs)
    return;
  const cost = { requests: 1, tokens: answer.estimatedTokens };
  const dimensions = limitingDimensions(state, answer.announced, {
    requests: 1,
    tokens: expected(state, cost, 'tokens'),
  });
  state.pending = { at: now, retryAfterMs, dimensions };
  state.decreasedAt = now;
  state.changedAt = now;
}

/** Learns from the pending 429 once its moment has passed (see PaceState.pending). */
function learnPending(state: PaceState, now: number, tuning: RateTuning): void {
  const pending = state.pending;
  if (pending === undefined || now < pending.at + tuning.learnDelayMs) return;
  delete state.pending;
  for (const d of pending.dimensions) decrease(state, d, pending.at, pending.retryAfterMs, tuning);
}

export function viewOf(state: PaceState, now: number, tuning: RateTuning = DEFAULTS.rate): RateView {
  const paced: PerMinute = {};
  const source: Partial<Record<RateDimension, RateSource>> = {};
  for (const d of RATE_DIMENSIONS) {
    const rate = pacedRate(state[d], tuning);
    if (rate !== undefined) paced[d] = Math.round(rate);
    const from = state[d].source;
    if (from !== undefined) source[d] = from;
  }
  const { requests, tokens, span } = recentTotals(state, now, tuning);
  const perMinute = (n: number) => (span > 0 ? Math.round((n * 60_000) / span) : 0);
  return {
    paced,
    source,
    measured: { requests: perMinute(requests), tokens: perMinute(tokens) },
    holding: now - state.waitedAt < 1_000,
  };
}

// ---- the rules ----------------------------------------------------------------------------------

/** An announced limit is the gateway's word: it sets the limit and caps growth (under a configured cap). */
function adopt(state: PaceState, announced: AnnouncedLimits): void {
  for (const d of RATE_DIMENSIONS) {
    const dim = state[d];
    const limit = announced.limit?.[d];
    if (limit !== undefined && limit > 0) {
      const configured = dim.source === 'configured' ? dim.ceiling : undefined;
      const ceiling = Math.min(limit, configured ?? Number.POSITIVE_INFINITY);
      if (dim.source !== 'learned' || dim.limit === undefined || dim.limit > ceiling) {
        dim.limit = ceiling;
        dim.source = configured !== undefined && configured <= limit ? 'configured' : 'headers';
      }
      dim.ceiling = ceiling;
    }
    const remaining = announced.remaining?.[d];
    if (remaining !== undefined) dim.exhausted = remaining <= 0;
  }
}

/** The tokens billed differ from the estimate reserved: the pace moves by the difference. */
function settle(state: PaceState, extraTokens: number, tuning: RateTuning): void {
  const rate = pacedRate(state.tokens, tuning);
  if (rate === undefined || extraTokens === 0) return;
  state.tokens.tat += (extraTokens * 60_000) / rate;
}

/** Successes are counted in slices of a window: 1 s of a minute. */
const SLICES = 60;
const sliceOf = (at: number, tuning: RateTuning) => Math.floor(at / (tuning.windowMs / SLICES));

function count(state: PaceState, now: number, tokens: number, tuning: RateTuning): void {
  const slice = sliceOf(now, tuning);
  const last = state.recent.at(-1);
  if (last !== undefined && last[0] === slice) {
    last[1] += 1;
    last[2] += tokens;
  } else {
    state.recent.push([slice, 1, tokens]);
  }
  const oldest = sliceOf(now - tuning.windowMs, tuning);
  while (state.recent.length > 0 && state.recent[0]![0] <= oldest) state.recent.shift();
}

function recentTotals(
  state: PaceState,
  now: number,
  tuning: RateTuning,
): { requests: number; tokens: number; span: number } {
  const oldest = sliceOf(now - tuning.windowMs, tuning);
  let requests = 0;
  let tokens = 0;
  let first: number | undefined;
  const latest = sliceOf(now, tuning);
  for (const [slice, r, t] of state.recent) {
    if (slice <= oldest || slice > latest) continue;
    first ??= slice;
    requests += r;
    tokens += t;
  }
  // From the oldest success counted, not from the window's start: under a window limit met at full
  // speed, that span and the Retry-After (when the oldest leaves the gateway's window) make a window.
  const span = first === undefined ? 0 : Math.max(1, now - first * (tuning.windowMs / SLICES));
  return { requests, tokens, span };
}

/**
 * The dimensions a 429 is about: with headers, the announced ones that had no room left for the
 * request (or every announced one, when all seemed to); without, every dimension.
 */
function limitingDimensions(state: PaceState, announced: AnnouncedLimits, cost: RateCost): RateDimension[] {
  const known = RATE_DIMENSIONS.filter(
    (d) => announced.limit?.[d] !== undefined || state[d].source === 'headers',
  );
  if (known.length === 0) return [...RATE_DIMENSIONS];
  const full = known.filter((d) => {
    const remaining = announced.remaining?.[d];
    return remaining === undefined ? state[d].exhausted === true : remaining < cost[d];
  });
  return full.length > 0 ? full : known;
}

/**
 * Lowers a dimension's limit after a 429: to what the gateway let through (last window's successes
 * over the window and the wait), at least a step below the limit held, at most halving it. An
 * unknown limit is learned only from credible evidence; until then the Retry-After gate alone holds.
 */
function decrease(
  state: PaceState,
  d: RateDimension,
  now: number,
  retryAfterMs: number,
  tuning: RateTuning,
): boolean {
  const dim = state[d];
  const { requests, tokens, span } = recentTotals(state, now, tuning);
  const done = d === 'requests' ? requests : tokens;
  // Believed only when it covers most of a window: a few successes and a short wait say little.
  const credible = done >= tuning.minEvidence && span + retryAfterMs >= tuning.windowMs / 2;
  const evidence = credible ? (done * 60_000) / (span + retryAfterMs) : undefined;
  const { decrease: step, maxDecrease } = tuning;
  let next: number | undefined;
  if (dim.limit === undefined) next = evidence;
  else next = Math.max(dim.limit * (1 - maxDecrease), Math.min(dim.limit * (1 - step), evidence ?? Infinity));
  if (next === undefined || !(next > 0)) return false;
  if (dim.limit === undefined) dim.step = next * tuning.increase;
  dim.limit = next;
  dim.source = 'learned';
  dim.step ??= next * tuning.increase;
  return true;
}

/** A learned limit grows by its step after a quiet stretch in which its pace held requests back. */
function growIfQuiet(state: PaceState, now: number, tuning: RateTuning): void {
  const { quietMs } = tuning;
  if (now - state.changedAt < quietMs || state.pending !== undefined) return;
  let grew = false;
  for (const d of RATE_DIMENSIONS) {
    const dim = state[d];
    if (dim.source !== 'learned' || dim.limit === undefined || dim.step === undefined) continue;
    if (dim.waitedAt === undefined || now - dim.waitedAt > quietMs) continue;
    const next = Math.min(dim.limit + dim.step, dim.ceiling ?? Number.POSITIVE_INFINITY);
    if (next > dim.limit) {
      dim.limit = next;
      grew = true;
    }
  }
  if (grew) state.changedAt = now;
}
