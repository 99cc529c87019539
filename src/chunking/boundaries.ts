/**
 * Where a document may be cut: natural boundaries by level (paragraph, sentence, word), and the
 * character-level rules for hard cuts inside one over-long word (never inside a surrogate pair,
 * preferably at a change of character class, else at a grapheme cluster boundary).
 *
 * Convention: a cut is a UTF-16 offset; the whitespace separating two pieces belongs to the piece
 * before the cut, so a cut always sits right after a separator.
 */

import { isHighSurrogate, isLowSurrogate } from './utf8.js';

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

/** One piece between two cuts: `text[start, end)`, its trailing separator included. */
export interface Piece {
  readonly start: number;
  readonly end: number;
}

/**
 * The pieces of `text[start, end)` at `level`, in order, covering the range exactly. A piece always
 * holds some non-whitespace unless the whole range is whitespace (leading whitespace joins the
 * first piece). Lazy, because a 10 MB paragraph has millions of words.
 */
export function pieces(text: string, start: number, end: number, level: Level): Generator<Piece> {
  return level === Level.word ? words(text, start, end) : separated(text, start, end, level);
}

/** `pieces` at the paragraph and sentence levels: cut after each match of the level's separator. */
function* separated(text: string, start: number, end: number, level: Level): Generator<Piece> {
  const separator = new RegExp(SEPARATOR_SOURCES[level], 'gu');
  separator.lastIndex = start;
  let pieceStart = start;
  for (let match = separator.exec(text); match !== null; match = separator.exec(text)) {
    const cut = match.index + match[0].length;
    if (cut >= end) break;
    if (hasNonSpace(text, pieceStart, match.index + match[0].trimEnd().length)) {
      yield { start: pieceStart, end: cut };
      pieceStart = cut;
    }
  }
  yield { start: pieceStart, end };
}

/**
 * `pieces` at Level.word (separator `\s+`) without the regex: a scan with isSpace. A paragraph with
 * no sentence end comes down to this level for every word, and the regex (its match strings, the
 * unicode mode) made it the slowest path of the chunker.
 */
function* words(text: string, start: number, end: number): Generator<Piece> {
  let pieceStart = start;
  let sawNonSpace = false;
  let i = start;
  while (i < end) {
    if (!isSpace(text.charCodeAt(i))) {
      sawNonSpace = true;
      i++;
      continue;
    }
    // A run of whitespace: like the regex, it may run past `end`, and then there is no cut.
    let runEnd = i + 1;
    while (runEnd < text.length && isSpace(text.charCodeAt(runEnd))) runEnd++;
    if (runEnd >= end) break;
    // Leading whitespace (nothing else since the piece started) joins the next piece.
    if (sawNonSpace) {
      yield { start: pieceStart, end: runEnd };
      pieceStart = runEnd;
      sawNonSpace = false;
    }
    i = runEnd;
  }
  yield { start: pieceStart, end };
}

/** True when offset `i` falls between the two halves of a surrogate pair. */
export function splitsSurrogatePair(text: string, i: number): boolean {
  return isHighSurrogate(text.charCodeAt(i - 1)) && isLowSurrogate(text.charCodeAt(i));
}

/**
 * True when `i` is a clean place for a hard cut: a change of character class (where tokenizers
 * split pre-tokens too), except before a letter that would take the preceding symbol or space
 * into its word, and never before a combining mark, joiner or emoji modifier.
 */
export function isClassBoundary(text: string, i: number): boolean {
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
  // ASCII first: nearly every character a chunker looks at.
  if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  return (
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

const JOINER = /^(?:\p{M}|\u200D|[\u{1F3FB}-\u{1F3FF}]|[\u{E0020}-\u{E007F}])/u;
const LETTER = /^\p{L}/u;
const DIGIT = /^\p{N}/u;
const SPACE = /^\s/u;

function classOf(char: string): 'letter' | 'digit' | 'space' | 'other' {
  if (LETTER.test(char)) return 'letter';
  if (DIGIT.test(char)) return 'digit';
  if (SPACE.test(char)) return 'space';
  return 'other';
}
