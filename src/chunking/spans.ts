/**
 * Splitting a text into contiguous spans of at most `budget` estimated gateway tokens (see
 * profile.ts), cutting at the coarsest boundary that works: paragraphs, then sentences, then words,
 * and a hard cut only inside a single word that alone is over budget.
 *
 * The estimate adds up exactly over concatenation, so packing is exact and greedy, and the whole
 * split is linear: a text that fits is measured once, an oversized one a few times per level.
 */
import { isClassBoundary, Level, pieces, splitsSurrogatePair } from './boundaries.js';
import { costOf, costWithin, prefixWithinCost, type Weights } from './profile.js';
import { utf8Length } from './utf8.js';

/** `text.slice(start, end)`: its estimated tokens and its UTF-8 length. */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly tokens: number;
  readonly bytes: number;
}

/**
 * Contiguous spans covering `text` (`spans[0].start === 0`, each `end` is the next `start`, the
 * last `end` is `text.length`), each of at most `budget` estimated tokens under `weights` and none
 * empty. `budget` must hold any single character. Deterministic.
 */
export function splitIntoSpans(text: string, budget: number, weights: Weights): Span[] {
  if (text.length === 0) return [];
  const tokens = costWithin(text, weights, budget);
  if (tokens !== undefined)
    return [{ start: 0, end: text.length, tokens, bytes: Buffer.byteLength(text, 'utf8') }];
  const splitter = new SpanSplitter(text, budget, weights);
  splitter.pack(0, text.length, Level.paragraph);
  return splitter.spans;
}

/** How far back from a byte-exact hard cut to look for a cleaner place. */
const CLEAN_CUT_LOOKBACK = 32;

/** Made when first needed: creating the first segmenter loads ICU's break data, a cost at every start-up. */
let graphemes: Intl.Segmenter | undefined;

class SpanSplitter {
  readonly spans: Span[] = [];

  constructor(
    private readonly text: string,
    private readonly budget: number,
    private readonly weights: Weights,
  ) {}

  private emit(start: number, end: number, tokens: number): void {
    this.spans.push({ start, end, tokens, bytes: utf8Length(this.text, start, end) });
  }

  /** Greedy packing of the pieces of `[start, end)` at `level`; a piece over budget is split finer. */
  pack(start: number, end: number, level: Level): void {
    let groupStart = start;
    let groupEnd = start;
    let groupTokens = 0;
    const flush = () => {
      if (groupEnd > groupStart) this.emit(groupStart, groupEnd, groupTokens);
      groupStart = groupEnd;
      groupTokens = 0;
    };
    for (const piece of pieces(this.text, start, end, level)) {
      const tokens = costOf(this.text, this.weights, piece.start, piece.end);
      if (tokens > this.budget) {
        flush();
        if (level === Level.word) this.hardCut(piece.start, piece.end);
        else this.pack(piece.start, piece.end, level === Level.paragraph ? Level.sentence : Level.word);
        groupStart = groupEnd = piece.end;
        continue;
      }
      if (groupTokens + tokens > this.budget) flush();
      groupEnd = piece.end;
      groupTokens += tokens;
    }
    flush();
  }

  /** Cuts one over-budget word into spans of (nearly) `budget` tokens each. */
  private hardCut(start: number, end: number): void {
    for (let pos = start; pos < end; ) {
      const limit = prefixWithinCost(this.text, this.weights, pos, end, this.budget);
      const cut = this.cleanCut(pos, limit, end);
      this.emit(pos, cut, costOf(this.text, this.weights, pos, cut));
      pos = cut;
    }
  }

  /**
   * A cut in `(pos, limit]`: `limit` itself at the end, else a change of character class shortly
   * before it, else the last grapheme cluster boundary (a flag, a ZWJ family or a letter with its
   * marks stays whole), else `limit` (a code point boundary).
   */
  private cleanCut(pos: number, limit: number, end: number): number {
    if (limit >= end) return end;
    if (limit <= pos) throw new Error(`span budget ${this.budget} cannot hold one code point at ${pos}`);
    for (let k = limit; k > pos && k > limit - CLEAN_CUT_LOOKBACK; k--) {
      if (isClassBoundary(this.text, k)) return k;
    }
    const from = Math.max(pos, limit - 4 * CLEAN_CUT_LOOKBACK);
    let best = pos;
    graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    for (const { index } of graphemes.segment(this.text.slice(from, limit + 1))) {
      const at = from + index;
      if (at > limit) break;
      if (at > pos) best = at;
    }
    if (best > pos && !splitsSurrogatePair(this.text, best)) return best;
    return limit;
  }
}
