/**
 * The spill: every embedded batch, appended to `_spill/` of the version the moment its answer is
 * in, before it waits in memory for the group commit. A run killed meanwhile (SIGKILL, OOM, a
 * reboot of the container) lost the vectors it paid for; with the spill, the next run commits
 * them from here instead of paying again. Appends are not fsynced: the kernel keeps what a killed
 * process wrote (power loss is what the group commit's fsync covers).
 *
 * A segment file holds entries `u32 json bytes | 2^31 · u32 vector bytes · u32 text bytes · json ·
 * texts · float32 vectors · u32 crc32` (the crc of all between the head and it): the chunks' texts are
 * their UTF-8 one after another, their lengths in the json, so no text is JSON-escaped or copied
 * through a string of the whole entry. Entries without the 2^31 bit (an older embedpipe's) hold
 * `json · vectors`, the texts inside the json, and are read as well. A torn last entry (killed
 * mid-write) is ignored. A segment is closed at the first commit after it reached SEGMENT_BYTES, and
 * deleted once every batch in it is committed (a segment per commit cost a file created and deleted
 * for every few batches: docs/benchmarks.md).
 */
import { closeSync, openSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Chunk, EmbeddedBatch } from '../domain.js';
import { OutputError } from '../errors.js';
import { crc32 } from '../files/crc32.js';
import { Utf8Buffer } from '../files/utf8-buffer.js';
import { writePiecesAt } from '../files/write-pieces.js';
import { messageOf } from './fs-errors.js';
import { vectorRuns } from './vector-runs.js';

export const SPILL_DIR = '_spill';

/** Bytes after which a segment is closed at the next commit: what the spill holds beyond its pending batches. */
export const SEGMENT_BYTES = 16 * 2 ** 20;

/** An embedded batch as spilled: what its commit needs. */
export interface SpilledBatch {
  /** Chunks the batch was planned with (its record counts them). */
  readonly plannedChunks: number;
  readonly embedded: EmbeddedBatch;
}

interface Segment {
  readonly path: string;
  /** Batches in it not committed yet. */
  readonly pending: Set<string>;
  sealed: boolean;
  bytes: number;
}

export class SpillLog {
  readonly #dir: string;
  #segments: Segment[] = [];
  #open: { segment: Segment; fd: number } | undefined;
  #next: number;
  /** Appends run one at a time, in order (a segment is one sequence of entries). */
  #tail: Promise<void> = Promise.resolve();
  /** The texts of the entry being written; reused, as appends run one at a time. */
  readonly #texts = new Utf8Buffer();

  readonly #segmentBytes: number;

  private constructor(dir: string, next: number, segmentBytes: number) {
    this.#dir = dir;
    this.#next = next;
    this.#segmentBytes = segmentBytes;
  }

  /** The spill of a version folder; new segments are numbered after what is there. */
  static async open(versionDir: string, segmentBytes = SEGMENT_BYTES): Promise<SpillLog> {
    const dir = join(versionDir, SPILL_DIR);
    await mkdir(dir, { recursive: true });
    const numbers = (await segmentFiles(dir)).map((name) => Number.parseInt(name, 10));
    return new SpillLog(dir, numbers.length > 0 ? Math.max(...numbers) + 1 : 0, segmentBytes);
  }

  /**
   * Appends a batch; resolves once the kernel holds it. The write is synchronous, as the data
   * files' are: an entry is small, and handing it to libuv's pool cost more than writing it
   * (docs/benchmarks.md, "a nineteenth session").
   */
  append(spilled: SpilledBatch): Promise<void> {
    const appended = this.#tail.then(() => {
      this.#open ??= this.#startSegment();
      const { segment, fd } = this.#open;
      segment.bytes += writePiecesAt(fd, encode(spilled, this.#texts), segment.bytes);
      segment.pending.add(spilled.embedded.batchId);
    });
    this.#tail = appended.catch(() => {});
    return appended.catch((error: unknown) => {
      throw new OutputError(`cannot spill a batch to ${this.#dir}: ${messageOf(error)}`, { cause: error });
    });
  }

  /**
   * These batches are committed: closed segments holding nothing else go; a full open segment is
   * closed (later appends start a new one).
   */
  committed(batchIds: Iterable<string>): Promise<void> {
    const done = new Set(batchIds);
    const pruned = this.#tail.then(async () => {
      if (this.#open && this.#open.segment.bytes >= this.#segmentBytes) {
        this.#open.segment.sealed = true;
        closeSync(this.#open.fd);
        this.#open = undefined;
      }
      const keep: Segment[] = [];
      for (const segment of this.#segments) {
        for (const id of done) segment.pending.delete(id);
        if (segment.sealed && segment.pending.size === 0) await unlink(segment.path).catch(() => {});
        else keep.push(segment);
      }
      this.#segments = keep;
    });
    this.#tail = pruned.catch(() => {});
    return pruned;
  }

  /** Removes every segment there is (what they hold is committed). */
  async clear(): Promise<void> {
    await this.#tail;
    for (const name of await segmentFiles(this.#dir)) await unlink(join(this.#dir, name)).catch(() => {});
    this.#segments = [];
  }

  /** Removes the spill folder (every batch in it is committed, or its version is gone). */
  async remove(): Promise<void> {
    await this.#tail;
    if (this.#open) closeSync(this.#open.fd);
    this.#open = undefined;
    await rm(this.#dir, { recursive: true, force: true });
  }

  #startSegment(): { segment: Segment; fd: number } {
    const segment: Segment = {
      path: join(this.#dir, `${String(this.#next++).padStart(6, '0')}.spill`),
      pending: new Set(),
      sealed: false,
      bytes: 0,
    };
    // Opened first: a segment that cannot be opened is not listed as holding anything.
    const fd = openSync(segment.path, 'wx');
    this.#segments.push(segment);
    return { segment, fd };
  }
}

/** Every whole entry spilled to a version folder, oldest first; a torn or damaged tail is skipped. */
export async function readSpill(versionDir: string): Promise<SpilledBatch[]> {
  const dir = join(versionDir, SPILL_DIR);
  const entries: SpilledBatch[] = [];
  for (const name of await segmentFiles(dir)) {
    const bytes = await readFile(join(dir, name));
    for (let at = 0; at + 8 <= bytes.length; ) {
      const first = bytes.readUInt32LE(at);
      const textsApart = first >= TEXTS_APART;
      const headBytes = textsApart ? 12 : 8;
      if (at + headBytes > bytes.length) break; // killed mid-append
      const jsonBytes = first % TEXTS_APART;
      const vectorBytes = bytes.readUInt32LE(at + 4);
      const textBytes = textsApart ? bytes.readUInt32LE(at + 8) : 0;
      const end = at + headBytes + jsonBytes + textBytes + vectorBytes + 4;
      if (end > bytes.length) break;
      const body = bytes.subarray(at + headBytes, end - 4);
      if (crc32(body) !== bytes.readUInt32LE(end - 4)) break;
      entries.push(decode(body, jsonBytes, textsApart ? textBytes : undefined));
      at = end;
    }
  }
  return entries;
}

async function segmentFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((name) => /^\d{6,}\.spill$/.test(name)).sort();
}

/** The flag of an entry's first word: its texts follow the json (see the module's comment). */
const TEXTS_APART = 2 ** 31;

/** One entry as the buffers of one writev: the vectors are written from where they are, not copied. */
function encode({ plannedChunks, embedded }: SpilledBatch, scratch: Utf8Buffer): Buffer[] {
  const { vectors, chunks, ...rest } = embedded;
  scratch.clear();
  const textBytes = chunks.map((chunk) => scratch.writeUtf8(chunk.text));
  const texts = { bytes: scratch.bytes(), lengths: textBytes };
  const json = Buffer.from(
    JSON.stringify({
      plannedChunks,
      textBytes: texts.lengths,
      embedded: { ...rest, chunks: chunks.map(spilledFields) },
    }),
    'utf8',
  );
  const parts = vectorRuns(vectors).map((run) => Buffer.from(run.buffer, run.byteOffset, run.byteLength));
  const head = Buffer.allocUnsafe(12);
  head.writeUInt32LE(json.length + TEXTS_APART, 0);
  head.writeUInt32LE(
    parts.reduce((sum, part) => sum + part.length, 0),
    4,
  );
  head.writeUInt32LE(texts.bytes.length, 8);
  let crc = crc32(json);
  crc = crc32(texts.bytes, crc);
  for (const part of parts) crc = crc32(part, crc);
  const tail = Buffer.allocUnsafe(4);
  tail.writeUInt32LE(crc, 0);
  return [head, json, texts.bytes, ...parts, tail];
}

/**
 * Every field of a chunk but its text, each one present (an absent image as undefined, which JSON
 * drops): a field added to Chunk is a build error in spilledFields until it is picked there.
 */
type SpilledChunk = { readonly [K in Exclude<keyof Chunk, 'text'>]-?: Chunk[K] | undefined };

/**
 * A chunk as the json holds it (its text follows the json as UTF-8), picked by name: an object rest
 * per chunk cost more than serializing it.
 */
function spilledFields(chunk: Chunk): SpilledChunk {
  const { documentId, index, start, end, bytes, tokens, hash, image } = chunk;
  return { documentId, index, start, end, bytes, tokens, hash, image };
}

/** An entry's body; `textBytes` when its texts follow the json (undefined: inside it). */
function decode(body: Buffer, jsonBytes: number, textBytes: number | undefined): SpilledBatch {
  const parsed = JSON.parse(body.subarray(0, jsonBytes).toString('utf8')) as {
    plannedChunks: number;
    embedded: Omit<EmbeddedBatch, 'vectors'>;
    textBytes?: number[];
  };
  const { plannedChunks } = parsed;
  let embedded = parsed.embedded;
  if (textBytes !== undefined) {
    let at = jsonBytes;
    const lengths = parsed.textBytes ?? [];
    const chunks = embedded.chunks.map((chunk, i) => {
      const text = body.toString('utf8', at, at + lengths[i]!);
      at += lengths[i]!;
      return { ...chunk, text };
    });
    embedded = { ...embedded, chunks };
  }
  const vectorsAt = jsonBytes + (textBytes ?? 0);
  const count = embedded.chunks.length;
  const floats = (body.length - vectorsAt) / 4;
  const dims = count > 0 ? floats / count : 0;
  // A copy, aligned: the file's bytes need not sit at a multiple of 4.
  const all = new Float32Array(floats);
  Buffer.from(all.buffer).set(body.subarray(vectorsAt));
  const vectors = Array.from({ length: count }, (_, i) => all.subarray(i * dims, (i + 1) * dims));
  return { plannedChunks, embedded: { ...embedded, vectors } };
}
