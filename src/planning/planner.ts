/**
 * Chunks → batches: each batch is one array-input `/embeddings` request, within both the gateway's
 * input cap and its summed-token cap.
 *
 * Packing is first-fit over a few open batches: each chunk goes to the oldest open batch with room
 * for it (by inputs and by tokens), or opens a new one. A batch is emitted as soon as it is full,
 * and the oldest open batch is emitted when opening another would exceed `openBatches`. So short
 * chunks fill the room long chunks leave behind, memory stays bounded by `openBatches` batches,
 * and the plan is a pure function of the chunk sequence and the options. With `openBatches: 1`
 * this is the naive sequential packer.
 */
import type { Batch, Chunk } from '../domain.js';
import { ConfigError } from '../errors.js';
import { batchIdOf } from './batch-id.js';
import { batchStartKey } from './batch-starts.js';

/**
 * Default number of open batches. On a mixed corpus (short documents between long ones cut at the
 * chunk budget) 4 open batches removed most of the naive packer's waste; more gained little.
 */
export const OPEN_BATCHES = 4;

export interface PlanOptions {
  readonly model: string;
  /** Inputs per request. */
  readonly maxInputs: number;
  /** Summed tokens per request. */
  readonly maxTokensPerRequest: number;
  /** Built by the caller from the plan parameters (budget, overlap, limits…); part of every batchId. */
  readonly planKey: string;
  /** Batches kept open for filling; default OPEN_BATCHES. */
  readonly openBatches?: number | undefined;
  /** Summed image URL bytes (data URLs) per request; default no cap. */
  readonly maxImageBytesPerRequest?: number | undefined;
  /**
   * Where the version this plan replaces started its batches (batch-starts.ts batchStartKey of
   * their first chunks): the packing falls back in step with them after an edit (see planBatches).
   */
  readonly formerStarts?: ReadonlySet<string> | undefined;
}

/**
 * Streams chunks (a piece of them at a time, in stream order) into batches of at most
 * `maxInputs` chunks and `maxTokensPerRequest` summed tokens. A chunk over `maxTokensPerRequest` on its own becomes a batch of its own (the embedder
 * re-splits it). Every chunk lands in exactly one batch; within a batch chunks keep stream order,
 * but a document's chunks may be spread over batches emitted out of order.
 *
 * Chunks with an image and text-only chunks never share a batch (a request's input is either
 * strings or multimodal blocks), and a batch of images also keeps its summed image URL bytes
 * within `maxImageBytesPerRequest`; an image over that alone is a batch of its own.
 */
export async function* planBatches(
  pieces: AsyncIterable<readonly Chunk[]> | Iterable<readonly Chunk[]>,
  options: PlanOptions,
): AsyncGenerator<Batch> {
  const { model, maxInputs, maxTokensPerRequest, planKey } = options;
  const openBatches = options.openBatches ?? OPEN_BATCHES;
  const maxImageBytes = options.maxImageBytesPerRequest ?? Number.POSITIVE_INFINITY;
  requirePositiveInteger('max-inputs', maxInputs);
  requirePositiveInteger('max-tokens-per-request', maxTokensPerRequest);
  requirePositiveInteger('open-batches', openBatches);
  if (options.maxImageBytesPerRequest !== undefined)
    requirePositiveInteger('max-image-bytes-per-request', options.maxImageBytesPerRequest);

  const seal = (members: Chunk[]): Batch => ({
    batchId: batchIdOf(model, planKey, members),
    model,
    chunks: members,
    tokens: members.reduce((sum, chunk) => sum + chunk.tokens, 0),
  });
  const open: OpenBatch[] = [];
  const formerStarts = options.formerStarts?.size ? options.formerStarts : undefined;

  for await (const piece of pieces)
    for (let p = 0; p < piece.length; p++) {
      const chunk = piece[p]!;
      const images = chunk.image !== undefined;
      const imageBytes = chunk.image?.urlBytes ?? 0;
      if (chunk.tokens > maxTokensPerRequest || imageBytes > maxImageBytes) {
        yield seal([chunk]);
        continue;
      }
      const fits = (batch: OpenBatch) =>
        batch.images === images &&
        batch.chunks.length < maxInputs &&
        batch.tokens + chunk.tokens <= maxTokensPerRequest &&
        batch.imageBytes + imageBytes <= maxImageBytes;
      // The version replaced started a batch at this chunk: then no open batch had room for it, and
      // every open one had started where one of its batches did. An open batch that did not, or that
      // has room, is out of step (an edit before it moved the packing): sealed here, so this chunk
      // starts a batch as it did and the batches after it are the version's again. In step, nothing
      // is sealed and the plan is what it would be without the starts.
      const startsFormer = formerStarts?.has(batchStartKey(chunk)) ?? false;
      if (startsFormer) {
        for (const batch of open.filter((b) => !b.inStep || fits(b))) {
          open.splice(open.indexOf(batch), 1);
          yield seal(batch.chunks);
        }
      }
      let target = open.find(fits);
      if (target === undefined) {
        target = { chunks: [], tokens: 0, images, imageBytes: 0, inStep: startsFormer };
        open.push(target);
      }
      target.chunks.push(chunk);
      target.tokens += chunk.tokens;
      target.imageBytes += imageBytes;

      if (
        target.chunks.length === maxInputs ||
        target.tokens === maxTokensPerRequest ||
        (images && target.imageBytes === maxImageBytes)
      ) {
        open.splice(open.indexOf(target), 1);
        yield seal(target.chunks);
      } else if (open.length > openBatches) {
        yield seal(open.shift()!.chunks);
      }
    }
  for (const batch of open) yield seal(batch.chunks);
}

interface OpenBatch {
  readonly chunks: Chunk[];
  tokens: number;
  /** Whether it holds chunks with images (multimodal blocks) or text-only chunks (strings). */
  readonly images: boolean;
  imageBytes: number;
  /** Whether its first chunk started a batch of the version replaced (see planBatches). */
  readonly inStep: boolean;
}

function requirePositiveInteger(field: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(field, `must be a positive integer, got ${value}`);
  }
}
