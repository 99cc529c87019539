/**
 * A side file of JSON lines (`_rejects.jsonl`, `_failures.jsonl`). Records stream to a temp file as
 * they come (memory stays flat however many rows a corpus rejects), which is renamed over the file
 * on close: a re-run rewrites it rather than appending duplicates, and a run with nothing to report
 * leaves no file (and removes an old one). The leading `_` keeps side files out of the dataset as
 * pyarrow, pandas, Polars and Spark see the folder.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { OutputError } from '../errors.js';
import { tempPathFor } from './atomic.js';
import { messageOf } from './fs-errors.js';

/** Input rows that could not become documents. */
export const REJECTS_FILE = '_rejects.jsonl';
/** Chunks the gateway would not embed. */
export const FAILURES_FILE = '_failures.jsonl';
/** How the gateway counts tokens, as the dataset's runs learned it (chunking/calibrate.ts); carried to new versions. */
export const CALIBRATION_FILE = '_calibration.json';
/** Where each batch of a version's plan started (planning/batch-starts.ts): the next version's packing falls back in step there. */
export const BATCH_STARTS_FILE = '_batch-starts.jsonl';
/** Per document of a version: rows and a digest of them, as the switch checked them (output/contract.ts). */
export const DOCUMENTS_FILE = '_documents.jsonl';
/** The side files' names before the rename (a dataset of an earlier version; replaced when written again). */
export const LEGACY_NAMES = { [REJECTS_FILE]: 'rejects.jsonl', [FAILURES_FILE]: 'failures.jsonl' } as const;

/** The side file `name` of output folder `dir`; closing it also removes the file's old name. */
export function sideFile(dir: string, name: typeof REJECTS_FILE | typeof FAILURES_FILE): JsonlFile {
  return new JsonlFile(join(dir, name), { replaces: join(dir, LEGACY_NAMES[name]) });
}

export interface JsonlFileOptions {
  /** A file this one replaces (an older name): removed on close. */
  readonly replaces?: string;
}

/** Characters of lines gathered before one write. */
const PENDING_CHARS = 64 * 1024;

export class JsonlFile {
  private stream: WriteStream | undefined;
  private temp: string | undefined;
  private failure: unknown;
  private records = 0;
  private closed = false;
  /** Lines not yet handed to the stream: one write per line woke a thread of libuv's pool for a few bytes. */
  private pending = '';

  constructor(
    readonly path: string,
    private readonly options: JsonlFileOptions = {},
  ) {}

  get count(): number {
    return this.records;
  }

  add(record: object): void {
    if (this.closed) throw new OutputError(`${this.path}: add() after close()`);
    if (!this.stream) {
      this.temp = tempPathFor(this.path);
      this.stream = createWriteStream(this.temp, { flags: 'wx' });
      this.stream.on('error', (error) => {
        this.failure ??= error;
      });
    }
    this.pending += `${JSON.stringify(record)}\n`;
    this.records += 1;
    if (this.pending.length >= PENDING_CHARS) this.flush();
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    this.stream?.write(this.pending);
    this.pending = '';
  }

  /** Puts the file in place (or, with no records, removes it); returns the number of records. */
  async close(): Promise<number> {
    if (this.closed) throw new OutputError(`${this.path}: closed twice`);
    this.closed = true;
    try {
      if (this.options.replaces) await rm(this.options.replaces, { force: true });
      if (!this.stream || !this.temp) {
        await rm(this.path, { force: true });
        return 0;
      }
      this.flush();
      this.stream.end();
      await finished(this.stream).catch((error: unknown) => {
        this.failure ??= error;
      });
      if (this.failure) throw this.failure;
      await rename(this.temp, this.path);
      return this.records;
    } catch (error) {
      if (this.temp) await rm(this.temp, { force: true }).catch(() => {});
      throw new OutputError(`cannot write ${this.path}: ${messageOf(error)}`, { cause: error });
    }
  }
}
