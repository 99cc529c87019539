import { endianness } from 'node:os';
import type {
  ContentPart,
  EmbeddingItemWire,
  EmbeddingsResponseWire,
  EncodingFormat,
  ProviderPreferences,
} from '../gateway/wire.js';
import { HttpError, isObject } from './http.js';
import { DEFAULT_MAX_INPUTS, type ModelCatalog } from './models.js';
import type { EmbeddingModelConfig } from './options.js';
import type { Sfc32 } from './prng.js';
import { parseProviderPreferences } from './providers.js';
import { writeBagOfWords } from './semantic-vectors.js';
import { tokenizer } from './tokens.js';
import { multimodalText, writeEmbedding } from './vectors.js';

/** What one image part counts for, in tokens (billing and context length). */
export const IMAGE_TOKENS = 85;

/** One input, ready to embed: the exact text its vector is of, and the tokens it is billed for. */
export interface PreparedInput {
  text: string;
  tokens: number;
  /** Cut to the context length (a truncating model): its vector is of a prefix. */
  truncated: boolean;
  /** Image parts in it (a multimodal block). */
  images?: number;
}

/** A valid POST /embeddings request. */
export interface EmbeddingJob {
  model: EmbeddingModelConfig;
  inputs: PreparedInput[];
  tokens: number;
  /** Inputs cut to the context length. */
  truncated: number;
  format: EncodingFormat;
  provider: ProviderPreferences | undefined;
}

/** Checks a request body (400 names the bad field; 404 for the model) and counts its tokens. */
export function parseEmbeddingsRequest(body: unknown, catalog: ModelCatalog): EmbeddingJob {
  if (!isObject(body)) throw new HttpError(400, 'Request body must be a JSON object');
  const { model: modelId, input, encoding_format: format = 'float' } = body;
  if (typeof modelId !== 'string' || modelId === '') {
    throw new HttpError(400, "model is required: a model id such as 'emu/embed-small'");
  }
  if (input === undefined || input === null) throw new HttpError(400, 'input is required');
  if (format !== 'float' && format !== 'base64') {
    throw new HttpError(400, "encoding_format must be 'float' or 'base64'");
  }
  const provider = parseProviderPreferences(body['provider']);
  const items = parseInput(input);

  const model = catalog.embeddingModel(modelId);
  const maxInputs = model.maxInputs ?? DEFAULT_MAX_INPUTS;
  if (items.length > maxInputs) {
    throw new HttpError(
      400,
      `input has ${items.length} items; ${model.id} accepts at most ${maxInputs} per request`,
    );
  }
  const inputs = items.map((item, i) =>
    typeof item === 'string' ? prepareText(model, item, i) : prepareBlock(model, item, i),
  );
  const tokens = inputs.reduce((sum, prepared) => sum + prepared.tokens, 0);
  const truncated = inputs.reduce((sum, prepared) => sum + (prepared.truncated ? 1 : 0), 0);
  return { model, inputs, tokens, truncated, format, provider };
}

/** A string, or the parts of a multimodal block. */
type InputItem = string | ContentPart[];

function parseInput(input: unknown): InputItem[] {
  if (typeof input === 'string') {
    if (input === '') throw new HttpError(400, 'input must not be an empty string');
    return [input];
  }
  if (!Array.isArray(input)) {
    throw new HttpError(400, 'input must be a string, an array of strings, or an array of multimodal blocks');
  }
  if (input.length === 0) throw new HttpError(400, 'input must not be an empty array');
  if (typeof input[0] === 'string') {
    return input.map((element: unknown, i) => {
      if (typeof element !== 'string')
        throw new HttpError(400, `input[${i}] must be a string, like input[0]`);
      if (element === '') throw new HttpError(400, `input[${i}] must not be an empty string`);
      return element;
    });
  }
  return input.map((element: unknown, i) => parseBlock(element, i));
}

function parseBlock(block: unknown, i: number): ContentPart[] {
  if (!isObject(block) || !Array.isArray(block['content']) || block['content'].length === 0) {
    throw new HttpError(
      400,
      `input[${i}] must be a string or a block {content: [parts]} with at least one part`,
    );
  }
  return block['content'].map((part: unknown, j) => {
    if (isObject(part) && part['type'] === 'text' && typeof part['text'] === 'string') {
      return { type: 'text', text: part['text'] };
    }
    const image = isObject(part) && part['type'] === 'image_url' ? part['image_url'] : undefined;
    if (isObject(image) && typeof image['url'] === 'string' && image['url'] !== '') {
      return { type: 'image_url', image_url: { url: image['url'] } };
    }
    throw new HttpError(
      400,
      `input[${i}].content[${j}] must be {type: 'text', text} or {type: 'image_url', image_url: {url}}`,
    );
  });
}

function tooLong(model: EmbeddingModelConfig, i: number, tokens: number): HttpError {
  return new HttpError(
    400,
    `This model's maximum context length is ${model.contextLength} tokens, however input ${i} has ${tokens} tokens`,
  );
}

/** Counts in the model's own tokenizer: the client must learn it from usage, not assume its own. */
function prepareText(model: EmbeddingModelConfig, text: string, i: number): PreparedInput {
  const limit = model.contextLength;
  const counter = tokenizer(model.tokenizer);
  const tokens = counter.countWithin(text, limit);
  if (tokens !== false) return { text, tokens, truncated: false };
  if (model.overLong === 'truncate') {
    return { text: counter.truncate(text, limit), tokens: limit, truncated: true };
  }
  throw tooLong(model, i, counter.count(text));
}

/** Blocks are never truncated (there is no sensible way to cut an image): over-long is always 400. */
function prepareBlock(model: EmbeddingModelConfig, parts: ContentPart[], i: number): PreparedInput {
  const counter = tokenizer(model.tokenizer);
  let tokens = 0;
  let images = 0;
  for (const part of parts) {
    if (part.type === 'text') {
      tokens += counter.count(part.text);
    } else if (model.inputModalities?.includes('image')) {
      tokens += IMAGE_TOKENS;
      images += 1;
    } else {
      throw new HttpError(400, `${model.id} does not accept image input (input[${i}] has an image_url part)`);
    }
  }
  if (tokens > model.contextLength) throw tooLong(model, i, tokens);
  return { text: multimodalText(parts), tokens, truncated: false, images };
}

/** How an answer delivers its vectors: as asked, or broken the ways real providers break. */
export interface Delivery {
  id: string;
  provider: string;
  /** 'none': a 200 with `data: []` (an empty fault, or a provider that drops base64). */
  encoding: EncodingFormat | 'none';
  cost: number;
  /** When set, `data` comes back in an order drawn from it. */
  shuffle: Sfc32 | undefined;
  omitIndex: boolean;
}

export function renderEmbeddings(job: EmbeddingJob, delivery: Delivery): EmbeddingsResponseWire {
  const delivered = delivery.encoding !== 'none';
  const data = delivery.encoding === 'none' ? [] : embeddingItems(job, delivery.encoding);
  if (delivery.shuffle) shuffleInPlace(data, delivery.shuffle);
  if (delivery.omitIndex) for (const item of data) delete item.index;
  const tokens = delivered ? job.tokens : 0;
  return {
    object: 'list',
    id: delivery.id,
    model: job.model.id,
    provider: delivery.provider,
    data,
    usage: { prompt_tokens: tokens, total_tokens: tokens, cost: delivered ? delivery.cost : 0 },
  };
}

/** All vectors of a batch share one Float32Array; base64 is a view of its bytes, not a copy per value. */
function embeddingItems(job: EmbeddingJob, encoding: EncodingFormat): EmbeddingItemWire[] {
  const dims = job.model.dims;
  const vectors = new Float32Array(job.inputs.length * dims);
  const { id, semantics, bigrams = false } = job.model;
  return job.inputs.map((input, index) => {
    const vector = vectors.subarray(index * dims, (index + 1) * dims);
    if (semantics === 'bag-of-words') writeBagOfWords(id, input.text, vector, bigrams);
    else writeEmbedding(id, input.text, vector);
    const embedding = encoding === 'base64' ? base64LittleEndian(vector) : Array.from(vector);
    return { object: 'embedding', index, embedding };
  });
}

const LITTLE_ENDIAN_HOST = endianness() === 'LE';

function base64LittleEndian(vector: Float32Array): string {
  const bytes = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  return (LITTLE_ENDIAN_HOST ? bytes : Buffer.from(bytes).swap32()).toString('base64');
}

function shuffleInPlace<T>(items: T[], rng: Sfc32): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.nextInt(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
