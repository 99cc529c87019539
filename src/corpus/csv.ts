/**
 * CSV corpus reader: csv-parse over the file's bytes, a header row naming the columns, one
 * document per record.
 *
 * How the parser is driven, and why:
 * - `encoding: null`: fields arrive as bytes and are decoded here with a fatal decoder, so invalid
 *   UTF-8 rejects its row only (a lenient decoder would turn it into U+FFFD silently). The reject
 *   names the field, and --encoding reads what is not UTF-8 (an ASCII-compatible encoding only:
 *   the parser splits the bytes on ASCII commas, quotes and line breaks).
 * - `bom: false`: the BOM is stripped before the parser (csv-parse's own BOM handling switches the
 *   output back to strings).
 * - `skip_records_with_error`: a malformed record is reported through `on_skip` and parsing goes on.
 * - Line numbers come from byte offsets (the `cast` hook sees every field's end offset, even in
 *   records that are later skipped) mapped through a LineIndex: csv-parse's own line count is off
 *   after CRLF line breaks inside quoted fields, and it reports where a record ends, not where it
 *   starts.
 *
 * What csv-parse can recover from (see the tests): a wrong column count and a stray quote inside
 * an unquoted field cost only their record. After text following a closing quote ("a"b) the parser
 * stays inside the quoted field until a quote that is followed by a delimiter or line break, so
 * the reject may swallow the lines up to there (the reason says which lines). A quote that is
 * never closed swallows the rest of the file into one reject, whose reason names the line the
 * quote opened on and the lines swallowed. They are not parsed again as rows: a field whose closing
 * quote is missing may be a multi-line text, whose lines would make bogus documents; the user
 * closes the quote and runs again.
 */
import { pipeline, Readable } from 'node:stream';
import { type CsvError, type Options, type Parser, parse } from 'csv-parse';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { withoutBom } from '../files/bom.js';
import { audioRowEntry } from './audio.js';
import type { FileReadOptions } from './entries.js';
import { PIECE_ENTRIES, Reason, reject, toEntry } from './entries.js';
import { flagSuggestion, guessIdField, guessTextField, newSample, quotedNames } from './field-hints.js';
import { imageRowEntry } from './images.js';
import { inputBytes } from './input-stream.js';
import { LineIndex } from './line-index.js';
import { UTF8 } from './utf8.js';

export interface CsvReadOptions extends FileReadOptions {
  /** A record larger than this stops the read with a UsageError (an unclosed quote, usually). */
  readonly maxRecordBytes: number;
}

/** A good record, as handed from the parser's hooks to the reader, with the rejects that preceded it. */
interface Row {
  readonly line: number;
  readonly fields: readonly Uint8Array[];
  readonly before: readonly CorpusEntry[];
}

interface Header {
  readonly idIndex: number;
  /** -1: no text column (allowed with --audio-field: a row without audio is then a reject). */
  readonly textIndex: number;
  /** The image column, with --image-field. */
  readonly imageIndex?: number;
  /** The audio column, with --audio-field. */
  readonly audioIndex?: number;
  readonly width: number;
}

const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;

/**
 * The file's entries in corpus order. Read first without per-field hooks (csv-parse builds a
 * context object for every field it hands to `cast`, most of a CSV read's cost: docs/benchmarks.md,
 * "a twenty-sixth session"): a good record's line comes from where the record before it ended.
 * At the first record the parser rejects, that read stops and the rest of the file, from the end
 * of the last record read, is read again record by record through the hooks (exactRead), which
 * know where every field starts and so name a failed record's lines, quote and id. A file without
 * a malformed record is read once, the fast way.
 */
export async function* readCsv(options: CsvReadOptions): AsyncGenerator<CorpusEntry[]> {
  const stop = yield* fastRead(options);
  if (stop !== undefined) yield* exactRead(options, stop);
}

/** Where the fast read stopped: the rest of the file is read exactly from `from` on. */
interface FastReadStop {
  /** The end of the header record (its line break included); 0 when the header was not read. */
  readonly headerEnd: number;
  /** The end of the last record whose entry was yielded (the header's when none was). */
  readonly from: number;
  /** Lines from the header's end to `from`: what exactRead adds to the lines it counts. */
  readonly lineShift: number;
  /** Bytes of the file reported read (onBytes) so far. */
  readonly reported: number;
}

/** Thrown from the fast read's on_skip: the parser met a malformed record, which exactRead names. */
class MalformedRecord extends Error {}

/**
 * The records as csv-parse hands them on, with no hook per field; returns where it stopped at the
 * first malformed record (undefined at the end of a file it read whole).
 */
async function* fastRead(options: CsvReadOptions): AsyncGenerator<CorpusEntry[], FastReadStop | undefined> {
  const { file } = options;
  const index = new LineIndex();
  let parser: Parser | undefined;
  const delimiters = () => parser?.options.record_delimiter ?? [];
  const records = new RecordTracker(index, options, delimiters);
  let headerEnd = 0;
  let from = 0;
  let reported = 0;
  let stopped = false;
  const hooks: Options<FastRow | null, Uint8Array[]> = {
    ...PARSER_OPTIONS,
    on_skip: () => {
      throw new MalformedRecord('a malformed CSV record: read again record by record');
    },
    on_record: (fields, info) => {
      if (records.header !== undefined) return { fields, end: info.bytes };
      records.onRecord(fields);
      headerEnd = info.bytes;
      return null;
    },
  };
  parser = parse(hooks as unknown as Options);
  async function* bytes(): AsyncGenerator<Buffer> {
    const onBytes = (n: number) => {
      // Once stopped, what this read still reads is the exact read's to report.
      if (stopped) return;
      reported += n;
      options.onBytes(n);
    };
    const chunks = withoutBom(inputBytes(options.path, file, onBytes, { onWhole: options.onWhole }));
    yield* indexed(chunks, index, options, () => index.lineAt(index.skipDelimiters(from, delimiters())));
  }
  pipeline(Readable.from(bytes(), { objectMode: false }), parser, () => {});
  let headerLine = 1;
  try {
    for await (const rows of recordPieces<FastRow>(parser)) {
      if (from === 0) {
        from = headerEnd;
        headerLine = index.lineAt(headerEnd);
      }
      const piece: CorpusEntry[] = [];
      // Each record starts where the one before it ended, after any blank lines.
      let end = from;
      for (const row of rows) {
        const line = index.lineAt(index.skipDelimiters(end, delimiters()));
        const entry = records.toEntry({ line, fields: row.fields, before: [] });
        piece.push(entry instanceof Promise ? await entry : entry);
        end = row.end;
      }
      yield piece;
      from = end;
    }
  } catch (error) {
    if (!(error instanceof MalformedRecord)) throw error;
    stopped = true;
    parser.destroy();
    if (records.header === undefined) return { headerEnd: 0, from: 0, lineShift: 0, reported };
    if (from === 0) from = headerEnd;
    const lineShift = from === headerEnd ? 0 : index.lineAt(from) - headerLine;
    return { headerEnd, from, lineShift, reported };
  }
  if (records.header === undefined) throw noHeader(options);
  return undefined;
}

/** A good record of the fast read: its fields and the offset just past it. */
interface FastRow {
  readonly fields: readonly Uint8Array[];
  readonly end: number;
}

/** The parser's options either way; the hooks are each read's own. */
const PARSER_OPTIONS = {
  encoding: null,
  bom: false,
  // Any line break ends a record, CRLF and LF mixed in one file: csv-parse would otherwise take
  // the first one it meets for the whole file, and two rows split by the other become one reject.
  record_delimiter: ['\r\n', '\n', '\r'],
  skip_empty_lines: true,
  skip_records_with_error: true,
};

/**
 * The file read record by record through csv-parse's hooks (see RecordTracker), from `stop.from`
 * on: the parser is given the header's bytes, then the file's from there, so that it checks
 * column counts against the header as it did the first time; lines are counted in those bytes and
 * shifted by what was skipped.
 */
async function* exactRead(options: CsvReadOptions, stop: FastReadStop): AsyncGenerator<CorpusEntry[]> {
  const { file } = options;
  const index = new LineIndex();
  let parser: Parser | undefined;
  const records = new RecordTracker(
    index,
    options,
    () => parser?.options.record_delimiter ?? [],
    stop.lineShift,
  );

  const hooks: Options<Row, Uint8Array[]> = {
    ...PARSER_OPTIONS,
    cast: (value, context) => {
      records.onField(value as unknown as Uint8Array, context.bytes);
      return value;
    },
    on_skip: (error) => {
      if (error !== undefined) records.onError(error);
      return undefined;
    },
    on_record: (fields) => records.onRecord(fields),
  };
  // The typings tie on_record's result to string[] records; ours are Row objects.
  parser = parse(hooks as unknown as Options);

  async function* bytes(): AsyncGenerator<Buffer> {
    // The file's bytes are read again: only those past what the fast read reported count as read.
    let seen = 0;
    const onBytes = (n: number) => {
      const before = seen;
      seen += n;
      if (seen > stop.reported) options.onBytes(seen - Math.max(before, stop.reported));
    };
    const fileBytes = withoutBom(inputBytes(options.path, file, onBytes, { onWhole: options.onWhole }));
    yield* indexed(skipping(fileBytes, stop.headerEnd, stop.from), index, options, () => records.line);
  }
  // Errors (read errors, UsageErrors thrown from the hooks) destroy the parser and surface in the
  // loop below; the callback only has to exist. A byte stream, not object mode, so that read-ahead
  // is limited in bytes rather than in 64 KiB chunks.
  pipeline(Readable.from(bytes(), { objectMode: false }), parser, () => {});

  for await (const rows of recordPieces<Row>(parser)) {
    const piece: CorpusEntry[] = [];
    for (const row of rows) {
      piece.push(...row.before);
      const entry = records.toEntry(row);
      piece.push(entry instanceof Promise ? await entry : entry);
    }
    yield piece;
  }
  const rejects = records.finish();
  if (rejects.length > 0) yield rejects;
}

/** The parser's records in pieces: each what it has ready at once, up to PIECE_ENTRIES. */
async function* recordPieces<R>(parser: Parser): AsyncGenerator<R[]> {
  for await (const first of parser as AsyncIterable<R>) {
    const piece: R[] = [first];
    while (piece.length < PIECE_ENTRIES) {
      const next = parser.read() as R | null;
      if (next === null) break;
      piece.push(next);
    }
    yield piece;
  }
}

/** The file read record by record from its start (what readCsv's entries must equal: tests). */
export function readCsvExactly(options: CsvReadOptions): AsyncGenerator<CorpusEntry[]> {
  return exactRead(options, { headerEnd: 0, from: 0, lineShift: 0, reported: 0 });
}

/** `chunks` without the bytes from offset `skipFrom` to `skipTo` (the records already read). */
async function* skipping(
  chunks: AsyncIterable<Buffer>,
  skipFrom: number,
  skipTo: number,
): AsyncGenerator<Buffer> {
  let at = 0;
  for await (const chunk of chunks) {
    const start = at;
    at += chunk.length;
    if (at <= skipFrom || start >= skipTo) yield chunk;
    else {
      if (start < skipFrom) yield chunk.subarray(0, skipFrom - start);
      if (at > skipTo) yield chunk.subarray(skipTo - start);
    }
  }
}

/**
 * The parser's bytes, each chunk fed to the line index first; stops with a UsageError once the
 * index holds more than a record may (an unclosed quote, usually), naming `line()`.
 */
async function* indexed(
  chunks: AsyncIterable<Buffer>,
  index: LineIndex,
  options: CsvReadOptions,
  line: () => number,
): AsyncGenerator<Buffer> {
  for await (const chunk of chunks) {
    index.push(chunk);
    if (index.retained > options.maxRecordBytes) {
      throw new UsageError(
        `${options.file}: a CSV record from line ${line()} on is larger than ${options.maxRecordBytes} bytes (an unclosed quote?)`,
      );
    }
    yield chunk;
  }
}

function noHeader(options: CsvReadOptions): UsageError {
  return new UsageError(`${options.file}: the CSV file has no header row`);
}

/**
 * Follows the parser record by record through its synchronous hooks (cast per field, on_skip per
 * error, on_record per good record) to know where each record starts, which records failed, and
 * to turn failed records into rejects in corpus order.
 *
 * A record begins with its first hook call and ends at the field whose end offset is not a comma
 * (a line break, or the end of the file). A wrong column count is reported just after that, so a
 * failed record is turned into a reject only when the next record begins, or at the end.
 */
class RecordTracker {
  header: Header | undefined;
  readonly #index: LineIndex;
  readonly #options: CsvReadOptions;
  readonly #delimiters: () => readonly Uint8Array[];
  /** Where the next record may start: the previous record's terminator. */
  #nextFrom = 0;
  #open = false;
  // The current record (or the last one, once closed, until the next begins).
  #start = 0;
  #line = 1;
  #end = 0;
  #fields = 0;
  /** Where the current field starts: where a quote that opens it is. */
  #fieldStart = 0;
  #id: Uint8Array | undefined;
  #error: CsvError | undefined;
  /** Where the field of the record's first error starts. */
  #errorField = 0;
  #pending: CorpusEntry[] = [];

  /** Lines before the bytes the index counts (exactRead skips the records already read). */
  readonly #lineShift: number;

  constructor(
    index: LineIndex,
    options: CsvReadOptions,
    delimiters: () => readonly Uint8Array[],
    lineShift = 0,
  ) {
    this.#index = index;
    this.#options = options;
    this.#delimiters = delimiters;
    this.#lineShift = lineShift;
  }

  /** First line of the current record. */
  get line(): number {
    return this.#line;
  }

  onField(value: Uint8Array, endOffset: number): void {
    this.#begin();
    // Remember the id while the record is still sound: it names the record if it fails later.
    if (this.#error === undefined && this.#fields === this.header?.idIndex) this.#id = value;
    this.#fields += 1;
    this.#fieldStart = endOffset + 1;
    if (this.#index.byteAt(endOffset) !== COMMA) this.#close(endOffset);
  }

  onError(error: CsvError): void {
    // The column count is checked after the record's last field, i.e. after it closed.
    if (error.code !== 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') this.#begin();
    if (this.header === undefined) {
      throw new UsageError(`${this.#options.file}: the CSV header row is malformed: ${parserMessage(error)}`);
    }
    if (this.#error !== undefined) return;
    this.#error = error;
    this.#errorField = this.#fieldStart;
  }

  /** A record the parser accepted: the header, or a Row for the reader. */
  onRecord(fields: Uint8Array[]): Row | null {
    if (this.header === undefined) {
      this.header = readHeader(fields, this.#options);
      return null;
    }
    const row = { line: this.#line, fields, before: this.#pending };
    this.#pending = [];
    return row;
  }

  /** A good record as a document or a reject (a promise when it names an image to read). */
  toEntry(row: Row): CorpusEntry | Promise<CorpusEntry> {
    const { file, ids, idField, textField } = this.#options;
    const header = this.header!;
    const decoding = this.#options.decoding ?? UTF8;
    // A field that cannot be decoded rejects its row, naming the field (and the id, once known).
    const undecodable = (index: number, name: string | undefined, id?: string) =>
      reject(file, row.line, decoding.problem(row.fields[index]!, `field ${JSON.stringify(name)}`), id);
    const id = decoding.decode(row.fields[header.idIndex]!);
    if (id === undefined) return undecodable(header.idIndex, idField);
    const text = header.textIndex < 0 ? '' : decoding.decode(row.fields[header.textIndex]!);
    if (text === undefined) return undecodable(header.textIndex, textField, id);
    if (header.audioIndex !== undefined) {
      const audio = decoding.decode(row.fields[header.audioIndex]!);
      if (audio === undefined) return undecodable(header.audioIndex, this.#options.audioField, id);
      // With audio the text is its transcript: the text column is not used.
      if (audio !== '' && id !== '') return audioRowEntry(this.#options, row.line, id, audio);
      if (header.textIndex < 0 && id !== '') return reject(file, row.line, Reason.missingText, id);
    }
    if (header.imageIndex !== undefined) {
      const image = decoding.decode(row.fields[header.imageIndex]!);
      if (image === undefined) return undecodable(header.imageIndex, this.#options.imageField, id);
      // With an image the text is its caption, and may be empty.
      if (image !== '' && id !== '') return imageRowEntry(this.#options, row.line, id, text, image);
    }
    return toEntry(ids, file, row.line, id, text);
  }

  /** Rejects still held at the end of the file. Throws if there was no header. */
  finish(): CorpusEntry[] {
    // Still inside a record at the end: a quote that was never closed.
    if (this.#open) this.#close(this.#index.fed);
    this.#settle();
    if (this.header === undefined) throw noHeader(this.#options);
    return this.#pending;
  }

  #begin(): void {
    if (this.#open) return;
    this.#settle();
    this.#open = true;
    this.#start = this.#index.skipDelimiters(this.#nextFrom, this.#delimiters());
    this.#line = this.#lineAt(this.#start);
    this.#fields = 0;
    this.#fieldStart = this.#start;
    this.#id = undefined;
    this.#error = undefined;
  }

  #close(endOffset: number): void {
    this.#open = false;
    this.#end = endOffset;
    this.#nextFrom = endOffset;
  }

  /** Turns the last closed record into a reject if it failed. */
  #settle(): void {
    const error = this.#error;
    if (error === undefined) return;
    this.#error = undefined;
    const header = this.header!;
    const quoted = error.code === 'CSV_QUOTE_NOT_CLOSED' || error.code === 'CSV_INVALID_CLOSING_QUOTE';
    // Lines are asked for in offset order (LineIndex releases what is behind): the quote, then the end.
    const quoteLine = quoted ? this.#lineAt(this.#errorField) : this.#line;
    const lastLine = this.#lastLine();
    let reason: string;
    if (error.code === 'CSV_QUOTE_NOT_CLOSED') {
      // It swallowed the rest of the file: say where it opened, the one place to fix.
      reason = Reason.unterminatedQuote(quoteLine, lastLine);
    } else if (error.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
      reason = Reason.wrongColumnCount(header.width, this.#fields);
    } else {
      reason = Reason.unparseableRow(parserMessage(error));
    }
    if (error.code === 'CSV_INVALID_CLOSING_QUOTE' && lastLine > quoteLine) {
      reason += `; the quote opened on line ${quoteLine}: ${Reason.swallowedLines(quoteLine, lastLine)}`;
    } else if (error.code !== 'CSV_QUOTE_NOT_CLOSED' && lastLine > this.#line) {
      reason += ` (record spans lines ${this.#line}-${lastLine})`;
    }
    const id = this.#id === undefined ? undefined : (this.#options.decoding ?? UTF8).decode(this.#id);
    this.#pending.push(reject(this.#options.file, this.#line, reason, id || undefined));
  }

  /**
   * The last line of the closed record that holds any of it: the line breaks that end a quote left
   * open at the end of the file are not a line of it.
   */
  #lastLine(): number {
    let last = Math.max(this.#start, this.#end - 1);
    while (last > this.#start && isLineBreak(this.#index.byteAt(last))) last -= 1;
    return this.#lineAt(last);
  }

  #lineAt(offset: number): number {
    return this.#index.lineAt(offset) + this.#lineShift;
  }
}

function isLineBreak(byte: number | undefined): boolean {
  return byte === LF || byte === CR;
}

function readHeader(fields: readonly Uint8Array[], options: CsvReadOptions): Header {
  const decoding = options.decoding ?? UTF8;
  const names = fields.map((field) => decoding.decode(field));
  const bad = names.indexOf(undefined);
  if (bad >= 0) {
    const problem = decoding.problem(fields[bad]!, `column ${bad + 1}`);
    throw new UsageError(`${options.file}: the CSV header row cannot be read: ${problem}`);
  }
  const known = names as string[];
  const idIndex = names.indexOf(options.idField);
  const textIndex = names.indexOf(options.textField);
  const { imageField, audioField } = options;
  const imageIndex = imageField === undefined ? undefined : names.indexOf(imageField);
  const audioIndex = audioField === undefined ? undefined : names.indexOf(audioField);
  // A CSV of audio paths needs no text column (the transcripts are the texts).
  const noId = idIndex < 0;
  const noText = textIndex < 0 && audioField === undefined;
  const noImage = imageIndex !== undefined && imageIndex < 0;
  const noAudio = audioIndex !== undefined && audioIndex < 0;
  if (noId || noText || noImage || noAudio) {
    const missing = [
      noId ? options.idField : undefined,
      noText ? options.textField : undefined,
      noImage ? imageField : undefined,
      noAudio ? audioField : undefined,
    ]
      .filter((name) => name !== undefined)
      .map((name) => JSON.stringify(name));
    const flags = [
      ...(noId || noText ? ['--id-field', '--text-field'] : []),
      ...(noImage ? ['--image-field'] : []),
      ...(noAudio ? ['--audio-field'] : []),
    ];
    // The header is all there is to go by: a guess from the column names alone.
    const columns = known.map((name) => ({ ...newSample(name), rows: 1, ids: 1, strings: 1 }));
    const id = noId
      ? guessIdField(columns, options.idField, 1, noText ? undefined : options.textField)
      : undefined;
    const text = noText ? guessTextField(columns, options.textField, 1, id ?? options.idField) : undefined;
    const suggestion = flagSuggestion(id, text);
    const pick = flags.length === 1 ? flags[0] : `${flags.slice(0, -1).join(', ')} and ${flags.at(-1)}`;
    throw new UsageError(
      `${options.file}: the CSV header has no ${missing.join(' or ')} column (columns: ${quotedNames(known)}); ` +
        `pick the ${flags.length === 1 ? 'column' : 'columns'} with ${pick}` +
        (suggestion === '' ? '' : `, e.g. ${suggestion}`),
    );
  }
  return {
    idIndex,
    textIndex,
    ...(imageIndex !== undefined ? { imageIndex } : {}),
    ...(audioIndex !== undefined ? { audioIndex } : {}),
    width: fields.length,
  };
}

/** csv-parse's message without its line numbers (ours are the right ones) or dumped field bytes. */
function parserMessage(error: CsvError): string {
  return error.message
    .replace(/,? value is .*$/s, '')
    .replace(/ (?:at|on) line \d+/g, '')
    .trim();
}
