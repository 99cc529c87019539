/**
 * Every tunable default of embedpipe, in one table. Commands, job files and the library read
 * defaults from here only; the options table (options-table.ts) says which option sets each.
 */
export const DEFAULTS = {
  /** Per-request timeout for gateway calls. */
  requestTimeoutMs: 120_000,
  /** Keep-alive connections per gateway origin. */
  connections: 64,

  /** Corpus fields. */
  idField: 'id',
  textField: 'text',
  /** Encoding of corpus text that is not valid UTF-8 (`--encoding`); with utf-8, such text is a reject. */
  encoding: 'utf-8',
  /** A single CSV record, JSONL line or text file larger than this is a reject (memory stays bounded). */
  maxEntryBytes: 64 * 1024 * 1024,

  /** Images (a folder of images, or `--image-field`). */
  images: {
    /** A larger image (or a data URL decoding to more) is a reject: never read whole, never sent. */
    maxBytes: 20 * 2 ** 20,
    /**
     * Data URL bytes per request (base64: 4/3 of the image). Requests of images are packed up to
     * this as well as to the input and token caps; a single image over it goes in a request alone.
     */
    maxBytesPerRequest: 20 * 2 ** 20,
    /**
     * Planning's estimate of the gateway tokens one image counts for, added to its caption's: the
     * emulator counts 85 (OpenAI's low-detail tile price); what the gateway bills is its usage.
     */
    tokensPerImage: 85,
  },

  /** Audio (a folder of audio files, or `--audio-field`): transcribed, then embedded as text. */
  audio: {
    /** A larger audio file is a reject: never read whole, never sent (the common providers' cap). */
    maxBytes: 25 * 2 ** 20,
    /** Transcription requests in flight (`--stt-concurrency`); they share the run's request window. */
    concurrency: 4,
  },

  /** Chunk budget when the model lists no context_length. */
  fallbackContextLength: 8192,
  /** Tokens kept free below context_length: our tokenizer may not be the gateway's. */
  contextSafetyMargin: 0.1,
  overlapTokens: 0,

  /** Per request: inputs and summed tokens (300k is the largest providers' cap). */
  maxInputsPerRequest: 128,
  maxTokensPerRequest: 300_000,

  /**
   * Requests in flight per process (sliding window), in `run`, `enqueue` and `worker` alike; a worker
   * takes as many queue jobs at once (settings.ts, resolveWorkerSettings).
   */
  concurrency: 8,

  /** HTTP retry layer (inside the embedder). */
  retry: {
    maxAttempts: 8,
    baseDelayMs: 500,
    maxDelayMs: 30_000,
    /**
     * Longest Retry-After waited for (`--max-retry-after`); a longer one fails the batch retryably
     * (RetryAfterTooLongError: a re-run sends it). Applied by the gateway client, the wait's one holder.
     */
    maxRetryAfterMs: 300_000,
    /** 429s with Retry-After (the gateway pacing us) per request that do not spend an attempt. */
    maxRateLimitWaits: 1_000,
    /** 400s in a row, run-wide, after which the request is refused, not an input (see refusals.ts). */
    refusalStorm: 3,
  },

  /**
   * The rate budget (gateway/rate-pace.ts): requests and tokens per minute, configured (`--rpm`,
   * `--tpm`), read from x-ratelimit-* headers, or learned from 429s.
   */
  rate: {
    /** Share of a known limit the run paces to: room for the window's edge and for clocks. */
    pace: 0.95,
    /** Sent ahead of the even pace at most this much (ms at the paced rate): a small burst. */
    burstMs: 250,
    /** The span whose successful requests estimate the limit when a 429 names none. */
    windowMs: 60_000,
    /** After this long without a 429 while the pace held requests back, a learned rate grows. */
    quietMs: 30_000,
    /** Growth per quiet stretch (additive: a share of the limit learned), and the most one 429 cuts. */
    increase: 0.05,
    decrease: 0.05,
    maxDecrease: 0.5,
    /** Decreases at least this far apart: one congestion's 429s arrive together. */
    decreaseSpacingMs: 5_000,
    /** Successes a 429's evidence must rest on (over half a window at least) to be believed. */
    minEvidence: 10,
    /** A 429 is learned from this long after it came: the successes before it are all counted then. */
    learnDelayMs: 500,
  },

  /** Progress line off a terminal (CI, cron, `2> log`): one structured line this often. */
  progressIntervalMs: 10_000,

  /**
   * Retries of a lookup (the models listing that starts a run, a one-off command): short, so a wrong
   * base URL or a gateway that is down is reported in seconds, not after the run's long backoff.
   */
  lookupRetry: {
    maxAttempts: 3,
    baseDelayMs: 300,
    maxDelayMs: 2_000,
  },

  /** The choices are the options table's (options-table.ts). */
  encodingFormat: 'base64',
  outputFormat: 'parquet',
  outDir: 'out',
  /** Old versions of a dataset kept beside the current one after a switch (readers mid-query, rollback). */
  keepVersions: 1,

  /**
   * How long a batch with a few texts left to send after reuse waits for other batches' few, to
   * share a request (embedding/send-pool.ts). An incremental run's changed batches can be far apart
   * in the plan, and 20 ms grouped few of them (docs/benchmarks.md, "a fifth session"). A full group
   * goes at once; the wait only delays a batch that is mostly reused.
   */
  sendPoolWaitMs: 200,
  /**
   * The soft target for resident memory of `run`, `enqueue` and `worker` (observability/
   * memory-target.ts): past it, a full garbage collection at once, at most once a second and in
   * at most 2% of the time, less often while collections free next to nothing (up to a minute
   * apart), and V8's heap let grow by 30% over what survived its last full collection instead of
   * up to 4×, until resident memory falls below 90% of the target. 208 MB: a run passes it within
   * its first seconds, before V8 has grown its heap, so a long run stays where a short one ends; at
   * 256 a long run filled up to the target over minutes and a short one ended below it. The price
   * is CPU on long runs; a factor of 2× cost none but let a nightly peak higher (docs/benchmarks.md,
   * a thirty-seventh session).
   */
  memoryTarget: {
    mb: 208,
    checkMs: 100,
    minGapMs: 1_000,
    maxGapMs: 64_000,
    maxShare: 0.02,
    heapGrowingPercent: 30,
    heapReleaseShare: 0.9,
  },
  /**
   * Committing embedded batches: several per file, written once their vectors reach `groupBytes`
   * or the oldest waited `maxDelayMs` (what a crash can cost: re-embedding at most that much).
   * 2 MB, not 4: every group is held several times over while it is encoded (flat rows, Arrow
   * IPC, wasm memory, the file's bytes), so smaller groups lower the peak RSS, for more files and
   * no loss of throughput (docs/benchmarks.md, "Design figures referenced from the code").
   */
  commit: {
    groupBytes: 2 * 2 ** 20,
    maxDelayMs: 2_000,
    /**
     * Free space the output folder must have before a batch is sent: the groups held in memory,
     * written twice (spill, then data file), and room for compaction's first file.
     */
    minFreeBytes: 64 * 2 ** 20,
  },

  /** Distributed mode (BullMQ on Redis): `enqueue`, `worker` and the queue commands. */
  distributed: {
    queue: 'embedpipe',
    /** Longest Redis outage the producer rides out (`enqueue --redis-wait`); then exit 10. */
    redisOutageMs: 60_000,
    /** The producer says it is alive this often; `status` calls it gone after a few missed beats. */
    producerBeatMs: 1_000,
    /** Redis key prefix of the queue and of embedpipe's own keys (BullMQ's `prefix`). */
    prefix: 'embedpipe',
    /** The producer waits while more jobs than this wait in the queue: Redis memory stays bounded. */
    highWater: 64,
    /** Jobs added per round trip. */
    addChunk: 32,
    /** Queue attempts per batch (crashes, long outages); HTTP retries happen inside each attempt. */
    attempts: 6,
    /** First queue retry after this long, doubling (30 s, 1 min, 2 min, …). */
    backoffMs: 30_000,
    /** A job's lock, renewed by the worker every half of it: a worker killed mid-job frees its jobs within it. */
    lockDurationMs: 60_000,
  },

  /**
   * Compaction of part files into large data files. DuckDB scans as fast over a wide range of row
   * group and file sizes, while the compaction's peak RSS grows with the row group size: 16 MB keeps
   * it within a run's own peak and still gives a 256 MB file ~16 row groups for DuckDB's threads
   * (bench/compact.bench.mjs; figures in docs/benchmarks.md, "Design figures referenced from the code").
   */
  compaction: {
    /** A data file takes parts until their bytes would pass this. */
    targetFileBytes: 256 * 2 ** 20,
    /** Uncompressed bytes per Parquet row group (or Arrow record batch): DuckDB reads row groups in parallel. */
    rowGroupBytes: 16 * 2 ** 20,
    /** Rows per row group at most, for narrow rows: DuckDB's own row group size. */
    rowGroupRows: 122_880,
  },
  verify: {
    /**
     * `verify --sample`: the lowest cosine similarity between a stored vector and the gateway's
     * answer for the same text that counts as the same vector (providers' float noise stays above
     * 0.9999; another model behind the same name lands far below).
     */
    minCosine: 0.99,
  },
  sync: {
    /** `sync --verify`: vectors compared value by value, a sample fixed by the rows' key hashes. */
    verifySample: 100,
  },
  search: {
    /** `search -k`: chunks returned. */
    k: 10,
  },
  eval: {
    /** `eval --sample`: known-item queries drawn from the baseline when no queries file is given. */
    sample: 200,
    /** `eval --seed`: of the drawn queries and of the bootstrap, so an evaluation can be repeated. */
    seed: 1,
    /** `eval -k`: results looked at per query, and the fewest: the deepest cut-off of the metrics (nDCG@10). */
    k: 10,
  },
  /** `embedpipe gateway`, the local emulator: loopback only, its keys are known to everyone. */
  emulator: {
    host: '127.0.0.1',
  },
} as const;
