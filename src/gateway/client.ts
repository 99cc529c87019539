/**
 * The typed gateway client: one method per endpoint of the spec, one request path under them all.
 * Each call is a single attempt; retries are composed outside (see retrying.ts and retry/), so the
 * embedder and the CLI choose their own policy.
 *
 * The client is the one holder of the Retry-After wait: one gate per key (retry-after-gate.ts),
 * closed by its own responses and by the waits its store brings from other clients, and bounded by
 * its --max-retry-after. Every request, a retry included, is held at its key's gate.
 *
 * Connections are pooled and kept alive by an undici Agent (or the dispatcher passed in); `close()`
 * releases them. Keys live in #private fields (invisible to util.inspect and JSON) and are scrubbed
 * from every error.
 */
import type { Dispatcher } from 'undici';
import { DEFAULTS } from '../config/defaults.js';
import type { Pacing } from '../domain.js';
import { EmbedpipeError, UsageError } from '../errors.js';
import { parseRetryAfter } from '../retry/retry-after.js';
import { type Clock, now as defaultNow, type Now, onAbort } from '../retry/timing.js';
import { AdaptiveWindow } from '../retry/window.js';
import { bodyTextOf, parseEmbeddingsBody, parseJsonBody } from './answer-body.js';
import { AnswerBuffers } from './answer-buffers.js';
import {
  decodeEmbeddings,
  decodeMembers,
  decodeModels,
  decodeTranscription,
  type EmbeddingModel,
  type EmbeddingsResult,
  type Member,
  type MembersPage,
  ShapeError,
  type TranscriptionResult,
} from './decode.js';
import { connectionErrorFrom, gatewayErrorFromResponse, invalidResponseError } from './errors.js';
import { JsonBodyWriter } from './json-body.js';
import { type PaceStore, RateBudget } from './rate-budget.js';
import { announcedLimits } from './rate-headers.js';
import type { PerMinute, RateTuning, RateView } from './rate-pace.js';
import {
  type GateState,
  type RetryAfterEvent,
  type RetryAfterGate,
  RetryAfterGates,
} from './retry-after-gate.js';
import type { GateKey, RetryAfterStore } from './retry-after-store.js';
import { refuseClearTextKeys } from './transport.js';
import { Agent, DecoratorHandler, request } from './undici-parts.js';
import {
  type EmbeddingsRequestBody,
  MEMBERS_LIMIT_DEFAULT,
  MEMBERS_LIMIT_MAX,
  MEMBERS_LIMIT_MIN,
  type TranscriptionRequestBody,
} from './wire.js';

export interface GatewayClientOptions {
  /** Ends in `/v1`; a trailing slash is tolerated. */
  baseUrl: string;
  /** Let a key go over plain http:// to a remote host (refused by default: see transport.ts). */
  allowInsecureHttp?: boolean;
  /** For inference endpoints (embeddings, models, transcription). */
  apiKey?: string;
  /** For the members listing only. */
  managementKey?: string;
  /** Deadline of one call, from sending to the last body byte. */
  timeoutMs?: number;
  /** Keep-alive connections to the gateway. */
  connections?: number;
  /**
   * Most requests on the wire at once. Only the exchange holds a slot: decoding a response happens
   * after its slot is handed to the next request, so the window never idles on our own CPU work.
   */
  maxInFlight?: number;
  /**
   * Longest Retry-After a request waits for at the gate (default DEFAULTS.retry.maxRetryAfterMs: the
   * one place it applies). An answer asking for longer is thrown `retryLater`, and a request meeting
   * a gate closed for longer fails at once with RetryAfterTooLongError (a retryable 429).
   */
  maxRetryAfterMs?: number;
  /**
   * Where the Retry-After waits are shared with other clients (default: in memory, this client's
   * own). A distributed run passes the Redis one (queue/shared-retry-after.ts).
   */
  retryAfterStore?: RetryAfterStore;
  /**
   * Requests and tokens per minute the user knows the gateway allows (`--rpm`, `--tpm`): the API key's
   * requests are paced to them from the start. Unset ones are read from x-ratelimit-* headers or
   * learned from 429s (gateway/rate-pace.ts).
   */
  rateLimits?: PerMinute;
  /** Where the rate budget is kept (default: in memory). A distributed run passes the Redis one. */
  paceStore?: PaceStore;
  /** The rate budget's timings (default DEFAULTS.rate): tests of short-window gateways scale them. */
  rateTuning?: RateTuning;
  /**
   * Sends the requests (default: an undici Agent of `connections` keep-alive connections, closed by
   * `close()`). One passed in is the caller's to close; the gate's last check is composed onto it.
   */
  dispatcher?: Dispatcher;
  /**
   * The clock of the Retry-After waits and of Retry-After dates (default: Date.now and real timers).
   * A call's deadline (timeoutMs) always runs on real time.
   */
  clock?: Partial<Clock>;
  /** Told each time a response with Retry-After closes (or extends) a key's gate. */
  onRetryAfter?: (event: RetryAfterEvent) => void;
  /** Told of every exchange that got an answer: its path, status and time to the last body byte (metrics). */
  onResponse?: (event: { path: string; status: number; seconds: number }) => void;
  /** Attribution headers (spec 5.5). */
  referer?: string;
  serviceTitle?: string;
  userAgent?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number;
  /**
   * A request already written finishes when `signal` aborts (its answer is returned): for paid
   * requests, whose answer must not be thrown away. `signal` then stops only the waits before it is
   * sent (for a slot of the window, at the Retry-After gate).
   */
  letRequestFinish?: boolean;
  /** The tokens the request will be billed, as estimated (the rate budget's cost; settled by usage). */
  tokens?: number;
}

export type EmbeddingsRequest = EmbeddingsRequestBody;

/** Defined with the records stages share (observability reads it without importing the client). */
export type { Pacing };

export interface TranscriptionRequest {
  /** `<provider>/<model_name>`. */
  model: string;
  /** Raw bytes, or base64 (a `data:…;base64,` prefix is stripped). */
  audio: { data: Buffer | Uint8Array | string; format: string };
  /** ISO-639-1; auto-detected when omitted. */
  language?: string;
  temperature?: number;
  /** Provider passthrough configuration, keyed by provider name. */
  providerOptions?: Record<string, Record<string, unknown>>;
}

export interface MembersQuery {
  offset?: number;
  limit?: number;
}

type KeyKind = GateKey;

/** The variable config/env.ts reads each key from, named when the key is missing. */
const KEY_ENV_VARS: Readonly<Record<KeyKind, string>> = {
  api: 'EMBEDPIPE_API_KEY',
  management: 'EMBEDPIPE_MANAGEMENT_KEY',
};

interface Route {
  method: 'GET' | 'POST';
  /** Relative to the base URL, with its query string. */
  path: string;
  key: KeyKind;
  body?: unknown;
  /** How a successful answer's body is parsed (parseJsonBody unless said). */
  parse?: (body: Buffer) => unknown;
}

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** The abort reason of our own deadline, told apart from the caller's signal. */
const DEADLINE = Symbol('deadline');

/** A request held back at the socket: its key's gate closed between the check and the write. */
class GateClosedAtSend extends Error {}

/** undici's types leave out the new-style callbacks its DecoratorHandler has. */
interface StartingHandler extends Dispatcher.DispatchHandler {
  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void;
}
const Decorator = DecoratorHandler as unknown as new (handler: Dispatcher.DispatchHandler) => StartingHandler;

/**
 * The last check of the Retry-After gate, made by undici right before the request's bytes are
 * written to a connection (after any wait for the connection to open): a 429 read meanwhile keeps
 * it from going out at all. Nothing was sent, so the request simply waits for the gate and goes again.
 */
class GateCheck extends Decorator {
  readonly #gate: RetryAfterGate;
  constructor(handler: Dispatcher.DispatchHandler, gate: RetryAfterGate) {
    super(handler);
    this.#gate = gate;
  }
  override onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    if (!this.#gate.isOpen) {
      controller.abort(new GateClosedAtSend('Retry-After gate closed before the request was written'));
      return;
    }
    super.onRequestStart(controller, context);
  }
}

const gatedDispatcher = (dispatcher: Dispatcher, gate: RetryAfterGate): Dispatcher =>
  dispatcher.compose((dispatch) => (options, handler) => dispatch(options, new GateCheck(handler, gate)));

export class GatewayClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxInFlight: number | undefined;
  readonly #apiKey: string | undefined;
  readonly #managementKey: string | undefined;
  readonly #headers: Readonly<Record<string, string>>;
  /** The Agent, or the dispatcher passed in (then not ours to close). */
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  /** The dispatcher, with the last gate check of each key at the socket (see GateCheck). */
  readonly #dispatchers: Readonly<Record<KeyKind, Dispatcher>>;
  /**
   * The requests on the wire: an AIMD window of at most maxInFlight, halved on a 429 and grown back
   * by one per window of successes (see retry/window.ts). Only the exchange holds a slot.
   */
  readonly #wire: AdaptiveWindow | undefined;
  readonly #maxRetryAfterMs: number;
  readonly #onRetryAfter: ((event: RetryAfterEvent) => void) | undefined;
  readonly #onResponse: GatewayClientOptions['onResponse'];
  readonly #now: Now;
  /** One Retry-After gate per key, checked right before a request goes on the wire. */
  readonly #gates: RetryAfterGates;
  /** When the API key's requests may leave: requests and tokens per minute (rate-budget.ts). */
  readonly #budget: RateBudget;
  /** Request bodies written as UTF-8 without one string of the whole (json-body.ts). */
  readonly #bodies = new JsonBodyWriter();
  /** Answers' bodies, each given back once parsed (#send). */
  readonly #answers = new AnswerBuffers();
  #closed = false;

  constructor(options: GatewayClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    if (options.apiKey || options.managementKey)
      refuseClearTextKeys(this.baseUrl, options.allowInsecureHttp ?? false);
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.requestTimeoutMs;
    this.#apiKey = options.apiKey || undefined;
    this.#managementKey = options.managementKey || undefined;
    this.#headers = {
      accept: 'application/json',
      'user-agent': options.userAgent ?? 'embedpipe',
      ...(options.referer && { 'http-referer': options.referer }),
      ...(options.serviceTitle && { 'x-service-title': options.serviceTitle }),
    };
    this.maxInFlight = options.maxInFlight;
    this.#wire = options.maxInFlight === undefined ? undefined : new AdaptiveWindow(options.maxInFlight);
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULTS.retry.maxRetryAfterMs;
    this.#onRetryAfter = options.onRetryAfter;
    this.#onResponse = options.onResponse;
    this.#now = options.clock?.now ?? defaultNow;
    this.#gates = new RetryAfterGates({
      maxWaitMs: this.#maxRetryAfterMs,
      store: options.retryAfterStore,
      clock: options.clock,
    });
    this.#budget = new RateBudget({
      ...(options.rateLimits ? { configured: options.rateLimits } : {}),
      ...(options.paceStore ? { store: options.paceStore } : {}),
      ...(options.rateTuning ? { tuning: options.rateTuning } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        // At least one connection per slot of the window: a request that passed the Retry-After gate
        // must never queue in the pool, where a 429 arriving meanwhile could not hold it back.
        connections: Math.max(options.connections ?? DEFAULTS.connections, options.maxInFlight ?? 0),
        // Our per-call deadline governs; undici's own header/body timers must not fire first.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
    this.#dispatchers = {
      api: gatedDispatcher(this.#dispatcher, this.#gates.gate('api')),
      management: gatedDispatcher(this.#dispatcher, this.#gates.gate('management')),
    };
  }

  /**
   * The API key's Retry-After gate, to read. After a 429 (or 503) with Retry-After, nothing goes out
   * on the key until it opens, whoever sends; only the client closes it.
   */
  get retryAfterGate(): GateState {
    return this.#gates.gate('api');
  }

  /**
   * Holds every request on the API key for at least `ms`, in this client only: a back-off its caller
   * chose (the embedder's refusal storm), not a wait the gateway asked for, so neither published to
   * the store nor reported to onRetryAfter.
   */
  backOff(ms: number): void {
    this.#gates.hold('api', ms);
  }

  /** The rate budget as it stands: the rates paced to, where they come from, the rate measured. */
  get rate(): RateView | undefined {
    return this.#budget.view();
  }

  /** What holds requests back now: the rate budget and the in-flight window, for progress and metrics. */
  get pacing(): Pacing {
    const rate = this.#budget.view();
    const wire = this.#wire;
    return {
      ...(rate ? { rate } : {}),
      ...(wire ? { window: { limit: wire.limit, active: wire.active, queued: wire.queued } } : {}),
    };
  }

  /** Requests allowed on the wire now (the adaptive window), or undefined when uncapped. */
  get window(): number | undefined {
    return this.#wire?.limit;
  }

  /** POST /embeddings: one vector per input, checked and placed by index. */
  async embeddings(req: EmbeddingsRequest, opts: CallOptions = {}): Promise<EmbeddingsResult> {
    const inputCount = typeof req.input === 'string' ? 1 : req.input.length;
    if (inputCount === 0) throw new UsageError('embeddings: input is empty');
    const body: EmbeddingsRequestBody = {
      model: req.model,
      input: req.input,
      ...(req.encoding_format && { encoding_format: req.encoding_format }),
      ...(req.provider && { provider: req.provider }),
    };
    const tokens = opts.tokens ?? estimateTokens(req.input);
    return this.#send(
      { method: 'POST', path: '/embeddings', key: 'api', body, parse: parseEmbeddingsBody },
      { ...opts, tokens },
      (json) => decodeEmbeddings(json, inputCount),
      (result) => result.usage?.promptTokens,
    );
  }

  /** GET /embeddings/models. */
  async listEmbeddingModels(opts: CallOptions = {}): Promise<EmbeddingModel[]> {
    return this.#send({ method: 'GET', path: '/embeddings/models', key: 'api' }, opts, decodeModels);
  }

  /**
   * POST /audio/transcriptions. The spec leaves the names of the temperature and passthrough fields
   * open; we use the published gateway's: a top-level `temperature`, and `provider.options.<provider>`
   * for passthrough. `input_audio.data` is raw base64, not a data URL.
   */
  async transcribe(req: TranscriptionRequest, opts: CallOptions = {}): Promise<TranscriptionResult> {
    const body: TranscriptionRequestBody = {
      model: req.model,
      input_audio: { data: audioBase64(req.audio.data), format: req.audio.format },
      ...(req.language !== undefined && { language: req.language }),
      ...(req.temperature !== undefined && { temperature: req.temperature }),
      ...(req.providerOptions && { provider: { options: req.providerOptions } }),
    };
    return this.#send(
      { method: 'POST', path: '/audio/transcriptions', key: 'api', body },
      opts,
      decodeTranscription,
    );
  }

  /** GET /organization/members: one page. Bad offset/limit are refused before any request. */
  async listMembers(query: MembersQuery = {}, opts: CallOptions = {}): Promise<MembersPage> {
    const { offset, limit } = query;
    if (offset !== undefined && !(Number.isInteger(offset) && offset >= 0)) {
      throw new UsageError(`members: offset must be an integer ≥ 0, got ${offset}`);
    }
    if (
      limit !== undefined &&
      !(Number.isInteger(limit) && limit >= MEMBERS_LIMIT_MIN && limit <= MEMBERS_LIMIT_MAX)
    ) {
      throw new UsageError(
        `members: limit must be an integer from ${MEMBERS_LIMIT_MIN} to ${MEMBERS_LIMIT_MAX}, got ${limit}`,
      );
    }
    const params = new URLSearchParams();
    if (offset !== undefined) params.set('offset', String(offset));
    if (limit !== undefined) params.set('limit', String(limit));
    const search = params.toString() === '' ? '' : `?${params}`;
    return this.#send(
      { method: 'GET', path: `/organization/members${search}`, key: 'management' },
      opts,
      decodeMembers,
    );
  }

  /**
   * Every member, page by page. Stops at total_count, and on an empty page too, so a gateway that
   * miscounts can never make it loop forever. `fetchPage` lets callers wrap each page (e.g. in retry).
   */
  async *iterateMembers(
    { pageSize = MEMBERS_LIMIT_DEFAULT }: { pageSize?: number } = {},
    opts: CallOptions = {},
    fetchPage: (query: Required<MembersQuery>) => Promise<MembersPage> = (query) =>
      this.listMembers(query, opts),
  ): AsyncGenerator<Member, void, undefined> {
    let offset = 0;
    for (;;) {
      const page = await fetchPage({ offset, limit: pageSize });
      yield* page.members;
      offset += page.members.length;
      if (page.members.length === 0 || offset >= page.totalCount) return;
    }
  }

  /** Releases pooled connections (not those of a dispatcher passed in); in-flight calls finish first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#gates.close();
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  // ---- the one request path -----------------------------------------------------------------------

  async #send<T>(
    route: Route,
    opts: CallOptions,
    decode: (json: unknown) => T,
    billedTokens?: (result: T) => number | undefined,
  ): Promise<T> {
    const paced = route.key === 'api';
    // The rate budget says when a request may leave, the window how many may be out at once: the
    // pace is waited for before a slot is taken, so a slot is never held asleep.
    if (paced) {
      await this.#gates.waitUntilOpen(route.key, opts.signal);
      await this.#budget.take({ requests: 1, tokens: opts.tokens ?? 0 }, opts.signal);
    }
    const wire = this.#wire;
    const ticket = await wire?.acquire(opts.signal);
    let response: RawResponse;
    const sentAt = this.#now();
    try {
      // The gate is checked inside the slot, right before the request is handed to undici (see
      // #exchange): a request that queued for a slot before a 429 came back still waits it out.
      response = await this.#exchange(route, opts);
    } catch (error) {
      if (ticket) wire?.release(ticket, 'other');
      throw error;
    }
    if (ticket) {
      const { status } = response;
      const ok = status >= 200 && status < 300;
      const waiting = (wire?.queued ?? 0) > 0;
      wire?.release(ticket, status === 429 ? 'limited' : ok ? 'ok' : 'other');
      // The freed slot's request goes before this answer is parsed: undici writes it in the next
      // check phase, and parsing here first held every slot idle for as long (docs/benchmarks.md,
      // "a thirty-sixth session"). Only a success waits: a 429's Retry-After closes the gate first.
      if (ok && waiting) await afterNextCheckPhase();
    }
    try {
      return await this.#answered(route, opts, response, sentAt, decode, billedTokens);
    } finally {
      // Nothing parsed from it holds a view of it (strings and vectors are copies).
      this.#answers.giveBack(response.body);
    }
  }

  /** What an answer says: its result, or the error its status and body mean. */
  async #answered<T>(
    route: Route,
    opts: CallOptions,
    response: RawResponse,
    sentAt: number,
    decode: (json: unknown) => T,
    billedTokens: ((result: T) => number | undefined) | undefined,
  ): Promise<T> {
    const paced = route.key === 'api';
    const { status, headers, body } = response;
    if (paced && status === 429)
      await this.#budget.limited(
        sentAt,
        opts.tokens ?? 0,
        parseRetryAfter(headers, this.#now()),
        announcedLimits(headers),
      );
    if (status < 200 || status >= 300) {
      // An answer asking for longer than the cap is `retryLater`: the retry loop throws it at once.
      const error = gatewayErrorFromResponse({
        status,
        headers,
        bodyText: bodyTextOf(body),
        now: this.#now(),
        secrets: this.#secrets(),
        maxRetryAfterMs: this.#maxRetryAfterMs,
      });
      // The gate was closed as soon as the headers arrived (#exchange), before the slot was freed.
      throw error;
    }
    const invalid = (reason: string, emptyData = false) =>
      invalidResponseError({ status, headers, reason, emptyData, secrets: this.#secrets() });
    let json: unknown;
    try {
      json = (route.parse ?? parseJsonBody)(body);
    } catch {
      throw invalid(`body is not JSON: ${JSON.stringify(bodyTextOf(body).slice(0, 120))}`);
    }
    let result: T;
    try {
      result = decode(json);
    } catch (error) {
      throw error instanceof ShapeError ? invalid(error.message, error.emptyData) : error;
    }
    if (paced) {
      const estimated = opts.tokens ?? 0;
      await this.#budget.succeeded(estimated, billedTokens?.(result), announcedLimits(headers));
    }
    return result;
  }

  /** Sends the request and reads the whole body, under the call's deadline and the caller's signal. */
  async #exchange(route: Route, opts: CallOptions): Promise<RawResponse> {
    if (this.#closed) throw new EmbedpipeError('gateway client is closed');
    const key = route.key === 'api' ? this.#apiKey : this.#managementKey;
    if (!key) {
      const what = route.key === 'api' ? 'an API key' : 'a management key';
      throw new UsageError(
        `${KEY_ENV_VARS[route.key]} is not set: ${route.method} ${route.path} needs ${what}`,
      );
    }
    const gate = this.#gates.gate(route.key);
    // A 429 may already sit unread in a socket, answered while this thread was busy (decoding,
    // encoding a file), when another answer read in the same I/O phase frees this request's slot.
    // Sending before reading it broke its Retry-After by as long as the thread had been busy
    // (docs/benchmarks.md, "Design figures"). Two things keep it from going: undici (>= 7.30, the
    // version package.json asks for) hands a request to a reused keep-alive connection only after a
    // turn of the event loop (its idle-socket check), so every answer already received is read
    // first; and GateCheck looks at the gate right before the bytes are written. A request held
    // there waits for the gate and goes again (test/gateway/retry-after-race.test.ts). A turn of our
    // own before undici's cost every request a second iteration of the loop (docs/benchmarks.md,
    // "One turn, not two"). A gate closed past the cap throws RetryAfterTooLongError.
    for (;;) {
      const held = !gate.isOpen;
      await this.#gates.waitUntilOpen(route.key, opts.signal);
      // Held by a Retry-After that came after this request's pace was taken: it takes its pace
      // again, so the requests held together do not all go the moment the wait ends.
      if (held && route.key === 'api')
        await this.#budget.take({ requests: 1, tokens: opts.tokens ?? 0 }, opts.signal);
      if (this.#closed) throw new EmbedpipeError('gateway client is closed');
      opts.signal?.throwIfAborted();
      try {
        return await this.#attempt(route, key, opts);
      } catch (error) {
        if (!(error instanceof GateClosedAtSend)) throw error;
      }
    }
  }

  /** One exchange on the wire; GateClosedAtSend when the gate closed before its bytes were written. */
  async #attempt(route: Route, key: string, opts: CallOptions): Promise<RawResponse> {
    // Written before the deadline's timer starts: a body that cannot be written leaves no timer.
    const sent = route.body !== undefined ? this.#bodies.bytes(route.body) : undefined;
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(DEADLINE), timeoutMs);
    // A paid request, once sent, is not cancelled by the caller's signal (letRequestFinish).
    const signal = opts.letRequestFinish ? undefined : opts.signal;
    // One shared listener per signal, however many requests are in flight (see onAbort).
    const off = signal ? onAbort(signal, () => controller.abort(signal.reason)) : undefined;
    const started = performance.now();
    try {
      const response = await request(`${this.baseUrl}${route.path}`, {
        dispatcher: this.#dispatchers[route.key],
        method: route.method,
        headers: {
          ...this.#headers,
          authorization: `Bearer ${key}`,
          ...(sent !== undefined && { 'content-type': 'application/json' }),
        },
        ...(sent !== undefined && { body: sent }),
        signal: controller.signal,
      });
      // Closed the moment the status line and headers arrive, before the body is read and the slot
      // handed on: nothing more goes out on this key.
      this.#closeGate(route.key, response.statusCode, response.headers);
      const body = await this.#answers.read(response.body, contentLength(response.headers));
      // A success is answered after the gateway read the whole request: its bytes have left the
      // process. Any other answer may come early (undici may still be writing), so its body is
      // not used again.
      if (sent !== undefined && response.statusCode >= 200 && response.statusCode < 300)
        this.#bodies.giveBack(sent);
      this.#onResponse?.({
        path: route.path,
        status: response.statusCode,
        seconds: (performance.now() - started) / 1000,
      });
      return { status: response.statusCode, headers: response.headers, body };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof GateClosedAtSend) throw error;
      const timedOut = controller.signal.reason === DEADLINE;
      throw connectionErrorFrom(error, {
        secrets: this.#secrets(),
        ...(timedOut && { timedOutAfterMs: timeoutMs }),
      });
    } finally {
      clearTimeout(timer);
      off?.();
    }
  }

  /** Closes the key's gate for the answer's Retry-After, and shares the wait through the store. */
  #closeGate(key: KeyKind, status: number, headers: RawResponse['headers']): void {
    if (status >= 200 && status < 300) return;
    const retryAfterMs = parseRetryAfter(headers, this.#now());
    if (retryAfterMs === undefined) return;
    const { until, newWait } = this.#gates.asked(key, retryAfterMs);
    this.#onRetryAfter?.({
      status,
      retryAfterMs,
      until,
      newWait,
      pastCap: retryAfterMs > this.#maxRetryAfterMs,
      // Before this answer's slot is given back (a 429 then halves it, once per burst).
      window: this.#wire?.limit,
    });
  }

  #secrets(): string[] {
    const secrets = [];
    if (this.#apiKey) secrets.push(this.#apiKey);
    if (this.#managementKey) secrets.push(this.#managementKey);
    return secrets;
  }

  /** What util.inspect shows: never a key, only whether one is set. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `GatewayClient { baseUrl: ${JSON.stringify(this.baseUrl)}, apiKey: ${this.#apiKey ? 'set' : 'unset'}, managementKey: ${this.#managementKey ? 'set' : 'unset'} }`;
  }

  toJSON(): Record<string, unknown> {
    return {
      baseUrl: this.baseUrl,
      apiKey: this.#apiKey ? 'set' : 'unset',
      managementKey: this.#managementKey ? 'set' : 'unset',
    };
  }
}

function normalizeBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`gateway base URL is not a URL: ${JSON.stringify(redactUserinfo(baseUrl))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`gateway base URL must be http(s): ${JSON.stringify(redactUserinfo(baseUrl))}`);
  }
  return baseUrl.replace(/\/+$/, '');
}

/** A base URL could carry credentials (`https://user:pass@host`): never echo them. */
function redactUserinfo(text: string): string {
  return text.replace(/\/\/[^/@]*@/, '//[redacted]@');
}

function audioBase64(data: Buffer | Uint8Array | string): string {
  if (typeof data !== 'string')
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  const comma = data.startsWith('data:') ? data.indexOf(',') : -1;
  return comma >= 0 ? data.slice(comma + 1) : data;
}

/**
 * The tokens an input will be billed when the caller gave no estimate: its UTF-8 bytes over three
 * (about what BPE tokenizers average on mixed text), settled by the answer's usage.
 */
function estimateTokens(input: EmbeddingsRequestBody['input']): number {
  const texts = typeof input === 'string' ? [input] : input;
  let bytes = 0;
  for (const item of texts) {
    if (typeof item === 'string') bytes += Buffer.byteLength(item);
    else for (const part of item.content) if (part.type === 'text') bytes += Buffer.byteLength(part.text);
  }
  return Math.ceil(bytes / 3);
}

/** An answer's announced body length; undefined when absent or not a length. */
function contentLength(headers: RawResponse['headers']): number | undefined {
  const value = headers['content-length'];
  const bytes = typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isSafeInteger(bytes) && bytes >= 0 ? bytes : undefined;
}

/** Resolves in the check phase of the next turn of the event loop, after every Immediate queued now or in this turn. */
function afterNextCheckPhase(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
