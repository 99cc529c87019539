/**
 * A side file of JSON lines (`rejects.jsonl`, `failures.jsonl`). Records are buffered and the file
 * is written whole on close, atomically: a re-run rewrites it rather than appending duplicates, and
 * a run with nothing to report leaves no file (and removes an old one).
 */
import { rm } from 'node:fs/promises';
import { OutputError } from '../errors.js';
import { writeFileAtomic } from './atomic.js';
import { messageOf } from './fs-errors.js';

export class JsonlFile {
  private lines: string[] = [];
  private closed = false;

  constructor(readonly path: string) {}

  get count(): number {
    return this.lines.length;
  }

  add(record: object): void {
    if (this.closed) throw new OutputError(`${this.path}: add() after close()`);
    this.lines.push(`${JSON.stringify(record)}\n`);
  }

  /** Writes (or, with no records, removes) the file; returns the number of records. */
  async close(): Promise<number> {
    if (this.closed) throw new OutputError(`${this.path}: closed twice`);
    this.closed = true;
    const count = this.lines.length;
    if (count === 0) {
      try {
        await rm(this.path, { force: true });
      } catch (error) {
        throw new OutputError(`cannot remove ${this.path}: ${messageOf(error)}`, { cause: error });
      }
    } else {
      await writeFileAtomic(this.path, this.lines.join(''));
    }
    this.lines = [];
    return count;
  }
}
