/**
 * Decoding at the byte level: corpus files are read as bytes so that text that cannot be decoded is
 * rejected per entry (a text file, a JSONL line, a CSV field) instead of being silently replaced
 * with U+FFFD by a lenient decoder. UTF-8 by default; `--encoding` names another (TextDecoding).
 */
import { TextDecoder } from 'node:util';

/** The first byte a decoder refused, and where: `within` the line, a field, or (absent) the file. */
export interface BadByte {
  readonly byte: number;
  readonly offset: number;
  readonly within?: string | undefined;
}

const atByte = ({ byte, offset, within }: BadByte): string =>
  `byte 0x${byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${offset}${within ? ` of ${within}` : ''}`;

/** Why a text does not decode: the reject's reason. */
const Reason = {
  invalidUtf8: (at: BadByte, suggested: string) =>
    `invalid UTF-8 (${atByte(at)}); it reads as ${suggested}: pass --encoding ${suggested}`,
  /** With --encoding: neither UTF-8 (tried first) nor the encoding reads it. */
  invalidUtf8Or: (at: BadByte, encoding: string) => `invalid UTF-8 (${atByte(at)}) and invalid ${encoding}`,
  invalidEncoding: (encoding: string, within?: string) =>
    `invalid ${encoding}${within ? ` in ${within}` : ''}`,
};

// fatal: invalid bytes throw instead of becoming U+FFFD (a real U+FFFD in the data still decodes).
// ignoreBOM: a U+FEFF inside a field or line is data; only the file's leading BOM is dropped (files/bom.ts).
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of `bytes`, or undefined when they are not valid UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strict.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Where the first invalid UTF-8 sequence of `bytes` starts, or -1 when they are valid UTF-8.
 * Only called for bytes the decoder refused, to name the culprit in the reject.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    // Continuation bytes needed, and the range of the first one (excludes overlong forms,
    // surrogates and code points above U+10FFFF), per the Unicode table of well-formed sequences.
    let needed: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) needed = 1;
    else if (lead >= 0xe0 && lead <= 0xef) {
      needed = 2;
      if (lead === 0xe0) low = 0xa0;
      if (lead === 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      needed = 3;
      if (lead === 0xf0) low = 0x90;
      if (lead === 0xf4) high = 0x8f;
    } else return i;
    for (let k = 1; k <= needed; k++) {
      const byte = bytes[i + k];
      if (byte === undefined || byte < (k === 1 ? low : 0x80) || byte > (k === 1 ? high : 0xbf)) return i;
    }
    i += needed + 1;
  }
  return -1;
}

/**
 * The encoding to suggest for bytes that are not UTF-8: a UTF-16 byte order mark says which
 * UTF-16; anything else is most likely Latin-1, which windows-1252 (a superset) reads byte for byte.
 */
export function likelyEncoding(bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return 'windows-1252';
}

/**
 * The WHATWG name of an encoding label as Node's TextDecoder knows it ('latin1' and 'iso-8859-1'
 * are 'windows-1252', 'utf8' is 'utf-8'), or undefined for a label it does not support.
 */
export function encodingName(label: string): string | undefined {
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return undefined;
  }
}

/** What an unknown --encoding is told to pick from. */
export const ENCODING_EXAMPLES =
  "a label Node's TextDecoder knows: utf-8 (the default), windows-1252 (also latin1, iso-8859-1), " +
  'iso-8859-15, utf-16le, shift_jis, gb18030…';

/**
 * The encodings whose bytes 0x00–0x7F are not always ASCII (WHATWG's list): a CSV or JSONL file in
 * one cannot be split into rows as bytes.
 */
const ASCII_INCOMPATIBLE = new Set(['utf-16le', 'utf-16be', 'iso-2022-jp']);

/** Decodes bytes in one encoding: undefined when they are not valid in it. */
type Decode = (bytes: Uint8Array) => string | undefined;

/** windows-1252's characters for the bytes 0x80–0x9F (the five it leaves unassigned map to C1 controls). */
const WINDOWS_1252_HIGH =
  '\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F' +
  '\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178';

/**
 * windows-1252, which is also what the labels latin1 and iso-8859-1 mean, decoded here and not by
 * TextDecoder: Node 20.18.3+ and 22.13+ decode its 0x80–0x9F as Latin-1's C1 controls instead of
 * the euro sign, curly quotes, dashes, ™… (nodejs/node#60888). Every byte is a character: it never fails.
 */
function decodeWindows1252(bytes: Uint8Array): string {
  const latin1 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  return latin1.replace(/[\u0080-\u009F]/g, (c) => WINDOWS_1252_HIGH[c.charCodeAt(0) - 0x80]!);
}

/** A fatal decoder for `encoding` (any but UTF-8, which decodeUtf8 reads). */
function decoderFor(encoding: string, ignoreBOM: boolean): Decode {
  if (encoding === 'windows-1252') return decodeWindows1252;
  const decoder = new TextDecoder(encoding, { fatal: true, ignoreBOM });
  return (bytes) => {
    try {
      return decoder.decode(bytes);
    } catch {
      return undefined;
    }
  };
}

/**
 * How the readers turn an entry's bytes into text. UTF-8, or with `--encoding`:
 * - an ASCII-compatible encoding (windows-1252, iso-8859-15, shift_jis…) reads what is not valid
 *   UTF-8: text that is valid UTF-8 (plain ASCII included) still reads as UTF-8, so a folder that
 *   mixes UTF-8 and Latin-1 files reads right (Latin-1 text that happens to be valid UTF-8 would
 *   need sequences such as "Ã©", which real text does not hold);
 * - UTF-16 (or ISO-2022-JP) reads everything: UTF-16 text is often valid UTF-8 byte for byte.
 */
export class TextDecoding {
  /** The WHATWG name of the encoding. */
  readonly encoding: string;
  /** Whether line breaks, commas and quotes are their ASCII bytes (CSV and JSONL can be read). */
  readonly asciiCompatible: boolean;
  /** The --encoding decoder; undefined for UTF-8. */
  readonly #other: Decode | undefined;

  /** Throws RangeError for a label Node's TextDecoder does not support (settings check it first). */
  constructor(label = 'utf-8') {
    const encoding = encodingName(label);
    if (encoding === undefined) throw new RangeError(`unsupported encoding ${JSON.stringify(label)}`);
    this.encoding = encoding;
    this.asciiCompatible = !ASCII_INCOMPATIBLE.has(encoding);
    // ignoreBOM: false for UTF-16 (read whole files only): its byte order mark is not text.
    this.#other = encoding === 'utf-8' ? undefined : decoderFor(encoding, this.asciiCompatible);
  }

  /** The text of `bytes`, or undefined when they cannot be read (`problem` says why). */
  decode(bytes: Uint8Array): string | undefined {
    if (this.asciiCompatible) {
      const text = decodeUtf8(bytes);
      if (text !== undefined || this.#other === undefined) return text;
    }
    return this.#other!(bytes);
  }

  /**
   * The reject reason for `bytes` that `decode` refused. `within` names the part of the entry the
   * offset counts from ('the line', 'field "text"'); without it, the file.
   */
  problem(bytes: Uint8Array, within?: string): string {
    if (!this.asciiCompatible) return Reason.invalidEncoding(this.encoding, within);
    const offset = Math.max(0, invalidUtf8Offset(bytes));
    const at = { byte: bytes[offset] ?? 0, offset, within };
    return this.#other === undefined
      ? Reason.invalidUtf8(at, likelyEncoding(bytes))
      : Reason.invalidUtf8Or(at, this.encoding);
  }
}

/** UTF-8: the default decoding. */
export const UTF8 = new TextDecoding();
