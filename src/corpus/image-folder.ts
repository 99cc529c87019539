/**
 * Image corpora: a folder of images, or a single image file.
 *
 * - Every .png/.jpg/.jpeg/.gif/.webp file is one document (its type is sniffed from its bytes, so a
 *   JPEG named .png is read as the JPEG it is). Its text is its sidecar caption: the .txt file with
 *   the same path less the extension (`cat.png` + `cat.txt`), read as UTF-8 exactly as written;
 *   without one, the caption is empty. `cat.png` and `cat.jpg` beside one `cat.txt` share it.
 * - A .txt/.md file that is no image's caption is a text document of its own, read as a text folder
 *   reads it: a folder mixing images and notes embeds both, in one vector space.
 * - Ids and sources are paths relative to the folder with `/`, extension included, as in a text
 *   folder (`photos/cat.png`), so `cat.png` and `cat.jpg` are two documents. The walk (order, hidden
 *   entries, symlinks, FIFOs) is the text folder's.
 * - An unreadable, empty, oversized or corrupt image, or a caption that cannot be read, is a reject
 *   naming the image; nothing is skipped without a word.
 */
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { CorpusEntry } from '../domain.js';
import { UsageError } from '../errors.js';
import { isImageFileName, isTextFileName } from '../files/file-kinds.js';
import { Reason, reject, toEntry } from './entries.js';
import { readImageFile } from './images.js';
import { type Found, readFound, readText, type TextReadOptions, walkFolder } from './text-folder.js';

export interface ImageReadOptions extends TextReadOptions {
  /** A larger image is a reject, never read whole. */
  readonly maxImageBytes: number;
}

const CAPTION_NAME = /\.txt$/i;

/** The path less its last extension: `photos/cat.png` → `photos/cat`. */
function stemOf(rel: string): string {
  return rel.replace(/\.[^./]*$/, '');
}

export async function* readImageFolder(options: ImageReadOptions): AsyncGenerator<CorpusEntry> {
  const found = await walkFolder(
    options.path,
    options.file,
    options.followSymlinks ?? false,
    (name) => isImageFileName(name) || isTextFileName(name),
  );
  const images = found.filter((item) => isImageFileName(item.rel));
  if (images.length === 0) {
    throw new UsageError(`no .png, .jpg, .jpeg, .gif or .webp images in folder ${options.file}`);
  }
  const stems = new Set(images.map((item) => stemOf(item.rel)));
  const captions = new Map<string, Found>();
  for (const item of found) {
    if (CAPTION_NAME.test(item.rel) && stems.has(stemOf(item.rel))) captions.set(stemOf(item.rel), item);
  }
  yield* readFound(
    found,
    options,
    (file) =>
      isImageFileName(file.rel)
        ? readImageDocument(file.abs, file.rel, file.rel, captions.get(stemOf(file.rel)), options)
        : undefined,
    // An image's caption: read with its image.
    (item) => captions.get(stemOf(item.rel)) === item,
  );
}

/** One image file as one document, its id the file's base name; `x.txt` beside it is its caption. */
export async function* readSingleImage(options: ImageReadOptions): AsyncGenerator<CorpusEntry> {
  const captionPath = join(dirname(options.path), `${stemOf(basename(options.path))}.txt`);
  let caption: Found | undefined;
  try {
    const info = await stat(captionPath);
    if (info.isFile()) caption = { rel: basename(captionPath), abs: captionPath, size: info.size };
  } catch {
    // no caption
  }
  yield await readImageDocument(options.path, options.file, basename(options.path), caption, options);
}

async function readImageDocument(
  path: string,
  file: string,
  id: string,
  caption: Found | undefined,
  options: ImageReadOptions,
): Promise<CorpusEntry> {
  const image = await readImageFile(path, file, options.maxImageBytes, options.onBytes);
  if (typeof image === 'string') return reject(file, 1, image, id);
  let text = '';
  if (caption !== undefined) {
    // A caption the walk could not use says why; else it is read as a text file is.
    const read = 'problem' in caption ? caption : await readText(caption.abs, caption.size, options);
    if ('problem' in read) return reject(file, 1, Reason.caption(caption.rel, read.problem), id);
    text = read.text;
  }
  return toEntry(options.ids, file, 1, id, text, { image });
}
