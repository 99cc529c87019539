import { createHash } from 'node:crypto';
import type { ProviderPreferences, TranscriptionResponseWire } from '../gateway/wire.js';
import { HttpError, isObject } from './http.js';
import type { ModelCatalog } from './models.js';
import type { TranscriptionModelConfig } from './options.js';
import { Sfc32 } from './prng.js';
import { parseProviderPreferences } from './providers.js';
import { CL100K } from './tokens.js';

export const AUDIO_FORMATS: readonly string[] = ['wav', 'mp3', 'flac', 'ogg', 'm4a', 'webm'];

/** Duration estimate for compressed formats, whose headers the emulator does not parse (128 kbit/s). */
const COMPRESSED_BYTES_PER_SECOND = 16_000;
/** Billing: audio input tokens per second. */
const AUDIO_TOKENS_PER_SECOND = 10;
/** Speech runs at about 150 words a minute. */
const WORDS_PER_SECOND = 2.5;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A valid POST /audio/transcriptions request. */
export interface TranscriptionJob {
  model: TranscriptionModelConfig;
  audio: Buffer;
  format: string;
  seconds: number;
  provider: ProviderPreferences | undefined;
}

/**
 * Checks a request body (published gateway shape: raw base64 in input_audio.data, top-level
 * temperature, passthrough under provider.options). `language` and `temperature` are validated and
 * otherwise ignored: the emulated transcript depends on the audio bytes only.
 */
export function parseTranscriptionRequest(body: unknown, catalog: ModelCatalog): TranscriptionJob {
  if (!isObject(body)) throw new HttpError(400, 'Request body must be a JSON object');
  const { model: modelId, input_audio: audioInput, language, temperature } = body;
  if (typeof modelId !== 'string' || modelId === '') {
    throw new HttpError(400, "model is required: a model id such as 'emu/whisper-tiny'");
  }
  if (!isObject(audioInput)) throw new HttpError(400, 'input_audio is required: {data: <base64>, format}');
  const { data, format } = audioInput;
  if (typeof data !== 'string' || data === '') throw new HttpError(400, 'input_audio.data is required');
  if (data.startsWith('data:'))
    throw new HttpError(400, 'input_audio.data must be raw base64, not a data URL');
  if (data.length % 4 !== 0 || !BASE64.test(data))
    throw new HttpError(400, 'input_audio.data is not valid base64');
  if (typeof format !== 'string' || !AUDIO_FORMATS.includes(format)) {
    throw new HttpError(400, `input_audio.format must be one of ${AUDIO_FORMATS.join(', ')}`);
  }
  if (language !== undefined && (typeof language !== 'string' || !/^[a-z]{2}$/.test(language))) {
    throw new HttpError(400, 'language must be an ISO-639-1 code such as "en"');
  }
  if (
    temperature !== undefined &&
    (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))
  ) {
    throw new HttpError(400, 'temperature must be a number from 0 to 2');
  }
  const provider = parseProviderPreferences(body['provider']);
  const model = catalog.transcriptionModel(modelId);
  const audio = Buffer.from(data, 'base64');
  const seconds = format === 'wav' ? wavSeconds(audio) : audio.length / COMPRESSED_BYTES_PER_SECOND;
  return { model, audio, format, seconds, provider };
}

/** Duration of a RIFF/WAVE file: the data chunk's size over the fmt chunk's byte rate. */
export function wavSeconds(audio: Buffer): number {
  if (
    audio.length < 12 ||
    audio.toString('latin1', 0, 4) !== 'RIFF' ||
    audio.toString('latin1', 8, 12) !== 'WAVE'
  ) {
    throw new HttpError(400, 'input_audio.data is not a WAV file (no RIFF/WAVE header)');
  }
  let byteRate: number | undefined;
  for (let offset = 12; offset + 8 <= audio.length; ) {
    const id = audio.toString('latin1', offset, offset + 4);
    const size = audio.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ' && body + 12 <= audio.length) byteRate = audio.readUInt32LE(body + 8);
    if (id === 'data') {
      if (!byteRate) break;
      // Streamed WAVs may leave the size at its maximum: count the bytes that are really there.
      return Math.min(size, audio.length - body) / byteRate;
    }
    offset = body + size + (size % 2); // chunks are padded to even sizes
  }
  throw new HttpError(400, 'input_audio.data is a WAV file without a fmt chunk before its data chunk');
}

// biome-ignore format: a word list reads best as a block
const WORDS = [
  'the', 'signal', 'river', 'morning', 'quietly', 'seven', 'harbor', 'lantern', 'across', 'green',
  'engine', 'paper', 'window', 'under', 'bright', 'market', 'slowly', 'winter', 'garden', 'between',
  'copper', 'island', 'before', 'silver', 'open', 'letter', 'mountain', 'after', 'orange', 'station',
  'hollow', 'forward', 'candle', 'distant', 'yellow', 'bridge', 'inside', 'thunder', 'simple', 'valley',
];

/** The transcript: words drawn from a fixed list by a PRNG seeded with the audio's hash, more for longer audio. */
export function transcriptOf(audio: Buffer, seconds: number): string {
  const rng = Sfc32.fromDigest(createHash('sha256').update(audio).digest());
  const count = Math.max(1, Math.round(seconds * WORDS_PER_SECOND));
  const words = Array.from({ length: count }, () => WORDS[rng.nextInt(WORDS.length)]!);
  const text = words.join(' ');
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

export function renderTranscription(job: TranscriptionJob, cost: number): TranscriptionResponseWire {
  const text = transcriptOf(job.audio, job.seconds);
  const inputTokens = Math.ceil(job.seconds * AUDIO_TOKENS_PER_SECOND);
  // The tokenizer choice is per embedding model; transcripts keep cl100k.
  const outputTokens = CL100K.count(text);
  return {
    text,
    usage: {
      cost,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      seconds: job.seconds,
      total_tokens: inputTokens + outputTokens,
    },
  };
}

export function transcriptionCost(job: TranscriptionJob): number {
  return job.seconds * Number(job.model.pricePerSecond);
}
