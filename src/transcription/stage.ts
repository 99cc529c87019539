/**
 * The transcription stage: between the corpus reader and the chunker, every audio document becomes
 * a text document whose text is its transcript (or a reject). It streams with the corpus: at most
 * `concurrency` transcriptions in flight and a bounded number of entries read ahead, and entries
 * come out in corpus order, so a folder of thousands of recordings is never loaded at once and the
 * documents are planned (and numbered) exactly as a re-run plans them.
 *
 * Transcripts are looked up first in the dataset's transcripts (`_transcripts.jsonl` of this version
 * and of the others, keyed by the audio's sha256 and the speech-to-text settings): a resumed or
 * incremental run never transcribes the same audio twice. A transcript paid for is appended (and
 * fsynced) before its document moves on, so a crash, a 402 or Ctrl-C loses none of them.
 *
 * Outcomes per file: a transcript (a text document); an empty transcript, a 400 or a file changed or
 * gone since it was read (a reject, `_rejects.jsonl`); retries run out (a TranscriptionFailure: the
 * run is incomplete and a re-run transcribes it); 402, 401, 404 and the run's stop (thrown: fatal for
 * the run, after the requests in flight have finished and their transcripts are kept).
 *
 * A dry run uses `TranscriptionEstimator` instead: a held transcript is planned as the text it is, and the
 * others are counted (seconds from their headers, cost at a known price), never sent.
 */
import type { TranscriptionSettings } from '../config/settings.js';
import { Reason } from '../corpus/entries.js';
import type {
  AudioRef,
  CorpusEntry,
  Document,
  TranscriptionEstimate,
  TranscriptionFailure,
} from '../domain.js';
import { UsageError } from '../errors.js';
import { rereadMediaFile } from '../files/planned-media.js';
import { BadRequestError, GatewayError, NotFoundError } from '../gateway/index.js';
import type { Logger } from '../observability/logger.js';
import type { RunStats } from '../observability/stats.js';
import { type TranscriptRecord, type TranscriptStore, transcriptKey } from '../output/transcripts.js';
import { isRetryable } from '../retry/index.js';
import type { GatewayTranscriber } from './transcriber.js';

/** Corpus entries in, corpus entries out: audio documents become text documents (or rejects). */
export type TranscriptionStage = (entries: AsyncIterable<CorpusEntry>) => AsyncIterable<CorpusEntry>;

/** The cache key of an audio document's transcript under the run's speech-to-text settings. */
function keyOf(audio: AudioRef, settings: TranscriptionSettings): string {
  return transcriptKey(audio.sha256, {
    model: settings.model ?? '',
    language: settings.language ?? null,
    temperature: settings.temperature ?? null,
    providerOptions: settings.providerOptions ?? null,
  });
}

/** The document with its transcript as its text, or a reject when the transcript is empty. */
function fromTranscript(document: Document, text: string): CorpusEntry {
  const { id, source, line } = document;
  if (text.trim() === '') return rejectOf(document, Reason.emptyTranscript);
  return { kind: 'document', document: { id, text, source, line } };
}

/** A reject of an audio document; a row of a CSV/JSONL file names its audio file in the reason. */
function rejectOf(document: Document, reason: string): CorpusEntry {
  const { id, source, line, audio } = document;
  const named = audio !== undefined && audio.source !== source ? `audio ${audio.source}: ${reason}` : reason;
  return { kind: 'reject', reject: { file: source, line, id, reason: named } };
}

/** The record of a held transcript as this version keeps it (under this document's source). */
function carried(record: TranscriptRecord, audio: AudioRef): TranscriptRecord {
  return record.source === audio.source ? record : { ...record, source: audio.source };
}

// ---- the run's stage ----------------------------------------------------------------------------

export interface TranscribingStageOptions {
  readonly transcriber: GatewayTranscriber;
  readonly store: TranscriptStore;
  readonly settings: TranscriptionSettings;
  readonly stats: RunStats;
  readonly logger: Logger;
  /** The run stopping: no new transcription starts; requests in flight finish (they are paid for). */
  readonly signal: AbortSignal;
  /** A file whose retries ran out (an outage): the run is incomplete, a re-run transcribes it. */
  readonly onFailure: (failure: TranscriptionFailure) => void;
  /** Sums the transcripts of the documents this run plans (for the manifest). */
  readonly tally?: TranscriptTally;
}

/** The transcripts behind a run's audio documents: how many, their seconds and cost (each audio once). */
export class TranscriptTally {
  documents = 0;
  seconds = 0;
  cost = 0;
  readonly #keys = new Set<string>();

  add(key: string, record: TranscriptRecord): void {
    this.documents += 1;
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    this.seconds += record.seconds ?? 0;
    this.cost += record.cost ?? 0;
  }
}

type Outcome = { readonly entry?: CorpusEntry } | { readonly fatal: unknown };
type Transcribed = TranscriptRecord | CorpusEntry | undefined;

export function transcribingStage(options: TranscribingStageOptions): TranscriptionStage {
  const { settings } = options;
  /** Transcriptions in flight by key: the same audio twice in a row is sent once. */
  const inFlight = new Map<string, Promise<Transcribed>>();

  /**
   * A held transcript, or one from the gateway (appended to the store), or the entry that replaces
   * the document (a reject); undefined when its retries ran out.
   */
  async function transcriptFor(document: Document, audio: AudioRef, key: string): Promise<Transcribed> {
    const held = options.store.has(key) ? await options.store.get(key) : undefined;
    if (held !== undefined) {
      options.stats.audio.reused += 1;
      await options.store.add(carried(held, audio), { durable: false });
      return held;
    }
    const running = inFlight.get(key);
    if (running !== undefined) {
      const outcome = await running;
      if (outcome !== undefined && !('kind' in outcome)) options.stats.audio.reused += 1;
      return outcome;
    }
    const task = transcribe(document, audio);
    inFlight.set(key, task);
    try {
      return await task;
    } finally {
      inFlight.delete(key);
    }
  }

  async function transcribe(document: Document, audio: AudioRef): Promise<Transcribed> {
    const { stats, transcriber } = options;
    const data = await rereadMediaFile(audio.path, audio);
    if ('unreadable' in data) return rejectOf(document, Reason.unreadableAudio(data.unreadable));
    if ('changed' in data) return rejectOf(document, Reason.audioChanged);
    stats.audio.inFlight += 1;
    try {
      const answer = await transcriber.transcribe(
        { data, format: audio.format, seconds: audio.seconds },
        audio.source,
        options.signal,
      );
      const seconds = answer.seconds ?? audio.seconds ?? null;
      const record: TranscriptRecord = {
        source: audio.source,
        audio_sha256: audio.sha256,
        format: audio.format,
        model: transcriber.model,
        language: settings.language ?? null,
        temperature: settings.temperature ?? null,
        provider_options: settings.providerOptions ?? null,
        seconds,
        cost: answer.costReported || answer.cost > 0 ? answer.cost : null,
        text: answer.text,
        transcribed_at: new Date().toISOString(),
      };
      stats.audio.transcribed += 1;
      stats.audio.seconds += seconds ?? 0;
      stats.audio.cost += answer.cost;
      // An empty transcript with no usage looks like a broken answer: not kept, so a re-run asks again.
      if (answer.text.trim() !== '' || answer.seconds !== undefined || answer.costReported)
        await options.store.add(record, { durable: true });
      return record;
    } catch (error) {
      if (error instanceof BadRequestError) {
        options.logger.warn({ audio: audio.source, status: error.status }, error.message);
        return rejectOf(document, Reason.transcriptionRefused(error.status, error.gatewayMessage));
      }
      if (error instanceof NotFoundError) {
        throw new UsageError(
          `--stt-model ${transcriber.model}: the gateway answered 404 (${error.gatewayMessage}); is it a speech-to-text model?`,
          { cause: error },
        );
      }
      if (error instanceof GatewayError && isRetryable(error) && !options.signal.aborted) {
        stats.audio.failed += 1;
        options.logger.error({ audio: audio.source, status: error.status }, error.message);
        options.onFailure({
          stage: 'transcription',
          documentId: document.id,
          source: audio.source,
          status: error.status,
          message: `transcription failed after retries: ${error.message}`,
        });
        return undefined;
      }
      throw error;
    } finally {
      stats.audio.inFlight -= 1;
    }
  }

  async function settle(document: Document, audio: AudioRef): Promise<Outcome> {
    try {
      const key = keyOf(audio, settings);
      const result = await transcriptFor(document, audio, key);
      if (result === undefined) return {}; // failed: left for a re-run
      if ('kind' in result) return { entry: result };
      const entry = fromTranscript(document, result.text);
      if (entry.kind === 'document') options.tally?.add(key, result);
      return { entry };
    } catch (error) {
      return { fatal: error };
    }
  }

  return (entries) =>
    inOrder(entries, {
      concurrency: settings.concurrency,
      signal: options.signal,
      isWork: (entry) => entry.kind === 'document' && entry.document.audio !== undefined,
      work: (entry) => {
        const document = (entry as Extract<CorpusEntry, { kind: 'document' }>).document;
        options.stats.audio.files += 1;
        return settle(document, document.audio!);
      },
    });
}

/**
 * The entries of `source` in order, each work entry replaced by what `work` makes of it: at most
 * `concurrency` works at once, and at most a few windows of entries held ahead of the consumer. A
 * fatal outcome stops new work and is thrown once the works in flight have settled.
 */
async function* inOrder(
  source: AsyncIterable<CorpusEntry>,
  options: {
    readonly concurrency: number;
    readonly signal: AbortSignal;
    readonly isWork: (entry: CorpusEntry) => boolean;
    readonly work: (entry: CorpusEntry) => Promise<Outcome>;
  },
): AsyncGenerator<CorpusEntry> {
  const { concurrency, signal } = options;
  const maxAhead = concurrency * 4 + 16;
  const slots: Promise<Outcome>[] = [];
  const running = new Set<Promise<Outcome>>();
  let readerDone = false;
  let readerError: { error: unknown } | undefined;
  let fatal: { error: unknown } | undefined;
  let stopping = false;
  const toReader = new Pulse();
  const toConsumer = new Pulse();
  const iterator = source[Symbol.asyncIterator]();

  const reader = (async () => {
    try {
      for (;;) {
        while (!stopping && !fatal && (running.size >= concurrency || slots.length >= maxAhead))
          await toReader.wait();
        if (stopping || fatal || signal.aborted) return;
        const next = await iterator.next();
        if (next.done) return;
        const entry = next.value;
        if (!options.isWork(entry)) {
          slots.push(Promise.resolve({ entry }));
        } else {
          const task = options.work(entry).then((outcome) => {
            running.delete(task);
            if ('fatal' in outcome) fatal ??= { error: outcome.fatal };
            toReader.fire();
            toConsumer.fire();
            return outcome;
          });
          running.add(task);
          slots.push(task);
        }
        toConsumer.fire();
      }
    } catch (error) {
      readerError = { error };
    } finally {
      readerDone = true;
      toConsumer.fire();
    }
  })();

  try {
    for (;;) {
      while (slots.length === 0 && !readerDone && !fatal) await toConsumer.wait();
      if (fatal) throw fatal.error;
      const head = slots.shift();
      if (head === undefined) {
        if (readerError) throw readerError.error;
        if (signal.aborted) throw signal.reason;
        return;
      }
      toReader.fire();
      const outcome = await head;
      if ('fatal' in outcome) throw outcome.fatal;
      if (outcome.entry !== undefined) yield outcome.entry;
    }
  } finally {
    stopping = true;
    toReader.fire();
    await reader;
    // Requests in flight are paid for: they finish, and their transcripts are kept.
    await Promise.all([...running]);
    await iterator.return?.();
  }
}

/** Wakes whoever waits, once per fire. */
class Pulse {
  #waiters: (() => void)[] = [];

  wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  fire(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

// ---- the dry run's stage ------------------------------------------------------------------------

/** Counts what a run would transcribe, plans what the dataset holds; sends nothing. */
export class TranscriptionEstimator {
  #files = 0;
  #seconds = 0;
  #unknown = 0;
  #estimated = 0;
  #held = 0;

  constructor(
    private readonly options: {
      readonly store: TranscriptStore;
      readonly settings: TranscriptionSettings;
      readonly stats: RunStats;
    },
  ) {}

  readonly stage: TranscriptionStage = (entries) => this.#run(entries);

  async *#run(entries: AsyncIterable<CorpusEntry>): AsyncGenerator<CorpusEntry> {
    const { store, settings, stats } = this.options;
    for await (const entry of entries) {
      const audio = entry.kind === 'document' ? entry.document.audio : undefined;
      if (audio === undefined || entry.kind !== 'document') {
        yield entry;
        continue;
      }
      stats.audio.files += 1;
      const held = await store.get(keyOf(audio, settings));
      if (held !== undefined) {
        this.#held += 1;
        stats.audio.reused += 1;
        yield fromTranscript(entry.document, held.text);
        continue;
      }
      // Not planned (its text is unknown until it is transcribed), but it is a document of the corpus.
      stats.documents += 1;
      this.#files += 1;
      if (audio.seconds === undefined) this.#unknown += 1;
      else this.#seconds += audio.seconds;
      if (audio.secondsEstimated) this.#estimated += 1;
    }
  }

  /** What the stage counted, priced at `--stt-price-per-minute`, else at what the dataset was billed. */
  estimate(): TranscriptionEstimate {
    const { settings, store } = this.options;
    const observed = settings.model !== undefined ? store.observedPricePerSecond(settings.model) : undefined;
    const pricePerMinute = settings.pricePerMinute ?? (observed !== undefined ? observed * 60 : undefined);
    return {
      files: this.#files,
      seconds: this.#seconds,
      unknownFiles: this.#unknown,
      estimatedFiles: this.#estimated,
      ...(pricePerMinute !== undefined
        ? {
            cost: (this.#seconds * pricePerMinute) / 60,
            pricePerMinute,
            priceSource: settings.pricePerMinute !== undefined ? ('setting' as const) : ('dataset' as const),
          }
        : {}),
      held: this.#held,
    };
  }
}
