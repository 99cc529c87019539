/**
 * What an emulator can be told, in one place: the programmatic options of `startEmulator` and, with
 * the same shape, the JSON config file (validated in config.ts). Defaults live with their concept
 * (models.ts, providers.ts, keys.ts, faults.ts).
 */

import type { TokenizerName } from './tokens.js';

export type InputModality = 'text' | 'image';

export interface EmbeddingModelConfig {
  /** Slug, form `<provider>/<model_name>`. */
  id: string;
  name?: string;
  dims: number;
  /** Tokens one input may have, in the model's `tokenizer`. */
  contextLength: number;
  /**
   * How the model counts tokens (context length, truncation, the 400 message, usage). Default
   * 'pieces' (see pieces.ts), which differs from the client's cl100k by script, as real providers do.
   */
  tokenizer?: TokenizerName;
  /** false: the listing omits `context_length`, yet the limit still applies (a hidden limit). Default true. */
  listContextLength?: boolean;
  /** An over-long text input is cut to `contextLength` tokens, or the request is answered 400. */
  overLong: 'truncate' | 'reject';
  /** USD per prompt token, a decimal string as the gateway publishes it (e.g. "0.00000002"). */
  pricePerToken: string;
  /** Default ['text']; with 'image' the model accepts image_url parts. */
  inputModalities?: InputModality[];
  /** Provider names, in the model's default order. */
  providers: string[];
  /** Inputs per request the model accepts (default 2048). */
  maxInputs?: number;
  /**
   * How vectors are made. 'hash' (default): embeddingFor (vectors.ts), so any two texts get unrelated
   * vectors. 'bag-of-words': a test model whose vectors carry word overlap, not meaning (hashed word
   * counts, see semantic-vectors.ts), for testing retrieval evaluation and migrations.
   */
  semantics?: 'hash' | 'bag-of-words';
  /** With 'bag-of-words': adjacent word pairs count too, so word order matters. Default false. */
  bigrams?: boolean;
}

export interface TranscriptionModelConfig {
  id: string;
  name?: string;
  /** USD per second of audio, a decimal string. */
  pricePerSecond: string;
  providers: string[];
}

export interface ProviderConfig {
  name: string;
  /** Providers that collect data are skipped when a request asks `data_collection: 'deny'`. */
  collectsData?: boolean;
}

export interface KeyLimits {
  /** Requests per sliding window (`windowMs`, a minute unless set). */
  requestsPerMinute?: number;
  /** Prompt tokens per sliding window (`windowMs`, a minute unless set). */
  tokensPerMinute?: number;
  /**
   * The windows' length in ms (default 60000). A test knob: the two limits above count per window,
   * so `{requestsPerMinute: 12, windowMs: 6000}` is a "120 per minute" gateway whose refusals end in
   * seconds. The rate-limit headers report limits scaled to per minute (120 there).
   */
  windowMs?: number;
  /** Requests of this key being answered at the same time. */
  maxInFlight?: number;
}

export interface KeyConfig {
  key: string;
  /** Label in stats and request records (the raw key never appears there). Default `key<index>`. */
  name?: string;
  /** USD the key may spend; omitted: unlimited. */
  credits?: number;
  limits?: KeyLimits;
}

/** What a fault does to one request. */
export type FaultKind = '429' | '500' | '502' | '503' | '524' | '529' | 'reset' | 'empty' | 'slow';
/** A script entry: a fault, or 'ok' for a request left alone. */
export type ScriptEntry = 'ok' | FaultKind;

export interface FaultOptions {
  /** Seeds the PRNG behind probabilities and latency ranges (default 1): runs are reproducible. */
  seed?: number;
  /** Chance per request of each fault; they must sum to at most 1. */
  probabilities?: Partial<Record<FaultKind, number>>;
  /** Consumed one entry per request, in order, before probabilities apply. */
  script?: ScriptEntry[];
  /** Added before answering each authenticated request on the fault paths: fixed, or uniform in [min, max]. */
  latencyMs?: number | { min: number; max: number };
  /** Retry-After carried by 429 and 503 faults (default 1; fractions show with the 'ms' format). */
  retryAfterSeconds?: number;
  /** Extra delay of a 'slow' fault, after which the request succeeds (default 2000). */
  slowMs?: number;
  /** Spec paths the faults and latency apply to (default ['/embeddings', '/audio/transcriptions']). */
  paths?: string[];
}

export interface EmulatorOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  models?: EmbeddingModelConfig[];
  transcriptionModels?: TranscriptionModelConfig[];
  providers?: ProviderConfig[];
  /** Ordinary API keys (default: EMULATOR_API_KEY, unlimited, named 'default'). */
  keys?: KeyConfig[];
  /** Keys for /organization/members only (default: [EMULATOR_MANAGEMENT_KEY]). */
  managementKeys?: string[];
  /** Providers that answer "overloaded": fallbacks route around them, or the request gets 529. */
  overloadedProviders?: string[];
  faults?: FaultOptions;
  /** How Retry-After is written: integer seconds, an HTTP-date, or a `retry-after-ms` header. */
  retryAfterFormat?: 'seconds' | 'http-date' | 'ms';
  /**
   * OpenAI-style `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` on every inference answer of
   * a key with rate windows, and `retry-after-ms` on the windows' 429s (see rate-headers.ts). Default false.
   */
  rateLimitHeaders?: boolean;
  /** Broken providers: 'empty' answers 200 with `data: []` when base64 is asked; 'floats' ignores it. */
  base64Mode?: 'normal' | 'empty' | 'floats';
  /** Return `data` in a shuffled order (with correct `index` fields). */
  shuffleData?: boolean;
  /** Leave `index` out of the data items. */
  omitIndex?: boolean;
  /** Members of the management key's organization (default 237). */
  members?: number;
  /** Keep a record per request in `requests` (default true; benchmarks turn it off). */
  recordRequests?: boolean;
}
