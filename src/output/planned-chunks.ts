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
 *
 * The plan is digested as it comes too, with `_documents.jsonl`'s lines written to a second unlinked
 * file: a version where nothing failed and nothing was re-planned (nearly every one) is then checked
 * without reading the plan back: read back at the switch, in code that ran once and cold, it was a
 * measurable share of a short run (docs/benchmarks.md, "a twenty-fifth session").
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { OutputError } from '../errors.js';
import {
  type AsPlanned,
  documentLine,
  ExpectedRows,
  type FailedChunks,
  PairDigest,
  type PlanReader,
  type PlanSink,
  VersionDigest,
} from './contract.js';
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
  readonly #records: AppendFile;
  /** `_documents.jsonl`'s lines of the documents planned so far, but the open one. */
  readonly #lines: AppendFile;
  #current: string | undefined;
  /** The plan's digest so far, but the open document's. */
  readonly #digest = new VersionDigest();
  #documents = 0;
  /** The open document's rows, and the index its next chunk must have. */
  #pairs = new PairDigest();
  #next = 0;
  /**
   * False once the plan can be digested only by reading it back: a document's chunks out of index
   * order (the row-by-row path decides), or an id with a lone surrogate (UTF-8 keeps U+FFFD instead,
   * and the record read back, the files' ids and `_documents.jsonl` all have that).
   */
  #digestedAsItCame = true;

  /** A new, empty plan in unlinked files of `dir`. */
  constructor(dir: string) {
    const name = `.plan-chunks-${process.pid}-${(nextFile++).toString(36)}`;
    this.#records = new AppendFile(join(dir, name), "the plan's chunks");
    try {
      this.#lines = new AppendFile(join(dir, `${name}-documents`), "the plan's documents");
    } catch (error) {
      this.#records.close();
      throw error;
    }
  }

  add(documentId: string, index: number, hash: string): void {
    const records = this.#records;
    if (documentId !== this.#current) {
      if (this.#current !== undefined) this.#closeDocument(this.#current);
      this.#current = documentId;
      if (!documentId.isWellFormed()) this.#digestedAsItCame = false;
      if (5 + 3 * documentId.length > BLOCK)
        throw new OutputError(
          `a document id of ${documentId.length} characters is longer than a plan record holds`,
        );
      const at = records.reserve(5 + 3 * documentId.length);
      const length = records.buffer.write(documentId, at + 5, 'utf8');
      records.buffer[at] = DOCUMENT;
      records.buffer.writeUInt32LE(length, at + 1);
      records.advance(5 + length);
    }
    const key = hashKey(hash);
    const at = records.reserve(CHUNK_BYTES);
    records.buffer[at] = CHUNK;
    records.buffer.writeUInt32LE(index, at + 1);
    records.buffer.writeDoubleLE(key, at + 5);
    records.advance(CHUNK_BYTES);
    if (index !== this.#next) this.#digestedAsItCame = false;
    this.#pairs.add(index, key);
    this.#next = index + 1;
  }

  asPlanned(): AsPlanned | undefined {
    if (!this.#digestedAsItCame) return undefined;
    const digest = new VersionDigest();
    digest.addDigest(this.#digest);
    let documents = this.#documents;
    let last = '';
    if (this.#current !== undefined) {
      digest.addDocument(this.#current, this.#pairs);
      documents += 1;
      last = documentLine(this.#current, this.#pairs.value);
    }
    return {
      digest,
      documents,
      lines: (each) => {
        this.#lines.readAll(each);
        if (last !== '') each(Buffer.from(last, 'utf8'));
      },
    };
  }

  async rows(): Promise<ExpectedRows> {
    const expected = new ExpectedRows();
    const record = this.#reader();
    while (record.next()) expected.addKey(record.documentId, record.index, record.key);
    return expected;
  }

  /** Closes the files (their space is freed: they were unlinked). */
  close(): void {
    this.#records.close();
    this.#lines.close();
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

  /** The open document's chunks are all in: its digest and its line. */
  #closeDocument(id: string): void {
    const pairs = this.#pairs;
    this.#digest.addDocument(id, pairs);
    this.#documents += 1;
    const line = documentLine(id, pairs.value);
    const lines = this.#lines;
    // (An id of escaped control characters can make a line longer than a block.)
    if (3 * line.length > BLOCK) lines.append(Buffer.from(line, 'utf8'));
    else lines.advance(lines.buffer.write(line, lines.reserve(3 * line.length), 'utf8'));
    this.#pairs = new PairDigest();
    this.#next = 0;
  }

  /** A reader of every chunk planned so far, in order (what is buffered is written first). */
  #reader(): RecordReader {
    const records = this.#records;
    records.flush();
    return new RecordReader(records.fd, records.written, records.path);
  }
}

/** An unlinked file appended to a block at a time: written when the block is full or read. */
class AppendFile {
  readonly fd: number;
  readonly buffer = Buffer.allocUnsafe(BLOCK);
  #buffered = 0;
  written = 0;

  constructor(
    readonly path: string,
    private readonly what: string,
  ) {
    try {
      this.fd = openSync(path, 'wx+');
      unlinkSync(path);
    } catch (error) {
      throw new OutputError(`cannot create ${path}: ${messageOf(error)}`, { cause: error });
    }
  }

  /** Room for `bytes` (at most a block) more in the block: where they go (advance by what was put there). */
  reserve(bytes: number): number {
    if (this.#buffered + bytes > BLOCK) this.flush();
    return this.#buffered;
  }

  /** Bytes appended at once, past the block (after what it holds). */
  append(bytes: Buffer): void {
    this.flush();
    this.#writeAt(bytes, this.written);
    this.written += bytes.length;
  }

  advance(bytes: number): void {
    this.#buffered += bytes;
  }

  flush(): void {
    this.#writeAt(this.buffer.subarray(0, this.#buffered), this.written);
    this.written += this.#buffered;
    this.#buffered = 0;
  }

  #writeAt(bytes: Buffer, position: number): void {
    let done = 0;
    try {
      while (done < bytes.length) {
        done += writeSync(this.fd, bytes, done, bytes.length - done, position + done);
      }
    } catch (error) {
      throw new OutputError(`cannot write ${this.path} (${this.what}): ${messageOf(error)}`, {
        cause: error,
      });
    }
  }

  /** Everything appended, a block at a time (each block is reused once `each` returns). */
  readAll(each: (bytes: Buffer) => void): void {
    this.flush();
    const block = Buffer.allocUnsafe(Math.min(BLOCK, this.written));
    for (let offset = 0; offset < this.written; ) {
      const n = readSync(this.fd, block, 0, Math.min(block.length, this.written - offset), offset);
      if (n === 0) throw new OutputError(`${this.path} (${this.what}) ends before what was written`);
      each(block.subarray(0, n));
      offset += n;
    }
  }

  close(): void {
    closeSync(this.fd);
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
