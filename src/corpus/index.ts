/**
 * Corpus readers: a CSV file, a JSONL file (either with an optional image or audio field), a folder
 * (or single file) of plain text, a folder of images with captions (or a single image), or a folder
 * of audio files (or a single one), read as a stream of documents and rejects in corpus order. An
 * audio document's text is empty here: the run transcribes it (transcription/stage.ts). Memory does
 * not grow with the corpus, except for the compact registry of ids used to detect duplicates.
 *
 * Problems with the whole input (missing, unreadable, no usable CSV header, empty folder) are
 * thrown as UsageError; problems with one entry become a reject and reading goes on.
 */
import { constants, type Dirent, readdirSync, statSync } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { DEFAULTS } from '../config/defaults.js';
import type { RunSettings } from '../config/settings.js';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { isAudioFileName, isImageFileName } from '../files/file-kinds.js';
import type { WholeRead } from '../files/whole-read.js';
import { readAudioFolder, readSingleAudio } from './audio-folder.js';
import type { CsvReadOptions } from './csv.js';
import { IdRegistry } from './ids.js';
import { readImageFolder, readSingleImage } from './image-folder.js';
import { readJsonl } from './jsonl.js';
import { CorpusStats } from './stats.js';
import { readTextFile, readTextFolder } from './text-folder.js';
import { ENCODING_EXAMPLES, TextDecoding } from './utf8.js';

export { CorpusStats } from './stats.js';

export type CorpusFormat = 'csv' | 'jsonl' | 'text' | 'images' | 'audio';

export interface CorpusOptions {
  /** A .csv, .jsonl/.ndjson, .txt/.md, image or audio file, or a folder of .txt/.md files, images or audio. */
  readonly path: string;
  /** Overrides detection from the extension. */
  readonly format?: CorpusFormat;
  /** CSV column or JSONL property holding the document id. */
  readonly idField: string;
  /** CSV column or JSONL property holding the text. */
  readonly textField: string;
  /**
   * Encoding label (`--encoding`; default utf-8) for text that is not valid UTF-8: text files (and
   * captions), and with an ASCII-compatible encoding, CSV fields and JSONL lines. UsageError when
   * unknown, or when it is UTF-16 and the input is CSV or JSONL.
   */
  readonly encoding?: string | undefined;
  /** CSV column or JSONL property holding an image (URL, data URL or path); CSV and JSONL only. */
  readonly imageField?: string | undefined;
  /** Largest image in bytes; default DEFAULTS.images.maxBytes. */
  readonly maxImageBytes?: number | undefined;
  /** CSV column or JSONL property holding the path of an audio file (relative to the file); CSV and JSONL only. */
  readonly audioField?: string | undefined;
  /** Largest audio file in bytes; default DEFAULTS.audio.maxBytes. */
  readonly maxAudioBytes?: number | undefined;
  /** Updated while reading, for progress displays. */
  readonly stats?: CorpusStats;
  /** Called with the size of every piece of input read from disk (for a progress ETA). */
  readonly onBytes?: (bytes: number) => void;
  /** Hash a single CSV or JSONL file as it is read: `stats.wholeRead` once read to its end. */
  readonly digest?: boolean;
  /** Follow symlinks in a text folder that point outside it (default: each is a reject). */
  readonly followSymlinks?: boolean;
  /**
   * Largest entry (CSV record, JSONL line, text file) in bytes; default 64 MiB. A larger JSONL
   * line or text file is rejected; a larger CSV record (an unclosed quote, usually) is a UsageError.
   */
  readonly maxEntryBytes?: number;
}

export const DEFAULT_MAX_ENTRY_BYTES: number = DEFAULTS.maxEntryBytes;

/**
 * The format implied by a path: .csv, .jsonl/.ndjson, text for a .txt/.md file, images for an image
 * file, audio for an audio file; a folder is `images` when it holds any image file (anywhere in
 * it), `audio` when it holds audio files and no image, else `text`. A folder holding both images
 * and audio is refused (UsageError): `--format images` or `--format audio` says which to read.
 */
export function detectFormat(path: string, stat: { isDirectory(): boolean }): CorpusFormat {
  if (stat.isDirectory()) {
    const holds = folderHolds(path);
    if (holds.images && holds.audio) {
      throw new UsageError(
        `${path} holds both images and audio files: pass --format images (its images, their captions and ` +
          'its text files; the audio is not read) or --format audio (its audio files, transcribed, and its ' +
          'text files; the images are not read)',
      );
    }
    return holds.images ? 'images' : holds.audio ? 'audio' : 'text';
  }
  // `docs.jsonl.gz`, `docs.csv.gz`: the format of what is inside (gzip is sniffed when read).
  const extension = extname(path.replace(/\.gz$/i, '')).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  if (extension === '.txt' || extension === '.md') return 'text';
  if (isImageFileName(path)) return 'images';
  if (isAudioFileName(path)) return 'audio';
  throw new UsageError(
    `cannot tell the format of ${path} from its extension: pass --format csv, --format jsonl or --format text`,
  );
}

/**
 * Whether a folder holds image files and audio files (by name; hidden entries skipped; symlinked
 * folders not entered), stopping once both are found.
 */
function folderHolds(root: string): { images: boolean; audio: boolean } {
  const holds = { images: false, audio: false };
  const pending = [root];
  while (pending.length > 0) {
    const folder = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(folder, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      if (entry.isDirectory()) pending.push(join(folder, entry.name));
      else if (entry.isFile() || entry.isSymbolicLink()) {
        if (isImageFileName(entry.name)) holds.images = true;
        else if (isAudioFileName(entry.name)) holds.audio = true;
        if (holds.images && holds.audio) return holds;
      }
    }
  }
  return holds;
}

/**
 * The format a corpus will be read in, decided before anything is read (a run checks the model's
 * input modalities against it before it spends anything): `format` when given, else detected
 * from the path. Undefined when the input does not exist (reading it says so). Throws UsageError
 * for combinations no reader takes (--image-field on a folder, --format images on a CSV…).
 */
export function resolveCorpusFormat(options: {
  readonly path: string;
  readonly format?: CorpusFormat | undefined;
  readonly imageField?: string | undefined;
  readonly audioField?: string | undefined;
}): CorpusFormat | undefined {
  const { path, imageField, audioField } = options;
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(path);
  } catch {
    return options.format;
  }
  const format = options.format ?? detectFormat(path, info);
  checkCombination(path, info.isDirectory(), format, imageField, audioField);
  return format;
}

function checkCombination(
  path: string,
  folder: boolean,
  format: CorpusFormat,
  imageField: string | undefined,
  audioField: string | undefined,
): void {
  if (folder && format !== 'text' && format !== 'images' && format !== 'audio') {
    throw new UsageError(`${path} is a folder: --format ${format} needs a file`);
  }
  if (!folder && format === 'images' && !isImageFileName(path)) {
    throw new UsageError(
      `--format images reads a folder of images (or one .png/.jpg/.gif/.webp file); ${path} is not one. ` +
        'For a CSV or JSONL file naming images, use --image-field',
    );
  }
  if (!folder && format === 'audio' && !isAudioFileName(path)) {
    throw new UsageError(
      `--format audio reads a folder of audio files (or one .wav/.mp3/.flac/.ogg/.m4a/.webm file); ${path} is not one. ` +
        'For a CSV or JSONL file naming audio files, use --audio-field',
    );
  }
  if (imageField !== undefined && audioField !== undefined) {
    throw new UsageError(
      '--image-field and --audio-field cannot be combined: a document is text with an image, or a transcript',
    );
  }
  if (audioField !== undefined && format !== 'csv' && format !== 'jsonl') {
    throw new UsageError(
      `--audio-field names a CSV column or JSONL property, but ${path} is read as ${folder ? 'a folder' : format}` +
        (folder ? ' (in a folder of audio files every audio file is a document: --format audio)' : ''),
    );
  }
  if (imageField !== undefined && format !== 'csv' && format !== 'jsonl') {
    throw new UsageError(
      `--image-field names a CSV column or JSONL property, but ${path} is read as ${folder ? 'a folder' : format}` +
        (folder ? ' (in a folder of images every image is a document, its caption the .txt beside it)' : ''),
    );
  }
}

/** The corpus reader's options from the run settings. */
export function corpusOptions(settings: RunSettings) {
  return {
    path: settings.input,
    ...(settings.format ? { format: settings.format } : {}),
    idField: settings.idField,
    textField: settings.textField,
    ...(settings.imageField !== undefined ? { imageField: settings.imageField } : {}),
    maxImageBytes: settings.maxImageBytes,
    ...(settings.audioField !== undefined ? { audioField: settings.audioField } : {}),
    maxAudioBytes: settings.maxAudioBytes,
    followSymlinks: settings.followSymlinks,
    encoding: settings.encoding,
  };
}

/**
 * Documents and rejects of a corpus, in corpus order. Nothing is read until iteration starts;
 * whole-input problems are thrown (UsageError) from the first step. Duplicate ids are detected
 * per call: the first occurrence wins.
 */
export async function* openCorpus(options: CorpusOptions): AsyncGenerator<CorpusEntry> {
  for await (const piece of read(options)) yield* piece;
}

/**
 * openCorpus's entries a piece at a time, in corpus order (a JSONL file's per read of it, each
 * other format's one by one): what a reader of every entry takes, without an async step for each
 * (docs/benchmarks.md, "a twenty-fifth session").
 */
export function openCorpusPieces(options: CorpusOptions): AsyncIterable<readonly CorpusEntry[]> {
  return read(options);
}

async function* read(options: CorpusOptions): AsyncGenerator<readonly CorpusEntry[]> {
  const { path } = options;
  const stats = options.stats ?? new CorpusStats();
  const info = await statInput(path);
  const format = options.format ?? detectFormat(path, info);
  const folder = info.isDirectory();
  checkCombination(path, folder, format, options.imageField, options.audioField);
  const decoding = decodingFor(options.encoding, format);
  if (!folder) {
    await access(path, constants.R_OK).catch((error: NodeJS.ErrnoException) => {
      throw new UsageError(`cannot read input ${path} (${error.code ?? error.message})`);
    });
    stats.totalBytes = info.size;
  }

  const reading: ReaderOptions = {
    path,
    file: path,
    idField: options.idField,
    textField: options.textField,
    decoding,
    imageField: options.imageField,
    maxImageBytes: options.maxImageBytes ?? DEFAULTS.images.maxBytes,
    audioField: options.audioField,
    maxAudioBytes: options.maxAudioBytes ?? DEFAULTS.audio.maxBytes,
    ids: new IdRegistry(),
    maxEntryBytes: options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES,
    followSymlinks: options.followSymlinks ?? false,
    onBytes: (bytes) => {
      stats.bytesRead += bytes;
      options.onBytes?.(bytes);
    },
    // A file's first read to its end (a CSV may be read twice: any whole read has the same bytes).
    ...(!folder &&
      options.digest && {
        onWhole: (whole: WholeRead) => {
          stats.wholeRead ??= whole;
        },
      }),
  };
  const entries = reader(format, folder, reading, (total) => {
    stats.totalBytes = total;
  });
  let any = false;
  try {
    for await (const piece of entries) {
      any = true;
      for (const entry of piece) {
        if (entry.kind === 'document') stats.documents += 1;
        else stats.rejects += 1;
      }
      yield piece;
    }
  } finally {
    reading.ids.close();
  }
  // An input with no row at all (an empty file, a CSV of a header only) is a mistake, not a dataset.
  if (!any) throw new UsageError(`no documents in the input: ${path} holds no ${NOTHING_READ[format]}`);
}

/** What an input of each format holds none of, when it yields no entry at all. */
const NOTHING_READ: Readonly<Record<CorpusFormat, string>> = {
  csv: 'CSV record below its header',
  jsonl: 'JSON line',
  text: 'text',
  images: 'image',
  audio: 'audio file',
};

interface ReaderOptions {
  readonly path: string;
  readonly file: string;
  readonly idField: string;
  readonly textField: string;
  readonly decoding: TextDecoding;
  readonly imageField: string | undefined;
  readonly maxImageBytes: number;
  readonly audioField: string | undefined;
  readonly maxAudioBytes: number;
  readonly ids: IdRegistry;
  readonly maxEntryBytes: number;
  readonly followSymlinks: boolean;
  readonly onBytes: (bytes: number) => void;
  readonly onWhole?: ((whole: WholeRead) => void) | undefined;
}

function reader(
  format: CorpusFormat,
  folder: boolean,
  options: ReaderOptions,
  onTotalBytes: (bytes: number) => void,
): AsyncIterable<readonly CorpusEntry[]> {
  const { maxEntryBytes } = options;
  switch (format) {
    case 'csv':
      return readCsvLazily({ ...options, maxRecordBytes: maxEntryBytes });
    case 'jsonl':
      return readJsonl({ ...options, maxLineBytes: maxEntryBytes });
    case 'text':
      return oneByOne(
        folder
          ? readTextFolder({ ...options, maxFileBytes: maxEntryBytes, onTotalBytes })
          : readTextFile({ ...options, maxFileBytes: maxEntryBytes }),
      );
    case 'images':
      return oneByOne(
        folder
          ? readImageFolder({ ...options, maxFileBytes: maxEntryBytes, onTotalBytes })
          : readSingleImage({ ...options, maxFileBytes: maxEntryBytes }),
      );
    case 'audio':
      return oneByOne(
        folder
          ? readAudioFolder({ ...options, maxFileBytes: maxEntryBytes, onTotalBytes })
          : readSingleAudio({ ...options, maxFileBytes: maxEntryBytes }),
      );
  }
}

/** Entries read one at a time, as pieces of one (openCorpusPieces's shape). */
export async function* oneByOne(entries: AsyncIterable<CorpusEntry>): AsyncGenerator<readonly CorpusEntry[]> {
  for await (const entry of entries) yield [entry];
}

/** The decoding of an --encoding label for a corpus of `format`. */
function decodingFor(label: string | undefined, format: CorpusFormat): TextDecoding {
  let decoding: TextDecoding;
  try {
    decoding = new TextDecoding(label);
  } catch {
    throw new UsageError(`unknown encoding "${label}": use ${ENCODING_EXAMPLES}`);
  }
  if (!decoding.asciiCompatible && (format === 'csv' || format === 'jsonl')) {
    // Rows are found by splitting the bytes on ASCII line breaks, commas and quotes.
    throw new UsageError(
      `--encoding ${decoding.encoding} reads text files only: a ${format.toUpperCase()} file must be UTF-8 or an ` +
        `ASCII-compatible encoding such as windows-1252 (convert it: iconv -f ${decoding.encoding} -t utf-8)`,
    );
  }
  return decoding;
}

async function statInput(path: string) {
  try {
    return await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new UsageError(`input not found: ${path}`);
    throw new UsageError(`cannot read input ${path} (${code ?? String(error)})`);
  }
}

/**
 * csv-parse is loaded for CSV corpora only (a measurable part of every other run's start-up:
 * docs/benchmarks.md, "Design figures").
 */
async function* readCsvLazily(options: CsvReadOptions): AsyncGenerator<CorpusEntry[]> {
  const { readCsv } = await import('./csv.js');
  yield* readCsv(options);
}
