/**
 * Byte offset → 1-based line number for a byte stream, so a parser that reports byte offsets gets
 * line numbers counted the way an editor counts them: a line break is LF, CRLF (once) or a lone CR.
 *
 * Why not the parser's own count: csv-parse counts CRLF inside a quoted field as two lines, so
 * every record after a multi-line CRLF field would get a wrong line number.
 *
 * Streaming: fed every chunk in order, queried with non-decreasing offsets, it keeps only the
 * bytes from the last queried offset on (for a CSV reader: about one record plus stream buffers).
 */
const LF = 0x0a;
const CR = 0x0d;

export class LineIndex {
  /** Chunks still needed; #chunks[0] starts at stream offset #base. */
  readonly #chunks: Buffer[] = [];
  #base = 0;
  /** Stream offset just past the last byte fed. */
  #fed = 0;
  /** Line breaks are counted up to #cursor; #line is the line number there. */
  #cursor = 0;
  #line = 1;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#fed += chunk.length;
  }

  /** Bytes fed so far. */
  get fed(): number {
    return this.#fed;
  }

  /** Bytes held from the last queried offset on. */
  get retained(): number {
    return this.#fed - this.#base;
  }

  /** The byte at `offset`, or undefined past the bytes fed so far (or already released). */
  byteAt(offset: number): number | undefined {
    let start = this.#base;
    for (const chunk of this.#chunks) {
      if (offset < start + chunk.length) return offset >= start ? chunk[offset - start] : undefined;
      start += chunk.length;
    }
    return undefined;
  }

  /**
   * The line `offset` is on: 1 + the line breaks that end before it (the bytes of a line break
   * belong to the line they end). Releases the bytes before `offset`.
   */
  lineAt(offset: number): number {
    if (offset < this.#cursor) throw new RangeError(`LineIndex: offset ${offset} before ${this.#cursor}`);
    const stop = Math.min(offset, this.#fed);
    let start = this.#base;
    for (const chunk of this.#chunks) {
      const end = start + chunk.length;
      if (end > this.#cursor && start < stop) {
        this.#line += this.#countBreaks(
          chunk,
          Math.max(this.#cursor, start) - start,
          Math.min(stop, end) - start,
          start,
        );
      }
      start = end;
      if (start >= stop) break;
    }
    this.#cursor = stop;
    this.#release();
    return this.#line;
  }

  /**
   * The first offset at or after `offset` that does not start one of `sequences` (a parser's record
   * delimiters): where the next record begins after blank lines. Stops at the bytes fed so far.
   */
  skipDelimiters(offset: number, sequences: readonly Uint8Array[]): number {
    let at = offset;
    for (;;) {
      const match = sequences.find((sequence) => sequence.length > 0 && this.#startsWith(at, sequence));
      if (match === undefined) return at;
      at += match.length;
    }
  }

  #startsWith(offset: number, sequence: Uint8Array): boolean {
    for (let i = 0; i < sequence.length; i++) {
      if (this.byteAt(offset + i) !== sequence[i]) return false;
    }
    return true;
  }

  /** Line breaks ending in chunk[from, to); `chunkStart` is the chunk's stream offset. */
  #countBreaks(chunk: Buffer, from: number, to: number, chunkStart: number): number {
    const view = chunk.subarray(from, to);
    let breaks = 0;
    // indexOf is native and fast; a byte loop in JS would cap throughput.
    for (let i = view.indexOf(LF); i !== -1; i = view.indexOf(LF, i + 1)) breaks += 1;
    for (let i = view.indexOf(CR); i !== -1; i = view.indexOf(CR, i + 1)) {
      // A CR followed by LF is counted at the LF; a lone CR is a break of its own (old Mac files).
      // Callers only query offsets the parser has passed, so the byte after a CR is known.
      const next = i + 1 < view.length ? view[i + 1] : this.byteAt(chunkStart + from + i + 1);
      if (next !== LF) breaks += 1;
    }
    return breaks;
  }

  #release(): void {
    while (this.#chunks.length > 0 && this.#base + this.#chunks[0]!.length <= this.#cursor) {
      this.#base += this.#chunks.shift()!.length;
    }
  }
}
