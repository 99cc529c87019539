/**
 * The one guard against keys in clear text: a client that holds a key refuses a plain http:// base
 * URL to a host other than this machine, whatever command built it, unless the user said they
 * accept it (`--allow-insecure-http`, job file `gateway.allowInsecureHttp`).
 */
import { UsageError } from '../errors.js';

/** Loopback hosts: plain HTTP to them never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1') return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return /^::ffff:127\./.test(host) || /^::ffff:7f[0-9a-f]{2}:/.test(host);
}

/** Throws UsageError when a key would travel in clear text to `baseUrl`. */
export function refuseClearTextKeys(baseUrl: string, allowInsecureHttp: boolean): void {
  if (allowInsecureHttp) return;
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return; // the client reports a malformed URL
  }
  if (url.protocol !== 'http:' || isLoopbackHost(url.hostname)) return;
  throw new UsageError(
    `base URL ${url.origin} is plain HTTP to a remote host: the key would travel in clear text. ` +
      'Use https://, or pass --allow-insecure-http (job file: gateway.allowInsecureHttp) if you accept that',
  );
}
