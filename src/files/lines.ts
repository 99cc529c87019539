/**
 * Splits a byte stream into lines (on LF; a CR before the LF is dropped) without decoding it, so
 * each line can be validated on its own. Each line is copied once (no quadratic concatenation for
 * lines spanning many chunks), and a line longer than the limit is skipped without being held.
 */
import { isUtf8 } from 'node:buffer';

export interface RawLine {
  /** 1-based line number. */
  readonly number: number;
  /** The line's bytes without its line break, or undefined when it was longer than the limit. */
  readonly bytes: Buffer | undefined;
  /** The line's length in bytes. */
  readonly size: number;
}

/** A line already decoded as UTF-8 (see LineSplitter.pushText). */
export interface TextLine {
  /** 1-based line number. */
  readonly number: number;
  /** The line's text without its line break. */
  readonly text: string;
  /** The line's length in bytes. */
  readonly size: number;
}

const LF = 0x0a;
const CR = 0x0d;

export class LineSplitter {
  readonly #maxLineBytes: number;
  /** Pieces of the current line, from earlier chunks. */
  #parts: Buffer[] = [];
  #size = 0;
  #tooLong = false;
  #number = 0;

  constructor(maxLineBytes: number) {
    this.#maxLineBytes = maxLineBytes;
  }

  /**
   * The lines completed by `chunk`; the rest is copied and kept for the next chunk. Consume the
   * lines before the next push: a line may be a view of `chunk`.
   */
  push(chunk: Buffer): Generator<RawLine> {
    // Undecoded, every line is a RawLine.
    return this.#split(chunk, false) as Generator<RawLine>;
  }

  /**
   * As push, but the lines that lie whole in `chunk` come decoded when the chunk's complete lines
   * are valid UTF-8 (checked once per chunk): one native decode a line, no Buffer nor line copy per
   * line. Any other line (begun in an earlier chunk, over the limit, or in a chunk holding invalid
   * UTF-8) comes as bytes, for the caller's decoder to read or name the bad byte.
   */
  pushText(chunk: Buffer): Generator<RawLine | TextLine> {
    return this.#split(chunk, true);
  }

  *#split(chunk: Buffer, decode: boolean): Generator<RawLine | TextLine> {
    let start = 0;
    let lf = chunk.indexOf(LF);
    if (lf !== -1 && (this.#size > 0 || this.#tooLong)) {
      this.#append(chunk.subarray(0, lf));
      yield this.#take();
      start = lf + 1;
      lf = chunk.indexOf(LF, start);
    }
    const valid = decode && lf !== -1 && isUtf8(chunk.subarray(start, chunk.lastIndexOf(LF)));
    for (; lf !== -1; lf = chunk.indexOf(LF, start)) {
      const size = lf - start;
      if (valid && size <= this.#maxLineBytes) {
        const end = size > 0 && chunk[lf - 1] === CR ? lf - 1 : lf;
        this.#number += 1;
        yield { number: this.#number, text: chunk.toString('utf8', start, end), size };
      } else {
        this.#append(chunk.subarray(start, lf));
        yield this.#take();
      }
      start = lf + 1;
    }
    // The chunk's buffer may be read into again (inputBytes' reuseBuffers): what is carried is copied.
    this.#append(chunk.subarray(start), true);
  }

  /** The last line, if the stream did not end with a line break. */
  *end(): Generator<RawLine> {
    if (this.#size > 0 || this.#tooLong) yield this.#take();
  }

  #append(piece: Buffer, copy = false): void {
    if (piece.length === 0) return;
    this.#size += piece.length;
    if (this.#tooLong) return;
    if (this.#size > this.#maxLineBytes) {
      this.#tooLong = true;
      this.#parts = [];
      return;
    }
    this.#parts.push(copy ? Buffer.from(piece) : piece);
  }

  #take(): RawLine {
    this.#number += 1;
    let bytes: Buffer | undefined;
    if (!this.#tooLong) {
      bytes = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#size);
      if (bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, -1);
    }
    const line = { number: this.#number, bytes, size: this.#size };
    this.#parts = [];
    this.#size = 0;
    this.#tooLong = false;
    return line;
  }
}
