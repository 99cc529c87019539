/**
 * Atomic file replacement: write a temp file in the same folder, fsync it, rename it over the
 * target. A reader (or a resumed run) sees either the old file or the whole new one, never a torn
 * part file.
 */
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';

// `.<name>.tmp-<pid>-<hex>`: the leading dot and the suffix keep temp files out of every dataset
// glob (`*.parquet`, `*.arrow`, `manifest.json`) and out of `existingParts()`.
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

/** Makes the rename itself durable. Best effort: not every platform lets a folder be fsynced. */
async function syncDirectory(dir: string): Promise<void> {
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
