/**
 * Embedding a batch without paying twice for the same text. A chunk's vector is taken, in order:
 * from the dataset (a row of the version being built, linked from the current version or
 * committed earlier in this run), from a request of this run still in flight for the same text,
 * or from an earlier chunk of the same batch; only texts none of these holds are sent. Keyed by
 * `content_hash` (model + exact text), so reuse never crosses models. With `--dims`, every vector
 * leaves here in the dataset's dims (embedding/vector-form.ts): a stored one of more dims is cut to
 * them, one of fewer cannot be, and its text is sent.
 */

import type { Batch, Chunk, EmbeddedBatch } from '../domain.js';
import { UsageError } from '../errors.js';
import type { RunStats } from '../observability/stats.js';
import type { ChunkSizing } from './chunk-sizing.js';
import type { GatewayEmbedder } from './gateway-embedder.js';
import { sameChunks } from './same-chunks.js';
import { SendPool, type SendPoolLimits } from './send-pool.js';
import { keepDims } from './vector-form.js';

/** What reuse asks of the dataset's vectors by content hash (output/vector-index.ts keeps them). */
export interface StoredVectors {
  has(hash: string): boolean;
  /** The vectors of these hashes, in order (undefined: not found after all). */
  vectors(hashes: readonly string[]): Promise<(Float32Array | undefined)[]>;
  /** Whether a hash's vector came with the dataset or was written by this run. */
  origin(hash: string): 'dataset' | 'run' | undefined;
  /** Rows committed to `file`, in row order (their hash keys when known). */
  addFile(
    file: string,
    hashes: readonly string[],
    vectors?: readonly Float32Array[],
    keys?: Float64Array,
  ): void;
}

export interface ReuseOptions {
  readonly embedder: Pick<GatewayEmbedder, 'embedBatch' | 'nothingSent'>;
  readonly sizing: Pick<ChunkSizing, 'isStale'>;
  readonly stats: RunStats;
  /** The dataset's vectors by hash; built on first use. */
  readonly index: () => Promise<StoredVectors>;
  /** `--dims`: the dimensions kept of every vector (undefined: all of them). */
  readonly dims?: number | undefined;
  /** Batches with a few texts left to send share requests (embedding/send-pool.ts); unset: never. */
  readonly pool?: SendPoolLimits | undefined;
}

/** What a batch's answer gives the batches waiting on its texts: the vector of a text it sent, by hash. */
interface SentTexts {
  get(hash: string): Float32Array | undefined;
}

/** A batch's chunks sorted before its request (ReusingEmbedder.#claim). */
interface Claim {
  /** Vectors not sent for this batch: stored ones, then copies and other batches' answers. */
  readonly vectors: Map<Chunk, Float32Array>;
  /** Of those, the ones from this run's own texts (its record counts them apart). */
  readonly fromRun: Set<Chunk>;
  /** Chunks whose text another batch has in flight: that batch's answer. */
  readonly waiting: Map<Chunk, Promise<SentTexts>>;
  /** Chunks whose text an earlier chunk of this batch sends: that chunk. */
  readonly sameBatch: Map<Chunk, Chunk>;
  /** The first chunk of each text this batch sends and has in flight. */
  readonly firsts: Chunk[];
  /** In batch order. */
  readonly toSend: Chunk[];
}

export class ReusingEmbedder {
  readonly #options: ReuseOptions;
  /**
   * Texts sent by this run and not committed yet: hash → the answer of the batch sending it (one
   * promise per batch, not per text: this map sees every chunk of the run).
   */
  readonly #inFlight = new Map<string, Promise<SentTexts>>();

  readonly #pool: SendPool | undefined;

  constructor(options: ReuseOptions) {
    this.#options = options;
    this.#pool = options.pool ? new SendPool(options.embedder, options.pool) : undefined;
  }

  async embed(batch: Batch, signal: AbortSignal): Promise<EmbeddedBatch> {
    const { embedder, sizing } = this.#options;
    const index = await this.#options.index();
    const claim: Claim = {
      vectors: new Map(),
      fromRun: new Set(),
      waiting: new Map(),
      sameBatch: new Map(),
      firsts: [],
      toSend: [],
    };
    let answer!: (texts: SentTexts) => void;
    const answering = new Promise<SentTexts>((resolve) => {
      answer = resolve;
    });
    // Batches waiting on this batch's texts send them themselves.
    const giveUp = () => {
      answer(NOTHING_SENT);
      for (const chunk of claim.firsts) this.#inFlight.delete(chunk.hash);
    };
    try {
      // A chunk another batch re-planned is sent as planned and dropped at commit (see RunSizing).
      const candidates = batch.chunks.filter(
        (chunk) => !sizing.isStale(chunk, batch.batchId) && index.has(chunk.hash),
      );
      // Stored vectors in one lookup (the index reads each file's rows together); from here on
      // nothing waits, so no other batch can take a text in flight between check and claim.
      const found = candidates.length > 0 ? await index.vectors(candidates.map((chunk) => chunk.hash)) : [];
      this.#claim(batch, index, candidates, found, answering, claim);
    } catch (error) {
      giveUp();
      throw error;
    }

    const { toSend } = claim;
    let sent: EmbeddedBatch;
    try {
      sent =
        toSend.length === 0
          ? embedder.nothingSent(batch)
          : this.#pool?.shares(batch, toSend)
            ? await this.#pool.send(batch, toSend, signal)
            : await embedder.embedBatch({ ...batch, chunks: toSend }, signal);
    } catch (error) {
      giveUp();
      throw error;
    }
    let answered = new Answered(sent, toSend);
    this.#answered(answered, claim.firsts, answer);

    // Copies within the batch, and texts other batches had in flight.
    const again: Chunk[] = [];
    for (const [chunk, first] of claim.sameBatch) {
      const vector = answered.get(first);
      if (vector) this.#shared(chunk, vector, claim.vectors, claim.fromRun);
      else again.push(chunk);
    }
    for (const [chunk, pending] of claim.waiting) {
      const vector = (await pending).get(chunk.hash);
      if (vector) this.#shared(chunk, vector, claim.vectors, claim.fromRun);
      else again.push(chunk);
    }
    if (again.length > 0) {
      sent = merge(sent, await embedder.embedBatch({ ...batch, chunks: again }, signal));
      answered = new Answered(sent, undefined);
    }
    return this.#assembled(batch, answered, claim);
  }

  /**
   * Sorts the batch's chunks (see Claim): a stored vector, a text another batch has in flight, a
   * copy of an earlier chunk of the batch, or a text to send, which is in flight from here on.
   * Synchronous: no other batch runs between a check and its claim.
   */
  #claim(
    batch: Batch,
    index: StoredVectors,
    candidates: readonly Chunk[],
    found: readonly (Float32Array | undefined)[],
    answering: Promise<SentTexts>,
    claim: Claim,
  ): void {
    const { sizing, stats, dims } = this.#options;
    const inFlight = this.#inFlight;
    // The candidates are some of the batch's chunks, in batch order: found[c] is candidates[c]'s.
    let c = 0;
    const { chunks } = batch;
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i]!;
      const storedVector = candidates[c] === chunk ? found[c++] : undefined;
      // (A chunk re-planned by another batch while the stored vectors were read is stale now.)
      const stale = sizing.isStale(chunk, batch.batchId);
      const stored = stale || storedVector === undefined ? undefined : keepDims(storedVector, dims);
      if (stored) {
        claim.vectors.set(chunk, stored);
        if (index.origin(chunk.hash) === 'run') claim.fromRun.add(chunk);
        stats.tokensReused += chunk.tokens;
        continue;
      }
      const pending = stale ? undefined : inFlight.get(chunk.hash);
      if (pending === answering) claim.sameBatch.set(chunk, firstOf(claim.firsts, chunk.hash));
      else if (pending) claim.waiting.set(chunk, pending);
      else {
        if (!stale) {
          claim.firsts.push(chunk);
          // In flight from here on: a batch planned meanwhile waits for this answer instead of
          // sending the text too.
          inFlight.set(chunk.hash, answering);
        }
        claim.toSend.push(chunk);
      }
    }
  }

  /**
   * Gives the batches waiting on this batch's texts theirs; a text it did not embed (its document
   * re-planned, its input failed) is no longer in flight.
   */
  #answered(answered: Answered, firsts: readonly Chunk[], answer: (texts: SentTexts) => void): void {
    if (!answered.holdsEverySent) {
      for (const chunk of firsts) if (!answered.get(chunk)) this.#inFlight.delete(chunk.hash);
    }
    // Built only when a batch asks (seldom: the same text in two batches in flight at once).
    let byHash: Map<string, Float32Array> | undefined;
    answer({
      get(hash) {
        if (byHash === undefined) {
          byHash = new Map();
          for (const chunk of firsts) {
            const vector = answered.get(chunk);
            if (vector) byHash.set(chunk.hash, vector);
          }
        }
        return byHash.get(hash);
      },
    });
  }

  /** The batch's rows in batch order; chunks of documents the requests re-planned (new chunk objects) after. */
  #assembled(batch: Batch, answered: Answered, claim: Claim): EmbeddedBatch {
    const { sent } = answered;
    const kept = (vectors: readonly Float32Array[]) =>
      this.#options.dims === undefined ? vectors : vectors.map((vector) => this.#kept(vector));
    // Nearly every batch: every chunk sent, and answered as sent.
    if (answered.holdsEverySent && claim.toSend.length === batch.chunks.length && sent.replanned.length === 0)
      return { ...sent, batchId: batch.batchId, chunks: sent.chunks, vectors: kept(sent.vectors) };
    const replanned = new Set(sent.replanned);
    const chunks: Chunk[] = [];
    const out: Float32Array[] = [];
    let reused = 0;
    let deduplicated = 0;
    for (const chunk of batch.chunks) {
      if (replanned.has(chunk.documentId)) continue;
      const notSent = claim.vectors.get(chunk);
      const vector = notSent ?? answered.get(chunk);
      if (!vector) continue;
      chunks.push(chunk);
      out.push(vector);
      if (notSent && claim.fromRun.has(chunk)) deduplicated += 1;
      else if (notSent) reused += 1;
    }
    const planned = new Set(batch.chunks);
    for (const [i, chunk] of sent.chunks.entries()) {
      if (planned.has(chunk)) continue;
      chunks.push(chunk);
      out.push(sent.vectors[i]!);
    }
    return {
      ...sent,
      batchId: batch.batchId,
      chunks,
      vectors: kept(out),
      ...(reused > 0 ? { reused } : {}),
      ...(deduplicated > 0 ? { deduplicated } : {}),
    };
  }

  /** A vector in the dataset's dims; a gateway answer of fewer dims than `--dims` stops the run. */
  #kept(vector: Float32Array): Float32Array {
    const { dims } = this.#options;
    const kept = keepDims(vector, dims);
    if (kept) return kept;
    throw new UsageError(
      `--dims ${dims} is more than the ${vector.length} dimensions the gateway returns for this model`,
    );
  }

  /**
   * Rows committed to `file` (hashes and vectors in row order): from now on their vectors come from
   * the index (the last ones from memory, then from the file).
   */
  async committed(
    file: string,
    hashes: readonly string[],
    vectors?: readonly Float32Array[],
    keys?: Float64Array,
  ): Promise<void> {
    (await this.#options.index()).addFile(file, hashes, vectors, keys);
    for (let i = 0; i < hashes.length; i++) this.#inFlight.delete(hashes[i]!);
  }

  #shared(chunk: Chunk, vector: Float32Array, into: Map<Chunk, Float32Array>, fromRun: Set<Chunk>): void {
    into.set(chunk, vector);
    fromRun.add(chunk);
    this.#options.stats.tokensReused += chunk.tokens;
  }
}

/** The answer of a batch that sent nothing, or gave up. */
const NOTHING_SENT: SentTexts = { get: () => undefined };

/** The first chunk of `firsts` with this text (a copy later in the batch is rare: a scan is enough). */
function firstOf(firsts: readonly Chunk[], hash: string): Chunk {
  const first = firsts.find((chunk) => chunk.hash === hash);
  if (first === undefined) throw new Error(`no chunk of this batch sends the text ${hash}`);
  return first;
}

/**
 * The vectors a request answered, by chunk. Nearly always its rows are the chunks sent, in order;
 * a map of them is made only when something looks one up.
 */
class Answered {
  /** Whether the answer's rows are exactly the chunks sent, in order. */
  readonly holdsEverySent: boolean;
  #byChunk: Map<Chunk, Float32Array> | undefined;

  constructor(
    readonly sent: EmbeddedBatch,
    toSend: readonly Chunk[] | undefined,
  ) {
    this.holdsEverySent = toSend !== undefined && sameChunks(sent.chunks, toSend);
  }

  get(chunk: Chunk): Float32Array | undefined {
    if (this.#byChunk === undefined) {
      const { chunks, vectors } = this.sent;
      this.#byChunk = new Map();
      for (let i = 0; i < chunks.length; i++) this.#byChunk.set(chunks[i]!, vectors[i]!);
    }
    return this.#byChunk.get(chunk);
  }
}

/** Two answers for one batch as one: rows, failures and accounting added up. */
function merge(a: EmbeddedBatch, b: EmbeddedBatch): EmbeddedBatch {
  return {
    ...a,
    chunks: [...a.chunks, ...b.chunks],
    vectors: [...a.vectors, ...b.vectors],
    failures: [...a.failures, ...b.failures],
    usage: {
      promptTokens: a.usage.promptTokens + b.usage.promptTokens,
      cost: a.usage.cost + b.usage.cost,
      requests: a.usage.requests + b.usage.requests,
      retries: a.usage.retries + b.usage.retries,
    },
    replanned: [...new Set([...a.replanned, ...b.replanned])],
    ...(b.provider ? { provider: b.provider } : a.provider ? { provider: a.provider } : {}),
  };
}
