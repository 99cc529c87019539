/**
 * Atomic file replacement: write a temp file in the same folder, fsync it, rename it over the
 * target. A reader (or a resumed run) sees either the old file or the whole new one, never a torn
 * part file.
 */
import { writevSync } from 'node:fs';
import { type FileHandle, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';

// `.<name>.tmp-<pid>-<hex>`: the leading dot and the suffix keep temp files out of every dataset
// glob (`*.parquet`, `*.arrow`, `_manifest.json`) and out of `existingParts()`.
const TEMP_NAME = /^\..+\.tmp-\d+-[0-9a-f]+$/;

/** Unique within this process; the pid makes it unique across processes sharing the folder. */
let tempCounter = 0;

export function tempPathFor(path: string): string {
  tempCounter += 1;
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${tempCounter.toString(16)}`);
}

export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/**
 * Removes the temp files (see tempPathFor) a killed process left in `dir`, those last modified
 * before `before` (ms since the epoch): a file written since may belong to a run still writing.
 * Returns the names removed. Best effort: a file that vanished or cannot be removed is skipped.
 */
export async function removeStaleTempFiles(dir: string, before: number): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!isTempName(name)) continue;
    const path = join(dir, name);
    try {
      const info = await stat(path);
      if (!info.isFile() || info.mtimeMs >= before) continue;
      await rm(path, { force: true });
      removed.push(name);
    } catch {
      // gone already, or not ours to remove
    }
  }
  return removed.sort();
}

export interface AtomicWriteOptions {
  /**
   * Also fsync the folder so the rename itself survives a power loss (default true). Part files
   * skip it: the manifest's write syncs the folder once, which makes every earlier rename durable,
   * and a part lost to a power cut is only re-embedded, never torn.
   */
  readonly syncDirectory?: boolean;
}

/** Replaces `path` with `bytes` atomically. On failure the temp file is removed and OutputError names `path` and the cause. */
export async function writeFileAtomic(
  path: string,
  bytes: Uint8Array | string,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const temp = tempPathFor(path);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'wx');
    await handle.writeFile(bytes);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, path);
  } catch (error) {
    await handle?.close().catch(() => {});
    await rm(temp, { force: true }).catch(() => {});
    throw new OutputError(`cannot write ${path}: ${messageOf(error)}`, { cause: error });
  }
  if (options.syncDirectory ?? true) await syncDirectory(dirname(path));
}

/**
 * A file too large to hold in memory, written in pieces to a temp file in its folder; it only
 * appears under its name (which may be known only once every byte is written) by rename.
 */
export class TempFile {
  private handle: FileHandle | undefined;
  private size = 0;

  private constructor(
    readonly path: string,
    handle: FileHandle,
  ) {
    this.handle = handle;
  }

  /** A new temp file in the folder of `near` (its name only seeds the temp name). */
  static async create(near: string): Promise<TempFile> {
    const path = tempPathFor(near);
    try {
      return new TempFile(path, await open(path, 'wx'));
    } catch (error) {
      throw new OutputError(`cannot create ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  get bytes(): number {
    return this.size;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (!this.handle) throw new OutputError(`${this.path}: written after close`);
    try {
      let done = 0;
      while (done < chunk.byteLength) {
        const { bytesWritten } = await this.handle.write(chunk, done, chunk.byteLength - done);
        done += bytesWritten;
      }
      this.size += done;
    } catch (error) {
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * Writes `chunk` before returning (into the page cache: quick), so the caller can drop it at once.
   * A buffer held across awaits outlives two scavenges and waits for a full GC to be freed: encoded
   * files written asynchronously were a measurable share of a run's peak RSS
   * (docs/benchmarks.md, "Design figures").
   */
  writeNow(chunk: Uint8Array | readonly Uint8Array[]): void {
    if (!this.handle) throw new OutputError(`${this.path}: written after close`);
    try {
      this.size += writeAll(this.handle.fd, chunk instanceof Uint8Array ? [chunk] : chunk);
    } catch (error) {
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** Flushes the bytes to disk and closes the file; it is still under its temp name. */
  async close(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.handle = undefined;
    try {
      await handle.sync();
      await handle.close();
    } catch (error) {
      await handle.close().catch(() => {});
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** Renames the closed file to `path` (in the same folder), replacing what is there. */
  async moveTo(path: string): Promise<void> {
    if (this.handle) throw new OutputError(`${this.path}: moved before close`);
    try {
      await rename(this.path, path);
    } catch (error) {
      throw new OutputError(`cannot rename ${this.path} to ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** Closes and removes the temp file; never throws (it runs on failure paths). */
  async discard(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => {});
    await rm(this.path, { force: true }).catch(() => {});
  }
}

/** Makes renames and removals in `dir` durable. Best effort: not every platform lets a folder be fsynced. */
export async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // ignored on purpose
  } finally {
    await handle?.close().catch(() => {});
  }
}

/** Buffers per writev: Linux's IOV_MAX. */
const MAX_PIECES = 1024;

/** `pieces` one after another, through writev (no copy into one buffer); short writes resumed. */
function writeAll(fd: number, pieces: readonly Uint8Array[]): number {
  let total = 0;
  let rest = pieces.filter((piece) => piece.byteLength > 0);
  while (rest.length > 0) {
    const batch = rest.slice(0, MAX_PIECES);
    let written = writevSync(fd, batch);
    total += written;
    let used = 0;
    while (used < batch.length && written >= batch[used]!.byteLength) written -= batch[used++]!.byteLength;
    rest = rest.slice(used);
    if (written > 0) rest[0] = rest[0]!.subarray(written);
  }
  return total;
}
