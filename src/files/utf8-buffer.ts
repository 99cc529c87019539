/**
 * Bytes appended to one buffer that grows as needed and is kept: strings as UTF-8, written in
 * place (no buffer per string), and u32 lengths. What the spill's texts, the batch ids' fields and
 * the Parquet parts' string values are laid out in.
 */
export class Utf8Buffer {
  #buffer: Buffer;
  #length = 0;

  constructor(initialBytes = 1 << 16) {
    this.#buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** Appends `text` as UTF-8; returns its byte length. */
  writeUtf8(text: string): number {
    // A UTF-16 code unit is at most 3 bytes of UTF-8: room enough, so the write is never cut.
    this.#reserve(3 * text.length);
    const written = this.#buffer.write(text, this.#length, 'utf8');
    this.#length += written;
    return written;
  }

  /** Appends `text` after its UTF-8 byte length as a u32, big-endian unless asked; returns that length. */
  writeLengthPrefixed(text: string, littleEndian = false): number {
    this.#reserve(4 + 3 * text.length);
    const at = this.#length;
    this.#length += 4;
    const length = this.writeUtf8(text);
    if (littleEndian) this.#buffer.writeUInt32LE(length, at);
    else this.#buffer.writeUInt32BE(length, at);
    return length;
  }

  /** What was appended since the last clear; valid until the next write. */
  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }

  /** Bytes the buffer holds room for. */
  get capacity(): number {
    return this.#buffer.length;
  }

  clear(): void {
    this.#length = 0;
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.#buffer.length, this.#length + bytes));
    this.#buffer.copy(bigger, 0, 0, this.#length);
    this.#buffer = bigger;
  }
}
