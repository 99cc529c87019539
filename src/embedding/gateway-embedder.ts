/**
 * Embeds one batch through the gateway and reports an outcome per chunk — never all-or-nothing:
 *
 * - HTTP retries (seconds): retryable answers go through withRetry; the client holds every attempt
 *   at its key's Retry-After gate, so a 429 holds back every request of the run on that key. A
 *   Retry-After past --max-retry-after fails the batch at once (BatchFailedError, retryable).
 * - Chunk sizing: before sending, the run's sizing re-plans documents whose chunks no longer fit
 *   the gateway's count; after each answer it learns from the usage, and any document whose chunk
 *   may have been cut (or was rejected as too long) is re-planned whole and embedded again, so a
 *   document's rows stay numbered 0..k-1 and no stored vector is of a truncated text.
 * - A 400 on several inputs splits the request in halves until the offending input is alone; the
 *   rest of the batch is kept. What cannot be embedded becomes a ChunkFailure with the message.
 *   400s in a row across the run mean the request is refused, not an input: the embedder backs
 *   off and sends the group again instead of halving (refusals.ts). A 400 that states a lower
 *   inputs-per-request limit is learned once: every later request of the run keeps under it.
 * - Chunks with images go as multimodal blocks (caption + image, one joint vector each), asked for
 *   as `float`; a local image gone or changed since planning fails its chunk (image-input.ts).
 * - Retries exhausted: the batch is not committed (BatchFailedError), so a re-run tries it again.
 * - 401/402/404, a dimension change, abort: thrown, fatal for the run.
 * - The run's cost cap (`budget`): each attempt reserves its estimated cost before it is sent and
 *   settles it with the answer's cost; a refused reservation throws BudgetExceededError, never
 *   retried nor wrapped, and fatal for the run like a 402 (resumable: nothing of the batch is sent).
 *
 * `signal` (the run stopping: 402 elsewhere, Ctrl-C) stops retries and waits (the client's too) but
 * never cancels a request in flight: that request is paid for, so its vectors are kept.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { Batch, Chunk, ChunkFailure, EmbeddedBatch } from '../domain.js';
import { EmbedpipeError } from '../errors.js';
import type { EmbeddingsResult } from '../gateway/index.js';
import {
  BadRequestError,
  type GatewayClient,
  GatewayError,
  InvalidResponseError,
  ProviderOverloadedError,
} from '../gateway/index.js';
import type { MultimodalBlock } from '../gateway/wire.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { type Now, type RetryPolicy, withRetry } from '../retry/index.js';
import type { ChunkSizing } from './chunk-sizing.js';
import type { CostBudget } from './cost-budget.js';
import type { EncodingPolicy } from './encoding-policy.js';
import { blockOf, ImageUnavailableError, imageUrlOf } from './image-input.js';
import type { ProviderRouter } from './provider-router.js';
import { RefusalStorm, statedInputLimit } from './refusals.js';
import { sameChunks } from './same-chunks.js';
import { isTooLongMessage, statedInputTokens, statedTokenLimit } from './too-long.js';

export interface GatewayEmbedderOptions {
  readonly client: GatewayClient;
  readonly model: string;
  readonly router: ProviderRouter;
  readonly encoding: EncodingPolicy;
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  /** Each request's deadline; unset: the client's. */
  readonly timeoutMs?: number;
  readonly sizing: ChunkSizing;
  readonly stats: RunStats;
  readonly logger: Logger;
  /** USD per prompt token, to estimate cost when the gateway reports none. */
  readonly pricePerToken?: number;
  /**
   * The run's cost cap, shared by every request of the run. Each attempt (a retry is a new paid
   * request) reserves `planned tokens × pricePerToken` before it is sent; no price: estimate 0, and
   * the cap counts only the costs answers report (see CostBudget).
   */
  readonly budget?: CostBudget;
  /** Backoff's timers and jitter, and the refusal storm's clock (Retry-After waits are the client's). */
  readonly clock?: Partial<Pick<RetryPolicy, 'sleep' | 'random'>> & { readonly now?: Now };
}

/** Retries ran out on a batch: nothing of it is committed, and a re-run sends it again. */
export class BatchFailedError extends EmbedpipeError {
  constructor(
    readonly batchId: string,
    override readonly cause: GatewayError,
  ) {
    super(`batch ${batchId} failed after retries: ${cause.message}`);
  }
}

/** The run's vectors changed length: another model or a misbehaving provider. Fatal. */
export class DimensionMismatchError extends EmbedpipeError {}

class BatchOutcome {
  readonly chunks: Chunk[] = [];
  readonly vectors: Float32Array[] = [];
  readonly failures: ChunkFailure[] = [];
  promptTokens = 0;
  cost = 0;
  requests = 0;
  retries = 0;
  provider: string | undefined;
  /** The last 400 an input of this batch was refused with. */
  lastRejection: GatewayError | undefined;
  /** Back-offs this batch took in a refusal storm. */
  stormWaits = 0;

  constructor(readonly batch: Batch) {}

  /** Documents this batch re-planned: it holds all their rows (see ChunkSizing). */
  readonly replanned = new Set<string>();

  accept(chunk: Chunk, vector: Float32Array): void {
    this.chunks.push(chunk);
    this.vectors.push(vector);
  }

  fail(chunk: Chunk, message: string, status?: number): void {
    this.failures.push({
      documentId: chunk.documentId,
      chunkIndex: chunk.index,
      batchId: this.batch.batchId,
      ...(status !== undefined ? { status } : {}),
      message,
    });
  }

  /** Rows in batch order of their documents, each document's by chunk index (re-plans finish in any order). */
  #sortRows(): void {
    if (this.#asPlanned()) return;
    const order = new Map<string, number>();
    // The documents as planned: one re-planned once its answer was in (cut silently) is answered
    // after the others, and keeps its place.
    for (const chunk of this.batch.chunks)
      if (!order.has(chunk.documentId)) order.set(chunk.documentId, order.size);
    for (const chunk of this.chunks)
      if (!order.has(chunk.documentId)) order.set(chunk.documentId, order.size);
    const rows = this.chunks.map((chunk, i) => ({ chunk, vector: this.vectors[i]! }));
    rows.sort(
      (a, b) =>
        order.get(a.chunk.documentId)! - order.get(b.chunk.documentId)! || a.chunk.index - b.chunk.index,
    );
    rows.forEach((row, i) => {
      this.chunks[i] = row.chunk;
      this.vectors[i] = row.vector;
    });
  }

  /**
   * Whether the rows are the batch's chunks as planned, in plan order (nearly every batch: nothing
   * re-planned, nothing failed): the planner keeps a document's chunks together in index order, so
   * they are sorted already and the sort is skipped.
   */
  #asPlanned(): boolean {
    const planned = this.batch.chunks;
    if (!sameChunks(this.chunks, planned)) return false;
    for (let i = 1; i < planned.length; i++) {
      const before = planned[i - 1]!;
      if (before.documentId === planned[i]!.documentId && before.index >= planned[i]!.index) return false;
    }
    return true;
  }

  /** Forgets what this batch holds of a document (its old plan, before a re-plan). */
  dropDocument(documentId: string): void {
    for (let i = this.chunks.length - 1; i >= 0; i--) {
      if (this.chunks[i]!.documentId !== documentId) continue;
      this.chunks.splice(i, 1);
      this.vectors.splice(i, 1);
    }
    for (let i = this.failures.length - 1; i >= 0; i--) {
      if (this.failures[i]!.documentId === documentId) this.failures.splice(i, 1);
    }
  }

  result(): EmbeddedBatch {
    this.#sortRows();
    return {
      batchId: this.batch.batchId,
      model: this.batch.model,
      chunks: this.chunks,
      vectors: this.vectors,
      failures: this.failures,
      usage: {
        promptTokens: this.promptTokens,
        cost: this.cost,
        requests: this.requests,
        retries: this.retries,
      },
      replanned: [...this.replanned],
      ...(this.provider ? { provider: this.provider } : {}),
    };
  }
}

export class GatewayEmbedder {
  readonly #options: GatewayEmbedderOptions;
  readonly #refusals: RefusalStorm;
  #dims: number | undefined;

  constructor(options: GatewayEmbedderOptions) {
    this.#options = options;
    this.#refusals = new RefusalStorm(
      {
        threshold: DEFAULTS.retry.refusalStorm,
        baseDelayMs: options.retry.baseDelayMs,
        maxDelayMs: options.retry.maxDelayMs,
      },
      options.clock?.now,
    );
  }

  /** The run's vector length, once the first answer arrived. */
  get dims(): number | undefined {
    return this.#dims;
  }

  /** The outcome of a batch that needed no request (every chunk's vector was reused). */
  nothingSent(batch: Batch): EmbeddedBatch {
    return new BatchOutcome(batch).result();
  }

  async embedBatch(batch: Batch, signal: AbortSignal): Promise<EmbeddedBatch> {
    const outcome = new BatchOutcome(batch);
    const chunks = this.#options.sizing.prepare(batch.batchId, batch.chunks);
    if (!sameChunks(chunks, batch.chunks)) {
      const planned = new Set(batch.chunks);
      for (const chunk of chunks) if (!planned.has(chunk)) outcome.replanned.add(chunk.documentId);
    }
    await this.#embedGroup(chunks, outcome, signal);
    this.#refuseUniformRejection(outcome);
    return outcome.result();
  }

  /**
   * Every input of the batch (two or more) was refused with one and the same status and none got a
   * vector: the request is what is wrong (a bad parameter, a gateway refusing everything for a
   * while), not each input. The batch fails whole (BatchFailedError): nothing is committed, and a
   * re-run sends it again, instead of committing an empty batch that a re-run would skip.
   */
  #refuseUniformRejection(outcome: BatchOutcome): void {
    const { failures } = outcome;
    const last = outcome.lastRejection;
    if (outcome.chunks.length > 0 || failures.length < 2 || last === undefined) return;
    const status = failures[0]!.status;
    if (status === undefined || failures.some((f) => f.status !== status)) return;
    throw new BatchFailedError(outcome.batch.batchId, last);
  }

  /**
   * One gateway usage measurement of a single text (calibration): its prompt tokens as the gateway
   * counts them, or undefined when the gateway reports no usage. What it took is returned too: its
   * cost, and the requests sent (retries included) and retries.
   */
  async measure(
    text: string,
    signal: AbortSignal,
  ): Promise<{ tokens?: number; cost: number; requests: number; retries: number }> {
    const outcome = new BatchOutcome({
      batchId: 'calibration',
      model: this.#options.model,
      chunks: [],
      tokens: 0,
    });
    const probe: Chunk = {
      documentId: '',
      index: 0,
      text,
      start: 0,
      end: text.length,
      bytes: 0,
      tokens: 0,
      hash: '',
    };
    const result = await this.#request([probe], [text], outcome, signal);
    const tokens = result.usage?.promptTokens;
    return {
      ...(tokens !== undefined ? { tokens } : {}),
      cost: outcome.cost,
      requests: outcome.requests,
      retries: outcome.retries,
    };
  }

  async #embedGroup(group: readonly Chunk[], outcome: BatchOutcome, signal: AbortSignal): Promise<void> {
    const { sizing } = this.#options;
    const batchId = outcome.batch.batchId;
    // A document may have been re-planned since this group was formed (by this or another batch).
    const live = group.filter((chunk) => !sizing.isStale(chunk, batchId));
    if (live.length === 0) return;
    const limit = sizing.maxInputs;
    if (limit !== undefined && live.length > limit) {
      for (let at = 0; at < live.length; at += limit)
        await this.#embedGroup(live.slice(at, at + limit), outcome, signal);
      return;
    }
    // A request's input is strings or blocks, never both (the planner keeps them apart anyway).
    let images = 0;
    for (let i = 0; i < live.length; i++) if (live[i]!.image !== undefined) images += 1;
    if (images > 0 && images < live.length) {
      await this.#embedGroup(
        live.filter((chunk) => chunk.image === undefined),
        outcome,
        signal,
      );
      await this.#embedGroup(
        live.filter((chunk) => chunk.image !== undefined),
        outcome,
        signal,
      );
      return;
    }
    const { chunks, input } =
      images === 0 ? { chunks: live, input: live.map((c) => c.text) } : await this.#imageInput(live, outcome);
    if (chunks.length === 0) return;
    let result: EmbeddingsResult;
    try {
      result = await this.#request(chunks, input, outcome, signal);
    } catch (error) {
      if (!(error instanceof BadRequestError)) {
        if (error instanceof GatewayError && error.retryable) throw new BatchFailedError(batchId, error);
        throw error;
      }
      if (this.#learnInputLimit(error, chunks.length)) return this.#embedGroup(chunks, outcome, signal);
      if (!isTooLongMessage(error.message) && (await this.#backOffInStorm(error, outcome, signal)))
        return this.#embedGroup(chunks, outcome, signal);
      if (chunks.length > 1) {
        const middle = Math.ceil(chunks.length / 2);
        await this.#embedGroup(chunks.slice(0, middle), outcome, signal);
        await this.#embedGroup(chunks.slice(middle), outcome, signal);
        return;
      }
      const chunk = chunks[0]!;
      if (isTooLongMessage(error.message)) {
        sizing.rejected(chunk, {
          limit: statedTokenLimit(error.message),
          counted: statedInputTokens(error.message),
        });
        if (await this.#replan(chunk.documentId, outcome, signal)) return;
      }
      outcome.fail(chunk, error.message, error.status);
      outcome.lastRejection = error;
      return;
    }
    const redo = sizing.learn(chunks, result.usage?.promptTokens);
    chunks.forEach((chunk, i) => {
      // Stale: its document was re-planned while this request was out.
      if (sizing.isStale(chunk, batchId)) redo.delete(chunk.documentId);
      else if (!redo.has(chunk.documentId)) outcome.accept(chunk, result.vectors[i]!);
    });
    for (const documentId of redo) {
      if (await this.#replan(documentId, outcome, signal)) continue;
      for (const chunk of chunks) {
        if (chunk.documentId !== documentId) continue;
        outcome.fail(
          chunk,
          "the gateway may have truncated this chunk, and re-planning its document did not make it fit the gateway's token count",
        );
      }
    }
  }

  /** True when the 400 states a lower inputs-per-request limit: every later request keeps under it. */
  #learnInputLimit(error: BadRequestError, sent: number): boolean {
    const stated = statedInputLimit(error.message, sent);
    if (stated === undefined) return false;
    const { sizing } = this.#options;
    if (sizing.maxInputs === undefined || stated < sizing.maxInputs) {
      sizing.learnMaxInputs(stated);
      this.#options.logger.warn(
        { maxInputs: stated },
        `the gateway accepts at most ${stated} inputs per request: this run and later ones send no more (kept in _calibration.json; --max-inputs ${stated} also plans batches that size)`,
      );
    }
    return true;
  }

  /**
   * In a refusal storm (refusals.ts), waits out a back-off shared by every request on the key and
   * returns true: the caller sends the same group again. False when this is no storm, or this
   * batch waited as often as the retry policy allows (then halving finds out what is refused).
   */
  async #backOffInStorm(
    error: BadRequestError,
    outcome: BatchOutcome,
    signal: AbortSignal,
  ): Promise<boolean> {
    const { client, logger, retry, stats } = this.#options;
    this.#refusals.refused();
    if (!this.#refusals.raging || outcome.stormWaits >= retry.maxAttempts) return false;
    if (!(await this.#refusals.refusesEverything(() => this.#probeAccepted(signal)))) return false;
    outcome.stormWaits += 1;
    outcome.retries += 1;
    stats.retries += 1;
    const { delayMs, fresh } = this.#refusals.backOff();
    if (fresh)
      logger.warn(
        { status: error.status, delayMs },
        `the gateway refuses every request (${error.message}): backing off before sending again`,
      );
    client.backOff(delayMs);
    return true;
  }

  /** Whether the gateway embeds a plain input now (its cost counts as this run's, like a probe's). */
  async #probeAccepted(signal: AbortSignal): Promise<boolean> {
    try {
      await this.measure(REFUSAL_PROBE, signal);
      return true;
    } catch (error) {
      if (error instanceof GatewayError) return false;
      throw error;
    }
  }

  /** Re-plans a document into this batch and embeds all its chunks; false when it cannot be. */
  async #replan(documentId: string, outcome: BatchOutcome, signal: AbortSignal): Promise<boolean> {
    const chunks = this.#options.sizing.replan(documentId, outcome.batch.batchId);
    if (chunks === undefined) return false;
    this.#options.logger.warn(
      { documentId, chunks: chunks.length },
      "a chunk did not fit the gateway's token count; re-planned its document with the learned budget",
    );
    outcome.dropDocument(documentId);
    outcome.replanned.add(documentId);
    // One input per request: each answer's usage is that chunk's own count, so a chunk the gateway
    // cut (usage at the context length) is told apart from its neighbours.
    await Promise.all(chunks.map((chunk) => this.#embedGroup([chunk], outcome, signal)));
    return true;
  }

  /**
   * The request input of chunks with images: one block each (see image-input.ts). A local image that
   * is gone or changed since it was planned fails its chunk.
   */
  async #imageInput(
    chunks: readonly Chunk[],
    outcome: BatchOutcome,
  ): Promise<{ chunks: Chunk[]; input: MultimodalBlock[] }> {
    const urls = await Promise.all(
      chunks.map((chunk) => imageUrlOf(chunk.image!).catch((error: unknown) => error as Error)),
    );
    const sent: Chunk[] = [];
    const input: MultimodalBlock[] = [];
    chunks.forEach((chunk, i) => {
      const url = urls[i]!;
      if (typeof url === 'string') {
        sent.push(chunk);
        input.push(blockOf(chunk.text, url));
        return;
      }
      if (!(url instanceof ImageUnavailableError)) throw url;
      outcome.fail(chunk, url.message);
    });
    return { chunks: sent, input };
  }

  #request(
    chunks: readonly Chunk[],
    input: string[] | MultimodalBlock[],
    outcome: BatchOutcome,
    signal: AbortSignal,
  ): Promise<EmbeddingsResult> {
    const { client, model, router, encoding, retry, stats, logger, budget, timeoutMs } = this.#options;
    // Image input is asked for as floats (the interface's encoding for it).
    const images = chunks.some((c) => c.image !== undefined);
    const estimateUsd = budget ? this.#estimateCost(chunks) : 0;
    let askedFor = images ? 'float' : encoding.current;
    return withRetry(
      async () => {
        askedFor = images ? 'float' : encoding.current;
        // Before anything is counted or sent: a refused reservation sends nothing (and is not retried).
        const reservation = budget?.reserve(
          estimateUsd,
          `a request of ${chunks.length} input${chunks.length === 1 ? '' : 's'} (batch ${outcome.batch.batchId})`,
        );
        const provider = router.preferences();
        stats.requests += 1;
        stats.firstRequestAt ??= Date.now();
        outcome.requests += 1;
        // `signal` stops the waits before sending (slot, Retry-After gate) but not a request already
        // sent: it is paid for, so it is allowed to finish and its vectors are kept.
        let result: EmbeddingsResult;
        try {
          result = await client.embeddings(
            { model, input, encoding_format: askedFor, ...(provider ? { provider } : {}) },
            {
              signal,
              letRequestFinish: true,
              tokens: estimatedTokens(chunks),
              ...(timeoutMs !== undefined ? { timeoutMs } : {}),
            },
          );
        } catch (error) {
          const billed =
            error instanceof InvalidResponseError
              ? this.#accountRejectedAnswer(error, chunks, outcome)
              : undefined;
          if (billed !== undefined) reservation?.settle(billed);
          else reservation?.release();
          throw error;
        }
        router.noteSuccess();
        this.#refusals.accepted();
        // Accounted first: an answer of the wrong length is refused (fatal) but was paid for.
        const cost = this.#account(result, chunks, outcome);
        reservation?.settle(cost);
        this.#checkDims(result.dims);
        return result;
      },
      {
        ...retry,
        ...this.#options.clock,
        signal,
        letAttemptFinish: true,
        onRetry: (error, attempt, delayMs) => {
          stats.retries += 1;
          outcome.retries += 1;
          if (error instanceof ProviderOverloadedError) {
            const next = router.noteOverloaded();
            if (next)
              logger.warn(
                { provider: next },
                'provider stays overloaded; moving to the next in --provider-order',
              );
          }
          if (
            error instanceof InvalidResponseError &&
            error.emptyData &&
            encoding.noteEmptyAnswer(askedFor)
          ) {
            logger.warn(
              'gateway keeps answering base64 requests with empty data; switching this run to float',
            );
          }
          const status = error instanceof GatewayError ? error.status : undefined;
          logger.debug(
            { batchId: outcome.batch.batchId, attempt, delayMs, status },
            String((error as Error).message),
          );
        },
      },
    );
  }

  #checkDims(dims: number): void {
    if (this.#dims === undefined) this.#dims = dims;
    else if (dims !== this.#dims) {
      throw new DimensionMismatchError(
        `the gateway returned ${dims}-dimensional vectors after ${this.#dims}-dimensional ones for model ` +
          `${this.#options.model}; refusing to mix vector spaces in one dataset`,
      );
    }
  }

  /**
   * A 2xx the client refused (short data, wrong dims, bad JSON): the gateway billed it all the same,
   * so its cost counts. The client's error carries no usage, so it is estimated from the pricing and
   * the chunks' planned (upper) token estimates.
   */
  #accountRejectedAnswer(
    error: InvalidResponseError,
    chunks: readonly Chunk[],
    outcome: BatchOutcome,
  ): number | undefined {
    if (error.status < 200 || error.status >= 300) return undefined;
    const cost = plannedTokens(chunks) * (this.#options.pricePerToken ?? 0);
    outcome.cost += cost;
    this.#options.stats.cost += cost;
    return cost;
  }

  /** What a request of these chunks is expected to cost, for the budget: their tokens × the price. */
  #estimateCost(chunks: readonly Chunk[]): number {
    const price = this.#options.pricePerToken ?? 0;
    return price > 0 ? estimatedTokens(chunks) * price : 0;
  }

  /** Counts an answer's tokens and cost into the batch and the run; returns the cost. */
  #account(result: EmbeddingsResult, chunks: readonly Chunk[], outcome: BatchOutcome): number {
    const promptTokens = result.usage?.promptTokens ?? plannedTokens(chunks);
    const cost = result.usage?.cost ?? promptTokens * (this.#options.pricePerToken ?? 0);
    outcome.promptTokens += promptTokens;
    outcome.cost += cost;
    if (result.provider) outcome.provider = result.provider;
    this.#options.stats.gatewayTokens += promptTokens;
    this.#options.stats.cost += cost;
    return cost;
  }
}

/**
 * The tokens a request of these chunks will be billed, at most: their planned (upper) estimates. A
 * chunk with no estimate (a calibration probe) counts its UTF-8 bytes, an upper bound for a
 * byte-level tokenizer.
 */
function estimatedTokens(chunks: readonly Chunk[]): number {
  return chunks.reduce((sum, c) => sum + (c.tokens > 0 ? c.tokens : Buffer.byteLength(c.text)), 0);
}

/** What the embedder sends to tell a refused input from a refused request (see refusals.ts). */
const REFUSAL_PROBE = 'embedpipe probe';

/** The chunks' planned (upper) token estimates, added up. */
function plannedTokens(chunks: readonly Chunk[]): number {
  return chunks.reduce((sum, c) => sum + c.tokens, 0);
}
