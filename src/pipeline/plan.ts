/**
 * The producer half of a run: the model's limits, the plan parameters, and the stream
 * corpus → chunks → batches. Deterministic: the same corpus and settings give the same batch ids.
 */
import { chunkTokenBudget } from '../chunking/index.js';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import { CorpusStats, openCorpus } from '../corpus/index.js';
import type { Batch, Chunk, Reject } from '../domain.js';
import { UsageError } from '../errors.js';
import { explainLookupFailure } from '../gateway/errors.js';
import { type EmbeddingModel, type GatewayClient, retrying } from '../gateway/index.js';
import type { RunStats } from '../observability/stats.js';
import { planBatches } from '../planning/index.js';
import type { RunSizing } from './sizing.js';

export interface RunPlan {
  readonly model: EmbeddingModel;
  /** Most gateway tokens in one chunk: the context length less the margin, or --max-tokens. */
  readonly budgetTokens: number;
  /** The parameters that decide how the corpus is cut into batches (recorded in the manifest). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** `parameters` as a stable string: part of every batch id. */
  readonly key: string;
}

/**
 * The run's first call: the model's record from the gateway's listing, retried briefly. A gateway
 * never reached becomes GatewayUnreachableError (exit 6), a listing that answers 404 a BaseUrlError.
 */
export async function findModel(client: GatewayClient, id: string): Promise<EmbeddingModel> {
  let models: EmbeddingModel[];
  try {
    models = await retrying(client, DEFAULTS.lookupRetry).listEmbeddingModels();
  } catch (error) {
    throw explainLookupFailure(error, client.baseUrl, { modelsListing: true });
  }
  const found = models.find((m) => m.id === id);
  if (!found) {
    const known = models.map((m) => m.id).join(', ');
    throw new UsageError(`unknown embedding model "${id}"; the gateway lists: ${known || '(none)'}`);
  }
  return found;
}

export function makePlan(settings: RunSettings, model: EmbeddingModel): RunPlan {
  const budgetTokens = chunkTokenBudget({
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    ...(settings.maxTokens !== undefined ? { maxTokensOverride: settings.maxTokens } : {}),
  });
  // Key order is fixed here: the string is hashed into every batch id. The calibrated byte budget
  // is not in it: it shapes the chunks, whose hashes and indexes are in every batch id already.
  const parameters = {
    measure: 'utf8-bytes',
    budgetTokens,
    overlap: settings.overlap,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
  };
  return { model, budgetTokens, parameters, key: JSON.stringify(parameters) };
}

/** Corpus → chunks → batches, counting as it goes; rejects go to `onReject`. */
export function plannedBatches(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  stats: RunStats,
  onReject: (reject: Reject) => void,
): AsyncIterable<Batch> {
  const model = plan.model.id;
  const corpusStats = new CorpusStats();
  const corpus = openCorpus({
    ...corpusOptions(settings),
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
      await sizing.probeFor(entry.document);
      for (const chunk of sizing.plan(entry.document)) {
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

/** The corpus reader's options from the run settings. */
export function corpusOptions(settings: RunSettings) {
  return {
    path: settings.input,
    ...(settings.format ? { format: settings.format } : {}),
    idField: settings.idField,
    textField: settings.textField,
    followSymlinks: settings.followSymlinks,
  };
}
