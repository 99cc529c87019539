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
    for (const record of this.#records()) expected.addKey(record.documentId, record.index, record.key);
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
    let id: string | undefined;
    let pairs = new PairDigest();
    let next = 0;
    let gone: ReadonlySet<number> | undefined;
    for (const record of this.#records()) {
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

  /** Every chunk planned so far, in order (what is buffered written first). */
  *#records(): Generator<{ documentId: string; index: number; key: number }> {
    this.#flush();
    const fd = this.#fd;
    const written = this.#written;
    const block = Buffer.allocUnsafe(BLOCK);
    let have = 0;
    let at = 0;
    let offset = 0;
    /** Whether `bytes` bytes from `at` are in the block, reading more when not (false: the end). */
    const need = (bytes: number): boolean => {
      if (at + bytes <= have) return true;
      block.copy(block, 0, at, have);
      have -= at;
      at = 0;
      while (have < bytes && offset < written) {
        const n = readSync(fd, block, have, Math.min(BLOCK - have, written - offset), offset);
        if (n === 0) break;
        have += n;
        offset += n;
      }
      return have >= bytes;
    };
    const torn = () => new OutputError(`${this.#path} (the plan's chunks) ends inside a record`);
    let documentId = '';
    while (need(1)) {
      const tag = block[at];
      if (tag === CHUNK) {
        if (!need(CHUNK_BYTES)) throw torn();
        yield { documentId, index: block.readUInt32LE(at + 1), key: block.readDoubleLE(at + 5) };
        at += CHUNK_BYTES;
      } else if (tag === DOCUMENT) {
        if (!need(5)) throw torn();
        const length = block.readUInt32LE(at + 1);
        if (!need(5 + length)) throw torn();
        documentId = block.toString('utf8', at + 5, at + 5 + length);
        at += 5 + length;
      } else throw new OutputError(`${this.#path} (the plan's chunks) holds an unknown record`);
    }
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
