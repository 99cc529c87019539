/**
 * The client's methods with retries composed in, for CLI commands and other one-off callers:
 * `retrying(client, { onRetry })` then `await gateway.listEmbeddingModels()`. A retry after a 429
 * goes again at once: the client holds it at the key's Retry-After gate. The pipeline's embedder
 * composes withRetry itself (it counts retries per batch and lets a paid request finish).
 */
import { type RetryOptions, withRetry } from '../retry/retry.js';
import type {
  CallOptions,
  EmbeddingsRequest,
  GatewayClient,
  MembersQuery,
  TranscriptionRequest,
} from './client.js';
import type { EmbeddingModel, EmbeddingsResult, Member, MembersPage, TranscriptionResult } from './decode.js';

export interface RetryingGateway {
  embeddings(req: EmbeddingsRequest, opts?: CallOptions): Promise<EmbeddingsResult>;
  listEmbeddingModels(opts?: CallOptions): Promise<EmbeddingModel[]>;
  transcribe(req: TranscriptionRequest, opts?: CallOptions): Promise<TranscriptionResult>;
  listMembers(query?: MembersQuery, opts?: CallOptions): Promise<MembersPage>;
  /** Each page is retried on its own; pages already yielded are not fetched again. */
  iterateMembers(
    options?: { pageSize?: number },
    opts?: CallOptions,
  ): AsyncGenerator<Member, void, undefined>;
}

export function retrying(client: GatewayClient, policy: RetryOptions = {}): RetryingGateway {
  // The call's signal also stops the waits between attempts.
  const retry = <T>(call: () => Promise<T>, opts: CallOptions = {}) =>
    withRetry(call, opts.signal ? { ...policy, signal: opts.signal } : policy);
  return {
    embeddings: (req, opts) => retry(() => client.embeddings(req, opts), opts),
    listEmbeddingModels: (opts) => retry(() => client.listEmbeddingModels(opts), opts),
    transcribe: (req, opts) => retry(() => client.transcribe(req, opts), opts),
    listMembers: (query, opts) => retry(() => client.listMembers(query, opts), opts),
    iterateMembers: (options, opts = {}) =>
      client.iterateMembers(options, opts, (query) => retry(() => client.listMembers(query, opts), opts)),
  };
}
