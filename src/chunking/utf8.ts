/**
 * UTF-8 lengths of UTF-16 ranges, without encoding anything. The chunker measures text in UTF-8
 * bytes: additive over concatenation (unlike any BPE count), linear to compute, and an upper bound
 * of a byte-level tokenizer's count, which the calibration turns into an estimate of the gateway's.
 */

/** UTF-8 byte length of `text[start, end)`; a lone surrogate counts 3 bytes, as U+FFFD would. */
export function utf8Length(text: string, start = 0, end = text.length): number {
  let bytes = 0;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < end && isLowSurrogate(text.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** The longest prefix of `text` within `maxBytes` UTF-8 bytes, never splitting a surrogate pair. */
export function prefixWithinBytes(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || utf8Length(text) <= maxBytes) return text;
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    const pair = isHighSurrogate(code) && isLowSurrogate(text.charCodeAt(i + 1));
    const size = pair ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += pair ? 2 : 1;
  }
  return text.slice(0, i);
}

export function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
