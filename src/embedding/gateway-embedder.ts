/**
 * Embeds one batch through the gateway and reports an outcome per chunk — never all-or-nothing:
 *
 * - HTTP retries (seconds): retryable answers go through withRetry, behind the run's one
 *   Retry-After gate, so a 429 holds back every request of the run on that key.
 * - A 400 on several inputs splits the batch in halves until the offending input is alone; the
 *   rest of the batch is kept. An input rejected as too long is re-chunked smaller (pieces keep
 *   the chunk's index, numbered by subIndex) and embedded; what still cannot be embedded becomes a
 *   ChunkFailure with the gateway's message.
 * - Retries exhausted: the batch is not committed (BatchFailedError), so a re-run tries it again.
 * - 401/402/404, a dimension change, abort: thrown, fatal for the run.
 *
 * `signal` (the run stopping: 402 elsewhere, Ctrl-C) stops retries and waits but never cancels a
 * request in flight: that request is paid for, so its vectors are kept.
 */
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
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { type RetryAfterGate, type RetryPolicy, withRetry } from '../retry/index.js';
import type { EncodingPolicy } from './encoding-policy.js';
import type { ProviderRouter } from './provider-router.js';
import { isTooLongMessage, statedTokenLimit } from './too-long.js';

/** Re-chunks one chunk into pieces of at most `maxTokens` tokens (pieces numbered by subIndex). */
export type Rechunk = (chunk: Chunk, maxTokens: number) => Chunk[];

export interface GatewayEmbedderOptions {
  readonly client: GatewayClient;
  readonly model: string;
  readonly router: ProviderRouter;
  readonly encoding: EncodingPolicy;
  readonly gate: RetryAfterGate;
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs: number; readonly maxDelayMs: number };
  readonly rechunk: Rechunk;
  readonly stats: RunStats;
  readonly logger: Logger;
  /** USD per prompt token, to estimate cost when the gateway reports none. */
  readonly pricePerToken?: number;
  readonly clock?: Partial<Pick<RetryPolicy, 'sleep' | 'random' | 'now'>>;
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

  constructor(readonly batch: Batch) {}

  fail(chunk: Chunk, error: GatewayError): void {
    this.failures.push({
      documentId: chunk.documentId,
      chunkIndex: chunk.index,
      batchId: this.batch.batchId,
      status: error.status,
      message: error.message,
    });
  }

  result(): EmbeddedBatch {
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
      ...(this.provider ? { provider: this.provider } : {}),
    };
  }
}

export class GatewayEmbedder {
  readonly #options: GatewayEmbedderOptions;
  #dims: number | undefined;

  constructor(options: GatewayEmbedderOptions) {
    this.#options = options;
  }

  /** The run's vector length, once the first answer arrived. */
  get dims(): number | undefined {
    return this.#dims;
  }

  async embedBatch(batch: Batch, signal: AbortSignal): Promise<EmbeddedBatch> {
    const outcome = new BatchOutcome(batch);
    await this.#embedGroup(batch.chunks, outcome, signal);
    return outcome.result();
  }

  async #embedGroup(chunks: readonly Chunk[], outcome: BatchOutcome, signal: AbortSignal): Promise<void> {
    let result: EmbeddingsResult;
    try {
      result = await this.#request(chunks, outcome, signal);
    } catch (error) {
      if (!(error instanceof BadRequestError)) {
        if (error instanceof GatewayError && error.retryable)
          throw new BatchFailedError(outcome.batch.batchId, error);
        throw error;
      }
      if (chunks.length > 1) {
        const middle = Math.ceil(chunks.length / 2);
        await this.#embedGroup(chunks.slice(0, middle), outcome, signal);
        await this.#embedGroup(chunks.slice(middle), outcome, signal);
        return;
      }
      const chunk = chunks[0]!;
      const pieces = this.#piecesOf(chunk, error);
      if (pieces.length > 1) {
        this.#options.logger.warn(
          { documentId: chunk.documentId, chunkIndex: chunk.index, pieces: pieces.length },
          'gateway rejected a chunk as too long; re-chunked it smaller',
        );
        await this.#embedGroup(pieces, outcome, signal);
        return;
      }
      outcome.fail(chunk, error);
      this.#options.stats.chunkFailures += 1;
      return;
    }
    for (let i = 0; i < chunks.length; i++) {
      outcome.chunks.push(chunks[i]!);
      outcome.vectors.push(result.vectors[i]!);
    }
  }

  /** Pieces for a chunk the gateway called too long; [] when it is not that kind of rejection. */
  #piecesOf(chunk: Chunk, error: BadRequestError): Chunk[] {
    // A piece of a re-chunked chunk is not split again: the gateway disagrees with us too much.
    if (chunk.subIndex !== undefined || !isTooLongMessage(error.message)) return [];
    const stated = statedTokenLimit(error.message);
    const budget = Math.max(
      1,
      Math.floor(Math.min(chunk.tokens / 2, stated ? stated * 0.8 : chunk.tokens / 2)),
    );
    return this.#options.rechunk(chunk, budget);
  }

  #request(chunks: readonly Chunk[], outcome: BatchOutcome, signal: AbortSignal): Promise<EmbeddingsResult> {
    const { client, model, router, encoding, gate, retry, stats, logger } = this.#options;
    const input = chunks.map((c) => c.text);
    let askedFor = encoding.current;
    return withRetry(
      async () => {
        askedFor = encoding.current;
        const provider = router.preferences();
        stats.requests += 1;
        stats.firstRequestAt ??= Date.now();
        outcome.requests += 1;
        // No signal here on purpose: a request already sent is paid for, so it is allowed to finish
        // and its vectors are kept; `signal` stops retries and waits (withRetry) instead.
        const result = await client.embeddings({
          model,
          input,
          encoding_format: askedFor,
          ...(provider ? { provider } : {}),
        });
        router.noteSuccess();
        this.#checkDims(result.dims);
        this.#account(result, chunks, outcome);
        return result;
      },
      {
        ...retry,
        ...this.#options.clock,
        gate,
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

  #account(result: EmbeddingsResult, chunks: readonly Chunk[], outcome: BatchOutcome): void {
    const promptTokens = result.usage?.promptTokens ?? chunks.reduce((sum, c) => sum + c.tokens, 0);
    const cost = result.usage?.cost ?? promptTokens * (this.#options.pricePerToken ?? 0);
    outcome.promptTokens += promptTokens;
    outcome.cost += cost;
    if (result.provider) outcome.provider = result.provider;
    this.#options.stats.gatewayTokens += promptTokens;
    this.#options.stats.cost += cost;
  }
}
