/**
 * Overlap: every span after the first is widened to also begin with about `overlapBytes` bytes of
 * the span before it, so text near a cut is seen whole by one of the two chunks. The widened start
 * lands at a word start where there is one; the widened span stays within `maxBytes`.
 */
import { isSpace, splitsSurrogatePair } from './boundaries.js';
import type { Span } from './spans.js';
import { isHighSurrogate, isLowSurrogate, utf8Length } from './utf8.js';

/** `spans` widened backwards; each widened start stays after the previous span's start. */
export function addOverlap(text: string, spans: readonly Span[], overlapBytes: number, maxBytes: number): Span[] {
  return spans.map((span, i) => {
    const previous = spans[i - 1];
    if (previous === undefined || overlapBytes === 0) return span;
    const aim = startBytesBefore(text, previous.start, span.start, overlapBytes);
    const start = overlapStart(text, aim, span.start);
    if (start >= span.start) return span;
    const bytes = span.bytes + utf8Length(text, start, span.start);
    return bytes <= maxBytes ? { start, end: span.end, bytes } : span;
  });
}

/** The offset `bytes` UTF-8 bytes before `from` (by whole code points), not before `floor + 1`. */
function startBytesBefore(text: string, floor: number, from: number, bytes: number): number {
  let i = from;
  let taken = 0;
  while (i > floor + 1 && taken < bytes) {
    const code = text.charCodeAt(i - 1);
    const pair = isLowSurrogate(code) && i - 2 > floor && isHighSurrogate(text.charCodeAt(i - 2));
    const size = pair ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
    if (taken + size > bytes) break;
    taken += size;
    i -= pair ? 2 : 1;
  }
  return i;
}

/** The first word start in `[aim, limit)`, else `aim` itself (a code point boundary); `limit` means none. */
function overlapStart(text: string, aim: number, limit: number): number {
  for (let i = aim; i < limit; i++) {
    if (isSpace(text.charCodeAt(i - 1)) && !isSpace(text.charCodeAt(i))) return i;
  }
  return splitsSurrogatePair(text, aim) ? aim + 1 : aim;
}
