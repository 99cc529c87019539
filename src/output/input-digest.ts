/**
 * The manifest's record of what a run read: size and sha256 of the input, streamed (a corpus of
 * any size hashes in flat memory). For a folder, the digest is the sha256 of a `sha256sum`-style
 * listing of its files (`<sha256>  <relative path>\n`, sorted by path as UTF-8 bytes), so one
 * changed, added, removed or renamed file changes it. Hidden entries (leading dot) are skipped and
 * symlinks followed, except into a folder already on the current path, as the corpus reader does.
 *
 * A file or subfolder of the folder that cannot be read (no permission, an I/O error) is left out of
 * the listing: the corpus reader rejects it too (`unreadable file (EACCES)` in `_rejects.jsonl`), so
 * the run did not read it, and the listing stays that of the files the run read. Failing instead
 * would fail every run of the folder, at the end, for a file the run had already set aside.
 */
import { createHash, hash } from 'node:crypto';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { OutputError } from '../errors.js';
import { SYNC_READ_BYTES } from '../files/sync-read.js';
import { sortedByUtf8 } from '../files/utf8-order.js';
import type { WholeRead } from '../files/whole-read.js';
import { messageOf } from './fs-errors.js';
import type { ManifestInput } from './manifest.js';

export interface DigestOptions {
  /** Which file names of a folder count (default: every non-hidden file). */
  readonly include?: (name: string) => boolean;
}

/** sha256 (hex) and size of one file, streamed. */
export async function sha256File(path: string): Promise<{ sha256: string; bytes: number }> {
  try {
    return await hashFile(path);
  } catch (error) {
    throw new OutputError(`cannot hash ${path}: ${messageOf(error)}`, { cause: error });
  }
}

/**
 * sha256File, with the file system's error as it is (the folder digest skips unreadable files). A
 * file the walk found small is read in one synchronous call (files/sync-read.ts): a stream per file
 * cost a folder of small files more than reading them for the run.
 */
async function hashFile(path: string, size?: number): Promise<{ sha256: string; bytes: number }> {
  if (size !== undefined && size <= SYNC_READ_BYTES) {
    const whole = readFileSync(path);
    return { sha256: hash('sha256', whole, 'hex'), bytes: whole.length };
  }
  const streamed = createHash('sha256');
  let bytes = 0;
  await pipeline(createReadStream(path), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      bytes += chunk.length;
      streamed.update(chunk);
    }
  });
  return { sha256: streamed.digest('hex'), bytes };
}

/** A Node file system error (it has an errno code such as EACCES), not a bug of ours. */
function isFileSystemError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException | undefined)?.code === 'string';
}

/** The manifest's `input` of a single file whose bytes hash to `read.sha256`. */
export function fileInput(path: string, read: WholeRead): ManifestInput {
  return { path, kind: 'file', bytes: read.bytes, files: 1, sha256: read.sha256 };
}

/** The manifest's `input`: path, kind, bytes, file count and sha256 of a file or folder. */
export async function digestInput(path: string, options: DigestOptions = {}): Promise<ManifestInput> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new OutputError(`cannot read ${path}: ${messageOf(error)}`, { cause: error });
  }
  if (!info.isDirectory()) return fileInput(path, await sha256File(path));

  const files: FoundFile[] = [];
  await walk(path, '', new Set([`${info.dev}:${info.ino}`]), options.include ?? (() => true), files);
  const sorted = sortedByUtf8(files, (file) => file.rel);
  const listing = createHash('sha256');
  let bytes = 0;
  let hashed = 0;
  for (const { rel, size } of sorted) {
    let file: { sha256: string; bytes: number };
    try {
      file = await hashFile(join(path, rel), size);
    } catch (error) {
      if (isFileSystemError(error)) continue; // unreadable: a reject of the run, not read (see above)
      throw error;
    }
    hashed += 1;
    bytes += file.bytes;
    listing.update(`${file.sha256}  ${rel}\n`);
  }
  return { path, kind: 'folder', bytes, files: hashed, sha256: listing.digest('hex') };
}

/** A file of the folder: its path relative to it, and its size when walked. */
interface FoundFile {
  readonly rel: string;
  readonly size: number;
}

async function walk(
  root: string,
  rel: string,
  ancestors: ReadonlySet<string>,
  include: (name: string) => boolean,
  out: FoundFile[],
): Promise<void> {
  const dir = rel ? join(root, rel) : root;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    // An unreadable subfolder is a reject of the run (`unreadable folder`): none of its files was read.
    if (rel !== '' && isFileSystemError(error)) return;
    throw new OutputError(`cannot list ${dir}: ${messageOf(error)}`, { cause: error });
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const childRel = rel ? `${rel}/${name}` : name;
    let info: ReturnType<typeof statSync>;
    try {
      // One metadata call, synchronous (files/sync-read.ts).
      info = statSync(join(root, childRel));
    } catch {
      continue; // a dangling symlink: the corpus reader rejects it, there is nothing to hash
    }
    if (info.isDirectory()) {
      const key = `${info.dev}:${info.ino}`;
      if (ancestors.has(key)) continue;
      await walk(root, childRel, new Set([...ancestors, key]), include, out);
    } else if (info.isFile() && include(name)) {
      out.push({ rel: childRel, size: info.size });
    }
  }
}
