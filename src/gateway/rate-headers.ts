/**
 * Reading the rate limits a gateway announces (OpenAI's headers): x-ratelimit-limit-requests and
 * x-ratelimit-remaining-requests, and the same for tokens. The limits are per minute, as their
 * providers publish them. The reset headers are not read: providers disagree on what they count to.
 */

import { type HeaderBag, headerValue } from '../retry/retry-after.js';
import type { AnnouncedLimits, PerMinute, RateDimension } from './rate-pace.js';

const COUNT = /^\d+(?:\.\d+)?$/;

function numbers(headers: HeaderBag, kind: 'limit' | 'remaining'): PerMinute | undefined {
  let found: PerMinute | undefined;
  for (const d of ['requests', 'tokens'] as const satisfies readonly RateDimension[]) {
    const value = headerValue(headers, `x-ratelimit-${kind}-${d}`)?.trim();
    if (value === undefined || !COUNT.test(value)) continue;
    found = { ...found, [d]: Number(value) };
  }
  return found;
}

/** The limits and remaining counts the answer announced; empty when it announced none. */
export function announcedLimits(headers: HeaderBag): AnnouncedLimits {
  const limit = numbers(headers, 'limit');
  const remaining = numbers(headers, 'remaining');
  return { ...(limit ? { limit } : {}), ...(remaining ? { remaining } : {}) };
}
