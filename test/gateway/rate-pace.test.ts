import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { answered, emptyPaceState, type PaceState, reserve, viewOf } from '../../src/gateway/rate-pace.js';

const { pace, burstMs, quietMs } = DEFAULTS.rate;
const ONE = { requests: 1, tokens: 0 };
const NOTHING = { requests: 0, tokens: 0 };

/** A 429 is learned from a moment after it came (learnDelayMs): the next change after that. */
const later = (state: PaceState, at: number) => reserve(state, NOTHING, at + DEFAULTS.rate.learnDelayMs);

/** Sends `n` requests as soon as the pace lets them; returns their send instants. */
function sendAll(state: PaceState, n: number, from: number, cost = ONE): number[] {
  const at: number[] = [];
  let now = from;
  for (let i = 0; i < n; i++) {
    now += reserve(state, cost, now);
    at.push(now);
  }
  return at;
}

describe('the rate pace', () => {
  it('lets everything through while no limit is known', () => {
    const state = emptyPaceState();
    expect(sendAll(state, 100, 1_000).every((t) => t === 1_000)).toBe(true);
  });

  it('paces a configured limit evenly, a small burst ahead at most', () => {
    const state = emptyPaceState({ requests: 120 });
    const at = sendAll(state, 241, 0);
    const interval = 60_000 / (120 * pace);
    // Over any minute, at most the paced rate and the burst: never above the limit.
    for (let i = 0; i < at.length; i++) {
      const inMinute = at.filter((t) => t >= at[i]! && t < at[i]! + 60_000).length;
      expect(inMinute).toBeLessThanOrEqual(Math.ceil(120 * pace + burstMs / interval));
      expect(inMinute).toBeLessThanOrEqual(120);
    }
    expect(at.at(-1)! - at[0]!).toBeGreaterThan(interval * 239);
  });

  it('paces by tokens, and settles the estimate with what was billed', () => {
    const state = emptyPaceState({ tokens: 60_000 });
    const cost = { requests: 1, tokens: 1_000 };
    const first = sendAll(state, 3, 0, cost);
    const interval = (1_000 * 60_000) / (60_000 * pace);
    expect(first[2]! - first[1]!).toBeCloseTo(interval, 0);
    // Billed half the estimate: the next request goes half an interval earlier than it would have.
    const tatBefore = state.tokens.tat;
    answered(state, { ok: true, estimatedTokens: 1_000, billedTokens: 500, announced: {} }, first[2]!);
    expect(state.tokens.tat).toBeCloseTo(tatBefore - interval / 2, 3);
  });

  it('reserves what the gateway bills of the estimates, not the upper estimate whole', () => {
    const state = emptyPaceState({ tokens: 60_000 });
    for (let i = 0; i < 20; i++)
      answered(state, { ok: true, estimatedTokens: 900, billedTokens: 300, announced: {} }, 1_000 + i);
    expect(state.billedShare).toBeCloseTo(1 / 3, 5);
    const before = state.tokens.tat;
    reserve(state, { requests: 1, tokens: 900 }, before);
    expect(state.tokens.tat - before).toBeCloseTo((300 * 60_000) / (60_000 * pace), 3);
  });

  it('learns a window limit from the first 429: the successes over the window and the wait', () => {
    const state = emptyPaceState();
    // 120 successes in the first second, then a 429 asking to wait the rest of the minute.
    for (let i = 0; i < 120; i++)
      answered(state, { ok: true, estimatedTokens: 10, announced: {} }, 1_000 + i * 8);
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 5, retryAfterMs: 59_000, announced: {} },
      2_000,
    );
    expect(state.requests.limit).toBeUndefined();
    later(state, 2_000);
    expect(state.requests.source).toBe('learned');
    expect(state.requests.limit).toBeGreaterThan(115);
    expect(state.requests.limit).toBeLessThan(125);
    // Nothing goes before the wait ends, and then at the paced rate, not all at once.
    const at = sendAll(state, 10, 2_600);
    expect(at[0]!).toBeGreaterThanOrEqual(2_000 + 59_000 - burstMs);
    expect(at[9]! - at[0]!).toBeGreaterThan(8 * (60_000 / state.requests.limit!));
  });

  it('counts 429s to requests sent together as one decrease', () => {
    const state = emptyPaceState({ requests: 100 });
    answered(state, { ok: true, estimatedTokens: 1, announced: {} }, 1_000);
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 50, retryAfterMs: 1_000, announced: {} },
      10_000,
    );
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 60, retryAfterMs: 1_000, announced: {} },
      10_010,
    );
    later(state, 10_010);
    const after = state.requests.limit!;
    expect(after).toBeLessThan(100);
    expect(after).toBeGreaterThanOrEqual(100 * (1 - DEFAULTS.rate.maxDecrease));
    expect(state.requests.limit).toBe(after);
    // A request sent after the decrease, answered 429 right after it: the same congestion.
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 5, retryAfterMs: 1_000, announced: {} },
      10_550,
    );
    later(state, 10_550);
    expect(state.requests.limit).toBe(after);
    // A request sent after the decrease that meets a 429 seconds later: another step down.
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 5, retryAfterMs: 1_000, announced: {} },
      16_050,
    );
    later(state, 16_050);
    expect(state.requests.limit).toBeLessThan(after);
  });

  it('learns nothing from a 429 with little evidence behind it (a few successes, a short wait)', () => {
    const state = emptyPaceState();
    for (let i = 0; i < 5; i++) answered(state, { ok: true, estimatedTokens: 1, announced: {} }, 1_000 + i);
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 1, retryAfterMs: 1_000, announced: {} },
      1_010,
    );
    later(state, 1_010);
    expect(state.requests.limit).toBeUndefined();
  });

  it('grows a learned limit after a quiet stretch in which the pace held requests back, never past a ceiling', () => {
    const state = emptyPaceState();
    for (let i = 0; i < 60; i++) answered(state, { ok: true, estimatedTokens: 1, announced: {} }, 1_000 + i);
    answered(
      state,
      { ok: false, estimatedTokens: 1, sentAgoMs: 1, retryAfterMs: 59_000, announced: {} },
      1_100,
    );
    later(state, 1_100);
    const learned = state.requests.limit!;
    // Held back all along (a steady stream), quiet for longer than quietMs: grows by its step.
    const at = sendAll(state, 200, 60_200);
    expect(at.at(-1)! - 60_200).toBeGreaterThan(quietMs);
    expect(state.requests.limit!).toBeGreaterThan(learned);
    // An announced limit caps it.
    answered(state, { ok: true, estimatedTokens: 1, announced: { limit: { requests: 62 } } }, at.at(-1)!);
    sendAll(state, 400, at.at(-1)!);
    expect(state.requests.limit!).toBeLessThanOrEqual(62);
  });

  it('adopts announced limits, and a 429 with headers lowers only the dimension used up', () => {
    const state = emptyPaceState();
    answered(
      state,
      {
        ok: true,
        estimatedTokens: 100,
        announced: {
          limit: { requests: 500, tokens: 100_000 },
          remaining: { requests: 499, tokens: 99_900 },
        },
      },
      1_000,
    );
    expect(state.requests).toMatchObject({ limit: 500, source: 'headers' });
    expect(state.tokens).toMatchObject({ limit: 100_000, source: 'headers' });
    answered(
      state,
      {
        ok: false,
        estimatedTokens: 1,
        sentAgoMs: 1,
        retryAfterMs: 2_000,
        announced: { remaining: { requests: 300, tokens: 0 } },
      },
      2_000,
    );
    later(state, 2_000);
    expect(state.requests.limit).toBe(500);
    expect(state.tokens.limit).toBeLessThan(100_000);
  });

  it('a configured limit is a ceiling: announced limits above it do not raise it', () => {
    const state = emptyPaceState({ requests: 60 });
    answered(state, { ok: true, estimatedTokens: 1, announced: { limit: { requests: 500 } } }, 1_000);
    expect(state.requests).toMatchObject({ limit: 60, source: 'configured' });
    answered(state, { ok: true, estimatedTokens: 1, announced: { limit: { requests: 30 } } }, 1_001);
    expect(state.requests).toMatchObject({ limit: 30, source: 'headers' });
  });

  it('survives a round trip through JSON (the shared store keeps it as JSON)', () => {
    const state = emptyPaceState({ requests: 60 });
    sendAll(state, 5, 0);
    const copy = JSON.parse(JSON.stringify(state)) as PaceState;
    expect(reserve(copy, ONE, 0)).toBe(reserve(state, ONE, 0));
    expect(viewOf(copy, 0)).toEqual(viewOf(state, 0));
  });
});
