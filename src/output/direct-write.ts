/**
 * Data files written around the page cache (O_DIRECT): a run's group files and a compaction's
 * Parquet files. Neither is read again by the process but for its footer; through the page cache,
 * every page of them is one the kernel allocates, copies into and writes back later, and that
 * kernel time was the largest single item of a multilingual run's CPU (docs/benchmarks.md, "an
 * eighth session"). Written direct, the device takes the bytes from a staging area that is reused.
 *
 * O_DIRECT wants the memory, the file offset and the length aligned to the device's block: the
 * staging area is wasm memory (its start is page-aligned; a Buffer's is not), the encoded pieces
 * are copied into it at once (so they are garbage before the first await, as with a write into
 * the page cache), padded with zeros to a whole block, written, and the file cut back to its
 * length. Where the file system refuses O_DIRECT (tmpfs on older kernels, some network and FUSE
 * file systems), the platform has none, or EMBEDPIPE_DIRECT_IO=off, files are written through the
 * page cache as before; a folder that refused is not tried again.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A block size every device's logical block divides (512 or 4,096). */
export const DIRECT_BLOCK = 4096;

/** Staging areas larger than this are not kept for reuse (wasm memory never shrinks). */
const KEPT_AREA_BYTES = 32 * 2 ** 20;

/** Staging areas kept for reuse: as many as data files are written at once. */
const KEPT_AREAS = 2;

const WASM_PAGE = 65536;

const O_DIRECT: number | undefined = (constants as { O_DIRECT?: number }).O_DIRECT;

/** The part of WebAssembly's API used here (this project's TypeScript libs do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const { WebAssembly } = globalThis as unknown as {
  WebAssembly: { Memory: new (descriptor: { initial: number }) => WasmMemory };
};

let enabled = true;

/** Folders whose file system refused O_DIRECT. */
const refused = new Set<string>();

/** Staging areas free for the next write. */
const free: WasmMemory[] = [];

/** Switches direct writes on or off for the process (EMBEDPIPE_DIRECT_IO; tests). */
export function setDirectWrites(on: boolean): void {
  enabled = on;
}

/** Whether a file may be created direct in the folder of `path`. */
function directFor(path: string): boolean {
  return enabled && O_DIRECT !== undefined && !refused.has(dirname(path));
}

/**
 * Creates `path` (it must not exist) for writing: opened O_DIRECT where the folder's file system
 * takes it (`direct` true), else as an ordinary file.
 */
export async function createForWriting(path: string): Promise<{ handle: FileHandle; direct: boolean }> {
  if (directFor(path)) {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (O_DIRECT as number);
    try {
      return { handle: await open(path, flags, 0o666), direct: true };
    } catch (error) {
      if (!isRefusal(error)) throw error;
      refused.add(dirname(path));
      // Linux may refuse O_DIRECT after it created the file: the name is this process's own.
      return { handle: await open(path, 'w'), direct: false };
    }
  }
  return { handle: await open(path, 'wx'), direct: false };
}

/** Bytes a stream gathers before it writes them direct. */
const STREAM_WINDOW = 8 * 2 ** 20;

/**
 * A file opened O_DIRECT, written through a staging area: whole by `stage` (the encoded pieces
 * copied at once, so they are garbage before the first await, as with a write into the page
 * cache), or as a stream by `write` (a compaction's row groups: the area goes out direct each time
 * it holds STREAM_WINDOW bytes). `finish` writes what is left padded to a block and cuts the file
 * to its length. Where the file system refuses a direct write after all (the open does not tell on
 * every one), the rest goes through the page cache and the folder is not tried again.
 */
export class DirectStream {
  readonly #path: string;
  readonly #handle: FileHandle;
  #memory: WasmMemory | undefined;
  /** Bytes in the staging area, not written yet. */
  #filled = 0;
  /** Bytes written (a multiple of the block while direct). */
  #written = 0;
  /** Set once the file system refused a direct write: the file's ordinary descriptor. */
  #ordinary: FileHandle | undefined;

  constructor(path: string, handle: FileHandle) {
    this.#path = path;
    this.#handle = handle;
  }

  /** Copies `pieces` into the staging area (grown to hold them); nothing is written before `finish`. */
  stage(pieces: readonly Uint8Array[]): number {
    let bytes = 0;
    for (const piece of pieces) bytes += piece.byteLength;
    const area = this.#area(this.#filled + bytes);
    for (const piece of pieces) {
      area.set(piece, this.#filled);
      this.#filled += piece.byteLength;
    }
    return bytes;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.#ordinary) {
      await writeAt(this.#ordinary, chunk, this.#written);
      this.#written += chunk.byteLength;
      return;
    }
    for (let at = 0; at < chunk.byteLength; ) {
      const area = this.#area(STREAM_WINDOW);
      const n = Math.min(STREAM_WINDOW - this.#filled, chunk.byteLength - at);
      area.set(chunk.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === STREAM_WINDOW) await this.#flush(STREAM_WINDOW);
      // Refused meanwhile: what is left of the chunk goes through the page cache.
      if (this.#ordinary) return this.write(chunk.subarray(at));
    }
  }

  /** Writes what is staged and cuts the file to the bytes written; the staging area is given back. */
  async finish(): Promise<number> {
    try {
      if (!this.#ordinary && this.#filled > 0) {
        const length = this.#filled;
        const before = this.#written;
        this.#area(padded(length)).fill(0, length, padded(length));
        await this.#flush(padded(length));
        this.#written = before + length;
      }
      // The padding, or a refused direct write's partial blocks, past the end.
      await this.#handle.truncate(this.#written);
      return this.#written;
    } finally {
      await this.#ordinary?.close();
      this.release();
    }
  }

  /** Gives the staging area back (on failure paths too; never throws). */
  release(): void {
    const memory = this.#memory;
    this.#memory = undefined;
    if (memory && free.length < KEPT_AREAS && memory.buffer.byteLength <= KEPT_AREA_BYTES) free.push(memory);
  }

  /** The staging area, at least `bytes` long (what it holds is kept when it grows). */
  #area(bytes: number): Uint8Array {
    const pages = Math.max(1, Math.ceil(bytes / WASM_PAGE));
    this.#memory ??= free.pop() ?? new WebAssembly.Memory({ initial: pages });
    const have = this.#memory.buffer.byteLength / WASM_PAGE;
    if (have < pages) this.#memory.grow(pages - have);
    return new Uint8Array(this.#memory.buffer);
  }

  /** The area's first `length` bytes (whole blocks), direct at the end of what is written. */
  async #flush(length: number): Promise<void> {
    const view = this.#area(length).subarray(0, length);
    try {
      await writeBlocks(this.#handle, view, this.#written);
      this.#written += length;
    } catch (error) {
      if (!isRefusal(error)) throw error;
      refused.add(dirname(this.#path));
      this.#ordinary = await open(this.#path, 'r+');
      const exact = view.subarray(0, this.#filled);
      await writeAt(this.#ordinary, exact, this.#written);
      this.#written += exact.byteLength;
    }
    this.#filled = 0;
  }
}

/**
 * Whole blocks written direct at `position`, short writes resumed. A write that is not a whole
 * number of blocks is taken for the file system's refusal (the next would be misaligned).
 */
async function writeBlocks(handle: FileHandle, blocks: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < blocks.byteLength; ) {
    const { bytesWritten } = await handle.write(blocks, done, blocks.byteLength - done, position + done);
    if (bytesWritten % DIRECT_BLOCK !== 0)
      throw Object.assign(new Error('a direct write of part of a block'), { code: 'EINVAL' });
    done += bytesWritten;
  }
}

/** `bytes` written at `position` of `handle`, short writes resumed. */
async function writeAt(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.byteLength; ) {
    done += (await handle.write(bytes, done, bytes.byteLength - done, position + done)).bytesWritten;
  }
}

function padded(bytes: number): number {
  return Math.ceil(bytes / DIRECT_BLOCK) * DIRECT_BLOCK;
}

function isRefusal(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EINVAL' || code === 'EOPNOTSUPP' || code === 'ENOTSUP';
}
