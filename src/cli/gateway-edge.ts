/**
 * The one place a command builds its gateway client: keys from the environment (never from flags:
 * they would land in shell history and process listings), the attribution headers, the deadline's
 * default, and the clear-text guard (the client's own, see gateway/transport.ts). The longest
 * Retry-After waited for defaults in the client.
 *
 * A command hands its resolved settings as they are (`run`, `enqueue` and `worker` settings all have
 * this shape) and, apart, what it wires in: shared stores, listeners, a test's dispatcher or clock.
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

/** What of a command's settings shapes its client. */
export interface GatewaySettings {
  readonly baseUrl: string;
  readonly allowInsecureHttp?: boolean;
  /** Default DEFAULTS.requestTimeoutMs. */
  readonly timeoutMs?: number;
  /** Requests on the wire at once (`--concurrency`); unset: no cap. */
  readonly concurrency?: number;
  /** `--max-retry-after`; unset: the client's default. */
  readonly retry?: { readonly maxRetryAfterMs?: number };
  /** Requests and tokens per minute the user knows the gateway allows (`--rpm`, `--tpm`). */
  readonly rateLimits?: PerMinute;
}

/** What a command wires into its client beside its settings. */
export interface GatewayWiring {
  /** The key to use instead of EMBEDPIPE_API_KEY (the local emulator's). */
  readonly apiKey?: string;
  /** Send EMBEDPIPE_MANAGEMENT_KEY too (the members listing). */
  readonly management?: boolean;
  /** Shares the client's Retry-After waits (a distributed run's workers: RetryAfterSharing). */
  readonly retryAfterStore?: RetryAfterStore;
  /** Shares the rate budget (a distributed run's workers: queue/shared-pace.ts). */
  readonly paceStore?: PaceStore;
  readonly onRetryAfter?: GatewayClientOptions['onRetryAfter'];
  readonly onResponse?: GatewayClientOptions['onResponse'];
  readonly dispatcher?: GatewayClientOptions['dispatcher'];
  readonly clock?: GatewayClientOptions['clock'];
}

export function createGateway(
  settings: GatewaySettings,
  env: Environment,
  wiring: GatewayWiring = {},
): GatewayClient {
  const apiKey = wiring.apiKey ?? env.apiKey;
  const maxRetryAfterMs = settings.retry?.maxRetryAfterMs;
  return new GatewayClient({
    baseUrl: settings.baseUrl,
    ...(apiKey ? { apiKey } : {}),
    ...(wiring.management && env.managementKey ? { managementKey: env.managementKey } : {}),
    allowInsecureHttp: settings.allowInsecureHttp ?? false,
    timeoutMs: settings.timeoutMs ?? DEFAULTS.requestTimeoutMs,
    ...(settings.concurrency !== undefined ? { maxInFlight: settings.concurrency } : {}),
    ...(maxRetryAfterMs !== undefined ? { maxRetryAfterMs } : {}),
    ...(settings.rateLimits ? { rateLimits: settings.rateLimits } : {}),
    ...(wiring.retryAfterStore ? { retryAfterStore: wiring.retryAfterStore } : {}),
    ...(wiring.paceStore ? { paceStore: wiring.paceStore } : {}),
    ...(wiring.onRetryAfter ? { onRetryAfter: wiring.onRetryAfter } : {}),
    ...(wiring.onResponse ? { onResponse: wiring.onResponse } : {}),
    ...(wiring.dispatcher ? { dispatcher: wiring.dispatcher } : {}),
    ...(wiring.clock ? { clock: wiring.clock } : {}),
    ...(env.referer ? { referer: env.referer } : {}),
    ...(env.serviceTitle ? { serviceTitle: env.serviceTitle } : {}),
  });
}
