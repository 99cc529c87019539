/**
 * Corpus readers: a CSV file, a JSONL file, or a folder (or single file) of plain text, read as a
 * stream of documents and rejects in corpus order. Memory does not grow with the corpus, except
 * for the compact registry of ids used to detect duplicates.
 *
 * Problems with the whole input (missing, unreadable, no usable CSV header, empty folder) are
 * thrown as UsageError; problems with one entry become a reject and reading goes on.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { DEFAULTS } from '../config/defaults.js';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { readCsv } from './csv.js';
import { IdRegistry } from './ids.js';
import { readJsonl } from './jsonl.js';
import { CorpusStats } from './stats.js';
import { readTextFile, readTextFolder } from './text-folder.js';

export { CorpusStats } from './stats.js';

export type CorpusFormat = 'csv' | 'jsonl' | 'text';

export interface CorpusOptions {
  /** A .csv, .jsonl/.ndjson, .txt/.md file, or a folder of .txt/.md files. */
  readonly path: string;
  /** Overrides detection from the extension. */
  readonly format?: CorpusFormat;
  /** CSV column or JSONL property holding the document id. */
  readonly idField: string;
  /** CSV column or JSONL property holding the text. */
  readonly textField: string;
  /** Updated while reading, for progress displays. */
  readonly stats?: CorpusStats;
  /** Called with the size of every piece of input read from disk (for a progress ETA). */
  readonly onBytes?: (bytes: number) => void;
  /** Follow symlinks in a text folder that point outside it (default: each is a reject). */
  readonly followSymlinks?: boolean;
  /**
   * Largest entry (CSV record, JSONL line, text file) in bytes; default 64 MiB. A larger JSONL
   * line or text file is rejected; a larger CSV record (an unclosed quote, usually) is a UsageError.
   */
  readonly maxEntryBytes?: number;
}

export const DEFAULT_MAX_ENTRY_BYTES: number = DEFAULTS.maxEntryBytes;

/** The format implied by a path: .csv, .jsonl/.ndjson, or text for a folder or a .txt/.md file. */
export function detectFormat(path: string, stat: { isDirectory(): boolean }): CorpusFormat {
  if (stat.isDirectory()) return 'text';
  // `docs.jsonl.gz`, `docs.csv.gz`: the format of what is inside (gzip is sniffed when read).
  const extension = extname(path.replace(/\.gz$/i, '')).toLowerCase();
  if (extension === '.csv') return 'csv';
  if (extension === '.jsonl' || extension === '.ndjson') return 'jsonl';
  if (extension === '.txt' || extension === '.md') return 'text';
  throw new UsageError(
    `cannot tell the format of ${path} from its extension: pass --format csv, --format jsonl or --format text`,
  );
}

/**
 * Documents and rejects of a corpus, in corpus order. Nothing is read until iteration starts;
 * whole-input problems are thrown (UsageError) from the first step. Duplicate ids are detected
 * per call: the first occurrence wins.
 */
export function openCorpus(options: CorpusOptions): AsyncIterable<CorpusEntry> {
  return read(options);
}

async function* read(options: CorpusOptions): AsyncGenerator<CorpusEntry> {
  const { path } = options;
  const stats = options.stats ?? new CorpusStats();
  const info = await statInput(path);
  const format = options.format ?? detectFormat(path, info);
  const folder = info.isDirectory();
  if (folder && format !== 'text') {
    throw new UsageError(`${path} is a folder: --format ${format} needs a file`);
  }
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
    ids: new IdRegistry(),
    maxEntryBytes: options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES,
    followSymlinks: options.followSymlinks ?? false,
    onBytes: (bytes) => {
      stats.bytesRead += bytes;
      options.onBytes?.(bytes);
    },
  };
  const entries = reader(format, folder, reading, (total) => {
    stats.totalBytes = total;
  });
  let any = false;
  for await (const entry of entries) {
    any = true;
    if (entry.kind === 'document') stats.documents += 1;
    else stats.rejects += 1;
    yield entry;
  }
  // An input with no row at all (an empty file, a CSV of a header only) is a mistake, not a dataset.
  if (!any) {
    throw new UsageError(
      `no documents in the input: ${path} holds no ${format === 'csv' ? 'CSV record below its header' : format === 'jsonl' ? 'JSON line' : 'text'}`,
    );
  }
}

interface ReaderOptions {
  readonly path: string;
  readonly file: string;
  readonly idField: string;
  readonly textField: string;
  readonly ids: IdRegistry;
  readonly maxEntryBytes: number;
  readonly followSymlinks: boolean;
  readonly onBytes: (bytes: number) => void;
}

function reader(
  format: CorpusFormat,
  folder: boolean,
  options: ReaderOptions,
  onTotalBytes: (bytes: number) => void,
): AsyncIterable<CorpusEntry> {
  const { maxEntryBytes } = options;
  switch (format) {
    case 'csv':
      return readCsv({ ...options, maxRecordBytes: maxEntryBytes });
    case 'jsonl':
      return readJsonl({ ...options, maxLineBytes: maxEntryBytes });
    case 'text':
      return folder
        ? readTextFolder({ ...options, maxFileBytes: maxEntryBytes, onTotalBytes })
        : readTextFile({ ...options, maxFileBytes: maxEntryBytes });
  }
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
