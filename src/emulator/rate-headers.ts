import type { KeyLimiter, WindowUsage } from './ratelimit.js';

/*
 * OpenAI-style rate-limit headers (the rateLimitHeaders option): what a key's windows allow, what is
 * left of them and when they empty, so clients that pace themselves by these headers can be tested.
 */

const MINUTE_MS = 60_000;

/**
 * A duration as OpenAI writes x-ratelimit-reset-*, in a subset easy to parse back: `<ms>ms` under a
 * second, else `<s>s` or `<m>m<s>s` with up to 3 decimals (`59ms`, `1s`, `1m30.5s`, `6m0s`). Rounded
 * up to the ms, so a client waiting it out never comes back early.
 */
export function formatDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / MINUTE_MS);
  // An integer over 1000 prints as its exact decimal, at most 3 places.
  const seconds = String((whole % MINUTE_MS) / 1000);
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}

/**
 * The x-ratelimit-* headers of each window the key has, as they stand at `now`. The limit is scaled to
 * per minute (a test's short window still reads as a per-minute gateway); remaining and reset are the
 * window's own.
 */
export function rateLimitHeaders(limiter: KeyLimiter, now: number): Record<string, string> {
  const { requests, tokens } = limiter.usage(now);
  return {
    ...(requests ? windowHeaders('requests', requests, limiter.windowMs) : {}),
    ...(tokens ? windowHeaders('tokens', tokens, limiter.windowMs) : {}),
  };
}

function windowHeaders(kind: 'requests' | 'tokens', usage: WindowUsage, windowMs: number) {
  return {
    [`x-ratelimit-limit-${kind}`]: String(Math.round((usage.limit * MINUTE_MS) / windowMs)),
    [`x-ratelimit-remaining-${kind}`]: String(usage.remaining),
    [`x-ratelimit-reset-${kind}`]: formatDuration(usage.resetMs),
  };
}
