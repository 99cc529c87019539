/**
 * Atomic file replacement: write a temp file in the same folder, fsync it, rename it over the
 * target. A reader (or a resumed run) sees either the old file or the whole new one, never a torn
 * part file.
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OutputError } from '../errors.js';
import { messageOf } from './fs-errors.js';

// `.<name>.tmp-<pid>-<hex>`: the leading dot and the suffix keep temp files out of every dataset
// glob (`*.parquet`, `*.arrow`, `manifest.json`) and out of `existingParts()`.
const TEMP_NAME = /^\..+\.tmp-\d+-[0-9a-f]+$/;

export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
}

export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/** Replaces `path` with `bytes` atomically. On failure the temp file is removed and OutputError names `path` and the cause. */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string): Promise<void> {
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
  await syncDirectory(dirname(path));
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
