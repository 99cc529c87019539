/**
 * The producer half of a run: the model's limits, the plan parameters, and the stream
 * corpus → chunks → batches. Deterministic: the same corpus and settings give the same batch ids.
 */
import { chunkDocument, chunkTokenBudget } from '../chunking/index.js';
import type { RunSettings } from '../config/settings.js';
import { CorpusStats, openCorpus } from '../corpus/index.js';
import type { Batch, Chunk, Reject } from '../domain.js';
import { UsageError } from '../errors.js';
import type { EmbeddingModel, GatewayClient } from '../gateway/index.js';
import type { RunStats } from '../observability/stats.js';
import { planBatches } from '../planning/index.js';

export interface RunPlan {
  readonly model: EmbeddingModel;
  /** Most tokens in one chunk. */
  readonly chunkBudget: number;
  /** The parameters that decide how the corpus is cut into batches (recorded in the manifest). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** `parameters` as a stable string: part of every batch id. */
  readonly key: string;
}

export async function findModel(client: GatewayClient, id: string): Promise<EmbeddingModel> {
  const models = await client.listEmbeddingModels();
  const found = models.find((m) => m.id === id);
  if (!found) {
    const known = models.map((m) => m.id).join(', ');
    throw new UsageError(`unknown embedding model "${id}"; the gateway lists: ${known || '(none)'}`);
  }
  return found;
}

export function makePlan(settings: RunSettings, model: EmbeddingModel): RunPlan {
  const chunkBudget = chunkTokenBudget({
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    ...(settings.maxTokens !== undefined ? { maxTokensOverride: settings.maxTokens } : {}),
  });
  // Key order is fixed here: the string is hashed into every batch id.
  const parameters = {
    tokenizer: 'cl100k_base',
    chunkTokens: chunkBudget,
    overlap: settings.overlap,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
  };
  return { model, chunkBudget, parameters, key: JSON.stringify(parameters) };
}

/** Corpus → chunks → batches, counting as it goes; rejects go to `onReject`. */
export function plannedBatches(
  settings: RunSettings,
  plan: RunPlan,
  stats: RunStats,
  onReject: (reject: Reject) => void,
): AsyncIterable<Batch> {
  const model = plan.model.id;
  const corpusStats = new CorpusStats();
  const corpus = openCorpus({
    path: settings.input,
    ...(settings.format ? { format: settings.format } : {}),
    idField: settings.idField,
    textField: settings.textField,
    stats: corpusStats,
    onBytes: (n) => {
      // The reader knows the input's size (a file, or a folder's .txt/.md files) once it starts.
      stats.bytesRead += n;
      stats.bytesTotal = corpusStats.totalBytes ?? 0;
    },
  });
  async function* chunks(): AsyncGenerator<Chunk> {
    for await (const entry of corpus) {
      if (entry.kind === 'reject') {
        stats.rejects += 1;
        onReject(entry.reject);
        continue;
      }
      stats.documents += 1;
      for (const chunk of chunkDocument(entry.document, {
        model,
        maxTokens: plan.chunkBudget,
        overlapTokens: settings.overlap,
      })) {
        stats.chunks += 1;
        stats.tokens += chunk.tokens;
        yield chunk;
      }
    }
  }
  return planBatches(chunks(), {
    model,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
    planKey: plan.key,
  });
}

/** Re-chunks a chunk the gateway rejected as too long; pieces keep its index and get subIndex 0..m-1. */
export function rechunker(model: string) {
  return (chunk: Chunk, maxTokens: number): Chunk[] =>
    chunkDocument(
      { id: chunk.documentId, text: chunk.text, source: '', line: 0 },
      { model, maxTokens, overlapTokens: 0 },
    ).map((piece, subIndex) => ({
      ...piece,
      index: chunk.index,
      subIndex,
      start: chunk.start + piece.start,
      end: chunk.start + piece.end,
    }));
}
