import type { EmbeddingModelWire } from '../gateway/wire.js';
import { HttpError } from './http.js';
import type { EmbeddingModelConfig, TranscriptionModelConfig } from './options.js';

/**
 * The emulated models. Each one stands for a behaviour the pipeline must cope with. All count
 * tokens in 'pieces', not the cl100k the client plans with: usage.prompt_tokens is the truth.
 */
export const DEFAULT_EMBEDDING_MODELS: readonly EmbeddingModelConfig[] = [
  {
    // The small, cheap model; silently cuts long inputs.
    id: 'emu/embed-small',
    name: 'Emulator: Embed Small',
    dims: 384,
    contextLength: 512,
    tokenizer: 'pieces',
    overLong: 'truncate',
    pricePerToken: '0.00000002',
    providers: ['alpha', 'beta'],
  },
  {
    // The large model; refuses long inputs with a message naming the limit.
    id: 'emu/embed-large',
    name: 'Emulator: Embed Large',
    dims: 1536,
    contextLength: 8192,
    tokenizer: 'pieces',
    overLong: 'reject',
    pricePerToken: '0.00000013',
    providers: ['alpha', 'beta', 'gamma'],
  },
  {
    // Publishes no context_length, but still has one: clients must fall back to a default budget.
    id: 'emu/embed-nocontext',
    name: 'Emulator: Embed (no context length)',
    dims: 256,
    contextLength: 4096,
    tokenizer: 'pieces',
    listContextLength: false,
    overLong: 'reject',
    pricePerToken: '0.00000005',
    providers: ['alpha'],
  },
  {
    // Text and images; a block with several parts yields one joint vector.
    id: 'emu/vision-embed',
    name: 'Emulator: Vision Embed',
    dims: 512,
    contextLength: 2048,
    tokenizer: 'pieces',
    overLong: 'reject',
    pricePerToken: '0.0000001',
    inputModalities: ['text', 'image'],
    providers: ['alpha'],
  },
  {
    // A test model: vectors carry word overlap, not meaning; for testing retrieval evaluation and
    // migrations. Words only, in 64 dims: hash collisions and blindness to word order cost quality.
    id: 'emu/bow-small',
    name: 'Emulator test model: Bag of Words Small',
    dims: 64,
    contextLength: 512,
    tokenizer: 'pieces',
    overLong: 'truncate',
    pricePerToken: '0.00000002',
    providers: ['alpha', 'beta'],
    semantics: 'bag-of-words',
  },
  {
    // A test model: vectors carry word overlap, not meaning; for testing retrieval evaluation and
    // migrations. Words and word bigrams in 384 dims: the better one to migrate to.
    id: 'emu/bow-large',
    name: 'Emulator test model: Bag of Words Large',
    dims: 384,
    contextLength: 8192,
    tokenizer: 'pieces',
    overLong: 'reject',
    pricePerToken: '0.00000013',
    providers: ['alpha', 'beta'],
    semantics: 'bag-of-words',
    bigrams: true,
  },
];

export const DEFAULT_TRANSCRIPTION_MODELS: readonly TranscriptionModelConfig[] = [
  { id: 'emu/whisper-tiny', name: 'Emulator: Whisper Tiny', pricePerSecond: '0.0001', providers: ['alpha'] },
];

/** Inputs per request when a model does not say (the largest providers' cap). */
export const DEFAULT_MAX_INPUTS = 2048;

export type ModelEntry =
  | { kind: 'embedding'; model: EmbeddingModelConfig }
  | { kind: 'transcription'; model: TranscriptionModelConfig };

export class ModelCatalog {
  private readonly byId = new Map<string, ModelEntry>();

  constructor(
    private readonly embedding: readonly EmbeddingModelConfig[],
    transcription: readonly TranscriptionModelConfig[],
  ) {
    for (const model of embedding) this.byId.set(model.id, { kind: 'embedding', model });
    for (const model of transcription) this.byId.set(model.id, { kind: 'transcription', model });
  }

  /** The embedding model `id`, or 404 for an unknown model and for one of another kind. */
  embeddingModel(id: string): EmbeddingModelConfig {
    const entry = this.byId.get(id);
    if (entry?.kind === 'embedding') return entry.model;
    throw new HttpError(404, entry ? `${id} is not an embedding model` : `Model ${id} not found`);
  }

  transcriptionModel(id: string): TranscriptionModelConfig {
    const entry = this.byId.get(id);
    if (entry?.kind === 'transcription') return entry.model;
    throw new HttpError(404, entry ? `${id} is not a transcription model` : `Model ${id} not found`);
  }

  /** GET /embeddings/models records, shaped like the published gateway's. */
  listing(): EmbeddingModelWire[] {
    return this.embedding.map((model) => ({
      id: model.id,
      name: model.name ?? model.id,
      created: 1_735_689_600,
      description:
        model.semantics === 'bag-of-words'
          ? `Emulator test model (${model.dims} dimensions): hashed ${model.bigrams ? 'words and word pairs' : 'words'}; vectors carry word overlap, not meaning.`
          : `Emulated embedding model (${model.dims} dimensions).`,
      ...(model.listContextLength === false ? {} : { context_length: model.contextLength }),
      pricing: { prompt: model.pricePerToken, completion: '0' },
      architecture: {
        input_modalities: [...(model.inputModalities ?? ['text'])],
        output_modalities: ['embeddings'],
      },
    }));
  }
}
