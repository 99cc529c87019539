/**
 * Files a plan refers to (an image, an audio file): hashed when planned, read again when their
 * request is built, and checked to be the bytes that were planned. Shared by the corpus readers,
 * the embedder (image inputs) and the transcriber.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ImageMime } from '../domain.js';

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A file system error's code (ENOENT, EACCES…), else the error in words. */
export function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/**
 * A planned media file read again (its request is being built): its bytes, or why they are not
 * the ones planned (`unreadable` with the error code, or `changed`).
 */
export async function rereadMediaFile(
  path: string,
  planned: { readonly bytes: number; readonly sha256: string },
): Promise<Buffer | { readonly unreadable: string } | { readonly changed: true }> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    return { unreadable: errorCode(error) };
  }
  if (bytes.length !== planned.bytes || sha256Hex(bytes) !== planned.sha256) return { changed: true };
  return bytes;
}

export function toDataUrl(mime: ImageMime, bytes: Uint8Array): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return `data:${mime};base64,${buffer.toString('base64')}`;
}
