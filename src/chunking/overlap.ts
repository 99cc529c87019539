/**
 * Overlap: every span after the first is widened to also begin with about `overlapTokens` tokens
 * of the span before it, so text near a cut is seen whole by one of the two chunks. The widened
 * start lands at a word start where there is one, and the widened span stays within `maxTokens`.
 */
import { isSpace, isTokenBoundary, splitsSurrogatePair } from './boundaries.js';
import type { Span } from './spans.js';
import { countTokens, tokensWithin } from './tokenizer.js';

/**
 * `spans` widened backwards; `noOverlapAt` lists starts that stay as they are (forced cuts inside
 * over-long runs, where widening would bring back the run length the cut exists to cap). Each
 * widened start stays after the previous span's start, so starts remain strictly increasing.
 */
export function addOverlap(
  text: string,
  spans: readonly Span[],
  overlapTokens: number,
  maxTokens: number,
  noOverlapAt: ReadonlySet<number>,
): Span[] {
  return spans.map((span, i) => {
    const previous = spans[i - 1];
    if (previous === undefined || noOverlapAt.has(span.start)) return span;
    return widen(text, previous, span, overlapTokens, maxTokens);
  });
}

function widen(text: string, previous: Span, span: Span, overlapTokens: number, maxTokens: number): Span {
  const floor = previous.start;
  const charsPerToken = (previous.end - previous.start) / Math.max(1, previous.tokens);
  let start = overlapStart(text, floor, span.start, span.start - overlapTokens * charsPerToken);
  // One correction from the measured count: "about overlapTokens" is enough.
  const measured = start < span.start ? countTokens(text.slice(start, span.start)) : 0;
  if (measured > 0 && Math.abs(measured - overlapTokens) > overlapTokens / 4) {
    start = overlapStart(
      text,
      floor,
      span.start,
      span.start - ((span.start - start) * overlapTokens) / measured,
    );
  }
  // BPE across the join or a poor estimate may push the widened span over maxTokens: give back half
  // of the overlap at a time.
  while (start < span.start) {
    const tokens = tokensWithin(text.slice(start, span.end), maxTokens);
    if (tokens !== false) return { start, end: span.end, tokens };
    start = overlapStart(text, start, span.start, start + (span.start - start) / 2);
  }
  return span;
}

/**
 * A start in `(floor, limit]` near `aim`: the first word start at or after it, else the last one
 * before it, else a tokenizer boundary or code point boundary at it. `limit` means no overlap.
 */
function overlapStart(text: string, floor: number, limit: number, aim: number): number {
  const from = Math.min(Math.max(Math.round(aim), floor + 1), limit);
  for (let i = from; i < limit; i++) if (isWordStart(text, i)) return i;
  for (let i = from - 1; i > floor; i--) if (isWordStart(text, i)) return i;
  for (let i = from; i < limit; i++) if (isTokenBoundary(text, i)) return i;
  return splitsSurrogatePair(text, from) ? from + 1 : from;
}

function isWordStart(text: string, i: number): boolean {
  return isSpace(text.charCodeAt(i - 1)) && !isSpace(text.charCodeAt(i));
}
