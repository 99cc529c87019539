/**
 * JSONL corpus reader: one JSON object per line. Lines are split as bytes and decoded one by one
 * with a fatal decoder, so a bad line (invalid UTF-8, broken JSON, wrong types) rejects only itself.
 * Blank lines are skipped silently but still counted, so line numbers match an editor's. An id is a
 * string or an integer (the usual export), read as its decimal digits: 123 and "123" are one id.
 */
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { LineSplitter, type RawLine } from '../files/lines.js';
import { audioRowEntry } from './audio.js';
import type { FileReadOptions } from './entries.js';
import { Reason, reject, toEntry } from './entries.js';
import { imageRowEntry } from './images.js';
import { inputBytes, LARGE_READS } from './input-stream.js';
import { stripBom, UTF8 } from './utf8.js';

export interface JsonlReadOptions extends FileReadOptions {
  /** A longer line is rejected without being held in memory. */
  readonly maxLineBytes: number;
}

/** Leading rows all missing the id or text field after which the read stops (wrong --id-field?). */
const MISSING_FIELD_ROWS = 100;

export async function* readJsonl(options: JsonlReadOptions): AsyncGenerator<CorpusEntry> {
  const lines = new LineSplitter(options.maxLineBytes);
  const fields = new FieldCheck(options);
  for await (const chunk of inputBytes(options.path, options.file, options.onBytes, LARGE_READS)) {
    for (const line of lines.push(chunk)) {
      const entry = lineToEntry(line, options, fields);
      if (entry !== undefined) yield entry instanceof Promise ? await entry : entry;
    }
  }
  for (const line of lines.end()) {
    const entry = lineToEntry(line, options, fields);
    if (entry !== undefined) yield entry instanceof Promise ? await entry : entry;
  }
}

/**
 * Stops the read early when the first rows are all objects missing the id or the text field: the
 * fields are most likely named otherwise, and rejecting the whole file row by row says so badly.
 */
class FieldCheck {
  #settled = false;
  #missing = 0;
  readonly #seen = new Map<string, number>();

  constructor(private readonly options: JsonlReadOptions) {}

  /** An object row: whether it had both fields; throws once MISSING_FIELD_ROWS rows in a row had not. */
  note(record: Record<string, unknown>, hasFields: boolean): void {
    if (this.#settled) return;
    if (hasFields) {
      this.#settled = true;
      return;
    }
    this.#missing += 1;
    for (const key of Object.keys(record).slice(0, 100)) this.#seen.set(key, (this.#seen.get(key) ?? 0) + 1);
    if (this.#missing < MISSING_FIELD_ROWS) return;
    const { file, idField, textField } = this.options;
    const found = [...this.#seen.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([key]) => JSON.stringify(key));
    throw new UsageError(
      `${file}: the first ${this.#missing} rows all lack the id field ${JSON.stringify(idField)} or the text ` +
        `field ${JSON.stringify(textField)}; fields found: ${found.join(', ') || '(none)'}. ` +
        'Pick them with --id-field and --text-field',
    );
  }
}

/** The entry for one line (a promise when the row names an image to read), or undefined for a blank line. */
function lineToEntry(
  line: RawLine,
  options: JsonlReadOptions,
  fields: FieldCheck,
): CorpusEntry | Promise<CorpusEntry> | undefined {
  const { file } = options;
  const { number } = line;
  if (line.bytes === undefined) return reject(file, number, Reason.tooLarge(line.size, options.maxLineBytes));
  const bytes = number === 1 ? stripBom(line.bytes) : line.bytes;
  if (isBlank(bytes)) return undefined;

  const decoding = options.decoding ?? UTF8;
  const json = decoding.decode(bytes);
  // The line as in the file (BOM included), so the offset is the one an editor shows.
  if (json === undefined) return reject(file, number, decoding.problem(line.bytes, 'the line'));
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
  fields.note(record, isGiven(idValue) && ((text !== undefined && text !== null) || hasImage || hasAudio));
  if (!isGiven(idValue)) return reject(file, number, idValue === null ? Reason.nullId : Reason.missingId);
  const id = idText(idValue);
  if (id === undefined) return reject(file, number, idProblem(idValue));
  // JSON escapes can spell a lone surrogate ("\ud800"), which no UTF-8 output can store exactly.
  // isWellFormed: no lone surrogate; native, ~10× faster than a \p{Surrogate} scan.
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
  if (text === undefined || text === null) return reject(file, number, Reason.missingText, id);
  if (typeof text !== 'string') return reject(file, number, Reason.nonStringText(typeOf(text)), id);
  if (!text.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('text'), id);
  return toEntry(options.ids, file, number, id, text);
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
function isBlank(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
