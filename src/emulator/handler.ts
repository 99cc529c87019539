import { performance } from 'node:perf_hooks';
import type { RequestContext } from './context.js';
import { gated, WindowLimited } from './gate.js';
import { ConnectionReset, HttpError, jsonResponse, readText, retryAfterHeaders } from './http.js';
import type { Credential } from './keys.js';
import type { LoopWatch } from './loop-watch.js';
import { rateLimitHeaders } from './rate-headers.js';
import type { KeyLimiter } from './ratelimit.js';
import { findRoute } from './routes.js';
import type { EmulatorState } from './state.js';
import type { RequestRecord } from './stats.js';

/*
 * One request, from Fetch Request to Fetch Response. It meets its checks in this order, the first
 * failing one answering:
 *
 *   route (404/405) → credentials (401) → for inference: Retry-After honour check (counted, not
 *   refused), in-flight slot (429), latency → body (400) and model (404) → rate windows (429) →
 *   provider routing (404 data policy, 529) → fault → credits (402) → answer.
 *
 * So faults only hit requests that would have reached a provider, and nothing faulted is charged.
 */

/**
 * Every request goes through here: route, read, authenticate, gate, handle, answer, record.
 * Rejects with ConnectionReset where the emulator gives no answer at all.
 */
export async function answer(
  state: EmulatorState,
  request: Request,
  signal: AbortSignal,
  loop: LoopWatch,
): Promise<Response> {
  const url = new URL(request.url);
  // Spec paths are relative to the base URL, which ends in /v1; anything else is recorded as it came.
  const versioned = url.pathname.startsWith('/v1/');
  const path = versioned ? url.pathname.slice('/v1'.length) : url.pathname;
  const record = arrival(request.method, path);
  const arrivedAfter = loop.earliestArrival(record.at);
  state.recorder.arrived();
  let credential: Credential | undefined;
  // The windows this answer reports (rateLimitHeaders, inference by an ordinary key), whatever it is.
  let windows: KeyLimiter | undefined;
  let reply: Response | undefined;
  try {
    const text = await readText(request);
    const route = findRoute(record.method, versioned ? path : undefined, url.pathname);
    credential = state.keys.authorize(request.headers.get('authorization') ?? undefined, route.access);
    record.key = credential.label;
    if (state.options.rateLimitHeaders && credential.kind === 'api' && route.access === 'inference') {
      windows = credential.account.limiter;
    }
    const context: RequestContext = {
      state,
      path,
      text,
      query: url.searchParams,
      credential,
      record,
      arrivedAfter,
      signal,
    };
    const outcome =
      credential.kind === 'api' && route.access === 'inference'
        ? await gated(context, credential.account, route)
        : await route.handle(context);
    if (outcome !== 'reset') {
      record.status = outcome.status;
      reply = jsonResponse(outcome.status, outcome.body, windowHeaders(windows));
    }
  } catch (error) {
    // When the emulator is closing, nobody is waiting for an answer any more: none is given.
    if (!signal.aborted) {
      const failure =
        error instanceof HttpError ? error : new HttpError(500, `Emulator error: ${String(error)}`);
      record.status = failure.status;
      reply = errorResponse(state, failure, credential, windows);
    }
  } finally {
    if (reply === undefined) record.status = 'reset';
    record.ms = performance.now() - record.at;
    state.recorder.answered(record);
  }
  if (reply === undefined) {
    throw new ConnectionReset(signal.aborted ? 'the emulator closed' : "the 'reset' fault");
  }
  return reply;
}

function arrival(method: string, path: string): RequestRecord {
  return { at: performance.now(), ms: 0, method, path, key: undefined, status: 0, inputs: 0, tokens: 0 };
}

/** The x-ratelimit-* headers of `windows` as they stand now; none without them. */
function windowHeaders(windows: KeyLimiter | undefined): Record<string, string> {
  return windows ? rateLimitHeaders(windows, performance.now()) : {};
}

/**
 * The error envelope, with Retry-After when the error has a wait (and the key held to it), and the
 * rate-limit headers of `windows`.
 */
function errorResponse(
  state: EmulatorState,
  error: HttpError,
  credential: Credential | undefined,
  windows: KeyLimiter | undefined,
): Response {
  let headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined) {
    const retryAfter = retryAfterHeaders(error.retryAfterMs, state.options.retryAfterFormat ?? 'seconds');
    headers = retryAfter.headers;
    let promisedMs = retryAfter.promisedMs;
    if (windows && error instanceof WindowLimited) {
      const exactMs = Math.ceil(error.retryAfterMs);
      headers = { ...headers, 'retry-after-ms': String(exactMs) };
      // A client may go by either header: the earlier one is what it was promised.
      promisedMs = Math.min(promisedMs, exactMs);
    }
    // Hold the key to it: requests before this instant are counted as violations.
    if (error.status === 429 && credential?.kind === 'api') {
      const toldAt = performance.now();
      credential.account.limiter.told(toldAt + promisedMs, toldAt);
    }
  }
  return jsonResponse(error.status, error.envelope(), { ...headers, ...windowHeaders(windows) });
}
