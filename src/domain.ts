/**
 * The records that flow between stages (see design.md, "Data flow"). Pure types, no behaviour, so
 * every stage can import them without import cycles.
 */

/** The MIME types of the images a corpus may hold (sniffed from the bytes, never from a name). */
export type ImageMime = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

/**
 * An image of a document, as planned: serializable (a batch carries it through a queue), and small
 * except for an inline data URL, which is carried whole. A local file's bytes are not kept: they are
 * read again when its request is built, and checked against `sha256`.
 *
 * - `file`: a local file (a folder's image, or a path in an `--image-field`), sent as a data URL.
 * - `data`: a data URL from an `--image-field`, validated and re-encoded from its bytes.
 * - `url`: an http(s) URL, passed through as is (never fetched: its bytes are unknown here).
 */
export type ImageRef =
  | {
      readonly kind: 'file';
      /** The `image_source` column: the path relative to the corpus (or as the field wrote it). */
      readonly source: string;
      /** Absolute path, read when the request is built. */
      readonly path: string;
      readonly mime: ImageMime;
      /** Size of the file in bytes. */
      readonly bytes: number;
      /** Hex sha256 of the bytes: part of the content hash, and the `image_sha256` column. */
      readonly sha256: string;
      /** Length of the data URL the request carries (the per-request byte budget counts it). */
      readonly urlBytes: number;
    }
  | {
      readonly kind: 'data';
      readonly source: string;
      /** The data URL sent. */
      readonly url: string;
      readonly mime: ImageMime;
      readonly bytes: number;
      readonly sha256: string;
      readonly urlBytes: number;
    }
  | {
      readonly kind: 'url';
      /** The URL itself. */
      readonly source: string;
      readonly url: string;
      readonly urlBytes: number;
    };

/** The audio formats a corpus may hold (sniffed from the bytes; the names `input_audio.format` takes). */
export type AudioFormat = 'wav' | 'mp3' | 'flac' | 'ogg' | 'm4a' | 'webm';

/**
 * The audio of a document, as read: a local file (a folder's, or a path in an `--audio-field`).
 * Its bytes are not kept: they are read again when it is transcribed, and checked against `sha256`.
 */
export interface AudioRef {
  /** The transcript's `source`: the path relative to the corpus (or as the field wrote it). */
  readonly source: string;
  /** Absolute path. */
  readonly path: string;
  readonly format: AudioFormat;
  /** Size of the file in bytes. */
  readonly bytes: number;
  /** Hex sha256 of the bytes: the transcript cache's key (with the speech-to-text settings). */
  readonly sha256: string;
  /** Duration in seconds, when the header gives it (see corpus/audio.ts); undefined: unknown. */
  readonly seconds?: number;
  /** True when `seconds` is an estimate (an MP3 without a frame count: from its bitrate). */
  readonly secondsEstimated?: boolean;
}

/** One document from a corpus. `line` is 1-based (the CSV record's first line, the JSONL line, 1 for a file). */
export interface Document {
  readonly id: string;
  /** The text; for a document with an image, its caption (may be empty). */
  readonly text: string;
  /** The file the document came from (as given on the command line, or relative inside a folder). */
  readonly source: string;
  readonly line: number;
  /** An image embedded together with `text` into one vector: the document is one chunk, never split. */
  readonly image?: ImageRef;
  /**
   * Audio whose transcript is the document's text: `text` is empty as read, and the run's
   * transcription stage replaces the document with a text document before it is chunked.
   */
  readonly audio?: AudioRef;
}

/** A corpus entry that could not become a document; written to `_rejects.jsonl`, never dropped silently. */
export interface Reject {
  readonly file: string;
  readonly line: number;
  readonly id?: string;
  readonly reason: string;
}

/** What a corpus reader yields: documents and rejects, in corpus order. */
export type CorpusEntry =
  | { readonly kind: 'document'; readonly document: Document }
  | { readonly kind: 'reject'; readonly reject: Reject };

/** A piece of a document that fits the model's context; `text` is exactly what gets embedded. */
export interface Chunk {
  readonly documentId: string;
  /** 0..k-1 within the document, in text order (a re-planned document is numbered afresh). */
  readonly index: number;
  readonly text: string;
  /** UTF-16 offsets of `text` in the document's text: chunks cover [0, text.length) in order. */
  readonly start: number;
  readonly end: number;
  /** UTF-8 length of `text`: what the chunker measures. */
  readonly bytes: number;
  /** Estimated gateway tokens (bytes × the calibrated tokens-per-byte envelope), for planning. */
  readonly tokens: number;
  /** content_hash: hex sha256 of (model, text) or (model, text, image); the cache and incremental-run key. */
  readonly hash: string;
  /** The document's image: the chunk is the whole document, sent as one text+image block. */
  readonly image?: ImageRef;
}

/** One array-input `/embeddings` request's worth of chunks. `batchId` is deterministic (see planning/). */
export interface Batch {
  readonly batchId: string;
  readonly model: string;
  readonly chunks: readonly Chunk[];
  /** Sum of the chunks' estimated tokens. */
  readonly tokens: number;
}

/** A chunk that could not be embedded; written to `_failures.jsonl` with the gateway's message. */
export interface ChunkFailure {
  readonly documentId: string;
  readonly chunkIndex: number;
  readonly batchId: string;
  readonly status?: number;
  readonly message: string;
}

/**
 * An audio document whose transcription failed after retries (an outage, not the file): it is in
 * `_failures.jsonl`, the version is not switched, and a re-run transcribes it again.
 */
export interface TranscriptionFailure {
  readonly stage: 'transcription';
  readonly documentId: string;
  /** The audio file, as its transcript would name it. */
  readonly source: string;
  readonly status?: number;
  readonly message: string;
}

/** The outcome of one batch: vectors for the chunks that succeeded, failures for the rest. */
export interface EmbeddedBatch {
  readonly batchId: string;
  readonly model: string;
  /** Chunks that got a vector, in batch order; `vectors[i]` belongs to `chunks[i]`. */
  readonly chunks: readonly Chunk[];
  readonly vectors: readonly Float32Array[];
  readonly failures: readonly ChunkFailure[];
  /** Gateway-side accounting, summed over every request that made this batch. */
  readonly usage: {
    readonly promptTokens: number;
    readonly cost: number;
    readonly requests: number;
    readonly retries: number;
  };
  /** Documents this batch re-planned: their rows here replace their chunks in every other batch. */
  readonly replanned: readonly string[];
  readonly provider?: string;
  /** Rows whose vector came from the dataset (same model and text): not sent. */
  readonly reused?: number;
  /** Rows whose vector came from another chunk of this run with the same text: not sent. */
  readonly deduplicated?: number;
}

/** A response asked to wait: the gate of its key is closed until `until`. */
export interface RetryAfterEvent {
  status: number;
  retryAfterMs: number;
  /** Ms since the epoch: nothing goes out on the key before. */
  until: number;
  /** The gate was open before this answer (a new wait, not one extended). */
  newWait: boolean;
  /** Whether the wait is longer than maxRetryAfterMs (requests fail instead of waiting). */
  pastCap: boolean;
  /** The in-flight window after this answer (undefined without maxInFlight). */
  window: number | undefined;
}

// ---- pacing: what the gateway client tells progress lines, metrics and `status` --------------

export type RateDimension = 'requests' | 'tokens';

/** Per minute, by dimension. */
export type PerMinute = Partial<Record<RateDimension, number>>;

export type RateSource = 'configured' | 'headers' | 'learned';

/** What a progress line and `status` say of the rate budget (gateway/rate-pace.ts). */
export interface RateView {
  /** The rate paced to, per minute, by dimension (absent: not paced). */
  readonly paced: PerMinute;
  readonly source: Partial<Record<RateDimension, RateSource>>;
  /** Measured: successful requests and billed tokens per minute over the last window. */
  readonly measured: Record<RateDimension, number>;
  /** The pace held a request back within the last second. */
  readonly holding: boolean;
}

/** A client's pacing now: its rate budget, and its in-flight window when it has one. */
export interface Pacing {
  readonly rate?: RateView;
  readonly window?: { readonly limit: number; readonly active: number; readonly queued: number };
}

// ---- reports: what stages tell the run's summary (observability/summary.ts), defined here so the
// summary reads them without importing the stages --------------------------------------------------

/** The accounting of one committed batch, stored in its part file's metadata (output/batch-record.ts). */
export interface BatchRecord {
  readonly rows: number;
  /** Vector length; 0 when no chunk of the batch got a vector. */
  readonly dims: number;
  readonly chunks: number;
  readonly promptTokens: number;
  readonly cost: number;
  readonly requests: number;
  readonly retries: number;
  readonly provider?: string;
  readonly failures: readonly ChunkFailure[];
  /** Documents this batch re-planned: its part holds all their rows (see chunking/run-sizing.ts). */
  readonly replanned?: readonly string[];
  /** Rows whose vector came from the dataset, not from a request (absent: none, or an older record). */
  readonly reused?: number;
  /** Rows whose vector another chunk of the same run was sent for (absent: none). */
  readonly deduplicated?: number;
}

/** A dataset version's totals, as its manifest states them (output/manifest-types.ts). */
export interface ManifestCounts {
  readonly documents: number;
  readonly chunks: number;
  /** Rows in the data files (chunks that got a vector). */
  readonly rows: number;
  readonly rejects: number;
  readonly failures: number;
  /** Prompt tokens the gateway reported for the dataset's batches (what was paid for, whichever run). */
  readonly tokens: number;
  /** US dollars, a decimal string with USD_DECIMALS decimals (see formatUsd). */
  readonly costUsd: string;
  readonly requests: number;
  readonly retries: number;
}

/** What changed between two versions of a dataset, by document (output/document-changes.ts). */
export interface DocumentChanges {
  readonly added: number;
  readonly changed: number;
  readonly unchanged: number;
  readonly deleted: number;
}

/** The chunk budget used and why (chunking/calibrate.ts): for the summary and the manifest. */
export interface SizingSummary {
  /** Gateway tokens per chunk. */
  readonly budgetTokens: number;
  /** The learned envelope: gateway tokens per character of each class (see chunking/profile.ts). */
  readonly tokensPerChar: Readonly<Record<string, number>>;
  /** What set it: "byte-bound" (no evidence), "probes", "usage", "rejection", "cut", "limit". */
  readonly basis: string;
  /** How often it changed during the run(s) of this dataset, plus one. */
  readonly epochs: number;
  /** This run's calibration probes: texts measured, requests sent for them (retries included). */
  readonly calibration?: {
    readonly probes: number;
    readonly requests: number;
    readonly tokens: number;
    readonly cost: number;
  };
}

/** What a dry run (or a run stopped by --max-cost) says a run would still transcribe. */
export interface TranscriptionEstimate {
  /** Audio files whose transcript the dataset does not hold: a run would send them. */
  readonly files: number;
  /** Their seconds, from their headers (files of unknown length not included). */
  readonly seconds: number;
  /** Files among them whose length the header does not give (cheaply). */
  readonly unknownFiles: number;
  /** Files among them whose length is an estimate (an MP3 without a frame count). */
  readonly estimatedFiles: number;
  /** USD at `pricePerMinute`; absent when no price is known. */
  readonly cost?: number;
  readonly pricePerMinute?: number;
  /** Where the price comes from: `--stt-price-per-minute`, or what this dataset was billed. */
  readonly priceSource?: 'setting' | 'dataset';
  /** Audio files whose transcript the dataset already holds: nothing to pay. */
  readonly held: number;
}

/** What a sync wrote to a store (stores/sync.ts). */
export interface SyncReport {
  readonly store: string;
  readonly version: string;
  /** The version the store had received before (absent: a first sync). */
  readonly from?: string;
  readonly model: string;
  readonly dims: number;
  /** Rows in the dataset version, and so in the store after the sync. */
  readonly rows: number;
  readonly upserted: number;
  readonly deleted: number;
  readonly unchanged: number;
  readonly documents: number;
  readonly groups: number;
  readonly elapsedMs: number;
}
