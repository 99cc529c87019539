/**
 * A side file of JSON lines (`rejects.jsonl`, `failures.jsonl`). Records stream to a temp file as
 * they come (memory stays flat however many rows a corpus rejects), which is renamed over the file
 * on close: a re-run rewrites it rather than appending duplicates, and a run with nothing to report
 * leaves no file (and removes an old one).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { OutputError } from '../errors.js';
import { tempPathFor } from './atomic.js';
import { messageOf } from './fs-errors.js';

export class JsonlFile {
  private stream: WriteStream | undefined;
  private temp: string | undefined;
  private failure: unknown;
  private records = 0;
  private closed = false;

  constructor(readonly path: string) {}

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
    this.stream.write(`${JSON.stringify(record)}\n`);
    this.records += 1;
  }

  /** Puts the file in place (or, with no records, removes it); returns the number of records. */
  async close(): Promise<number> {
    if (this.closed) throw new OutputError(`${this.path}: closed twice`);
    this.closed = true;
    try {
      if (!this.stream || !this.temp) {
        await rm(this.path, { force: true });
        return 0;
      }
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
