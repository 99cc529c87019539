import { describe, expect, it } from 'vitest';
import { headerValue, parseRetryAfter } from '../../src/retry/retry-after.js';

const now = Date.parse('2025-01-01T00:00:00Z');

describe('parseRetryAfter', () => {
  it('reads Retry-After in whole and decimal seconds', () => {
    expect(parseRetryAfter({ 'retry-after': '3' }, now)).toBe(3000);
    expect(parseRetryAfter({ 'retry-after': '1.5' }, now)).toBe(1500);
    expect(parseRetryAfter({ 'retry-after': '0' }, now)).toBe(0);
    // Rounded up: a timer must never fire before the server's instant.
    expect(parseRetryAfter({ 'retry-after': '0.0015' }, now)).toBe(2);
  });

  it('reads Retry-After as an HTTP date, relative to now; a past date means 0', () => {
    expect(parseRetryAfter({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }, now)).toBe(5000);
    expect(parseRetryAfter({ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }, now)).toBe(0);
  });

  it('clamps negative values to 0', () => {
    expect(parseRetryAfter({ 'retry-after': '-4' }, now)).toBe(0);
    expect(parseRetryAfter({ 'retry-after-ms': '-10' }, now)).toBe(0);
  });

  it('reads retry-after-ms (fractional allowed) and prefers it over Retry-After', () => {
    expect(parseRetryAfter({ 'retry-after-ms': '250' }, now)).toBe(250);
    expect(parseRetryAfter({ 'retry-after-ms': '250.2' }, now)).toBe(251);
    expect(parseRetryAfter({ 'retry-after-ms': '40', 'retry-after': '9' }, now)).toBe(40);
  });

  it('falls back to Retry-After when retry-after-ms is unusable', () => {
    expect(parseRetryAfter({ 'retry-after-ms': 'soon', 'retry-after': '2' }, now)).toBe(2000);
  });

  it('looks headers up case-insensitively and takes the first of repeated values', () => {
    expect(parseRetryAfter({ 'Retry-After': '7' }, now)).toBe(7000);
    expect(parseRetryAfter({ 'RETRY-AFTER-MS': '12' }, now)).toBe(12);
    expect(parseRetryAfter({ 'retry-after': ['2', '9'] }, now)).toBe(2000);
  });

  it('returns undefined when nothing usable is there', () => {
    expect(parseRetryAfter({}, now)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': undefined }, now)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': '' }, now)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': 'later, please' }, now)).toBeUndefined();
    expect(parseRetryAfter({ 'retry-after': '9'.repeat(400) }, now)).toBeUndefined();
  });
});

describe('headerValue', () => {
  it('prefers the exact lower-case key and handles arrays', () => {
    expect(headerValue({ 'x-request-id': 'a', 'X-Request-Id': 'b' }, 'X-Request-ID')).toBe('a');
    expect(headerValue({ 'X-Request-Id': 'b' }, 'x-request-id')).toBe('b');
    expect(headerValue({ 'set-cookie': [] }, 'set-cookie')).toBeUndefined();
  });
});
