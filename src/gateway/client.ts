/**
 * The typed gateway client: one method per endpoint of the spec, one request path under them all.
 * Each call is a single attempt; retries are composed outside (see retrying.ts and retry/), so the
 * embedder and the CLI choose their own policy and share one Retry-After gate per key.
 *
 * Connections are pooled and kept alive by an undici Agent; `close()` releases them. Keys live in
 * #private fields (invisible to util.inspect and JSON) and are scrubbed from every error.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import { Agent, request } from 'undici';
import { DEFAULTS } from '../config/defaults.js';
import { EmbedpipeError, UsageError } from '../errors.js';
import { RetryAfterGate } from '../retry/gate.js';
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
  /** Attribution headers (spec 5.5). */
  referer?: string;
  serviceTitle?: string;
  userAgent?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's timeoutMs for this call. */
  timeoutMs?: number;
}

export type EmbeddingsRequest = EmbeddingsRequestBody;

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

type KeyKind = 'api' | 'management';

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
}

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bodyText: string;
}

/** The abort reason of our own deadline, told apart from the caller's signal. */
const DEADLINE = Symbol('deadline');

export class GatewayClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxInFlight: number | undefined;
  readonly #apiKey: string | undefined;
  readonly #managementKey: string | undefined;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #agent: Agent;
  readonly #wire: LimitFunction | undefined;
  /** One Retry-After gate per key, checked right before a request goes on the wire. */
  readonly #gates: Readonly<Record<KeyKind, RetryAfterGate>> = {
    api: new RetryAfterGate(),
    management: new RetryAfterGate(),
  };
  #closed = false;

  constructor(options: GatewayClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
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
    this.#wire = options.maxInFlight === undefined ? undefined : pLimit(options.maxInFlight);
    this.#agent = new Agent({
      connections: options.connections ?? DEFAULTS.connections,
      // Our per-call deadline governs; undici's own header/body timers must not fire first.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /**
   * The API key's Retry-After gate. After a 429 (or 503) with Retry-After, nothing goes out on the
   * key until it opens, whoever sends: callers share it with their retry loop (withRetry's `gate`).
   */
  get retryAfterGate(): RetryAfterGate {
    return this.#gates.api;
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
    return this.#send({ method: 'POST', path: '/embeddings', key: 'api', body }, opts, (json) =>
      decodeEmbeddings(json, inputCount),
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

  /** Releases pooled connections; in-flight calls finish first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#agent.close();
  }

  // ---- the one request path -----------------------------------------------------------------------

  async #send<T>(route: Route, opts: CallOptions, decode: (json: unknown) => T): Promise<T> {
    const gate = this.#gates[route.key];
    const onTheWire = async () => {
      // Checked inside the wire slot: a request that queued for a slot before a 429 came back must
      // still wait out that 429's Retry-After.
      await gate.waitUntilOpen(opts.signal);
      return this.#exchange(route, opts);
    };
    const response = await (this.#wire ? this.#wire(onTheWire) : onTheWire());
    const { status, headers, bodyText } = response;
    if (status < 200 || status >= 300) {
      const error = gatewayErrorFromResponse({
        status,
        headers,
        bodyText,
        now: Date.now(),
        secrets: this.#secrets(),
      });
      // Closed at once, before any other response is handled: nothing more goes out on this key.
      if (error.retryAfterMs !== undefined) gate.closeFor(error.retryAfterMs);
      throw error;
    }
    const invalid = (reason: string, emptyData = false) =>
      invalidResponseError({ status, headers, reason, emptyData, secrets: this.#secrets() });
    let json: unknown;
    try {
      json = JSON.parse(bodyText);
    } catch {
      throw invalid(`body is not JSON: ${JSON.stringify(bodyText.slice(0, 120))}`);
    }
    try {
      return decode(json);
    } catch (error) {
      throw error instanceof ShapeError ? invalid(error.message, error.emptyData) : error;
    }
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
    opts.signal?.throwIfAborted();

    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(DEADLINE), timeoutMs);
    const onAbort = () => controller.abort(opts.signal?.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await request(`${this.baseUrl}${route.path}`, {
        dispatcher: this.#agent,
        method: route.method,
        headers: {
          ...this.#headers,
          authorization: `Bearer ${key}`,
          ...(route.body !== undefined && { 'content-type': 'application/json' }),
        },
        ...(route.body !== undefined && { body: JSON.stringify(route.body) }),
        signal: controller.signal,
      });
      const bodyText = await response.body.text();
      return { status: response.statusCode, headers: response.headers, bodyText };
    } catch (error) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const timedOut = controller.signal.reason === DEADLINE;
      throw connectionErrorFrom(error, {
        secrets: this.#secrets(),
        ...(timedOut && { timedOutAfterMs: timeoutMs }),
      });
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
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
