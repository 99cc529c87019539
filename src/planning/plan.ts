/**
 * The producer half of a run: the model's limits, the plan parameters, and the stream
 * corpus → chunks → batches. Deterministic: the same corpus and settings give the same batch ids.
 */
import { chunkTokenBudget } from '../chunking/index.js';
import type { RunSizing } from '../chunking/run-sizing.js';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import {
  type CorpusFormat,
  CorpusStats,
  corpusOptions,
  oneByOne,
  openCorpus,
  openCorpusPieces,
  resolveCorpusFormat,
} from '../corpus/index.js';
import type { Batch, Chunk, CorpusEntry, Reject } from '../domain.js';
import { formParameter } from '../embedding/vector-form.js';
import { UsageError } from '../errors.js';
import { explainLookupFailure } from '../gateway/errors.js';
import { type EmbeddingModel, type GatewayClient, retrying } from '../gateway/index.js';
import type { RunStats } from '../observability/stats.js';
import type { TranscriptionStage } from '../transcription/stage.js';
import { planBatches } from './index.js';

export interface RunPlan {
  readonly model: EmbeddingModel;
  /** Most gateway tokens in one chunk: the context length less the margin, or --max-tokens. */
  readonly budgetTokens: number;
  /** The corpus format, decided once (undefined: the input is missing, and reading it says so). */
  readonly format?: CorpusFormat;
  /** Set when the corpus has images (a folder of images, or --image-field): how they are planned. */
  readonly images?: ImagePlan;
  /** Set when the corpus has audio (a folder of audio files, or --audio-field): its speech-to-text model. */
  readonly audio?: { readonly sttModel: string };
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

/** How a corpus with images is planned (recorded in the plan parameters as `images`). */
export interface ImagePlan {
  /** Summed data URL bytes per request. */
  readonly bytesPerRequest: number;
  /** Planning's token estimate of one image. */
  readonly tokensPerImage: number;
}

/**
 * The plan of a run: the chunk budget, the corpus format, and the parameters hashed into every
 * batch id. A corpus with images is checked against the model's input modalities here, before
 * anything is spent: a model that does not list `image` is refused (UsageError).
 */
export function makePlan(settings: RunSettings, model: EmbeddingModel): RunPlan {
  const budgetTokens = chunkTokenBudget({
    ...(model.contextLength !== undefined ? { contextLength: model.contextLength } : {}),
    ...(settings.maxTokens !== undefined ? { maxTokensOverride: settings.maxTokens } : {}),
  });
  const format = resolveCorpusFormat({
    path: settings.input,
    format: settings.format,
    imageField: settings.imageField,
    audioField: settings.audioField,
  });
  const images: ImagePlan | undefined =
    format === 'images' || settings.imageField !== undefined
      ? {
          bytesPerRequest: settings.maxImageBytesPerRequest,
          tokensPerImage: DEFAULTS.images.tokensPerImage,
        }
      : undefined;
  if (images) requireImageInput(settings, model, format);
  const audio =
    format === 'audio' || settings.audioField !== undefined ? requireSttModel(settings) : undefined;
  // Key order is fixed here: the string is hashed into every batch id. The calibrated byte budget
  // is not in it: it shapes the chunks, whose hashes and indexes are in every batch id already.
  // `images` only for a corpus with images, so text plans (and their batch ids) are unchanged; the
  // output writer reads it to add the image columns (see output/dataset.ts, planHasImages); `vectors`
  // likewise only for a form other than the full float32 vectors (embedding/vector-form.ts).
  const parameters = {
    measure: 'utf8-bytes',
    budgetTokens,
    overlap: settings.overlap,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
    ...(images ? { images } : {}),
    ...formParameter(settings.vectors),
  };
  return {
    model,
    budgetTokens,
    ...(format ? { format } : {}),
    ...(images ? { images } : {}),
    ...(audio ? { audio } : {}),
    parameters,
    key: JSON.stringify(parameters),
  };
}

/**
 * An audio corpus is transcribed before it is embedded: it needs a speech-to-text model, which the
 * gateway's listings do not name (its `/embeddings/models` lists embedding models only).
 */
function requireSttModel(settings: RunSettings): { sttModel: string } {
  const sttModel = settings.transcription.model;
  if (sttModel !== undefined) return { sttModel };
  const why =
    settings.audioField !== undefined
      ? `--audio-field ${settings.audioField} names audio files in ${settings.input}`
      : `${settings.input} is read as audio (${settings.format === 'audio' ? '--format audio' : 'a folder of audio files, or one'})`;
  throw new UsageError(
    `${why}, which are transcribed before they are embedded: pass --stt-model <provider>/<model_name> ` +
      '(a speech-to-text model; job file: transcription.model). Nothing was sent',
  );
}

/** A corpus with images needs a model whose listing includes `image` in its input modalities. */
function requireImageInput(
  settings: RunSettings,
  model: EmbeddingModel,
  format: CorpusFormat | undefined,
): void {
  const modalities = model.inputModalities ?? [];
  if (modalities.includes('image')) return;
  const accepts =
    modalities.length > 0
      ? `accepts ${modalities.join(' and ')} input only (its input modalities in the gateway's model listing)`
      : "lists no input modalities in the gateway's model listing, so it cannot be trusted with images";
  const why =
    settings.imageField !== undefined
      ? `--image-field ${settings.imageField} names images in ${settings.input}`
      : settings.format === 'images'
        ? `--format images reads the images of ${settings.input}`
        : `${settings.input} holds images (a ${format === 'images' ? 'folder' : 'file'} of images is read as --format images; pass --format text to embed only its .txt/.md files)`;
  throw new UsageError(
    `model ${model.id} ${accepts}, but ${why}. Choose a model that accepts images (embedpipe models lists each model's inputs); nothing was sent`,
  );
}

/** What a planning pass may also do. */
export interface PlanningOptions {
  /** Audio corpora: the stage that turns audio documents into transcripts. */
  readonly transcribe?: TranscriptionStage | undefined;
  /** The batch starts of the version replaced (planner.ts). */
  readonly formerStarts?: ReadonlySet<string> | undefined;
  /**
   * Hash a CSV or JSONL input as it is read, into `stats.inputRead` once read to its end: what a
   * run's manifest records. Off where no manifest follows (a dry run, a producer): it is work.
   */
  readonly digestInput?: boolean;
}

/** Corpus → (transcripts) → chunks → batches, counting as it goes; rejects go to `onReject`. */
export function plannedBatches(
  settings: RunSettings,
  plan: RunPlan,
  sizing: RunSizing,
  stats: RunStats,
  onReject: (reject: Reject) => void,
  { transcribe, formerStarts, digestInput = false }: PlanningOptions = {},
): AsyncIterable<Batch> {
  const model = plan.model.id;
  const corpusStats = new CorpusStats();
  const options = {
    ...corpusOptions(settings),
    ...(plan.format ? { format: plan.format } : {}),
    stats: corpusStats,
    digest: digestInput,
    onBytes: (n: number) => {
      // The reader knows the input's size (a file, or a folder's .txt/.md files) once it starts.
      stats.bytesRead += n;
      stats.bytesTotal = corpusStats.totalBytes ?? 0;
    },
  };
  // A piece of entries at a time: an async step per entry at each stage was a measurable share of
  // planning (docs/benchmarks.md, "a twenty-fifth session").
  const corpus: AsyncIterable<readonly CorpusEntry[]> = transcribe
    ? oneByOne(transcribe(openCorpus(options)))
    : openCorpusPieces(options);
  async function* chunks(): AsyncGenerator<Chunk[]> {
    for await (const piece of corpus) {
      const planned: Chunk[] = [];
      for (let e = 0; e < piece.length; e++) {
        const entry = piece[e]!;
        if (entry.kind === 'reject') {
          stats.rejects += 1;
          onReject(entry.reject);
          continue;
        }
        const { document } = entry;
        if (document.audio !== undefined) {
          throw new UsageError(
            `${document.source}: audio documents are transcribed by \`embedpipe run\` only (distributed mode does not transcribe yet)`,
          );
        }
        if (document.image !== undefined) {
          // One chunk, whatever its size: a caption over the budget rejects the document.
          const chunk = sizing.planImage(
            document,
            plan.images?.tokensPerImage ?? DEFAULTS.images.tokensPerImage,
          );
          if (typeof chunk === 'string') {
            stats.rejects += 1;
            onReject({ file: document.source, line: document.line, id: document.id, reason: chunk });
            continue;
          }
          stats.documents += 1;
          stats.chunks += 1;
          stats.tokens += chunk.tokens;
          planned.push(chunk);
          continue;
        }
        stats.documents += 1;
        const probing = sizing.probeFor(document);
        if (probing !== undefined) await probing;
        const documentChunks = sizing.plan(document);
        for (let c = 0; c < documentChunks.length; c++) {
          const chunk = documentChunks[c]!;
          stats.chunks += 1;
          stats.tokens += chunk.tokens;
          planned.push(chunk);
        }
      }
      if (planned.length > 0) yield planned;
    }
    stats.inputRead = corpusStats.wholeRead;
  }
  return planBatches(chunks(), {
    model,
    maxInputs: settings.maxInputs,
    maxTokensPerRequest: settings.maxTokensPerRequest,
    planKey: plan.key,
    ...(plan.images ? { maxImageBytesPerRequest: plan.images.bytesPerRequest } : {}),
    formerStarts,
  });
}
