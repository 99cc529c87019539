import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EncodingFormat } from '../gateway/wire.js';
import { validateEmulatorOptions } from './config.js';
import { parseEmbeddingsRequest, renderEmbeddings } from './embeddings.js';
import { HttpError, parseJson, readText, retryAfterHeaders, sendJson } from './http.js';
import type { Access, Account, Credential } from './keys.js';
import { membersPage } from './members.js';
import type { EmulatorOptions, FaultKind } from './options.js';
import { chooseProvider } from './providers.js';
import { IN_FLIGHT_RETRY_MS } from './ratelimit.js';
import { createState, type EmulatorState } from './state.js';
import type { EmulatorStats, RequestRecord } from './stats.js';
import { parseTranscriptionRequest, renderTranscription, transcriptionCost } from './transcription.js';

/*
 * The emulator's HTTP server. A request meets its checks in this order, the first failing one
 * answering:
 *
 *   route (404/405) → credentials (401) → for inference: Retry-After honour check (counted, not
 *   refused), in-flight slot (429), latency → body (400) and model (404) → rate windows (429) →
 *   provider routing (404 data policy, 529) → fault → credits (402) → answer.
 *
 * So faults only hit requests that would have reached a provider, and nothing faulted is charged.
 */

export interface RunningEmulator {
  /** e.g. http://127.0.0.1:PORT/v1 */
  readonly baseUrl: string;
  readonly port: number;
  /** Live counters (a fresh object after reset()). */
  readonly stats: EmulatorStats;
  /** One record per request, in answer order, unless recordRequests is false. */
  readonly requests: RequestRecord[];
  /** The label stats and records use for a raw key; undefined for a key the emulator does not know. */
  keyLabel(key: string): string | undefined;
  /**
   * Forgets everything since start (stats, records, rate windows, spend, Retry-After debts, the fault
   * script's position), optionally taking new options; port and host stay as they are.
   */
  reset(options?: EmulatorOptions): void;
  close(): Promise<void>;
}

/** A handler's answer: JSON with a status, or a connection destroyed without one. */
type Outcome = { status: number; body: unknown } | 'reset';

interface RequestContext {
  readonly state: EmulatorState;
  readonly path: string;
  /** The raw body; handlers parse it, so a malformed one is answered in the documented order. */
  readonly text: string;
  readonly query: URLSearchParams;
  readonly credential: Credential;
  readonly record: RequestRecord;
  readonly signal: AbortSignal;
}

interface Route {
  readonly access: Access;
  readonly handle: (context: RequestContext) => Promise<Outcome> | Outcome;
}

const ROUTES: Readonly<Record<string, Route>> = {
  'POST /embeddings': { access: 'inference', handle: embeddings },
  'POST /audio/transcriptions': { access: 'inference', handle: transcriptions },
  'GET /embeddings/models': {
    access: 'any',
    handle: ({ state }) => ({ status: 200, body: { data: state.models.listing() } }),
  },
  'GET /organization/members': {
    access: 'management',
    handle: ({ state, query }) => ({ status: 200, body: membersPage(state.members, query) }),
  },
};

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const initial = validateEmulatorOptions(options);
  let state = createState(initial);
  const closing = new AbortController();
  // Every answer waiting out its latency listens to this one signal: many at once is by design, not
  // a leak (without this, 11 slow answers print MaxListenersExceededWarning).
  setMaxListeners(0, closing.signal);

  const server = createServer({ noDelay: true }, (req, res) => {
    void answer(state, req, res, closing.signal);
  });
  // Clients keep connections open between batches; close() ends them explicitly.
  server.keepAliveTimeout = 60_000;

  const host = initial.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(initial.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    baseUrl: `http://${urlHost}:${port}/v1`,
    port,
    get stats() {
      return state.recorder.stats;
    },
    get requests() {
      return state.recorder.requests;
    },
    keyLabel: (key) => state.keys.label(key),
    reset(next) {
      state = createState(next ? validateEmulatorOptions(next) : initial);
    },
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Every request goes through here: route, read, authenticate, gate, handle, answer, record. */
async function answer(state: EmulatorState, req: IncomingMessage, res: ServerResponse, signal: AbortSignal) {
  const url = new URL(req.url ?? '/', 'http://emulator');
  // Spec paths are relative to the base URL, which ends in /v1; anything else is recorded as it came.
  const versioned = url.pathname.startsWith('/v1/');
  const path = versioned ? url.pathname.slice('/v1'.length) : url.pathname;
  const record: RequestRecord = {
    at: performance.now(),
    ms: 0,
    method: req.method ?? 'GET',
    path,
    key: undefined,
    status: 0,
    inputs: 0,
    tokens: 0,
  };
  state.recorder.arrived();
  let credential: Credential | undefined;
  try {
    const text = await readText(req);
    const route = findRoute(record.method, versioned ? path : undefined, url.pathname);
    credential = state.keys.authorize(req.headers.authorization, route.access);
    record.key = credential.label;
    const context: RequestContext = {
      state,
      path,
      text,
      query: url.searchParams,
      credential,
      record,
      signal,
    };
    const outcome =
      credential.kind === 'api' && route.access === 'inference'
        ? await gated(context, credential.account, route)
        : await route.handle(context);
    if (outcome === 'reset') {
      record.status = 'reset';
      req.socket.destroy();
    } else {
      record.status = outcome.status;
      sendJson(res, outcome.status, outcome.body);
    }
  } catch (error) {
    if (signal.aborted) {
      // The emulator is closing: nobody is waiting for an answer any more.
      record.status = 'reset';
      req.socket.destroy();
    } else {
      const failure =
        error instanceof HttpError ? error : new HttpError(500, `Emulator error: ${String(error)}`);
      record.status = failure.status;
      sendError(state, res, failure, credential);
    }
  } finally {
    record.ms = performance.now() - record.at;
    state.recorder.answered(record);
  }
}

function findRoute(method: string, path: string | undefined, pathname: string): Route {
  const route = path === undefined ? undefined : ROUTES[`${method} ${path}`];
  if (route) return route;
  if (path !== undefined && Object.keys(ROUTES).some((key) => key.endsWith(` ${path}`))) {
    throw new HttpError(405, `Method ${method} is not allowed on ${pathname}`);
  }
  throw new HttpError(404, `No such endpoint: ${method} ${pathname}`);
}

/**
 * What an ordinary key's requests pass before their handler: the Retry-After honour check (on
 * arrival), the in-flight slot, and the fault paths' latency (inside the slot, so it counts as in flight;
 * the answer is prepared during it).
 */
async function gated(context: RequestContext, account: Account, route: Route): Promise<Outcome> {
  const { state, path, record, signal } = context;
  if (account.limiter.violates(record.at)) state.recorder.violation(account.label);
  if (!account.limiter.enter()) {
    const max = account.limiter.limits.maxInFlight;
    throw new HttpError(
      429,
      `Too many requests in flight for this key (limit ${max})`,
      undefined,
      IN_FLIGHT_RETRY_MS,
    );
  }
  try {
    if (!state.faults.covers(path)) return await route.handle(context);
    // Latency is the time to answer, work included: the answer is prepared while the clock runs,
    // so a "50 ms" gateway answers in 50 ms whatever its own CPU cost (as long as it keeps up).
    const answerAt = performance.now() + state.faults.latencyMs();
    try {
      return await route.handle(context);
    } finally {
      await pause(Math.max(0, answerAt - performance.now()), signal);
    }
  } finally {
    account.limiter.leave();
  }
}

async function embeddings(context: RequestContext): Promise<Outcome> {
  const { state, record } = context;
  const account = accountOf(context);
  const job = parseEmbeddingsRequest(parseJson(context.text), state.models);
  record.model = job.model.id;
  record.inputs = job.inputs.length;
  record.tokens = job.tokens;
  record.images = job.inputs.reduce((sum, input) => sum + (input.images ?? 0), 0);
  record.encoding = job.format;
  admit(account, job.tokens);
  const provider = chooseProvider(job.model.id, job.model.providers, job.provider, state.routing);
  record.provider = provider;

  const fault = await injectFault(context, provider);
  if (fault === 'reset') return 'reset';
  const encoding = deliveredEncoding(job.format, fault, state);
  const cost = encoding === 'none' ? 0 : job.tokens * Number(job.model.pricePerToken);
  account.charge(cost);
  if (encoding !== 'none') {
    const delivered = { inputs: job.inputs.length, tokens: job.tokens, truncated: job.truncated };
    state.recorder.served(account.label, provider, delivered, cost);
  }
  const body = renderEmbeddings(job, {
    id: state.nextResponseId(),
    provider,
    encoding,
    cost,
    shuffle: state.shuffle,
    omitIndex: state.options.omitIndex ?? false,
  });
  return { status: 200, body };
}

/** The encoding the answer really carries: as asked, or none/floats from a broken provider. */
function deliveredEncoding(
  asked: EncodingFormat,
  fault: 'empty' | undefined,
  state: EmulatorState,
): EncodingFormat | 'none' {
  if (fault === 'empty') return 'none';
  if (asked !== 'base64') return asked;
  const mode = state.options.base64Mode ?? 'normal';
  return mode === 'empty' ? 'none' : mode === 'floats' ? 'float' : 'base64';
}

async function transcriptions(context: RequestContext): Promise<Outcome> {
  const { state, record } = context;
  const account = accountOf(context);
  const job = parseTranscriptionRequest(parseJson(context.text), state.models);
  record.model = job.model.id;
  record.inputs = 1;
  // Audio has no prompt tokens: only the requests window applies.
  admit(account, 0);
  const provider = chooseProvider(job.model.id, job.model.providers, job.provider, state.routing);
  record.provider = provider;

  const fault = await injectFault(context, provider);
  if (fault === 'reset') return 'reset';
  if (fault === 'empty') return { status: 200, body: { text: '' } };
  const cost = transcriptionCost(job);
  account.charge(cost);
  state.recorder.served(account.label, provider, { inputs: 1, tokens: 0, truncated: 0 }, cost);
  return { status: 200, body: renderTranscription(job, cost) };
}

function accountOf(context: RequestContext): Account {
  if (context.credential.kind !== 'api') throw new Error('inference routes are for ordinary keys');
  return context.credential.account;
}

function admit(account: Account, tokens: number): void {
  const admission = account.limiter.admit(performance.now(), tokens);
  if (admission.ok) return;
  // A request that can never fit gets no Retry-After: waiting would not help.
  const wait = Number.isFinite(admission.waitMs) ? admission.waitMs : undefined;
  throw new HttpError(429, admission.message, undefined, wait);
}

/**
 * Draws the request's fault, after routing (so it can name the provider) and before any charge.
 * Error faults throw; 'slow' waits and lets the request succeed; 'reset' and 'empty' are returned.
 */
async function injectFault(
  context: RequestContext,
  provider: string,
): Promise<'reset' | 'empty' | undefined> {
  const { state, path, record } = context;
  if (!state.faults.covers(path)) return undefined;
  const kind: FaultKind | undefined = state.faults.next();
  if (kind === undefined) return undefined;
  record.fault = kind;
  state.recorder.fault(kind);
  const error = state.faults.error(kind, provider);
  if (error) throw error;
  if (kind === 'slow') {
    await pause(state.faults.slowMs, context.signal);
    return undefined;
  }
  return kind === 'reset' || kind === 'empty' ? kind : undefined;
}

function sendError(
  state: EmulatorState,
  res: ServerResponse,
  error: HttpError,
  credential: Credential | undefined,
) {
  let headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined) {
    const retryAfter = retryAfterHeaders(error.retryAfterMs, state.options.retryAfterFormat ?? 'seconds');
    headers = retryAfter.headers;
    // Hold the key to it: requests before this instant are counted as violations.
    if (error.status === 429 && credential?.kind === 'api') {
      const toldAt = performance.now();
      credential.account.limiter.told(toldAt + retryAfter.promisedMs, toldAt);
    }
  }
  sendJson(res, error.status, error.envelope(), headers);
}

async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms > 0) await sleep(ms, undefined, { signal });
}
