export { type BackoffOptions, fullJitterDelay } from './backoff.js';
export { type GateOptions, RetryAfterGate, RetryAfterTooLongError, type TooLongError } from './gate.js';
export { isRetryable, paidRequestRetry, type RetryOptions, type RetryPolicy, withRetry } from './retry.js';
export { type HeaderBag, headerValue, parseRetryAfter } from './retry-after.js';
export { type Now, now, onAbort, type Random, random, type Sleep, sleep } from './timing.js';
export { AdaptiveWindow, type WindowOutcome, type WindowTicket } from './window.js';
