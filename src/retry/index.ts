export { type BackoffOptions, fullJitterDelay } from './backoff.js';
export { isRetryable, type RetryOptions, type RetryPolicy, withRetry } from './retry.js';
export { type HeaderBag, headerValue, parseRetryAfter } from './retry-after.js';
export { type Clock, type Now, now, onAbort, type Random, random, type Sleep, sleep } from './timing.js';
export { AdaptiveWindow, type WindowOutcome, type WindowTicket } from './window.js';
