import type { KeyLimits } from './options.js';

/** The sliding windows' length unless a key's `windowMs` shortens (or lengthens) it. */
export const DEFAULT_WINDOW_MS = 60_000;

/**
 * A request arriving this close before the instant its Retry-After named still counts as honouring
 * it: timers and the two clocks involved (client and emulator) are only good to a millisecond or two.
 */
export const RETRY_AFTER_TOLERANCE_MS = 5;

/**
 * Requests arriving this soon after a Retry-After was given may have left the client before it
 * could read it (a busy client thread, or a process not scheduled on a loaded machine: CI on two
 * cores saw such gaps: docs/benchmarks.md, "Design figures"), so they are not counted as violations. A
 * client ignoring Retry-After is still caught: every wait the emulator asks for is at least a second.
 */
export const IN_FLIGHT_GRACE_MS = 250;

/** A request that came inside a Retry-After wait: how far into it, and how far from its end (ms). */
export interface RetryAfterViolation {
  readonly afterToldMs: number;
  readonly beforeEndMs: number;
}

/**
 * Retry-After for an in-flight refusal. When a slot frees is unknowable, so the emulator asks for the
 * smallest wait the seconds format can express.
 */
export const IN_FLIGHT_RETRY_MS = 1000;

/** A window's state as a client would be told it: `remaining` in the window, `resetMs` until it is empty. */
export interface WindowUsage {
  limit: number;
  remaining: number;
  resetMs: number;
}

/** Weighted events over a sliding window: requests (weight 1) or tokens (weight = the request's tokens). */
class SlidingWindow {
  private readonly times: number[] = [];
  private readonly weights: number[] = [];
  private head = 0;
  private total = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Ms until `weight` more fits: 0 now, Infinity never (it exceeds the limit on its own). */
  waitFor(now: number, weight: number): number {
    this.expire(now);
    if (weight > this.limit) return Infinity;
    let excess = this.total + weight - this.limit;
    // Walk from the oldest event until enough weight has left the window.
    for (let i = this.head; excess > 0 && i < this.times.length; i++) {
      excess -= this.weights[i]!;
      if (excess <= 0) return this.times[i]! + this.windowMs - now;
    }
    return 0;
  }

  add(now: number, weight: number): void {
    // A weightless event (a request of no tokens) takes nothing, so it must not delay the reset.
    if (weight === 0) return;
    this.times.push(now);
    this.weights.push(weight);
    this.total += weight;
  }

  /** What is left now, and the ms until the newest event has left too (0 when the window is empty). */
  usage(now: number): WindowUsage {
    this.expire(now);
    const newest = this.times.at(-1);
    const resetMs = this.total > 0 && newest !== undefined ? newest + this.windowMs - now : 0;
    return { limit: this.limit, remaining: Math.max(0, this.limit - this.total), resetMs };
  }

  private expire(now: number): void {
    while (this.head < this.times.length && this.times[this.head]! + this.windowMs <= now) {
      this.total -= this.weights[this.head]!;
      this.head++;
    }
    // Drop the expired prefix now and then, so the arrays stay as long as the window is full.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head);
      this.weights.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** Admitted, or refused with a message and the wait until the request would fit (Infinity: never). */
export type Admission = { ok: true } | { ok: false; message: string; waitMs: number };

/** One key's limits, and the record of what it was told to wait. Times are performance.now() ms. */
export class KeyLimiter {
  /** Length of both windows: `requestsPerMinute` and `tokensPerMinute` are per this many ms. */
  readonly windowMs: number;
  private readonly requests: SlidingWindow | undefined;
  private readonly tokens: SlidingWindow | undefined;
  private inFlight = 0;
  private retryAfterUntil = Number.NEGATIVE_INFINITY;
  private retryAfterToldAt = Number.NEGATIVE_INFINITY;

  constructor(readonly limits: KeyLimits = {}) {
    const { requestsPerMinute, tokensPerMinute, windowMs = DEFAULT_WINDOW_MS } = limits;
    this.windowMs = windowMs;
    this.requests =
      requestsPerMinute === undefined ? undefined : new SlidingWindow(requestsPerMinute, windowMs);
    this.tokens = tokensPerMinute === undefined ? undefined : new SlidingWindow(tokensPerMinute, windowMs);
  }

  /** Takes an in-flight slot; false when the key already has `maxInFlight` requests being answered. */
  enter(): boolean {
    if (this.limits.maxInFlight !== undefined && this.inFlight >= this.limits.maxInFlight) return false;
    this.inFlight++;
    return true;
  }

  leave(): void {
    this.inFlight--;
  }

  /** Admits a request of `tokens` into both windows, or says how long until it would fit. */
  admit(now: number, tokens: number): Admission {
    const requestWait = this.requests?.waitFor(now, 1) ?? 0;
    const tokenWait = this.tokens?.waitFor(now, tokens) ?? 0;
    if (tokenWait === Infinity) {
      const message = `Request too large: ${tokens} tokens, but this key may use ${this.limits.tokensPerMinute} tokens ${this.per()}`;
      return { ok: false, message, waitMs: Infinity };
    }
    if (requestWait > 0 || tokenWait > 0) {
      const limit =
        tokenWait >= requestWait
          ? `${this.limits.tokensPerMinute} tokens ${this.per()}`
          : `${this.limits.requestsPerMinute} requests ${this.per()}`;
      return {
        ok: false,
        message: `Rate limit exceeded: ${limit}`,
        waitMs: Math.max(requestWait, tokenWait),
      };
    }
    this.requests?.add(now, 1);
    this.tokens?.add(now, tokens);
    return { ok: true };
  }

  /** The windows the key has, as they stand at `now` (both absent: the key has no rate limits). */
  usage(now: number): { requests?: WindowUsage; tokens?: WindowUsage } {
    return {
      ...(this.requests ? { requests: this.requests.usage(now) } : {}),
      ...(this.tokens ? { tokens: this.tokens.usage(now) } : {}),
    };
  }

  /** The window as messages name it: a test's shortened window must not call itself a minute. */
  private per(): string {
    return this.windowMs === DEFAULT_WINDOW_MS ? 'per minute' : `per ${this.windowMs} ms`;
  }

  /** Remembers that the key was told not to come back before `until`. */
  told(until: number, now: number): void {
    this.retryAfterUntil = Math.max(this.retryAfterUntil, until);
    this.retryAfterToldAt = now;
  }

  /**
   * When a request arriving at `now` ignores a Retry-After the key was given: how long after the
   * last 429 was told it came, and how long before the wait ended; undefined when it does not.
   */
  violation(now: number): RetryAfterViolation | undefined {
    const violates =
      now > this.retryAfterToldAt + IN_FLIGHT_GRACE_MS &&
      now < this.retryAfterUntil - RETRY_AFTER_TOLERANCE_MS;
    if (!violates) return undefined;
    return { afterToldMs: now - this.retryAfterToldAt, beforeEndMs: this.retryAfterUntil - now };
  }
}
