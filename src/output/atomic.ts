/**
 * Atomic file replacement: write a temp file in the same folder, fsync it, rename it over the
 * target. A reader (or a resumed run) sees either the old file or the whole new one, never a torn
 * part file.
 */
import { type FileHandle, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OutputError } from '../errors.js';
import { writePiecesAt } from '../files/write-pieces.js';
import { createForWriting, DirectStream } from './direct-write.js';
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
export interface TempFileOptions {
  /**
   * Not read back whole by this process: written around the page cache where the file system
   * allows (output/direct-write.ts), by one `writeNow` or by `write` calls, not both.
   */
  readonly direct?: boolean;
}

export class TempFile {
  private handle: FileHandle | undefined;
  private size = 0;
  /** A direct file's staging (see DirectStream); written out by `close`. */
  private stream: DirectStream | undefined;
  /** A direct file was staged whole by `writeNow`: it takes no other write. */
  private staged = false;

  private constructor(
    readonly path: string,
    handle: FileHandle,
    /** Opened O_DIRECT: staged whole by one `writeNow`, or streamed by `write`. */
    private readonly direct: boolean,
  ) {
    this.handle = handle;
  }

  /** A new temp file in the folder of `near` (its name only seeds the temp name). */
  static async create(near: string, options: TempFileOptions = {}): Promise<TempFile> {
    const path = tempPathFor(near);
    try {
      if (options.direct) {
        const { handle, direct } = await createForWriting(path);
        return new TempFile(path, handle, direct);
      }
      return new TempFile(path, await open(path, 'wx'), false);
    } catch (error) {
      throw new OutputError(`cannot create ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  get bytes(): number {
    return this.size;
  }

  async write(chunk: Uint8Array): Promise<void> {
    const handle = this.#writable();
    try {
      if (this.direct) {
        this.stream ??= new DirectStream(this.path, handle);
        await this.stream.write(chunk);
        this.size += chunk.byteLength;
        return;
      }
      let done = 0;
      while (done < chunk.byteLength) {
        const { bytesWritten } = await handle.write(chunk, done, chunk.byteLength - done, this.size + done);
        done += bytesWritten;
      }
      this.size += done;
    } catch (error) {
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /**
   * Takes `chunk` before returning, so the caller can drop it at once: written into the page cache
   * (quick), or, for a direct file, copied into a staging area that `close` writes out. A
   * buffer held across awaits outlives two scavenges and waits for a full GC to be freed: encoded
   * files written asynchronously were a measurable share of a run's peak RSS (docs/benchmarks.md,
   * "Design figures").
   */
  writeNow(chunk: Uint8Array | readonly Uint8Array[]): void {
    const handle = this.#writable();
    const pieces = chunk instanceof Uint8Array ? [chunk] : chunk;
    try {
      if (this.stream)
        throw new OutputError(
          `${this.path}: a direct temp file is written by writeNow or by write, not both`,
        );
      if (this.direct) {
        this.stream = new DirectStream(this.path, handle);
        this.staged = true;
        this.size = this.stream.stage(pieces);
      } else this.size += writePiecesAt(handle.fd, pieces, this.size);
    } catch (error) {
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** The open handle; a direct file takes a single write. */
  #writable(): FileHandle {
    if (!this.handle) throw new OutputError(`${this.path}: written after close`);
    if (this.staged) throw new OutputError(`${this.path}: a direct temp file is written once`);
    return this.handle;
  }

  /** Flushes the bytes to disk and closes the file; it is still under its temp name. */
  async close(): Promise<void> {
    const handle = this.handle;
    if (!handle) return;
    this.handle = undefined;
    try {
      await this.stream?.finish();
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
    this.stream?.release();
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
