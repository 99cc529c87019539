/**
 * Where a document may be cut: natural boundaries by level (paragraph, sentence, word), forced cuts
 * inside over-long runs, and the character-level rules for hard cuts (never inside a surrogate
 * pair, preferably where the tokenizer itself splits).
 *
 * Convention: a cut is a UTF-16 offset; the whitespace separating two pieces belongs to the piece
 * before the cut, so a cut always sits right after a separator.
 */

/** Boundary levels, coarsest first. */
export const Level = { paragraph: 0, sentence: 1, word: 2 } as const;
export type Level = (typeof Level)[keyof typeof Level];

/** A separator (the match) ends a piece; the cut is at the end of the match. */
const SEPARATOR_SOURCES: Readonly<Record<Level, string>> = {
  // A blank line: newline, optional horizontal space (incl. \r), newline, then any whitespace.
  [Level.paragraph]: String.raw`\n[^\S\n]*\n\s*`,
  // A terminator (with closing quotes/brackets) followed by whitespace; full-width terminators need
  // no whitespace (CJK text has none); a single newline also ends a sentence-level piece.
  [Level.sentence]:
    String.raw`[.!?\u2026\u203C\u2047-\u2049\u0964\u0965\u061F\u06D4][\p{Pe}\p{Pf}"']*\s+` +
    String.raw`|[\u3002\uFF01\uFF1F\uFF61\uFE12\uFE52\uFE56\uFE57][\p{Pe}\p{Pf}"']*\s*` +
    String.raw`|\n\s*`,
  [Level.word]: String.raw`\s+`,
};

/**
 * One piece between two cuts. `[countFrom, countTo)` is the same piece shifted left by the
 * whitespace around it, i.e. with its leading separator instead of its trailing one: that is how the
 * tokenizer groups whitespace (`" word"` is one token), so the pieces' counts add up to close to the
 * count of their concatenation.
 */
export interface Piece {
  readonly start: number;
  readonly end: number;
  readonly countFrom: number;
  readonly countTo: number;
}

/**
 * The pieces of `text[start, end)` at `level`, in order, covering the range exactly. A piece always
 * holds some non-whitespace unless the whole range is whitespace (leading whitespace joins the
 * first piece). Lazy, because a 10 MB paragraph has millions of words.
 */
export function* pieces(text: string, start: number, end: number, level: Level): Generator<Piece> {
  const separator = new RegExp(SEPARATOR_SOURCES[level], 'gu');
  separator.lastIndex = start;
  let pieceStart = start;
  let countFrom = start;
  for (let match = separator.exec(text); match !== null; match = separator.exec(text)) {
    const cut = match.index + match[0].length;
    if (cut >= end) break;
    const countTo = match.index + match[0].trimEnd().length;
    if (hasNonSpace(text, pieceStart, countTo)) {
      yield { start: pieceStart, end: cut, countFrom, countTo };
      pieceStart = cut;
      countFrom = countTo;
    }
  }
  yield { start: pieceStart, end, countFrom, countTo: end };
}

/**
 * Runs the tokenizer keeps as one pre-token (letters, symbols, whitespace) are cut every this many
 * UTF-16 units. gpt-tokenizer's BPE is quadratic in a pre-token's length, so without a cap one
 * 10 MB "word" would never finish counting; at 1024 a random-letter run still counts at ~0.8 M
 * chars/s. Such runs do not occur in natural text (no word, symbol line or indentation is that
 * long); they are binary blobs, padding or CJK stripped of punctuation.
 */
export const MAX_RUN = 1024;

/**
 * The start of a run of more than MAX_RUN characters of one class (letters, symbols, whitespace).
 * The lookbehinds anchor a match at a run's first character, which keeps the scan linear; the run's
 * end is then found in steps of at most MAX_RUN (one unbounded quantifier over a 10 MB run overflows
 * the regex engine's stack).
 */
const LONG_RUN_START = new RegExp(
  [
    String.raw`(?<letters>(?<!\p{L})\p{L}{${MAX_RUN + 1}})`,
    String.raw`(?<symbols>(?<![^\s\p{L}\p{N}])[^\s\p{L}\p{N}]{${MAX_RUN + 1}})`,
    String.raw`(?<spaces>(?<!\s)\s{${MAX_RUN + 1}})`,
  ].join('|'),
  'gu',
);
const RUN_CONTINUATION = {
  letters: new RegExp(String.raw`\p{L}{1,${MAX_RUN}}`, 'uy'),
  symbols: new RegExp(String.raw`[^\s\p{L}\p{N}]{1,${MAX_RUN}}`, 'uy'),
  spaces: new RegExp(String.raw`\s{1,${MAX_RUN}}`, 'uy'),
} as const;

/**
 * Offsets, ascending, where over-long runs are cut (every MAX_RUN units inside each run). Every
 * forced cut is a chunk boundary, so no chunk ever holds more than MAX_RUN units of one run.
 */
export function forcedCuts(text: string): number[] {
  const cuts: number[] = [];
  if (text.length <= MAX_RUN) return cuts;
  const starts = new RegExp(LONG_RUN_START);
  for (let match = starts.exec(text); match !== null; match = starts.exec(text)) {
    const runClass = match.groups?.['letters'] ? 'letters' : match.groups?.['symbols'] ? 'symbols' : 'spaces';
    const runEnd = endOfRun(text, match.index + match[0].length, RUN_CONTINUATION[runClass]);
    for (let cut = match.index + MAX_RUN; cut < runEnd; cut += MAX_RUN) {
      cuts.push(splitsSurrogatePair(text, cut) ? cut - 1 : cut);
    }
    starts.lastIndex = runEnd;
  }
  return cuts;
}

function endOfRun(text: string, from: number, continuation: RegExp): number {
  let end = from;
  for (continuation.lastIndex = end; continuation.test(text); continuation.lastIndex = end) {
    end = continuation.lastIndex;
  }
  return end;
}

/** True when offset `i` falls between the two halves of a surrogate pair. */
export function splitsSurrogatePair(text: string, i: number): boolean {
  return isHighSurrogate(text.charCodeAt(i - 1)) && isLowSurrogate(text.charCodeAt(i));
}

/**
 * True when cutting at `i` keeps the tokenizer's own pre-tokens intact (so the two halves count the
 * same tokens as the whole): a change of character class, except before a letter that would
 * have taken the preceding symbol or space into its pre-token, and never before a combining mark or
 * joiner.
 */
export function isTokenBoundary(text: string, i: number): boolean {
  if (i <= 0 || i >= text.length || splitsSurrogatePair(text, i)) return false;
  const after = String.fromCodePoint(text.codePointAt(i)!);
  if (JOINER.test(after)) return false;
  const before = classOf(
    String.fromCodePoint(text.codePointAt(splitsSurrogatePair(text, i - 1) ? i - 2 : i - 1)!),
  );
  const next = classOf(after);
  return before !== next && (next !== 'letter' || before === 'digit');
}

/** True for the characters JavaScript's `\s` matches (and `trimEnd` removes). */
export function isSpace(code: number): boolean {
  return (
    code === 0x20 ||
    (code >= 0x09 && code <= 0x0d) ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

function hasNonSpace(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isSpace(text.charCodeAt(i))) return true;
  return false;
}

const JOINER = /^[\p{M}\u200D]/u;
const LETTER = /^\p{L}/u;
const DIGIT = /^\p{N}/u;
const SPACE = /^\s/u;

function classOf(char: string): 'letter' | 'digit' | 'space' | 'other' {
  if (LETTER.test(char)) return 'letter';
  if (DIGIT.test(char)) return 'digit';
  if (SPACE.test(char)) return 'space';
  return 'other';
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
