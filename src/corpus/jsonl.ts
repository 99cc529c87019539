/**
 * JSONL corpus reader: one JSON object per line. Lines are split as bytes and decoded one by one
 * with a fatal decoder, so a bad line (invalid UTF-8, broken JSON, wrong types) rejects only itself.
 * Blank lines are skipped silently but still counted, so line numbers match an editor's.
 */
import { createReadStream } from 'node:fs';
import type { CorpusEntry } from '../domain.js';
import type { FileReadOptions } from './entries.js';
import { Reason, reject, toEntry } from './entries.js';
import { LineSplitter, type RawLine } from './lines.js';
import { decodeUtf8, stripBom } from './utf8.js';

export interface JsonlReadOptions extends FileReadOptions {
  /** A longer line is rejected without being held in memory. */
  readonly maxLineBytes: number;
}

export async function* readJsonl(options: JsonlReadOptions): AsyncGenerator<CorpusEntry> {
  const lines = new LineSplitter(options.maxLineBytes);
  for await (const chunk of createReadStream(options.path) as AsyncIterable<Buffer>) {
    options.onBytes(chunk.length);
    for (const line of lines.push(chunk)) {
      const entry = lineToEntry(line, options);
      if (entry !== undefined) yield entry;
    }
  }
  for (const line of lines.end()) {
    const entry = lineToEntry(line, options);
    if (entry !== undefined) yield entry;
  }
}

/** The entry for one line, or undefined for a blank line. */
function lineToEntry(line: RawLine, options: JsonlReadOptions): CorpusEntry | undefined {
  const { file } = options;
  const { number } = line;
  if (line.bytes === undefined) return reject(file, number, Reason.tooLarge(line.size, options.maxLineBytes));
  const bytes = number === 1 ? stripBom(line.bytes) : line.bytes;
  if (isBlank(bytes)) return undefined;

  const json = decodeUtf8(bytes);
  if (json === undefined) return reject(file, number, Reason.invalidUtf8);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return reject(file, number, Reason.unparseableLine((error as Error).message));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return reject(file, number, Reason.notAnObject(typeOf(value)));
  }

  // Own properties only: a field named "constructor" must not find Object.prototype's.
  const record = value as Record<string, unknown>;
  const id = Object.hasOwn(record, options.idField) ? record[options.idField] : undefined;
  const text = Object.hasOwn(record, options.textField) ? record[options.textField] : undefined;
  if (id === undefined || id === null || id === '') return reject(file, number, Reason.missingId);
  if (typeof id !== 'string') return reject(file, number, Reason.nonStringId(typeOf(id)));
  // JSON escapes can spell a lone surrogate ("\ud800"), which no UTF-8 output can store exactly.
  // isWellFormed: no lone surrogate; native, ~10× faster than a \p{Surrogate} scan.
  if (!id.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('id'));
  if (text === undefined || text === null) return reject(file, number, Reason.missingText, id);
  if (typeof text !== 'string') return reject(file, number, Reason.nonStringText(typeOf(text)), id);
  if (!text.isWellFormed()) return reject(file, number, Reason.unpairedSurrogate('text'), id);
  return toEntry(options.ids, file, number, id, text);
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
