/**
 * Splitting a text into contiguous spans of at most `budget` tokens, cutting at the coarsest
 * boundary that works: paragraphs, then sentences, then words, and a hard cut only inside a single
 * word that alone is over budget.
 *
 * Cost model: every piece is counted once (over-budget pieces only up to the budget, thanks to the
 * tokenizer's early exit), and every span once more for its exact count — about two passes of the
 * tokenizer over ordinary text. Hard cuts search the cut by interpolation and bisection over prefix
 * lengths, so a 10 MB word costs a few counts per chunk, never a count per character.
 */
import { forcedCuts, isTokenBoundary, Level, pieces, splitsSurrogatePair } from './boundaries.js';
import { countTokens, tokensWithin } from './tokenizer.js';

/** `text.slice(start, end)` holds exactly `tokens` tokens. */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly tokens: number;
}

/**
 * Contiguous spans covering `text` (`spans[0].start === 0`, each `end` is the next `start`, the
 * last `end` is `text.length`), each of at most `budget` tokens and none empty. `budget` must be
 * at least 4: one code point can need 4 tokens. `cuts` are the text's forced cuts (pass them when
 * already computed); each one starts a span. Deterministic.
 */
export function splitIntoSpans(
  text: string,
  budget: number,
  cuts: readonly number[] = forcedCuts(text),
): Span[] {
  return new SpanSplitter(text, budget).split(cuts);
}

/** Texts up to budget × this many characters try the one-count fast path (English: ~4.3 chars/token). */
const FAST_PATH_CHARS_PER_TOKEN = 5;

/** How far back from a computed hard cut to look for a tokenizer boundary instead. */
const TOKEN_BOUNDARY_LOOKBACK = 32;

class SpanSplitter {
  private readonly spans: Span[] = [];
  /** Learned from the last hard cut: where to aim the next one. */
  private charsPerToken = 4;

  constructor(
    private readonly text: string,
    private readonly budget: number,
  ) {}

  split(cuts: readonly number[]): Span[] {
    // Forced cuts (inside over-long runs) split the text into sections that are chunked on their own.
    let start = 0;
    for (const cut of [...cuts, this.text.length]) {
      this.section(start, cut);
      start = cut;
    }
    return this.spans;
  }

  private section(start: number, end: number): void {
    if (start === end) return;
    // Fast path, for texts short enough to be likely to fit: one count. Longer texts go straight to
    // packing, which still yields one span when they fit, instead of paying for a count that
    // usually fails.
    if (end - start <= this.budget * FAST_PATH_CHARS_PER_TOKEN) {
      const tokens = tokensWithin(this.text.slice(start, end), this.budget);
      if (tokens !== false) {
        this.emit(start, end, tokens);
        return;
      }
    }
    this.pack(start, end, Level.paragraph);
  }

  /** Greedy packing of the pieces of `[start, end)` at `level`; a piece over budget is split finer. */
  private pack(start: number, end: number, level: Level): void {
    const group = new Group();
    for (const piece of pieces(this.text, start, end, level)) {
      const tokens = tokensWithin(this.text.slice(piece.countFrom, piece.countTo), this.budget);
      if (tokens === false) {
        while (group.size > 0) this.emitHead(group, level);
        this.splitFiner(piece.start, piece.end, level);
        continue;
      }
      // +1: the group's trailing separator, which no piece's count includes.
      while (group.size > 0 && group.tokens + tokens + 1 > this.budget) this.emitHead(group, level);
      group.add(piece.start, piece.end, tokens);
    }
    while (group.size > 0) this.emitHead(group, level);
  }

  private splitFiner(start: number, end: number, level: Level): void {
    if (level === Level.word) this.hardCut(start, end);
    else this.pack(start, end, level === Level.paragraph ? Level.sentence : Level.word);
  }

  /**
   * Emits the group's pieces as one span when the exact count fits. Concatenated pieces may count
   * more than the sum of their counts (BPE merges across the joins); then trailing pieces worth the
   * excess stay in the group for the next span.
   */
  private emitHead(group: Group, level: Level): void {
    let last = group.size - 1;
    for (;;) {
      const end = group.ends[last]!;
      const tokens = countTokens(this.text.slice(group.start, end));
      if (tokens <= this.budget) {
        this.emit(group.start, end, tokens);
        break;
      }
      if (last === 0) {
        this.splitFiner(group.start, end, level);
        break;
      }
      for (let excess = tokens - this.budget; last > 0 && excess > 0; last--) excess -= group.counts[last]!;
    }
    group.dropHead(last + 1);
  }

  /** Cuts one over-budget word into spans of (nearly) `budget` tokens each. */
  private hardCut(start: number, end: number): void {
    for (let pos = start; pos < end; ) {
      const prefix = this.longestPrefix(pos, end);
      this.emit(pos, prefix.end, prefix.tokens);
      pos = prefix.end;
    }
  }

  /**
   * The longest prefix of `text[pos, end)` within budget — or one within 1% of the budget, which
   * saves probes — preferring cuts at tokenizer boundaries. Keeps a bracket `lo` (fits) / `hi` (every
   * cut at or after it is over) and probes by interpolating the token count, falling back to
   * bisection, so a cut costs a handful of counts of about one chunk each.
   */
  private longestPrefix(pos: number, end: number): { end: number; tokens: number } {
    const { text, budget } = this;
    const slack = Math.max(1, Math.floor(budget / 100));
    const enough = budget - slack;
    // Aim inside the accepted band, so that a good estimate is accepted at the first probe.
    const target = budget - slack / 2;
    let lo = pos;
    let loTokens = 0;
    let hi = end + 1;
    let aim = pos + target * this.charsPerToken;
    while (loTokens < enough) {
      const cut = this.cutNear(aim, lo, Math.min(hi - 1, end), end);
      if (cut === undefined) break;
      const tokens = tokensWithin(text.slice(pos, cut), budget);
      if (tokens === false) {
        hi = cut;
      } else {
        lo = cut;
        loTokens = tokens;
        if (cut === end) break;
      }
      aim = nextAim(pos, lo, loTokens, hi, end, target);
    }
    if (lo === pos) throw new Error(`chunk budget ${budget} cannot hold one code point at offset ${pos}`);
    this.charsPerToken = (lo - pos) / loTokens;
    return { end: lo, tokens: loTokens };
  }

  /** A cut in `(lo, upper]` near `aim`: a tokenizer boundary shortly before it, else a code point boundary. */
  private cutNear(aim: number, lo: number, upper: number, end: number): number | undefined {
    const cut = Math.min(Math.max(Math.round(aim), lo + 1), upper);
    if (cut <= lo) return undefined;
    for (let k = cut; k > lo && k > cut - TOKEN_BOUNDARY_LOOKBACK; k--) {
      if (k === end || isTokenBoundary(this.text, k)) return k;
    }
    if (!splitsSurrogatePair(this.text, cut)) return cut;
    if (cut - 1 > lo) return cut - 1;
    return cut + 1 <= upper ? cut + 1 : undefined;
  }

  private emit(start: number, end: number, tokens: number): void {
    this.spans.push({ start, end, tokens });
  }
}

/** Next probe: extrapolate from the fitting prefix, kept inside the middle half of a known bracket. */
function nextAim(pos: number, lo: number, loTokens: number, hi: number, end: number, target: number): number {
  const extrapolated = loTokens > 0 ? pos + ((lo - pos) * target) / loTokens : undefined;
  if (hi > end) return extrapolated ?? lo + 1;
  if (extrapolated === undefined) return (lo + hi) / 2;
  const quarter = (hi - lo) / 4;
  return Math.min(Math.max(extrapolated, lo + quarter), hi - quarter);
}

/** Consecutive pieces waiting to become one span, with their estimated token counts. */
class Group {
  start = 0;
  tokens = 0;
  readonly ends: number[] = [];
  readonly counts: number[] = [];

  get size(): number {
    return this.ends.length;
  }

  add(start: number, end: number, tokens: number): void {
    if (this.ends.length === 0) this.start = start;
    this.ends.push(end);
    this.counts.push(tokens);
    this.tokens += tokens;
  }

  /** Removes the first `count` pieces (they became a span). */
  dropHead(count: number): void {
    if (count >= this.ends.length) {
      this.ends.length = 0;
      this.counts.length = 0;
      this.tokens = 0;
      return;
    }
    this.start = this.ends[count - 1]!;
    this.ends.splice(0, count);
    for (const dropped of this.counts.splice(0, count)) this.tokens -= dropped;
  }
}
