/**
 * Reading a local media file (an image or an audio file) for a corpus: never opened unless it is a
 * regular file (a FIFO would block), size-checked before and after reading, hashed. What is wrong
 * with it comes back as a reject reason, in the caller's words. Also what the image and audio
 * readers share: where a corpus field's path points.
 */
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorCode } from '../files/planned-media.js';
import { Reason } from './entries.js';

/** Reject reasons for one kind of media ("image", "audio"). */
export interface MediaReasons {
  unreadable(code: string): string;
  readonly empty: string;
  tooLarge(bytes: number, maxBytes: number): string;
}

/** The file's bytes, or why it cannot be used. `onBytes` is told how much was read. */
export async function readMediaFile(
  path: string,
  maxBytes: number,
  reasons: MediaReasons,
  onBytes?: (bytes: number) => void,
): Promise<Buffer | string> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) return Reason.notRegularFile(info.isDirectory() ? 'a folder' : 'not a file');
    size = info.size;
  } catch (error) {
    return reasons.unreadable(errorCode(error));
  }
  if (size === 0) return reasons.empty;
  if (size > maxBytes) return reasons.tooLarge(size, maxBytes);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    return reasons.unreadable(errorCode(error));
  }
  onBytes?.(bytes.length);
  // It may have grown since stat.
  if (bytes.length > maxBytes) return reasons.tooLarge(bytes.length, maxBytes);
  return bytes;
}

/** The first bytes of a file in hex (`89 50 4e 47`), for a reason saying what it is not. */
export function hexHead(bytes: Uint8Array): string {
  return [...bytes.subarray(0, 8)].map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/**
 * Where a CSV/JSONL field's media value points: a local `path` (a `file:` URL, or a path relative
 * to `baseDir`, the corpus file's folder), a broken `file:` URL, or another URL `scheme` (lower
 * case) for the caller to take or refuse. One letter before a colon is a Windows drive (`C:\…`).
 */
export function fieldTarget(
  value: string,
  baseDir: string,
): { readonly path: string } | { readonly scheme: string } | { readonly invalidFileUrl: true } {
  const scheme = SCHEME.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'file') {
    try {
      return { path: fileURLToPath(value) };
    } catch {
      return { invalidFileUrl: true };
    }
  }
  if (scheme !== undefined && scheme.length > 1) return { scheme };
  return { path: resolve(baseDir, value) };
}

/** A field value as a reason quotes it: at most 80 characters. */
export function shorten(value: string): string {
  return value.length > 80 ? `${value.slice(0, 77)}…` : value;
}
