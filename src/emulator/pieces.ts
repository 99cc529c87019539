/**
 * The "pieces" token count: a SentencePiece-like count standing for the non-OpenAI providers, whose
 * tokens per byte differ from cl100k's and differ by script. A client that plans with cl100k meets
 * a gateway counting differently and must learn the count from `usage.prompt_tokens`.
 *
 * The count, to the letter, over the UTF-16 code units of a string taken as code points:
 * - a maximal run of ASCII letters and digits [A-Za-z0-9] of length n counts ceil(n / 4);
 * - ASCII whitespace (U+0009 tab, U+000A LF, U+000B VT, U+000C FF, U+000D CR, U+0020 space)
 *   counts 0, and ends a run;
 * - every other ASCII character (punctuation, symbols, other control characters) counts 1;
 * - every non-ASCII code point counts 1: letters of any script, combining marks, emoji, ZWJ
 *   (U+200D), variation selectors, regional indicators. A surrogate pair is one code point and
 *   counts 1; a lone surrogate counts 1 on its own.
 * So English prose comes to about 0.3 tokens per UTF-8 byte, CJK 1/3, Arabic, Hebrew and
 * Cyrillic 1/2, emoji 1/4.
 *
 * Each code point adds 0 or 1 to the running count (an alnum run adds 1 at its 1st, 5th, 9th…
 * character), so the count of a prefix never decreases as the prefix grows: that is what makes
 * the early exit of `piecesWithin` and the exactness of `truncateToPieces` simple.
 */

const WHITESPACE = 0;
const SYMBOL = 1;
const ALNUM = 2;

/** Class of each ASCII code: one table lookup per character instead of a regex. */
const ASCII_CLASS = (() => {
  const table = new Uint8Array(128).fill(SYMBOL);
  for (const code of [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20]) table[code] = WHITESPACE;
  for (let code = 0x30; code <= 0x39; code++) table[code] = ALNUM;
  for (let code = 0x41; code <= 0x5a; code++) table[code] = ALNUM;
  for (let code = 0x61; code <= 0x7a; code++) table[code] = ALNUM;
  return table;
})();

/**
 * Walks `text` from the start, stopping before the first code point that would bring the count
 * above `limit`. Returns the count so far and where it stopped (text.length when it did not).
 */
function scan(text: string, limit: number): { tokens: number; end: number } {
  const length = text.length;
  let tokens = 0;
  let run = 0; // length of the current alnum run
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    let width = 1;
    let add = 1;
    if (code < 0x80) {
      const kind = ASCII_CLASS[code]!;
      if (kind === ALNUM) {
        add = (run & 3) === 0 ? 1 : 0;
        run++;
      } else {
        run = 0;
        if (kind === WHITESPACE) add = 0;
      }
    } else {
      run = 0;
      // A high surrogate followed by a low one is one code point.
      if (code >= 0xd800 && code <= 0xdbff && i + 1 < length) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) width = 2;
      }
    }
    if (tokens + add > limit) return { tokens, end: i };
    tokens += add;
    i += width;
  }
  return { tokens, end: length };
}

/** The pieces count of `text`. */
export function countPieces(text: string): number {
  // No text counts more than its length; an integer limit keeps the loop on small-integer math.
  return scan(text, text.length).tokens;
}

/** The pieces count when it is at most `limit`, else false (stopping as soon as it is exceeded). */
export function piecesWithin(text: string, limit: number): number | false {
  const { tokens, end } = scan(text, limit);
  return end === text.length ? tokens : false;
}

/**
 * The longest prefix of `text` whose pieces count is at most `limit`: cut at a code point
 * boundary; an alnum run is kept to 4×k characters; whitespace after the last counted piece stays.
 */
export function truncateToPieces(text: string, limit: number): string {
  const { end } = scan(text, limit);
  return end === text.length ? text : text.slice(0, end);
}
