/**
 * Checking and converting successful response bodies. A body that breaks the contract throws
 * ShapeError naming what was wrong; the client turns it into a retryable InvalidResponseError.
 *
 * Embeddings are the hot path: every vector lands in its own Float32Array with one allocation and
 * no per-element objects, and is checked (count, placement, dims, finiteness) before anyone sees it.
 * A 200 with empty or short `data` is never success: a short response that shifts every later pair
 * attaches vectors to the wrong inputs.
 */
import { endianness } from 'node:os';
import { allFinite } from '../finite.js';
import type { EmbeddingModelWire, MemberRole, MemberWire } from './wire.js';

/** A successful body that does not have the promised shape. */
export class ShapeError extends Error {
  override readonly name = 'ShapeError';

  constructor(
    message: string,
    /** The 200-with-empty-`data` case, which some providers produce for base64 requests. */
    readonly emptyData = false,
  ) {
    super(message);
  }
}

// ---- results ------------------------------------------------------------------------------------

export interface EmbeddingsUsage {
  promptTokens?: number;
  totalTokens?: number;
  cost?: number;
}

export interface EmbeddingsResult {
  /** One per input, in input order (placed by `data[].index` when present). */
  vectors: Float32Array[];
  dims: number;
  /** The model that answered (may be the upstream name, not the slug sent). */
  model?: string;
  provider?: string;
  id?: string;
  usage?: EmbeddingsUsage;
  /** How the vectors actually came back, whatever was asked. */
  encoding: 'float' | 'base64' | 'mixed';
}

export interface ModelPricing {
  promptPerToken?: number;
  completionPerToken?: number;
  perImage?: number;
  perRequest?: number;
}

export interface EmbeddingModel {
  id: string;
  contextLength?: number;
  pricing?: ModelPricing;
  inputModalities?: string[];
  /** The record as the gateway sent it, unknown fields included. */
  raw: EmbeddingModelWire;
}

export interface TranscriptionUsage {
  cost?: number;
  inputTokens?: number;
  outputTokens?: number;
  seconds?: number;
  totalTokens?: number;
}

export interface TranscriptionResult {
  text: string;
  usage?: TranscriptionUsage;
}

/**
 * An organization member, with the spec's field names (2.1) as the CLI prints them. `role` is
 * `org:admin` or `org:member` today; another value is passed through rather than refused.
 */
export type Member = MemberWire;

export interface MembersPage {
  members: Member[];
  /** Members in the whole organization, not on this page. */
  totalCount: number;
}

// ---- embeddings ---------------------------------------------------------------------------------

export function decodeEmbeddings(body: unknown, inputCount: number): EmbeddingsResult {
  const data = dataArray(body);
  if (data.length === 0) throw new ShapeError(`data is empty (expected ${inputCount} embeddings)`, true);
  if (data.length !== inputCount) {
    throw new ShapeError(`data has ${data.length} embeddings for ${inputCount} inputs`);
  }
  const items = data.map((item, position) => {
    if (!isRecord(item)) throw new ShapeError(`data[${position}] is ${describe(item)}, not an object`);
    return item;
  });
  const targets = placements(items);

  // Base64 vectors are decoded into one buffer for the whole answer, each a view of its own rows:
  // one allocation per request instead of one per vector (each is a backing store the GC tracks).
  const decoded = base64Answer(items) ?? vectorByVector(items);
  const vectors = new Array<Float32Array>(inputCount);
  for (let position = 0; position < items.length; position++)
    vectors[targets[position]!] = decoded.vectors[position]!;
  const { dims, floats } = decoded;

  const record = body as Record<string, unknown>;
  const usage = isRecord(record.usage)
    ? numbers(record.usage, { promptTokens: 'prompt_tokens', totalTokens: 'total_tokens', cost: 'cost' })
    : undefined;
  return {
    vectors,
    dims,
    encoding: floats === items.length ? 'float' : floats === 0 ? 'base64' : 'mixed',
    ...strings(record, { model: 'model', provider: 'provider', id: 'id' }),
    ...(usage && { usage }),
  };
}

/**
 * Where each item goes: by `index` when the items carry one (all of them, each in range, no
 * duplicates), by position when none does. A mix is refused: it cannot be placed safely.
 */
function placements(items: readonly Record<string, unknown>[]): number[] {
  const indexed = items.filter((item) => item.index !== undefined && item.index !== null).length;
  if (indexed === 0) return items.map((_, position) => position);
  if (indexed !== items.length) {
    throw new ShapeError(`index is present on ${indexed} of ${items.length} items`);
  }
  const seen = new Uint8Array(items.length);
  return items.map((item, position) => {
    const index = item.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= items.length) {
      throw new ShapeError(`data[${position}].index is ${describe(index)}, not in 0..${items.length - 1}`);
    }
    if (seen[index]) throw new ShapeError(`data[${position}].index ${index} is a duplicate`);
    seen[index] = 1;
    return index;
  });
}

function floatsFrom(values: readonly unknown[], where: string): Float32Array {
  const vector = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (typeof value !== 'number') throw new ShapeError(`${where}[${i}] is ${describe(value)}, not a number`);
    vector[i] = value;
  }
  return vector;
}

/** Checked after conversion: a finite double beyond float32's range becomes Infinity there. */
function requireFinite(vector: Float32Array, where: string): void {
  if (allFinite(vector)) return;
  for (let k = 0; k < vector.length; k++) {
    if (!Number.isFinite(vector[k])) throw new ShapeError(`${where}[${k}] is ${vector[k]}, not finite`);
  }
}

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * Base64 of little-endian float32 → Float32Array. The bytes are decoded straight into the array's
 * own (hence aligned) buffer: no intermediate Buffer, no unaligned pool slice, one allocation.
 */
export function decodeBase64Float32(text: string, where = 'embedding'): Float32Array {
  const byteLength = base64ByteLength(text, where);
  if (byteLength % 4 !== 0) {
    throw new ShapeError(`${where} is ${byteLength} bytes of base64, not a multiple of 4`);
  }
  const vector = new Float32Array(byteLength / 4);
  const bytes = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  // Node's decoder skips characters outside the alphabet, so fewer bytes than promised means bad input.
  if (bytes.write(text, 'base64') !== byteLength) throw new ShapeError(`${where} is not valid base64`);
  if (!LITTLE_ENDIAN) bytes.swap32();
  return vector;
}

interface DecodedVectors {
  /** In the answer's item order. */
  readonly vectors: Float32Array[];
  readonly dims: number;
  /** Items that came as float arrays. */
  readonly floats: number;
}

/**
 * Every vector of an answer whose items are all base64 of the same length, decoded into one buffer
 * and checked finite at once (nearly every answer: embedpipe asks for base64). Undefined when
 * anything is off: vectorByVector then decodes them and says which item is wrong, and how.
 */
function base64Answer(items: readonly Record<string, unknown>[]): DecodedVectors | undefined {
  const texts: string[] = [];
  for (let i = 0; i < items.length; i++) {
    const text = items[i]!.embedding;
    if (typeof text !== 'string') return undefined;
    texts.push(text);
  }
  let vectorBytes: number;
  try {
    vectorBytes = base64ByteLength(texts[0]!, 'data[0].embedding');
  } catch {
    return undefined;
  }
  if (vectorBytes === 0 || vectorBytes % 4 !== 0) return undefined;
  const dims = vectorBytes / 4;
  // Uninitialized: each vector's bytes are written by its decode, or the answer is decoded anew.
  const bytes = Buffer.allocUnsafeSlow(vectorBytes * texts.length);
  for (let position = 0; position < texts.length; position++) {
    const text = texts[position]!;
    if (base64ByteLength(text, 'embedding') !== vectorBytes) return undefined;
    // Node's decoder skips characters outside the alphabet: fewer bytes than promised is bad input.
    if (bytes.write(text, position * vectorBytes, vectorBytes, 'base64') !== vectorBytes) return undefined;
  }
  if (!LITTLE_ENDIAN) bytes.swap32();
  const all = new Float32Array(bytes.buffer, 0, dims * texts.length);
  if (!allFinite(all)) return undefined;
  const vectors = new Array<Float32Array>(texts.length);
  for (let position = 0; position < texts.length; position++)
    vectors[position] = all.subarray(position * dims, (position + 1) * dims);
  return { vectors, dims, floats: 0 };
}

/** An answer's vectors decoded one by one, each checked: the first wrong item throws its ShapeError. */
function vectorByVector(items: readonly Record<string, unknown>[]): DecodedVectors {
  const vectors: Float32Array[] = [];
  let dims = 0;
  let floats = 0;
  for (let position = 0; position < items.length; position++) {
    const where = `data[${position}].embedding`;
    const embedding = items[position]!.embedding;
    let vector: Float32Array;
    if (typeof embedding === 'string') {
      vector = decodeBase64Float32(embedding, where);
    } else if (Array.isArray(embedding)) {
      vector = floatsFrom(embedding, where);
      floats++;
    } else {
      throw new ShapeError(`${where} is ${describe(embedding)}, not a float array or base64 string`);
    }
    if (vector.length === 0) throw new ShapeError(`${where} is empty`);
    if (position === 0) dims = vector.length;
    else if (vector.length !== dims) {
      throw new ShapeError(`${where} has ${vector.length} dimensions, data[0] has ${dims}`);
    }
    requireFinite(vector, where);
    vectors.push(vector);
  }
  return { vectors, dims, floats };
}

/** Decoded size of a base64 string, padded or not. */
function base64ByteLength(text: string, where: string): number {
  let unpadded = text.length;
  while (unpadded > 0 && text.charCodeAt(unpadded - 1) === 61 /* '=' */ && text.length - unpadded < 2) {
    unpadded--;
  }
  if (unpadded % 4 === 1) throw new ShapeError(`${where} is not valid base64 (bad length)`);
  return Math.floor((unpadded * 3) / 4);
}

// ---- models -------------------------------------------------------------------------------------

export function decodeModels(body: unknown): EmbeddingModel[] {
  return dataArray(body).map((item, position) => {
    if (!isRecord(item) || typeof item.id !== 'string' || item.id === '') {
      throw new ShapeError(`data[${position}] has no model id`);
    }
    const raw = item as EmbeddingModelWire;
    const contextLength = positiveInteger(raw.context_length);
    const pricing = isRecord(raw.pricing)
      ? decimals(raw.pricing, {
          promptPerToken: 'prompt',
          completionPerToken: 'completion',
          perImage: 'image',
          perRequest: 'request',
        })
      : undefined;
    const modalities = isRecord(raw.architecture) ? raw.architecture.input_modalities : undefined;
    const inputModalities = Array.isArray(modalities)
      ? modalities.filter((m): m is string => typeof m === 'string')
      : undefined;
    return {
      id: raw.id,
      raw,
      ...(contextLength !== undefined && { contextLength }),
      ...(pricing && Object.keys(pricing).length > 0 && { pricing }),
      ...(inputModalities && { inputModalities }),
    };
  });
}

/** context_length as a positive integer; absent, null or nonsense → undefined (callers use a fallback). */
function positiveInteger(value: unknown): number | undefined {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** Prices come as decimal strings (`"0.00000002"`); numbers are accepted too. */
function decimals<K extends string>(
  source: Record<string, unknown>,
  fields: Record<K, string>,
): Partial<Record<K, number>> {
  return numbers(source, fields, { decimalStrings: true });
}

// ---- transcription ------------------------------------------------------------------------------

export function decodeTranscription(body: unknown): TranscriptionResult {
  if (!isRecord(body) || typeof body.text !== 'string') throw new ShapeError('body has no text');
  const usage = isRecord(body.usage)
    ? numbers(body.usage, {
        cost: 'cost',
        inputTokens: 'input_tokens',
        outputTokens: 'output_tokens',
        seconds: 'seconds',
        totalTokens: 'total_tokens',
      })
    : undefined;
  return { text: body.text, ...(usage && { usage }) };
}

// ---- members ------------------------------------------------------------------------------------

export function decodeMembers(body: unknown): MembersPage {
  const data = dataArray(body);
  const totalCount = (body as Record<string, unknown>).total_count;
  if (typeof totalCount !== 'number' || !Number.isInteger(totalCount) || totalCount < 0) {
    throw new ShapeError(`total_count is ${describe(totalCount)}, not a count`);
  }
  const members = data.map((item, position): Member => {
    if (!isRecord(item) || typeof item.id !== 'string' || typeof item.email !== 'string') {
      throw new ShapeError(`data[${position}] is not a member (needs id and email)`);
    }
    return {
      id: item.id,
      first_name: typeof item.first_name === 'string' ? item.first_name : null,
      last_name: typeof item.last_name === 'string' ? item.last_name : null,
      email: item.email,
      role: (typeof item.role === 'string' ? item.role : 'unknown') as MemberRole,
    };
  });
  return { members, totalCount };
}

// ---- helpers ------------------------------------------------------------------------------------

function dataArray(body: unknown): unknown[] {
  if (!isRecord(body)) throw new ShapeError(`body is ${describe(body)}, not an object`);
  if (!Array.isArray(body.data)) throw new ShapeError('body has no data array');
  return body.data;
}

/** The listed wire fields that are finite numbers, under their camelCase names. */
function numbers<K extends string>(
  source: Record<string, unknown>,
  fields: Record<K, string>,
  { decimalStrings = false } = {},
): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  for (const [name, wireName] of Object.entries(fields) as [K, string][]) {
    const value = source[wireName];
    const n = decimalStrings && typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof n === 'number' && Number.isFinite(n)) out[name] = n;
  }
  return out;
}

function strings<K extends string>(
  source: Record<string, unknown>,
  fields: Record<K, string>,
): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {};
  for (const [name, wireName] of Object.entries(fields) as [K, string][]) {
    const value = source[wireName];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A short description of an unexpected value for messages (never the whole value). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 20 ? 'a string' : JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}
