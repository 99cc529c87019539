/**
 * Every tunable default of embedpipe, in one table. Commands, job files and the library read
 * defaults from here only.
 */
export const DEFAULTS = {
  /** Gateway base URL when neither a flag, a job file nor EMBEDPIPE_BASE_URL gives one. */
  baseUrl: 'http://127.0.0.1:8787/v1',
  /** Per-request timeout for gateway calls. */
  requestTimeoutMs: 120_000,
  /** Keep-alive connections per gateway origin. */
  connections: 64,

  /** Corpus fields. */
  idField: 'id',
  textField: 'text',
  /** A single CSV record, JSONL line or text file larger than this is a reject (memory stays bounded). */
  maxEntryBytes: 64 * 1024 * 1024,

  /** Chunk budget when the model lists no context_length. */
  fallbackContextLength: 8192,
  /** Tokens kept free below context_length: our tokenizer may not be the gateway's. */
  contextSafetyMargin: 0.1,
  overlapTokens: 0,

  /** Per request: inputs and summed tokens (300k is the largest providers' cap). */
  maxInputsPerRequest: 128,
  maxTokensPerRequest: 300_000,

  /** Requests in flight (sliding window). */
  concurrency: 8,

  /** HTTP retry layer (inside the embedder). */
  retry: {
    maxAttempts: 8,
    baseDelayMs: 500,
    maxDelayMs: 30_000,
  },

  encodingFormat: 'base64' as 'base64' | 'float',
  outputFormat: 'parquet' as 'parquet' | 'arrow',
  outDir: 'out',
} as const;
