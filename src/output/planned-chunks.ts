/**
 * The chunks a run plans (what its version must hold), kept on disk as they are planned: each
 * document's id once, then its chunks' (chunk_index, hash key), appended to an unlinked file beside
 * the version. In memory they cost 8 bytes a chunk and an id table, millions of entries in a large
 * run (docs/benchmarks.md, "Memory"). The switch reads them back in order: the plan's digest and
 * `_documents.jsonl` in constant memory, and the whole plan (ExpectedRows) only when it checks a
 * version row by row.
 *
 * A document's chunks arrive together, in index order: the planner plans a document at once and
 * the reader refuses a repeated id. Anything else read back (an index out of order, a gap no
 * failure explains) makes the digest path decline, and the row-by-row path, which takes any order,
 * decides.
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { OutputError } from '../errors.js';
import { ExpectedRows, type FailedChunks, PairDigest, type PlanReader, type PlanSink } from './contract.js';
import { messageOf } from './fs-errors.js';
import { hashKey } from './hash-key.js';

/** Bytes gathered before a write, and read at a time. */
const BLOCK = 1 << 20;
/** Record tags: a document's id (u32 length, UTF-8), then its chunks (u32 index, f64 key). */
const DOCUMENT = 1;
const CHUNK = 2;
const CHUNK_BYTES = 13;

let nextFile = 0;

export class PlannedChunks implements PlanSink, PlanReader {
  readonly #path: string;
  readonly #fd: number;
  readonly #buffer = Buffer.allocUnsafe(BLOCK);
  #buffered = 0;
  #written = 0;
  #current: string | undefined;

  /** A new, empty plan in an unlinked file of `dir`. */
  constructor(dir: string) {
    this.#path = join(dir, `.plan-chunks-${process.pid}-${(nextFile++).toString(36)}`);
    try {
      this.#fd = openSync(this.#path, 'wx+');
      unlinkSync(this.#path);
    } catch (error) {
      throw new OutputError(`cannot create ${this.#path}: ${messageOf(error)}`, { cause: error });
    }
  }

  add(documentId: string, index: number, hash: string): void {
    if (documentId !== this.#current) {
      this.#current = documentId;
      this.#reserve(5 + 3 * documentId.length);
      const length = this.#buffer.write(documentId, this.#buffered + 5, 'utf8');
      this.#buffer[this.#buffered] = DOCUMENT;
      this.#buffer.writeUInt32LE(length, this.#buffered + 1);
      this.#buffered += 5 + length;
    }
    this.#reserve(CHUNK_BYTES);
    this.#buffer[this.#buffered] = CHUNK;
    this.#buffer.writeUInt32LE(index, this.#buffered + 1);
    this.#buffer.writeDoubleLE(hashKey(hash), this.#buffered + 5);
    this.#buffered += CHUNK_BYTES;
  }

  async rows(): Promise<ExpectedRows> {
    const expected = new ExpectedRows();
    const record = this.#reader();
    while (record.next()) expected.addKey(record.documentId, record.index, record.key);
    return expected;
  }

  /** Closes the file (its space is freed: it was unlinked). */
  close(): void {
    closeSync(this.#fd);
  }

  /**
   * Documents that keep a row, each with its rows less `failed` digested; an undefined entry (and
   * nothing after it) where the plan is not one document at a time, indices 0..k-1 in order, gaps
   * only where a chunk failed.
   */
  *plannedDigests(failed: FailedChunks): Generator<[string, PairDigest] | undefined> {
    const record = this.#reader();
    let id: string | undefined;
    let pairs = new PairDigest();
    let next = 0;
    let gone: ReadonlySet<number> | undefined;
    while (record.next()) {
      if (record.documentId !== id) {
        if (id !== undefined && pairs.rows > 0) yield [id, pairs];
        id = record.documentId;
        pairs = new PairDigest();
        next = 0;
        gone = failed.get(id);
      }
      if (record.index < next) {
        yield undefined;
        return;
      }
      for (; next < record.index; next++) {
        if (!gone?.has(next)) {
          yield undefined;
          return;
        }
      }
      if (!gone?.has(record.index)) pairs.add(record.index, record.key);
      next = record.index + 1;
    }
    if (id !== undefined && pairs.rows > 0) yield [id, pairs];
  }

  /** A reader of every chunk planned so far, in order (what is buffered is written first). */
  #reader(): RecordReader {
    this.#flush();
    return new RecordReader(this.#fd, this.#written, this.#path);
  }

  #reserve(bytes: number): void {
    if (bytes > BLOCK)
      throw new OutputError(`a document id of ${bytes} bytes is longer than a plan record holds`);
    if (this.#buffered + bytes > BLOCK) this.#flush();
  }

  #flush(): void {
    let done = 0;
    try {
      while (done < this.#buffered) {
        done += writeSync(this.#fd, this.#buffer, done, this.#buffered - done, this.#written + done);
      }
    } catch (error) {
      throw new OutputError(`cannot write ${this.#path} (the plan's chunks): ${messageOf(error)}`, {
        cause: error,
      });
    }
    this.#written += this.#buffered;
    this.#buffered = 0;
  }
}

/**
 * The plan's records read back a block at a time. `next` moves to the next chunk and sets the
 * fields in place: an object per chunk was millions of objects at the switch of a large run, and
 * their collection held its peak memory (docs/benchmarks.md, "Memory").
 */
class RecordReader {
  documentId = '';
  index = 0;
  key = 0;
  readonly #block = Buffer.allocUnsafe(BLOCK);
  #have = 0;
  #at = 0;
  #offset = 0;

  constructor(
    private readonly fd: number,
    private readonly written: number,
    private readonly path: string,
  ) {}

  /** Moves to the next chunk (reading its document's id on the way); false at the end. */
  next(): boolean {
    const block = this.#block;
    while (this.#need(1)) {
      const tag = block[this.#at];
      if (tag === CHUNK) {
        if (!this.#need(CHUNK_BYTES)) throw this.#torn();
        this.index = block.readUInt32LE(this.#at + 1);
        this.key = block.readDoubleLE(this.#at + 5);
        this.#at += CHUNK_BYTES;
        return true;
      }
      if (tag !== DOCUMENT) throw new OutputError(`${this.path} (the plan's chunks) holds an unknown record`);
      if (!this.#need(5)) throw this.#torn();
      const length = block.readUInt32LE(this.#at + 1);
      if (!this.#need(5 + length)) throw this.#torn();
      this.documentId = block.toString('utf8', this.#at + 5, this.#at + 5 + length);
      this.#at += 5 + length;
    }
    return false;
  }

  /** Whether `bytes` bytes from the read position are in the block, reading more when not (false: the end). */
  #need(bytes: number): boolean {
    if (this.#at + bytes <= this.#have) return true;
    const block = this.#block;
    block.copy(block, 0, this.#at, this.#have);
    this.#have -= this.#at;
    this.#at = 0;
    while (this.#have < bytes && this.#offset < this.written) {
      const n = readSync(
        this.fd,
        block,
        this.#have,
        Math.min(BLOCK - this.#have, this.written - this.#offset),
        this.#offset,
      );
      if (n === 0) break;
      this.#have += n;
      this.#offset += n;
    }
    return this.#have >= bytes;
  }

  #torn(): OutputError {
    return new OutputError(`${this.path} (the plan's chunks) ends inside a record`);
  }
}
