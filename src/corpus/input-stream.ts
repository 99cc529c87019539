/**
 * The bytes of an input file, gunzipped when the file is gzip (sniffed from its first two bytes,
 * 1f 8b, whatever its name), streamed: memory does not grow with the file. `onBytes` is told the
 * bytes read from disk (compressed), which is what the progress display compares with the file size.
 * A read that reaches the file's end also gives the sha256 of every byte it read (`onWhole`), so the
 * manifest records the input without a second pass over it at the switch.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { UsageError } from '../errors.js';
import type { WholeRead } from '../files/whole-read.js';

const GZIP_MAGIC = [0x1f, 0x8b] as const;
/** Node's read size for file streams: what a reader whose memory bound counts in reads keeps (CSV). */
export const SMALL_READS = 64 * 1024;
/**
 * Read size for readers that split lines themselves (JSONL). 64 KB reads cost the main thread
 * several times more in a planner run (many more reads, each with its own buffer):
 * docs/benchmarks.md, "Design figures".
 */
export const LARGE_READS = 2 ** 20;

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

/** How an input file is read. */
export interface InputReadOptions {
  /** Bytes per read (SMALL_READS by default). */
  readonly readBytes?: number;
  /**
   * Read a plain file into two buffers in turn, the next read under way while the caller reads the
   * last piece: a piece is then valid only until the next one is asked for. A fresh buffer for
   * every read outlived the young generation's collections while its lines were parsed, and such
   * buffers piled up until a full collection (docs/benchmarks.md, "a twenty-ninth session").
   * Without it each piece is a buffer of its own, which the caller may keep.
   */
  readonly reuseBuffers?: boolean;
  /** Told the digest of the file's bytes (compressed, if gzip) once the read reaches its end; not when stopped before. */
  readonly onWhole?: ((whole: WholeRead) => void) | undefined;
}

/** The file's bytes (decompressed if gzip) in pieces of up to `readBytes`; `file` names it in errors. */
export async function* inputBytes(
  path: string,
  file: string,
  onBytes: (bytes: number) => void,
  { readBytes = SMALL_READS, reuseBuffers = false, onWhole }: InputReadOptions = {},
): AsyncGenerator<Buffer> {
  const digest = onWhole && new DigestOfRead(onWhole);
  const onRead = (piece: Buffer) => {
    digest?.add(piece);
    onBytes(piece.length);
  };
  if (await isGzipFile(path)) yield* gunzipped(path, file, onRead, readBytes, digest);
  else yield* plainBytes(path, onRead, readBytes, reuseBuffers, digest);
}

/** The sha256 of the pieces one read took from the disk, told once the read reached the end. */
class DigestOfRead {
  readonly #hash = createHash('sha256');
  readonly #onWhole: (whole: WholeRead) => void;
  #bytes = 0;

  constructor(onWhole: (whole: WholeRead) => void) {
    this.#onWhole = onWhole;
  }

  add(piece: Buffer): void {
    this.#hash.update(piece);
    this.#bytes += piece.length;
  }

  end(): void {
    this.#onWhole({ sha256: this.#hash.digest('hex'), bytes: this.#bytes });
  }
}

/** A plain file's bytes; the next read under way while the caller reads the last piece. */
async function* plainBytes(
  path: string,
  onRead: (piece: Buffer) => void,
  readBytes: number,
  reuseBuffers: boolean,
  digest: DigestOfRead | undefined,
): AsyncGenerator<Buffer> {
  const handle = await open(path, 'r');
  let filling = Buffer.allocUnsafe(readBytes);
  let spare = reuseBuffers ? Buffer.allocUnsafe(readBytes) : undefined;
  let reading = handle.read(filling, 0, readBytes, null);
  try {
    for (;;) {
      const { bytesRead } = await reading;
      if (bytesRead === 0) {
        digest?.end();
        return;
      }
      const piece = filling.subarray(0, bytesRead);
      if (spare === undefined) filling = Buffer.allocUnsafe(readBytes);
      else [filling, spare] = [spare, filling];
      reading = handle.read(filling, 0, readBytes, null);
      // The next read fills the other buffer: this piece is hashed while it is under way.
      onRead(piece);
      yield piece;
    }
  } finally {
    // A read may still be under way when the caller stops early.
    await reading.catch(() => undefined);
    await handle.close();
  }
}

/** A gzip file's bytes, decompressed; `onBytes` is told the compressed bytes read. */
async function* gunzipped(
  path: string,
  file: string,
  onRead: (piece: Buffer) => void,
  readBytes: number,
  digest: DigestOfRead | undefined,
): AsyncGenerator<Buffer> {
  const raw = createReadStream(path, { highWaterMark: readBytes });
  const gunzip = createGunzip({ chunkSize: readBytes });
  let rawEnded = false;
  raw.on('data', (chunk: string | Buffer) => onRead(chunk as Buffer));
  raw.on('end', () => {
    rawEnded = true;
  });
  raw.on('error', (error) => gunzip.destroy(error));
  raw.pipe(gunzip);
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) yield chunk;
    // Every compressed byte was read and decompressed to the stream's end.
    if (rawEnded) digest?.end();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code?.startsWith('Z_')) throw new UsageError(`${file}: a damaged gzip file (${code})`);
    throw error;
  } finally {
    raw.destroy();
    gunzip.destroy();
  }
}
