/**
 * `_transcripts.jsonl`: the transcripts of a dataset version's audio documents, one JSON line each
 * (source, audio_sha256, format, model, language, temperature, seconds, cost, text, …). The leading
 * `_` keeps it out of the dataset as readers see the folder; DuckDB reads it with
 * `read_json('DIR/_transcripts.jsonl')`.
 *
 * It is also the transcription cache. A transcript is keyed by the audio's sha256 and the
 * speech-to-text settings that shape it (model, language, temperature, provider options): a resumed
 * or incremental run, a renamed file, a copy of one, never pays for the same transcript twice.
 *
 * - Appended as transcripts arrive, one write per line, fsynced: a crash loses at most the line
 *   being written (a torn last line is ignored when read, and the next append starts a new line).
 * - A run reads the version it builds and every other version of the dataset (any model: a model
 *   migration reuses the transcripts), and copies the transcripts it uses into its own version, so
 *   each version's file holds its documents' transcripts and survives the pruning of older versions.
 * - Only an index is held in memory (key → file, offset, length); a transcript's text is read back
 *   when it is used.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { OutputError } from '../errors.js';
import { LineSplitter, type RawLine } from '../files/lines.js';
import { isNotFound, messageOf } from './fs-errors.js';

export const TRANSCRIPTS_FILE = '_transcripts.jsonl';

/** One line of `_transcripts.jsonl`. */
export interface TranscriptRecord {
  /** The audio file: its path relative to the corpus folder, or as the corpus field wrote it. */
  readonly source: string;
  /** Hex sha256 of the audio bytes. */
  readonly audio_sha256: string;
  /** The format sent (`input_audio.format`). */
  readonly format: string;
  /** The speech-to-text model. */
  readonly model: string;
  /** ISO-639-1 code asked for; null: detected by the gateway. */
  readonly language: string | null;
  readonly temperature: number | null;
  /** Provider passthrough options sent; null: none. */
  readonly provider_options: Readonly<Record<string, unknown>> | null;
  /** Seconds of audio the gateway reported (else the duration read from the file's header, or null). */
  readonly seconds: number | null;
  /** USD the transcription cost (the gateway's usage.cost, else estimated; null: unknown). */
  readonly cost: number | null;
  readonly text: string;
  /** ISO 8601: when the gateway answered. */
  readonly transcribed_at: string;
}

/** What decides a transcript besides the audio: the speech-to-text settings. */
export interface TranscriptSettings {
  readonly model: string;
  readonly language?: string | null | undefined;
  readonly temperature?: number | null | undefined;
  readonly providerOptions?: Readonly<Record<string, unknown>> | null | undefined;
}

/** The cache key of a transcript: sha256 over the audio's hash and the settings (canonical JSON). */
export function transcriptKey(audioSha256: string, settings: TranscriptSettings): string {
  const key = [
    audioSha256,
    settings.model,
    settings.language ?? null,
    settings.temperature ?? null,
    canonical(settings.providerOptions ?? null),
  ];
  return createHash('sha256').update(JSON.stringify(key)).digest('hex');
}

/** JSON with object keys sorted at every level, so equal options give equal keys. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
  );
}

function keyOf(record: TranscriptRecord): string {
  return transcriptKey(record.audio_sha256, {
    model: record.model,
    language: record.language,
    temperature: record.temperature,
    providerOptions: record.provider_options,
  });
}

function isRecord(value: unknown): value is TranscriptRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  const numberOrNull = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v));
  return (
    typeof r['source'] === 'string' &&
    typeof r['audio_sha256'] === 'string' &&
    typeof r['format'] === 'string' &&
    typeof r['model'] === 'string' &&
    (r['language'] === null || typeof r['language'] === 'string') &&
    numberOrNull(r['temperature']) &&
    (r['provider_options'] === null ||
      (typeof r['provider_options'] === 'object' && !Array.isArray(r['provider_options']))) &&
    numberOrNull(r['seconds']) &&
    numberOrNull(r['cost']) &&
    typeof r['text'] === 'string'
  );
}

interface Location {
  /** Index into the store's files. */
  readonly file: number;
  readonly offset: number;
  readonly length: number;
}

/** Per speech-to-text model: what transcripts with both figures cost, per second of audio. */
interface PriceEvidence {
  seconds: number;
  cost: number;
}

export class TranscriptStore {
  readonly #files: string[] = [];
  readonly #index = new Map<string, Location>();
  /** Keys whose line is in this version's own file (never appended twice). */
  readonly #own = new Set<string>();
  readonly #readers = new Map<number, Promise<FileHandle>>();
  readonly #prices = new Map<string, PriceEvidence>();
  readonly #ownPath: string | undefined;
  #writer: FileHandle | undefined;
  #ownSize = 0;
  #appending: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(ownPath: string | undefined) {
    this.#ownPath = ownPath;
  }

  /**
   * The transcripts of `own` (the version a run writes; appended to) and of `others` (read only),
   * indexed; a key found in several files is read from the first (own, then `others` in order).
   * Without `own`, nothing is written (a dry run).
   */
  static async open(options: { own?: string; others: readonly string[] }): Promise<TranscriptStore> {
    const ownPath = options.own === undefined ? undefined : join(options.own, TRANSCRIPTS_FILE);
    const store = new TranscriptStore(ownPath);
    if (ownPath !== undefined) await store.#indexFile(ownPath, true);
    for (const dir of options.others) await store.#indexFile(join(dir, TRANSCRIPTS_FILE), false);
    return store;
  }

  /** Transcripts indexed. */
  get size(): number {
    return this.#index.size;
  }

  has(key: string): boolean {
    return this.#index.has(key);
  }

  /** The transcript under `key`, read from its file; undefined when there is none (or it no longer reads). */
  async get(key: string): Promise<TranscriptRecord | undefined> {
    const at = this.#index.get(key);
    if (at === undefined) return undefined;
    const path = this.#files[at.file]!;
    let reader = this.#readers.get(at.file);
    if (reader === undefined) {
      reader = open(path, 'r');
      this.#readers.set(at.file, reader);
    }
    try {
      const buffer = Buffer.alloc(at.length);
      const { bytesRead } = await (await reader).read(buffer, 0, at.length, at.offset);
      const value: unknown = JSON.parse(buffer.toString('utf8', 0, bytesRead));
      return isRecord(value) ? value : undefined;
    } catch {
      return undefined; // a file changed under us: transcribe again
    }
  }

  /**
   * USD per second the gateway billed for `model`, learned from the transcripts that report both
   * (undefined: none do).
   */
  observedPricePerSecond(model: string): number | undefined {
    const evidence = this.#prices.get(model);
    return evidence && evidence.seconds > 0 ? evidence.cost / evidence.seconds : undefined;
  }

  /**
   * Appends `record` to this version's file (once per key) and indexes it. `durable`: fsynced
   * before this resolves (a transcript just paid for); a line copied from another version is not
   * (it can be copied again).
   */
  async add(record: TranscriptRecord, { durable }: { durable: boolean }): Promise<void> {
    const key = keyOf(record);
    if (this.#ownPath === undefined || this.#own.has(key)) return;
    this.#own.add(key);
    const line = Buffer.from(`${JSON.stringify(record)}\n`, 'utf8');
    // One write at a time: the offsets in the index are where each line really starts.
    const write = this.#appending.then(async () => {
      const path = this.#ownPath!;
      if (this.#closed) throw new OutputError(`${path}: add() after close()`);
      try {
        this.#writer ??= await open(path, 'a');
        await this.#writer.write(line);
        if (durable) await this.#writer.datasync();
      } catch (error) {
        throw new OutputError(`cannot write ${path}: ${messageOf(error)}`, { cause: error });
      }
      const file = this.#fileIndex(path);
      this.#index.set(key, { file, offset: this.#ownSize, length: line.length - 1 });
      this.#ownSize += line.length;
      this.#noteEvidence(record);
    });
    this.#appending = write.catch(() => {});
    await write;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#appending;
    await this.#writer?.close();
    for (const reader of this.#readers.values()) await (await reader.catch(() => undefined))?.close();
  }

  #fileIndex(path: string): number {
    const found = this.#files.indexOf(path);
    if (found >= 0) return found;
    this.#files.push(path);
    return this.#files.length - 1;
  }

  #noteEvidence(record: TranscriptRecord): void {
    if (record.seconds === null || record.cost === null || record.seconds <= 0) return;
    const evidence = this.#prices.get(record.model) ?? { seconds: 0, cost: 0 };
    evidence.seconds += record.seconds;
    evidence.cost += record.cost;
    this.#prices.set(record.model, evidence);
  }

  /** Indexes every whole, valid line of `path` (none when it does not exist). */
  async #indexFile(path: string, own: boolean): Promise<void> {
    try {
      await stat(path);
    } catch (error) {
      if (isNotFound(error)) return;
      throw new OutputError(`cannot read ${path}: ${messageOf(error)}`, { cause: error });
    }
    const file = this.#fileIndex(path);
    let offset = 0;
    /** Indexes the line at `offset`. */
    const take = ({ bytes, size }: RawLine) => {
      let value: unknown;
      try {
        value = JSON.parse(bytes!.toString('utf8'));
      } catch {
        return; // a torn line (a crash mid-append): its transcript is paid for again
      }
      if (!isRecord(value)) return;
      const key = keyOf(value);
      if (this.#index.has(key)) return;
      this.#index.set(key, { file, offset, length: size });
      if (own) this.#own.add(key);
      this.#noteEvidence(value);
    };
    // No line limit: a transcript is as long as its audio.
    const lines = new LineSplitter(Number.POSITIVE_INFINITY);
    let endsWithNewline = true;
    try {
      for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
        for (const line of lines.push(chunk)) {
          take(line);
          offset += line.size + 1;
        }
      }
    } catch (error) {
      throw new OutputError(`cannot read ${path}: ${messageOf(error)}`, { cause: error });
    }
    for (const line of lines.end()) {
      endsWithNewline = false;
      take(line);
      offset += line.size;
    }
    if (!own) return;
    this.#ownSize = offset;
    // A torn last line: the next line starts on a line of its own.
    if (!endsWithNewline) {
      try {
        this.#writer = await open(path, 'a');
        await this.#writer.write('\n');
        this.#ownSize += 1;
      } catch (error) {
        throw new OutputError(`cannot write ${path}: ${messageOf(error)}`, { cause: error });
      }
    }
  }
}
