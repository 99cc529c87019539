/**
 * The one place where an (id, text) pair read from any format becomes a document or a reject: the
 * same checks, in the same order, with the same stable reject wording for every reader.
 */
import type { CorpusEntry } from '../domain.js';
import type { IdRegistry } from './ids.js';

/** Reject reasons. Short and stable: users grep _rejects.jsonl for them. */
/** What every file reader of a corpus is given. */
export interface FileReadOptions {
  /** The file to read. */
  readonly path: string;
  /** How the file is named in documents and rejects (the path as the user gave it). */
  readonly file: string;
  readonly idField: string;
  readonly textField: string;
  readonly ids: IdRegistry;
  /** Called with the size of every piece of input read. */
  readonly onBytes: (bytes: number) => void;
}

export const Reason = {
  invalidUtf8: 'invalid UTF-8',
  missingId: 'missing id',
  nonStringId: (type: string) => `non-string id (${type})`,
  missingText: 'missing text',
  nonStringText: (type: string) => `non-string text (${type})`,
  emptyText: 'empty text',
  whitespaceText: 'whitespace-only text',
  unpairedSurrogate: (field: 'id' | 'text') => `${field} contains an unpaired surrogate`,
  duplicateId: (firstSeen: string) => `duplicate id (first seen at ${firstSeen})`,
  notAnObject: (type: string) => `not a JSON object (${type})`,
  unparseableLine: (message: string) => `unparseable line: ${message}`,
  unparseableRow: (message: string) => `unparseable row: ${message}`,
  wrongColumnCount: (expected: number, got: number) => `wrong column count: expected ${expected}, got ${got}`,
  tooLarge: (bytes: number, limit: number) => `too large: ${bytes} bytes (limit ${limit})`,
  unreadableFile: (code: string) => `unreadable file (${code})`,
  unreadableFolder: (code: string) => `unreadable folder (${code})`,
  notRegularFile: (kind: string) => `not a regular file (${kind}): skipped`,
  symlinkOutside: (target: string) =>
    `symlink to ${target}, outside the input folder: skipped (pass --follow-symlinks to follow it)`,
} as const;

export function reject(file: string, line: number, reason: string, id?: string): CorpusEntry {
  return { kind: 'reject', reject: id === undefined ? { file, line, reason } : { file, line, id, reason } };
}

const ONLY_WHITESPACE = /^\s*$/u;

/**
 * Checks a candidate document whose id and text are already known to be strings, and registers
 * its id. `text` is kept exactly as given: no trimming, no normalisation.
 */
export function toEntry(ids: IdRegistry, file: string, line: number, id: string, text: string): CorpusEntry {
  if (id === '') return reject(file, line, Reason.missingId);
  if (text === '') return reject(file, line, Reason.emptyText, id);
  if (ONLY_WHITESPACE.test(text)) return reject(file, line, Reason.whitespaceText, id);
  // Registered last: a rejected row never claims its id, so a later valid row with it still counts.
  const firstSeen = ids.claim(id, file, line);
  if (firstSeen !== undefined) return reject(file, line, Reason.duplicateId(firstSeen), id);
  return { kind: 'document', document: { id, text, source: file, line } };
}
