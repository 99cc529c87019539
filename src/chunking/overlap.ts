/**
 * Overlap: every span after the first is widened to also begin with about `overlapTokens`
 * estimated tokens of the span before it, so text near a cut is seen whole by one of the two
 * chunks. The widened start lands at a word start where there is one; the widened span stays
 * within `maxTokens`.
 */
import { isSpace, splitsSurrogatePair } from './boundaries.js';
import { costOf, type Weights } from './profile.js';
import type { Span } from './spans.js';
import { isHighSurrogate, isLowSurrogate, utf8Length } from './utf8.js';

/** `spans` widened backwards; each widened start stays after the previous span's start. */
export function addOverlap(
  text: string,
  spans: readonly Span[],
  overlapTokens: number,
  maxTokens: number,
  weights: Weights,
): Span[] {
  return spans.map((span, i) => {
    const previous = spans[i - 1];
    if (previous === undefined || overlapTokens === 0) return span;
    const aim = startBefore(text, previous.start, span.start, overlapTokens, weights);
    const start = overlapStart(text, aim, span.start);
    if (start >= span.start) return span;
    const tokens = span.tokens + costOf(text, weights, start, span.start);
    if (tokens > maxTokens) return span;
    return { start, end: span.end, tokens, bytes: span.bytes + utf8Length(text, start, span.start) };
  });
}

/** The offset about `tokens` estimated tokens before `from` (by whole code points), not before `floor + 1`. */
function startBefore(text: string, floor: number, from: number, tokens: number, weights: Weights): number {
  let i = from;
  let taken = 0;
  while (i > floor + 1) {
    const pair =
      isLowSurrogate(text.charCodeAt(i - 1)) && i - 2 > floor && isHighSurrogate(text.charCodeAt(i - 2));
    const width = pair ? 2 : 1;
    const cost = costOf(text, weights, i - width, i);
    if (taken + cost > tokens) break;
    taken += cost;
    i -= width;
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
