/**
 * Reading a local media file (an image or an audio file) for a corpus: never opened unless it is a
 * regular file (a FIFO would block), size-checked before and after reading, hashed. What is wrong
 * with it comes back as a reject reason, in the caller's words.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { Reason } from './entries.js';

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

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
  const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? String(error);
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) return Reason.notRegularFile(info.isDirectory() ? 'a folder' : 'not a file');
    size = info.size;
  } catch (error) {
    return reasons.unreadable(codeOf(error));
  }
  if (size === 0) return reasons.empty;
  if (size > maxBytes) return reasons.tooLarge(size, maxBytes);
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    return reasons.unreadable(codeOf(error));
  }
  onBytes?.(bytes.length);
  // It may have grown since stat.
  if (bytes.length > maxBytes) return reasons.tooLarge(bytes.length, maxBytes);
  return bytes;
}
