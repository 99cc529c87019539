/**
 * Gateway failures as typed errors. One factory turns any HTTP error response into its class, one
 * turns a network failure into a ConnectionError, one turns a 2xx with a bad body into an
 * InvalidResponseError. Whether an error is worth retrying is decided here, once, when it is built.
 *
 * Keys never reach an error: bodies and causes are scrubbed of the client's secrets before anything
 * is kept, so messages, fields, `cause`, util.inspect and JSON are safe to log.
 */
import { inspect } from 'node:util';
import { EmbedpipeError, ExitCode } from '../errors.js';
import { type HeaderBag, headerValue, parseRetryAfter } from '../retry/retry-after.js';

export interface GatewayErrorDetails {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** `error.code` from the envelope; the status when there is none. */
  code?: number;
  /** What the gateway said (the envelope's `error.message`, or an excerpt of a body that was not one). */
  gatewayMessage: string;
  metadata?: Record<string, unknown>;
  providerName?: string;
  raw?: unknown;
  requestId?: string;
  retryAfterMs?: number;
  /** Retryable, but not by the caller's retry loop now (see GatewayError.retryLater). */
  retryLater?: boolean;
  cause?: unknown;
}

/** Short labels that make `gateway 429 rate limited: …` read well. */
const STATUS_LABELS: Readonly<Record<number, string>> = {
  400: 'bad request',
  401: 'authentication failed',
  402: 'insufficient credits',
  403: 'forbidden',
  404: 'not found',
  408: 'request timeout',
  429: 'rate limited',
  500: 'internal server error',
  502: 'provider error',
  503: 'service unavailable',
  524: 'timed out',
  529: 'provider overloaded',
};

/** Retryable: no response, a bad 2xx body, 408, 429 and any 5xx. Any other 4xx will fail the same way again. */
export function isRetryableStatus(status: number): boolean {
  if (status === 0 || (status >= 200 && status < 300)) return true;
  if (status === 408 || status === 429) return true;
  return status >= 500 && status < 600;
}

/**
 * Network codes that mean the gateway was never reached: refused, no route, DNS, TLS handshake.
 * (A reset or a timeout after connecting is a flaky gateway, not a wrong address.)
 */
const UNREACHABLE_CODE =
  /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME|EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN|EADDRNOTAVAIL|UND_ERR_CONNECT_TIMEOUT|EPROTO)$|^ERR_TLS_|^ERR_SSL_|CERT|SIGNATURE/;

/** Whether a network error code means the gateway could not be reached at all. */
export function isUnreachableCode(code: string | undefined): boolean {
  return code !== undefined && UNREACHABLE_CODE.test(code);
}

function exitCodeFor(status: number, networkCode?: string): ExitCode {
  if (status === 0 && isUnreachableCode(networkCode)) return ExitCode.unreachable;
  if (status === 401 || status === 403) return ExitCode.authentication;
  if (status === 402) return ExitCode.credits;
  if (status === 400 || status === 404) return ExitCode.usage;
  return ExitCode.internal;
}

export class GatewayError extends EmbedpipeError {
  override readonly exitCode: ExitCode;
  readonly status: number;
  readonly code: number;
  readonly gatewayMessage: string;
  readonly metadata: Record<string, unknown> | undefined;
  readonly providerName: string | undefined;
  readonly raw: unknown;
  readonly requestId: string | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  /**
   * Retryable for the run, not within this call: the gateway asked for a wait longer than the
   * client's --max-retry-after. A retry loop throws it at once; the batch is left for a re-run (or,
   * in a worker, for the queue's next attempt) instead of waiting an hour in silence.
   */
  readonly retryLater: boolean;
  /** Attempts made before this error was thrown; withRetry updates it. */
  attempts = 1;

  constructor(details: GatewayErrorDetails, headline = defaultHeadline(details.status)) {
    super(
      `${headline}: ${details.gatewayMessage}${suffix(details)}`,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.status = details.status;
    this.code = details.code ?? details.status;
    this.gatewayMessage = details.gatewayMessage;
    this.metadata = details.metadata;
    this.providerName = details.providerName;
    this.raw = details.raw;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
    this.retryable = isRetryableStatus(details.status);
    this.retryLater = this.retryable && details.retryLater === true;
    this.exitCode = exitCodeFor(details.status, (details as { networkCode?: string }).networkCode);
  }

  /** A compact, key-free record for logs and `--json` summaries. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      message: this.message,
      status: this.status,
      code: this.code,
      providerName: this.providerName,
      requestId: this.requestId,
      retryable: this.retryable,
      retryAfterMs: this.retryAfterMs,
      attempts: this.attempts,
    };
  }
}

function defaultHeadline(status: number): string {
  return `gateway ${status} ${STATUS_LABELS[status] ?? 'error'}`;
}

function suffix({ providerName, requestId }: GatewayErrorDetails): string {
  const parts = [];
  if (providerName) parts.push(`provider: ${providerName}`);
  if (requestId) parts.push(`request id: ${requestId}`);
  return parts.length > 0 ? ` (${parts.join(', ')})` : '';
}

export class BadRequestError extends GatewayError {}
/** 401, and 403 (a key that may not call this endpoint, e.g. a management key on inference). */
export class AuthenticationError extends GatewayError {}
export class InsufficientCreditsError extends GatewayError {}
export class NotFoundError extends GatewayError {}
export class RequestTimeoutError extends GatewayError {}
export class RateLimitError extends GatewayError {}

/**
 * A request the client did not send: its key's Retry-After gate is closed for longer than
 * --max-retry-after (`maxWaitMs`). A retryable 429 carrying the wait, `retryLater`: the batch fails at
 * once and is left for a re-run (or the queue's next attempt).
 */
export class RetryAfterTooLongError extends RateLimitError {
  constructor(
    /** The instant (ms since the epoch) the gate opens. */
    readonly until: number,
    readonly maxWaitMs: number,
    now: number,
  ) {
    super({
      status: 429,
      gatewayMessage: `the gateway asked this key to wait until ${new Date(until).toISOString()}, longer than --max-retry-after (${Math.round(maxWaitMs / 1000)} s); the batch is left for a re-run`,
      retryAfterMs: Math.max(0, until - now),
      retryLater: true,
    });
  }
}
export class InternalServerError extends GatewayError {}
export class BadGatewayError extends GatewayError {}
export class ServiceUnavailableError extends GatewayError {}
export class GatewayTimeoutError extends GatewayError {}
export class ProviderOverloadedError extends GatewayError {}

/** No usable response: refused, reset, socket error or timed out. Status 0; the cause is kept (scrubbed). */
export class ConnectionError extends GatewayError {
  /** `ECONNRESET`, `UND_ERR_SOCKET`, `TIMEOUT`…: what went wrong, for logs and tests. */
  readonly networkCode: string | undefined;

  constructor(details: Omit<GatewayErrorDetails, 'status'> & { networkCode?: string }) {
    super({ ...details, status: 0 }, 'gateway connection failed');
    this.networkCode = details.networkCode;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), networkCode: this.networkCode };
  }
}

/**
 * The gateway could not be reached once the retries of a lookup ran out (the first call of a run, or
 * a one-off command): exit 6, one line naming the base URL and what to check.
 */
export class GatewayUnreachableError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.unreachable;
  constructor(
    readonly baseUrl: string,
    cause: ConnectionError,
  ) {
    const attempts = cause.attempts > 1 ? ` after ${cause.attempts} attempts` : '';
    super(
      `gateway unreachable at ${safeUrl(baseUrl)}${attempts} (${cause.gatewayMessage.trim() || cause.networkCode || 'no response'}): ` +
        'is the gateway running, is EMBEDPIPE_BASE_URL (or --base-url) right, and can this machine reach it ' +
        '(network, proxy, TLS certificate)?',
      { cause },
    );
  }
}

/** The models listing answered 404: the base URL most likely lacks its version segment (`/v1`). */
export class BaseUrlError extends EmbedpipeError {
  override readonly exitCode: ExitCode = ExitCode.usage;
  constructor(
    readonly baseUrl: string,
    cause: GatewayError,
  ) {
    const url = safeUrl(baseUrl);
    const hint = /\/v\d+$/.test(url) ? '' : ` (did you mean ${url}/v1?)`;
    super(
      `the gateway at ${url} has no models listing (GET ${url}/embeddings/models answered 404: ${cause.gatewayMessage}); ` +
        `the base URL must end in the API version segment, e.g. https://gateway.example/api/v1${hint}`,
      { cause },
    );
  }
}

/**
 * What a failed lookup (the models listing, or a command's one call) means to the user: a network
 * failure of a gateway never reached becomes GatewayUnreachableError; a 404 on the models listing
 * becomes BaseUrlError. Any other error is returned as it is.
 */
export function explainLookupFailure(
  error: unknown,
  baseUrl: string,
  { modelsListing = false }: { modelsListing?: boolean } = {},
): unknown {
  if (error instanceof ConnectionError && error.exitCode === ExitCode.unreachable) {
    return new GatewayUnreachableError(baseUrl, error);
  }
  if (modelsListing && error instanceof NotFoundError) return new BaseUrlError(baseUrl, error);
  return error;
}

/** A base URL could carry credentials (`https://user:pass@host`): never echo them. */
function safeUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//[redacted]@').replace(/\/+$/, '');
}

/** A 2xx whose body breaks the contract (bad JSON, short or empty data, bad index, NaN…). Retryable. */
export class InvalidResponseError extends GatewayError {
  /** A 200 with empty `data`: the embedder reacts by asking for floats instead of base64. */
  readonly emptyData: boolean;

  constructor(details: GatewayErrorDetails & { emptyData?: boolean }) {
    super(details, `gateway ${details.status} invalid response`);
    this.emptyData = details.emptyData ?? false;
  }
}

type GatewayErrorClass = new (details: GatewayErrorDetails) => GatewayError;

const CLASS_BY_STATUS: Readonly<Record<number, GatewayErrorClass>> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: InsufficientCreditsError,
  403: AuthenticationError,
  404: NotFoundError,
  408: RequestTimeoutError,
  429: RateLimitError,
  500: InternalServerError,
  502: BadGatewayError,
  503: ServiceUnavailableError,
  524: GatewayTimeoutError,
  529: ProviderOverloadedError,
};

/** What the client knows about a response that came back. */
export interface ResponseFacts {
  status: number;
  headers: HeaderBag;
  bodyText: string;
  /** Wall-clock ms, for Retry-After dates. */
  now: number;
  /** Strings (keys) to scrub from anything kept; the client passes its own keys. */
  secrets?: readonly string[];
  /** The client's --max-retry-after: an answer asking for longer is `retryLater`. */
  maxRetryAfterMs?: number;
}

/** The one factory for a non-2xx response: parses the error envelope (spec 2.6), tolerates any other body. */
export function gatewayErrorFromResponse({
  status,
  headers,
  bodyText,
  now,
  secrets = [],
  maxRetryAfterMs = Number.POSITIVE_INFINITY,
}: ResponseFacts): GatewayError {
  const envelope = parseEnvelope(redact(bodyText, secrets));
  const retryAfterMs = parseRetryAfter(headers, now);
  const details: GatewayErrorDetails = {
    status,
    gatewayMessage: envelope.message,
    ...definedOnly({
      code: envelope.code,
      metadata: envelope.metadata,
      providerName: envelope.providerName,
      raw: envelope.raw,
      requestId: requestIdOf(headers),
      retryAfterMs,
    }),
    retryLater: retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs,
  };
  const ErrorClass = CLASS_BY_STATUS[status] ?? GatewayError;
  return new ErrorClass(details);
}

/** A 2xx whose body failed validation; `reason` names what was wrong. */
export function invalidResponseError({
  status,
  headers,
  reason,
  emptyData = false,
  secrets = [],
}: {
  status: number;
  headers: HeaderBag;
  reason: string;
  emptyData?: boolean;
  secrets?: readonly string[];
}): InvalidResponseError {
  return new InvalidResponseError({
    status,
    gatewayMessage: redact(reason, secrets),
    emptyData,
    ...definedOnly({ requestId: requestIdOf(headers) }),
  });
}

/** A failure with no response. `timedOutAfterMs` when our own deadline fired. */
export function connectionErrorFrom(
  cause: unknown,
  { secrets = [], timedOutAfterMs }: { secrets?: readonly string[]; timedOutAfterMs?: number } = {},
): ConnectionError {
  const safeCause = scrubCause(cause, secrets);
  if (timedOutAfterMs !== undefined) {
    return new ConnectionError({
      gatewayMessage: `no complete response within ${timedOutAfterMs} ms`,
      networkCode: 'TIMEOUT',
      cause: safeCause,
    });
  }
  const networkCode = errorCode(cause);
  const text = redact(cause instanceof Error ? cause.message : String(cause), secrets);
  return new ConnectionError({
    gatewayMessage: networkCode && !text.includes(networkCode) ? `${networkCode} ${text}` : text,
    cause: safeCause,
    ...definedOnly({ networkCode }),
  });
}

// ---- helpers ------------------------------------------------------------------------------------

const REQUEST_ID_HEADERS = ['x-request-id', 'x-generation-id', 'cf-ray'] as const;

function requestIdOf(headers: HeaderBag): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headerValue(headers, name);
    if (value) return value;
  }
  return undefined;
}

interface ParsedEnvelope {
  message: string;
  code?: number | undefined;
  metadata?: Record<string, unknown> | undefined;
  providerName?: string | undefined;
  raw?: unknown;
}

function parseEnvelope(bodyText: string): ParsedEnvelope {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return { message: bodyText.trim() === '' ? '(empty body)' : `non-JSON body: ${excerpt(bodyText)}` };
  }
  const error = isRecord(body) ? body.error : undefined;
  if (typeof error === 'string') return { message: error };
  if (!isRecord(error)) {
    // Not the envelope, but a top-level `message` is common enough to be worth reading.
    const message = isRecord(body) && typeof body.message === 'string' ? body.message : undefined;
    return { message: message ?? `unexpected body: ${excerpt(bodyText)}` };
  }
  const metadata = isRecord(error.metadata) ? error.metadata : undefined;
  return {
    message: typeof error.message === 'string' && error.message !== '' ? error.message : '(no message)',
    code: typeof error.code === 'number' ? error.code : undefined,
    metadata,
    providerName: typeof metadata?.provider_name === 'string' ? metadata.provider_name : undefined,
    raw: metadata?.raw,
  };
}

const EXCERPT_CHARS = 200;

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat);
}

/** Secrets shorter than this are not scrubbed: replacing a 2-letter "key" would mangle every message. */
const MIN_SECRET_LENGTH = 6;

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= MIN_SECRET_LENGTH) out = out.replaceAll(secret, '[redacted]');
  }
  return out;
}

/** The cause itself when it shows no secret (keeps undici's socket details), else a scrubbed copy. */
function scrubCause(cause: unknown, secrets: readonly string[]): unknown {
  const shown = inspect(cause, { depth: 6 });
  if (redact(shown, secrets) === shown) return cause;
  const copy = new Error(redact(cause instanceof Error ? cause.message : String(cause), secrets));
  if (cause instanceof Error) copy.name = cause.name;
  const code = errorCode(cause);
  if (code) Object.assign(copy, { code });
  return copy;
}

function errorCode(error: unknown): string | undefined {
  const code = isRecord(error) ? error.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops undefined values, so optional fields stay absent (exactOptionalPropertyTypes). */
function definedOnly<T extends Record<string, unknown>>(
  fields: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as { [K in keyof T]?: Exclude<T[K], undefined> };
}
