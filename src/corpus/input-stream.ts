/**
 * The bytes of an input file, gunzipped when the file is gzip (sniffed from its first two bytes,
 * 1f 8b, whatever its name), streamed: memory does not grow with the file. `onBytes` is told the
 * bytes read from disk (compressed), which is what the progress display compares with the file size.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { UsageError } from '../errors.js';

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/** Whether the file starts with the gzip magic bytes. */
export async function isGzipFile(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
  } finally {
    await handle.close();
  }
}

/** The file's bytes (decompressed if gzip); `file` names it in errors. */
export async function* inputBytes(
  path: string,
  file: string,
  onBytes: (bytes: number) => void,
): AsyncGenerator<Buffer> {
  const raw = createReadStream(path);
  if (!(await isGzipFile(path))) {
    try {
      for await (const chunk of raw as AsyncIterable<Buffer>) {
        onBytes(chunk.length);
        yield chunk;
      }
    } finally {
      raw.destroy();
    }
    return;
  }
  const gunzip = createGunzip();
  raw.on('data', (chunk: string | Buffer) => onBytes(chunk.length));
  raw.on('error', (error) => gunzip.destroy(error));
  raw.pipe(gunzip);
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) yield chunk;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code?.startsWith('Z_')) throw new UsageError(`${file}: a damaged gzip file (${code})`);
    throw error;
  } finally {
    raw.destroy();
    gunzip.destroy();
  }
}
