/**
 * Reading how long the server asked us to wait. `retry-after-ms` (milliseconds, possibly fractional)
 * wins over `Retry-After` (seconds, possibly decimal, or an HTTP date), being the more precise.
 */

/** Response headers as Node and undici give them: lower- or mixed-case names, repeated headers as arrays. */
export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

/** The first value of a header, looked up case-insensitively. */
export function headerValue(headers: HeaderBag, name: string): string | undefined {
  const wanted = name.toLowerCase();
  let value = headers[wanted];
  if (value === undefined) {
    for (const key in headers) {
      if (key.toLowerCase() === wanted) {
        value = headers[key];
        break;
      }
    }
  }
  return typeof value === 'string' || value === undefined ? value : value[0];
}

const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/**
 * Milliseconds to wait, or undefined when no usable header is present. Rounded up to whole
 * milliseconds (a timer never fires early by a fraction), and never negative: a date in the past
 * means "now".
 */
export function parseRetryAfter(headers: HeaderBag, nowMs: number): number | undefined {
  const ms = headerValue(headers, 'retry-after-ms')?.trim();
  if (ms && DECIMAL.test(ms)) return clamp(Number(ms));

  const value = headerValue(headers, 'retry-after')?.trim();
  if (!value) return undefined;
  if (DECIMAL.test(value)) return clamp(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : clamp(date - nowMs);
}

function clamp(ms: number): number | undefined {
  return Number.isFinite(ms) ? Math.max(0, Math.ceil(ms)) : undefined;
}
