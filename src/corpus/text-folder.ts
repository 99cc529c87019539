/**
 * Plain-text corpora: a folder of .txt/.md files (one document per file, walked recursively), or
 * a single such file. Files are whole documents, so each is read at once; only the list of paths
 * is held for the whole folder (it has to be sorted).
 *
 * Order is deterministic across runs and machines: relative paths sorted by code points (compared
 * as UTF-8 bytes, which orders like code points; JS string order is UTF-16 code units and puts
 * astral characters before U+E000–U+FFFF). Hidden entries (leading dot) are skipped; symlinks are
 * followed, except into a folder that is already on the current path (a loop), and, unless
 * `followSymlinks`, out of the input folder (a reject names each). Anything neither a file nor a
 * folder (a FIFO, a socket, a device) is a reject, never opened: a FIFO would block the read.
 */
import { type Dirent, readFileSync, statSync } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, relative } from 'node:path';
import { setImmediate } from 'node:timers/promises';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { stripBom } from '../files/bom.js';
import { isTextFileName } from '../files/file-kinds.js';
import { errorCode } from '../files/planned-media.js';
import { SYNC_READ_BYTES } from '../files/sync-read.js';
import { sortedByUtf8 } from '../files/utf8-order.js';
import { PIECE_ENTRIES, Reason, reject, toEntry } from './entries.js';
import type { IdRegistry } from './ids.js';
import { type TextDecoding, UTF8 } from './utf8.js';

export interface TextReadOptions {
  /** The folder or file to read. */
  readonly path: string;
  /** How the input is named in messages (the path as the user gave it). */
  readonly file: string;
  readonly ids: IdRegistry;
  /** Called with the size of every piece of input read. */
  readonly onBytes: (bytes: number) => void;
  /** A larger file is rejected without being read. */
  readonly maxFileBytes: number;
  /** Called once with the total size of the folder's .txt/.md files, before reading them. */
  readonly onTotalBytes?: (bytes: number) => void;
  /** Follow symlinks that point outside the folder (default: each is a reject). */
  readonly followSymlinks?: boolean;
  /** How files are decoded (default UTF-8; --encoding). */
  readonly decoding?: TextDecoding | undefined;
}

/** A file found in the folder. */
export interface FoundFile {
  readonly rel: string;
  readonly abs: string;
  readonly size: number;
}

/** A file found in the folder, or a problem found while walking it. */
export type Found = FoundFile | { readonly rel: string; readonly problem: string; readonly isFile: boolean };

/** Every .txt/.md file of a folder: id and source are the path relative to the folder, with `/`. */
export async function* readTextFolder(options: TextReadOptions): AsyncGenerator<CorpusEntry> {
  const found = await walkFolder(options.path, options.file, options.followSymlinks ?? false, isTextFileName);
  if (found.length === 0) throw new UsageError(`no .txt or .md files in folder ${options.file}`);
  yield* readFound(found, options);
}

/**
 * The entries of a folder walk, in its order, after telling `onTotalBytes` the size of all it found:
 * a walk problem is a reject naming the entry (a file's path is its id); a file is what `read`
 * makes of it, or else (`read` returns undefined) a text document. `skip` leaves out files read
 * with another (an image's caption).
 */
export async function* readFound(
  found: readonly Found[],
  options: TextReadOptions,
  read?: (file: FoundFile) => Promise<CorpusEntry> | undefined,
  skip?: (item: Found) => boolean,
): AsyncGenerator<CorpusEntry> {
  options.onTotalBytes?.(found.reduce((sum, item) => sum + ('size' in item ? item.size : 0), 0));
  let sinceTurn = 0;
  for (const item of found) {
    if (skip?.(item)) continue;
    // Small files are read synchronously (readText): a turn of the event loop now and then lets
    // the answers that came in meanwhile be read, as a stream's reads do for the other formats.
    if (++sinceTurn >= PIECE_ENTRIES) {
      sinceTurn = 0;
      await setImmediate();
    }
    if ('problem' in item) yield reject(item.rel, 1, item.problem, item.isFile ? item.rel : undefined);
    else yield await (read?.(item) ?? readTextDocument(item.abs, item.rel, item.rel, item.size, options));
  }
}

/** One text file as one document, its id the file's base name. */
export async function* readTextFile(options: TextReadOptions): AsyncGenerator<CorpusEntry> {
  const { size } = await stat(options.path);
  yield await readTextDocument(options.path, options.file, basename(options.path), size, options);
}

/** One text file as one document (`file` names it in the document and its rejects). */
async function readTextDocument(
  path: string,
  file: string,
  id: string,
  size: number,
  options: TextReadOptions,
): Promise<CorpusEntry> {
  const read = await readText(path, size, options);
  if ('problem' in read) return reject(file, 1, read.problem, id);
  return toEntry(options.ids, file, 1, id, read.text);
}

/** A text file's text, exactly as written (less a BOM), or why it cannot be one (a reject reason). */
export async function readText(
  path: string,
  size: number,
  options: Pick<TextReadOptions, 'maxFileBytes' | 'onBytes' | 'decoding'>,
): Promise<{ readonly text: string } | { readonly problem: string }> {
  if (size > options.maxFileBytes) return { problem: Reason.tooLarge(size, options.maxFileBytes) };
  let bytes: Buffer;
  try {
    // A small file in one synchronous call (files/sync-read.ts), a large one in the thread pool.
    bytes = size <= SYNC_READ_BYTES ? readFileSync(path) : await readFile(path);
  } catch (error) {
    return { problem: Reason.unreadableFile(errorCode(error)) };
  }
  options.onBytes(bytes.length);
  const decoding = options.decoding ?? UTF8;
  const text = decoding.decode(stripBom(bytes));
  // The problem is found in the bytes as on disk: its offset is the one a hex editor shows.
  return text === undefined ? { problem: decoding.problem(bytes) } : { text };
}

/** The folder's files whose names `include` picks, and walk problems, sorted by relative path. */
export async function walkFolder(
  root: string,
  display: string,
  followSymlinks: boolean,
  include: (name: string) => boolean,
): Promise<Found[]> {
  const found: Found[] = [];
  const realRoot = await realpath(root).catch(() => root);
  const inside = (target: string): boolean => {
    const rel = relative(realRoot, target);
    return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  };
  // Folders on the current path, by device and inode: entering one again would loop forever.
  const ancestors = new Set<string>([await folderKey(root)]);

  async function visit(folder: string, rel: string): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      if (rel === '') throw new UsageError(`cannot read folder ${display} (${errorCode(error)})`);
      found.push({ rel, problem: Reason.unreadableFolder(errorCode(error)), isFile: false });
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const abs = join(folder, entry.name);
      const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
      let kind = kindOf(entry);
      let size: number | undefined;
      if (entry.isSymbolicLink()) {
        let target: Awaited<ReturnType<typeof stat>>;
        try {
          target = await stat(abs);
        } catch (error) {
          // A dangling link that looks like a document is reported; anything else is not ours.
          if (include(entry.name))
            found.push({ rel: childRel, problem: Reason.unreadableFile(errorCode(error)), isFile: true });
          continue;
        }
        kind = kindOf(target);
        size = target.size;
        if (!followSymlinks && (kind === 'folder' || include(entry.name))) {
          const real = await realpath(abs).catch(() => abs);
          if (!inside(real)) {
            found.push({ rel: childRel, problem: Reason.symlinkOutside(real), isFile: kind !== 'folder' });
            continue;
          }
        }
      }
      if (kind === 'other') {
        // Never opened: reading a FIFO blocks until a writer comes.
        found.push({ rel: childRel, problem: Reason.notRegularFile(specialKind(entry)), isFile: true });
        continue;
      }
      if (kind === 'folder') {
        const key = await folderKey(abs);
        if (ancestors.has(key)) continue;
        ancestors.add(key);
        await visit(abs, childRel);
        ancestors.delete(key);
      } else if (kind === 'file' && include(entry.name)) {
        try {
          // One metadata call, synchronous (files/sync-read.ts).
          size ??= statSync(abs).size;
          found.push({ rel: childRel, abs, size });
        } catch (error) {
          found.push({ rel: childRel, problem: Reason.unreadableFile(errorCode(error)), isFile: true });
        }
      }
    }
  }

  await visit(root, '');
  return sortedByUtf8(found, (item) => item.rel);
}

function specialKind(entry: Dirent): string {
  if (entry.isFIFO()) return 'a FIFO';
  if (entry.isSocket()) return 'a socket';
  if (entry.isCharacterDevice() || entry.isBlockDevice()) return 'a device';
  return entry.isSymbolicLink() ? 'a link to a FIFO, socket or device' : 'not a file';
}

function kindOf(entry: { isDirectory(): boolean; isFile(): boolean }): 'folder' | 'file' | 'other' {
  if (entry.isDirectory()) return 'folder';
  return entry.isFile() ? 'file' : 'other';
}

async function folderKey(path: string): Promise<string> {
  const { dev, ino } = await stat(path);
  return `${dev}:${ino}`;
}
