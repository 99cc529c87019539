/**
 * The one place where an (id, text) pair read from any format becomes a document or a reject: the
 * same checks, in the same order, with the same stable reject wording for every reader.
 */
import type { AudioRef, CorpusEntry, ImageRef } from '../domain.js';
import type { WholeRead } from '../files/whole-read.js';
import type { IdRegistry } from './ids.js';
import type { TextDecoding } from './utf8.js';

/**
 * Most entries a file reader hands on at once: readers yield lists, not an entry at a time (each
 * level of async iteration an entry passes was a measurable share of planning, docs/benchmarks.md,
 * "a twenty-fifth session"), and not a whole read either, which would hold the first document back.
 */
export const PIECE_ENTRIES = 256;

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
  /** Told the sha256 and size of the file once a read of it reached its end (input-stream.ts). */
  readonly onWhole?: ((whole: WholeRead) => void) | undefined;
  /** How lines and fields are decoded (default UTF-8; an ASCII-compatible --encoding). */
  readonly decoding?: TextDecoding | undefined;
  /**
   * CSV column or JSONL property holding an image (http(s) URL, data URL, or a path relative to the
   * file): a row with one is a text+image document whose text may be empty; a row whose field is
   * empty (or, in JSONL, absent or null) is a text document.
   */
  readonly imageField?: string | undefined;
  /** Largest image in bytes (required with `imageField`). */
  readonly maxImageBytes?: number | undefined;
  /**
   * CSV column or JSONL property holding the path of an audio file (relative to the file): a row
   * with one is an audio document, its text the transcript (the text field is not used); a row
   * whose field is empty (or, in JSONL, absent or null) is a text document.
   */
  readonly audioField?: string | undefined;
  /** Largest audio file in bytes (required with `audioField`). */
  readonly maxAudioBytes?: number | undefined;
}

/** Lines a CSV quote read as one field, and the rows on them that are lost into its reject. */
function swallowedLines(from: number, to: number): string {
  const rows = to === from + 1 ? `the row on line ${to} is` : `the rows on lines ${from + 1}-${to} are`;
  return `lines ${from}-${to} read as one field (${rows} in this reject)`;
}

/** Reject reasons. Short and stable: users grep _rejects.jsonl for them. */
export const Reason = {
  missingId: 'missing id',
  nullId: 'missing id (null)',
  /** A JSONL row without the id field, with the fields it has: `missing id (fields: doc_id, body)`. */
  missingIdField: (fields: string) => `missing id ${fields}`,
  nonStringId: (what: string) => `non-string id (${what})`,
  nonIntegerId: (value: number) => `non-integer id (number ${value}): an id is a string or an integer`,
  unsafeIntegerId: (value: number) =>
    `id beyond 2^53 (number ${value} as read: JSON numbers this large lose digits): write the id as a string`,
  missingText: 'missing text',
  nullText: 'missing text (null)',
  /** A JSONL row without the text field, with the fields it has: `missing text (fields: id, body)`. */
  missingTextField: (fields: string) => `missing text ${fields}`,
  nonStringText: (type: string) => `non-string text (${type})`,
  emptyText: 'empty text',
  whitespaceText: 'whitespace-only text',
  unpairedSurrogate: (field: 'id' | 'text') => `${field} contains an unpaired surrogate`,
  duplicateId: (firstSeen: string) => `duplicate id (first seen at ${firstSeen})`,
  notAnObject: (type: string) => `not a JSON object (${type})`,
  unparseableLine: (message: string) => `unparseable line: ${message}`,
  unparseableRow: (message: string) => `unparseable row: ${message}`,
  /** A CSV quote never closed: it and every line after it were read as one field. */
  unterminatedQuote: (opened: number, last: number) =>
    last > opened
      ? `unparseable row: unterminated quote opened on line ${opened}: ${swallowedLines(opened, last)}; close the quote`
      : `unparseable row: unterminated quote opened on line ${opened}, the last line: close the quote`,
  swallowedLines,
  wrongColumnCount: (expected: number, got: number) => `wrong column count: expected ${expected}, got ${got}`,
  tooLarge: (bytes: number, limit: number) => `too large: ${bytes} bytes (limit ${limit})`,
  unreadableFile: (code: string) => `unreadable file (${code})`,
  unreadableFolder: (code: string) => `unreadable folder (${code})`,
  notRegularFile: (kind: string) => `not a regular file (${kind}): skipped`,
  symlinkOutside: (target: string) =>
    `symlink to ${target}, outside the input folder: skipped (pass --follow-symlinks to follow it)`,
  emptyImage: 'empty image (0 bytes)',
  imageTooLarge: (bytes: number, limit: number) =>
    `image too large: ${bytes} bytes (limit ${limit}, --max-image-bytes)`,
  notAnImage: (head: string) => `not a PNG, JPEG, GIF or WebP image (it starts with ${head || 'nothing'})`,
  corruptImage: (type: string, what: string) => `corrupt ${type} image: ${what}`,
  unreadableImage: (code: string) => `unreadable image (${code})`,
  invalidDataUrl: (why: string) => `invalid data URL: ${why}`,
  invalidImageUrl: 'invalid URL',
  unsupportedImageUrl: (scheme: string) =>
    `unsupported URL scheme ${scheme} (an image is an http(s) URL, a data URL or a local path)`,
  nonStringImage: (type: string) => `non-string image (${type})`,
  caption: (file: string, problem: string) => `caption ${file}: ${problem}`,
  emptyAudio: 'empty audio file (0 bytes)',
  audioTooLarge: (bytes: number, limit: number) =>
    `audio file too large: ${bytes} bytes (limit ${limit}, --max-audio-bytes)`,
  notAudio: (head: string) =>
    `not a WAV, MP3, FLAC, Ogg, M4A or WebM audio file (it starts with ${head || 'nothing'})`,
  corruptAudio: (type: string, what: string) => `corrupt ${type} audio: ${what}`,
  unsupportedAudio: (what: string) => `unsupported audio: ${what}`,
  unreadableAudio: (code: string) => `unreadable audio file (${code})`,
  audioNotLocal: (scheme: string) =>
    `unsupported ${scheme} URL (an audio field holds a local path, relative to the corpus file; URLs are not fetched)`,
  nonStringAudio: (type: string) => `non-string audio path (${type})`,
  audioChanged: 'the audio file changed while the run read it (its sha256 differs); a re-run reads it again',
  emptyTranscript: 'empty transcript (the gateway found no speech)',
  transcriptionRefused: (status: number, message: string) =>
    `the gateway would not transcribe it (${status}): ${message}`,
  captionTooLong: (tokens: number, budget: number) =>
    `caption too long: about ${tokens} tokens with its image, over the chunk budget of ${budget} ` +
    "(an image's document is one chunk, never split; shorten the caption)",
} as const;

export function reject(file: string, line: number, reason: string, id?: string): CorpusEntry {
  return { kind: 'reject', reject: id === undefined ? { file, line, reason } : { file, line, id, reason } };
}

const ONLY_WHITESPACE = /^\s*$/u;

/**
 * Checks a candidate document whose id and text are already known to be strings, and registers
 * its id. `text` is kept exactly as given: no trimming, no normalisation. With an image, the text
 * is its caption and may be empty; with audio, it is empty (the transcript, filled in later by
 * transcription/stage.ts).
 */
export function toEntry(
  ids: IdRegistry,
  file: string,
  line: number,
  id: string,
  text: string,
  media?: { readonly image: ImageRef } | { readonly audio: AudioRef },
): CorpusEntry {
  if (id === '') return reject(file, line, Reason.missingId);
  if (media === undefined && text === '') return reject(file, line, Reason.emptyText, id);
  if (media === undefined && ONLY_WHITESPACE.test(text)) return reject(file, line, Reason.whitespaceText, id);
  // Registered last: a rejected row never claims its id, so a later valid row with it still counts.
  const firstSeen = ids.claim(id, file, line);
  if (firstSeen !== undefined) return reject(file, line, Reason.duplicateId(firstSeen), id);
  const document = { id, text, source: file, line };
  return { kind: 'document', document: media === undefined ? document : { ...document, ...media } };
}
