/**
 * A request's JSON as UTF-8 bytes, the bytes `JSON.stringify` gives, written piece by piece: each
 * top-level value, and each run of a top-level array's elements, is stringified alone and appended
 * to one kept buffer, then copied into a buffer of its own, itself kept for a later body once the
 * request is done with it (`giveBack`). An embeddings request of 128 long chunks is hundreds of KB
 * of JSON: as one string it went to V8's large-object space, which only a full collection frees,
 * and undici copied it into a buffer of its own besides (docs/benchmarks.md, a thirtieth session).
 * Here each string is a few inputs' JSON and dies young, and the bodies' memory is used again (a
 * fresh one per request was a third of what a run's collections swept: a thirty-third session).
 */
import { Utf8Buffer } from '../files/utf8-buffer.js';
import { KeptBuffers } from './kept-buffers.js';

/** The kept buffer's size; a piece too large for it (an image's data URL) sends the body whole, as before. */
const KEPT_BYTES = 4 * 2 ** 20;
/** The buffer's size to begin with, and again after a larger one is let go. */
const FIRST_BYTES = 2 ** 20;
/** A UTF-16 code unit is at most 3 bytes of UTF-8: a longer piece may not fit the kept buffer. */
const LARGEST_PIECE = KEPT_BYTES / 3;
/**
 * Characters of input stringified at once: their JSON, two bytes a character at most for most
 * texts, stays under V8's 128 KB large-object size, and a body is a few calls, not one per input.
 */
const RUN_CHARS = 32_768;
/**
 * Bodies' buffers kept for later bodies: a body is written when its request goes on the wire, so
 * one for each request in flight at up to twice the default concurrency; a body larger than
 * BODY_LARGEST_KEPT is let go.
 */
const BODIES_KEPT = 16;
const BODY_LARGEST_KEPT = 2 ** 20;
const BODY_STEP = 64 * 2 ** 10;

export class JsonBodyWriter {
  #scratch = new Utf8Buffer(FIRST_BYTES);
  readonly #kept = new KeptBuffers({ count: BODIES_KEPT, largest: BODY_LARGEST_KEPT, step: BODY_STEP });
  /** The kept buffers handed out: only those are taken back. */
  readonly #lent = new WeakSet<ArrayBuffer>();

  /**
   * `body`'s JSON as UTF-8, in a buffer of its own: once nothing reads it any more (its request's
   * bytes are all sent), `giveBack` lets a later body use its memory.
   */
  bytes(body: unknown): Buffer {
    const written = isPlainObject(body) ? this.#pieceByPiece(body) : undefined;
    if (this.#scratch.capacity > KEPT_BYTES) this.#scratch = new Utf8Buffer(FIRST_BYTES);
    return written ?? Buffer.from(JSON.stringify(body) ?? 'null');
  }

  /** A body from `bytes` that nothing reads any more; any other buffer is left alone. */
  giveBack(body: Buffer): void {
    const store = body.buffer as ArrayBuffer;
    if (!this.#lent.delete(store)) return;
    this.#kept.keep(store);
  }

  /** The body written in pieces; undefined when a piece is too large for the kept buffer. */
  #pieceByPiece(body: Record<string, unknown>): Buffer | undefined {
    const scratch = this.#scratch;
    scratch.clear();
    let separator = '{';
    for (const key of Object.keys(body)) {
      const value = body[key];
      // An array is written in runs; any other value whole.
      const piece = isPlainArray(value) ? value : JSON.stringify(value);
      // JSON.stringify leaves out a property whose value has no JSON (undefined, a function).
      if (piece === undefined) continue;
      scratch.writeUtf8(`${separator}${JSON.stringify(key)}:`);
      separator = ',';
      const fits = typeof piece === 'string' ? writePiece(scratch, piece) : writeArray(scratch, piece);
      if (!fits) return undefined;
    }
    scratch.writeUtf8(separator === '{' ? '{}' : '}');
    return this.#lend(scratch.bytes());
  }

  /** A copy of `bytes` in a kept buffer (a new one when none is large enough). */
  #lend(bytes: Buffer): Buffer {
    const store = this.#kept.take(bytes.length);
    this.#lent.add(store);
    const body = Buffer.from(store, 0, bytes.length);
    bytes.copy(body);
    return body;
  }
}

/**
 * Writes `items` as a JSON array, the strings of a run of them stringified together while the run's
 * JSON stays well below V8's large-object size (and an item that is not a string alone); false
 * when one run's JSON is too large for the kept buffer.
 */
function writeArray(scratch: Utf8Buffer, items: readonly unknown[]): boolean {
  scratch.writeUtf8('[');
  for (let start = 0; start < items.length; ) {
    let end = start + 1;
    let chars = charsOf(items[start]);
    while (end < items.length && chars + charsOf(items[end]) <= RUN_CHARS) chars += charsOf(items[end++]);
    if (start > 0) scratch.writeUtf8(',');
    if (!writePiece(scratch, JSON.stringify(items.slice(start, end)).slice(1, -1))) return false;
    start = end;
  }
  scratch.writeUtf8(']');
  return true;
}

/** Writes one piece of JSON; false when it is too large for the kept buffer. */
function writePiece(scratch: Utf8Buffer, json: string): boolean {
  if (json.length > LARGEST_PIECE) return false;
  scratch.writeUtf8(json);
  return true;
}

/** How much of a run an item takes: a string its length, anything else a run of its own. */
function charsOf(item: unknown): number {
  return typeof item === 'string' ? item.length : RUN_CHARS;
}

/** An object JSON.stringify writes key by key: no prototype of its own, no toJSON. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && !('toJSON' in value);
}

function isPlainArray(value: unknown): value is readonly unknown[] {
  return Array.isArray(value) && !('toJSON' in value);
}
