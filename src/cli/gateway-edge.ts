/**
 * The one place a command builds its gateway client: keys from the environment (never from flags:
 * they would land in shell history and process listings), the attribution headers, the deadline's
 * default, and the clear-text guard (the client's own, see gateway/transport.ts). The longest
 * Retry-After waited for defaults in the client. What differs between commands is passed in, never
 * rebuilt.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { Environment } from '../config/env.js';
import {
  GatewayClient,
  type GatewayClientOptions,
  type PaceStore,
  type PerMinute,
  type RetryAfterStore,
} from '../gateway/index.js';

export interface GatewayEdge {
  readonly baseUrl: string;
  readonly env: Environment;
  /** The key to use instead of EMBEDPIPE_API_KEY (the local emulator's). */
  readonly apiKey?: string;
  /** Send EMBEDPIPE_MANAGEMENT_KEY too (the members listing). */
  readonly management?: boolean;
  readonly allowInsecureHttp?: boolean;
  readonly timeoutMs?: number;
  /** Requests on the wire at once (the adaptive window); unset: no cap. */
  readonly maxInFlight?: number;
  /** Default: the client's (DEFAULTS.retry.maxRetryAfterMs). */
  readonly maxRetryAfterMs?: number;
  /** Shares the client's Retry-After waits (a distributed run's workers: RetryAfterSharing). */
  readonly retryAfterStore?: RetryAfterStore;
  /** Requests and tokens per minute the user knows the gateway allows (`--rpm`, `--tpm`). */
  readonly rateLimits?: PerMinute;
  /** Shares the rate budget (a distributed run's workers: queue/shared-pace.ts). */
  readonly paceStore?: PaceStore;
  readonly onRetryAfter?: GatewayClientOptions['onRetryAfter'];
  readonly onResponse?: GatewayClientOptions['onResponse'];
}

export function createGateway(edge: GatewayEdge): GatewayClient {
  const { env } = edge;
  const apiKey = edge.apiKey ?? env.apiKey;
  return new GatewayClient({
    baseUrl: edge.baseUrl,
    ...(apiKey ? { apiKey } : {}),
    ...(edge.management && env.managementKey ? { managementKey: env.managementKey } : {}),
    allowInsecureHttp: edge.allowInsecureHttp ?? false,
    timeoutMs: edge.timeoutMs ?? DEFAULTS.requestTimeoutMs,
    ...(edge.maxInFlight !== undefined ? { maxInFlight: edge.maxInFlight } : {}),
    ...(edge.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: edge.maxRetryAfterMs } : {}),
    ...(edge.retryAfterStore ? { retryAfterStore: edge.retryAfterStore } : {}),
    ...(edge.rateLimits ? { rateLimits: edge.rateLimits } : {}),
    ...(edge.paceStore ? { paceStore: edge.paceStore } : {}),
    ...(edge.onRetryAfter ? { onRetryAfter: edge.onRetryAfter } : {}),
    ...(edge.onResponse ? { onResponse: edge.onResponse } : {}),
    ...(env.referer ? { referer: env.referer } : {}),
    ...(env.serviceTitle ? { serviceTitle: env.serviceTitle } : {}),
  });
}
