/**
 * JSONL corpus reader: one JSON object per line. Lines are split as bytes and decoded one by one
 * with a fatal decoder, so a bad line (invalid UTF-8, broken JSON, wrong types) rejects only itself.
 * Blank lines are skipped silently but still counted, so line numbers match an editor's. An id is a
 * string or an integer (the usual export), read as its decimal digits: 123 and "123" are one id.
 */
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { stripBom } from '../files/bom.js';
import { LineSplitter, type RawLine, type TextLine } from '../files/lines.js';
import { audioRowEntry } from './audio.js';
import type { FileReadOptions } from './entries.js';
import { PIECE_ENTRIES, Reason, reject, toEntry } from './entries.js';
import {
  countValue,
  type FieldSample,
  flagSuggestion,
  guessIdField,
  guessTextField,
  newSample,
  quotedNames,
  rowFields,
} from './field-hints.js';
import { imageRowEntry } from './images.js';
import { inputBytes, LARGE_READS } from './input-stream.js';
import { UTF8 } from './utf8.js';

export interface JsonlReadOptions extends FileReadOptions {
  /** A longer line is rejected without being held in memory. */
  readonly maxLineBytes: number;
}

/** Leading rows all missing the id or text field after which the read stops (wrong --id-field?). */
const MISSING_FIELD_ROWS = 100;
/** Entries held back at most while no row has had both fields (the rest pass as they come). */
const MAX_HELD = 1000;
/** Distinct field names counted in those rows. */
const MAX_FIELDS = 200;

/**
 * The file's entries in corpus order, in pieces of up to PIECE_ENTRIES (a list, not an entry at a
 * time: each level of async iteration an entry passes was a measurable share of planning,
 * docs/benchmarks.md, "a twenty-fifth session"; not a whole read of the file either, which held
 * the first document back until a megabyte of lines was parsed).
 */
export async function* readJsonl(options: JsonlReadOptions): AsyncGenerator<CorpusEntry[]> {
  const lines = new LineSplitter(options.maxLineBytes);
  const fields = new FieldCheck(options);
  // An ASCII-compatible decoding reads valid UTF-8 as UTF-8 (corpus/utf8.ts): such lines come decoded.
  const text = (options.decoding ?? UTF8).asciiCompatible;
  const reads = { readBytes: LARGE_READS, reuseBuffers: true, onWhole: options.onWhole };
  for await (const chunk of inputBytes(options.path, options.file, options.onBytes, reads)) {
    yield* piecesOf(text ? lines.pushText(chunk) : lines.push(chunk), options, fields);
  }
  yield* piecesOf(lines.end(), options, fields);
  fields.end();
  const held = fields.release();
  if (held.length > 0) yield held;
}

/** The entries of `lines` that pass the field check now (held ones once it lets them go), in pieces. */
async function* piecesOf(
  lines: Iterable<RawLine | TextLine>,
  options: JsonlReadOptions,
  fields: FieldCheck,
): AsyncGenerator<CorpusEntry[]> {
  let piece: CorpusEntry[] = [];
  for (const line of lines) {
    const entry = lineToEntry(line, options, fields);
    if (entry === undefined || fields.hold(entry)) continue;
    if (fields.holds) for (const held of fields.release()) piece.push(held);
    piece.push(entry instanceof Promise ? await entry : entry);
    if (piece.length >= PIECE_ENTRIES) {
      yield piece;
      piece = [];
    }
  }
  if (piece.length > 0) yield piece;
}

/**
 * Stops the read when the object rows are all missing the id or the text field (no row has both):
 * the fields are most likely named otherwise, and rejecting the whole file row by row says so
 * badly. It stops after MISSING_FIELD_ROWS such rows, or at the end of a smaller file, with a
 * UsageError naming the fields found, the flags, and a guess at the fields to pick. Until a row
 * has both fields the entries are held back (up to MAX_HELD), so a file stopped yields nothing;
 * once one has, the rows missing a field are rejects like any other.
 */
class FieldCheck {
  #settled = false;
  /** Non-blank lines read while unsettled. */
  #lines = 0;
  /** Object rows among them, each missing the id or the text field (or both). */
  #rows = 0;
  #idMissing = 0;
  #textMissing = 0;
  readonly #fields = new Map<string, FieldSample>();
  #held: CorpusEntry[] = [];
  #holding = true;

  constructor(private readonly options: JsonlReadOptions) {}

  /** Whether entries are held back. */
  get holds(): boolean {
    return this.#held.length > 0;
  }

  /** An object row: whether it had each field; throws once MISSING_FIELD_ROWS rows in a row had not both. */
  note(record: Record<string, unknown>, hasId: boolean, hasText: boolean): void {
    if (this.#settled) return;
    if (hasId && hasText) {
      this.#settled = true;
      return;
    }
    this.#rows += 1;
    if (!hasId) this.#idMissing += 1;
    if (!hasText) this.#textMissing += 1;
    for (const key of Object.keys(record).slice(0, 100)) {
      let sample = this.#fields.get(key);
      if (sample === undefined) {
        if (this.#fields.size >= MAX_FIELDS) continue;
        sample = newSample(key);
        this.#fields.set(key, sample);
      }
      countValue(sample, record[key]);
    }
    if (this.#rows >= MISSING_FIELD_ROWS) throw this.#error(`the first ${this.#rows} rows all`);
  }

  /** Holds a line's entry back while no row has had both fields; false: pass it on (after release()). */
  hold(entry: CorpusEntry | Promise<CorpusEntry>): boolean {
    if (this.#settled) return false;
    this.#lines += 1;
    // (A promise comes from a row with an image or audio: a row with the fields, which settled.)
    if (!this.#holding || entry instanceof Promise) return false;
    if (this.#held.length >= MAX_HELD) {
      this.#holding = false;
      return false;
    }
    this.#held.push(entry);
    return true;
  }

  /** The entries held back, in order; none held after. */
  release(): CorpusEntry[] {
    const held = this.#held;
    this.#held = [];
    return held;
  }

  /**
   * At the end of the file: throws when no object row had both fields, unless lines that are no
   * object row (broken JSON, arrays…) outnumber them (the file is then not the JSONL expected).
   */
  end(): void {
    const rows = this.#rows;
    if (this.#settled || rows === 0 || this.#lines - rows > rows) return;
    throw this.#error(rows === 1 ? 'its only row' : `all ${rows} rows`);
  }

  #error(rows: string): UsageError {
    const { file, idField, textField } = this.options;
    const n = this.#rows;
    const idName = `the id field ${JSON.stringify(idField)}`;
    const textName = `the text field ${JSON.stringify(textField)}`;
    const noId = this.#idMissing === n;
    const noText = this.#textMissing === n;
    const lack =
      noId && noText
        ? `${idName} and ${textName}`
        : noId
          ? idName
          : noText
            ? textName
            : `${idName} or ${textName}`;
    const samples = [...this.#fields.values()].sort((a, b) => b.rows - a.rows);
    const id = noId ? guessIdField(samples, idField, n, noText ? undefined : textField) : undefined;
    const text = noText ? guessTextField(samples, textField, n, id ?? idField) : undefined;
    const suggestion = flagSuggestion(id, text);
    const verb = n === 1 ? 'lacks' : 'lack';
    return new UsageError(
      `${file}: ${rows} ${verb} ${lack} (fields found: ${quotedNames(samples.map((s) => s.name))}); ` +
        `pick the fields with --id-field and --text-field${suggestion === '' ? '' : `, e.g. ${suggestion}`}`,
    );
  }
}

/** The entry for one line (a promise when the row names an image to read), or undefined for a blank line. */
function lineToEntry(
  line: RawLine | TextLine,
  options: JsonlReadOptions,
  fields: FieldCheck,
): CorpusEntry | Promise<CorpusEntry> | undefined {
  const { file } = options;
  const { number } = line;
  const json = 'text' in line ? lineText(line) : decodeLine(line, options);
  if (typeof json !== 'string') return json;
  if (isBlank(json)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return reject(file, number, Reason.unparseableLine((error as Error).message));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return reject(file, number, Reason.notAnObject(typeOf(value)));
  }

  const record = value as Record<string, unknown>;
  const idValue = fieldOf(record, options.idField);
  const text = fieldOf(record, options.textField);
  const image = fieldOf(record, options.imageField);
  const hasImage = isGiven(image);
  const audio = fieldOf(record, options.audioField);
  const hasAudio = isGiven(audio);
  fields.note(record, isGiven(idValue), (text !== undefined && text !== null) || hasImage || hasAudio);
  if (idValue === null) return reject(file, number, Reason.nullId);
  if (idValue === undefined) return reject(file, number, Reason.missingIdField(rowFields(record)));
  if (!isGiven(idValue)) return reject(file, number, Reason.missingId);
  const id = idText(idValue);
  if (id === undefined) return reject(file, number, idProblem(idValue));
  // JSON escapes can spell a lone surrogate ("\ud800"), which no UTF-8 output can store exactly.
  // isWellFormed: no lone surrogate; native, much faster than a \p{Surrogate} scan
  // (docs/benchmarks.md, "Design figures").
  if (!id.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('id'));
  if (hasAudio) {
    // The text is the transcript: the text field is not used.
    if (typeof audio !== 'string') return reject(file, number, Reason.nonStringAudio(typeOf(audio)), id);
    return audioRowEntry(options, number, id, audio);
  }
  if (hasImage) {
    // A caption may be absent, null or empty.
    if (typeof image !== 'string') return reject(file, number, Reason.nonStringImage(typeOf(image)), id);
    if (text !== undefined && text !== null && typeof text !== 'string')
      return reject(file, number, Reason.nonStringText(typeOf(text)), id);
    const caption = typeof text === 'string' ? text : '';
    if (!caption.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('text'), id);
    return imageRowEntry(options, number, id, caption, image);
  }
  if (text === null) return reject(file, number, Reason.nullText, id);
  if (text === undefined) return reject(file, number, Reason.missingTextField(rowFields(record)), id);
  if (typeof text !== 'string') return reject(file, number, Reason.nonStringText(typeOf(text)), id);
  if (!text.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('text'), id);
  return toEntry(options.ids, file, number, id, text);
}

/** A decoded line's JSON text (a leading BOM dropped from the first). */
function lineText({ number, text }: TextLine): string {
  return number === 1 && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** A raw line's JSON text, or the reject when it is too long or does not decode. */
function decodeLine(line: RawLine, options: JsonlReadOptions): string | CorpusEntry {
  const { file } = options;
  const { number } = line;
  if (line.bytes === undefined) return reject(file, number, Reason.tooLarge(line.size, options.maxLineBytes));
  const bytes = number === 1 ? stripBom(line.bytes) : line.bytes;
  const decoding = options.decoding ?? UTF8;
  // The line as in the file (BOM included), so the offset is the one an editor shows.
  return decoding.decode(bytes) ?? reject(file, number, decoding.problem(line.bytes, 'the line'));
}

/**
 * A JSON id as a document id: a string as is, a safe integer as its decimal digits (123 → "123"),
 * so the same document has the same id whichever way an export wrote it (ids key duplicate
 * detection and incremental runs). Anything else: undefined (idProblem says why).
 */
function idText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return Number.isSafeInteger(value) ? String(value) : undefined;
}

/** Why an id value that idText refused is no id. */
function idProblem(value: unknown): string {
  if (typeof value === 'number') {
    // Past 2^53 JSON.parse has already rounded the number: the digits in the file are lost.
    return Number.isInteger(value) || !Number.isFinite(value)
      ? Reason.unsafeIntegerId(value)
      : Reason.nonIntegerId(value);
  }
  if (typeof value === 'boolean') return Reason.nonStringId(`boolean ${value}`);
  return Reason.nonStringId(typeOf(value));
}

/** Own properties only: a field named "constructor" must not find Object.prototype's. */
function fieldOf(record: Record<string, unknown>, name: string | undefined): unknown {
  return name !== undefined && Object.hasOwn(record, name) ? record[name] : undefined;
}

/** A field that holds something: not absent, null or empty. */
function isGiven(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** Only spaces, tabs and CRs (JSON whitespace without LF). */
function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code !== 0x20 && code !== 0x09 && code !== 0x0d) return false;
  }
  return true;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
