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
