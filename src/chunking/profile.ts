/**
 * A text's character-class profile, and the gateway-token estimate it gives.
 *
 * Tokenizers differ by script and by kind of text far more than by language: a run of ASCII letters
 * is a few characters per token, a symbol often one, a CJK or Arabic letter about one, an emoji one
 * to several. So the estimate is linear in six class counts, with weights learned from the gateway
 * (see calibration.ts): additive over concatenation, one pass over char codes, no tokenizer.
 */

/**
 * Features: ASCII letters and digits, runs of them (words: tokenizers pay per word as well as per
 * character, so short words cost more per character than long ones), other ASCII, ASCII
 * whitespace; then non-ASCII characters by script block, because tokenizers differ most there (a
 * Hangul syllable can cost three times a Chinese character in one tokenizer and the same in
 * another).
 */
export const CLASSES = [
  'alnum',
  'word',
  'symbol',
  'space',
  'latin',
  'marks',
  'greek_cyrillic',
  'rtl',
  'other_2byte',
  'cjk',
  'kana',
  'hangul',
  'punctuation',
  'other_3byte',
  'emoji',
  'other_4byte',
] as const;
export const CLASS_COUNT = CLASSES.length;

/** Tokens per unit of each feature: weights of the estimate. */
export type Weights = readonly number[];

const ALNUM = 0;
const WORD = 1;
const SYMBOL = 2;
const SPACE = 3;
const EMOJI = 14;
const OTHER_4BYTE = 15;

/** One token per UTF-8 byte: no byte-level tokenizer counts more, so nothing planned with it can be cut. */
export const BYTE_BOUND_WEIGHTS: Weights = CLASSES.map((_, k) =>
  k === WORD ? 0 : k <= SPACE ? 1 : k <= 8 ? 2 : k < EMOJI ? 3 : 4,
);

/** The feature of every BMP code unit (surrogates are resolved by the caller). */
const BMP_CLASS = (() => {
  const table = new Uint8Array(0x10000).fill(13);
  const range = (from: number, to: number, feature: number) => table.fill(feature, from, to + 1);
  for (let code = 0; code < 0x80; code++) {
    const alnum = (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
    table[code] = alnum ? ALNUM : code === 32 || (code >= 9 && code <= 13) ? SPACE : SYMBOL;
  }
  range(0x80, 0x7ff, 8);
  range(0x80, 0x2ff, 4);
  range(0x300, 0x36f, 5);
  range(0x370, 0x52f, 6);
  range(0x590, 0x7ff, 7);
  // Hebrew points and Arabic harakat are marks: pointed text costs far more per letter.
  range(0x591, 0x5c7, 5);
  range(0x610, 0x61a, 5);
  range(0x64b, 0x65f, 5);
  range(0x670, 0x670, 5);
  range(0x6d6, 0x6ed, 5);
  range(0x1ab0, 0x1aff, 5);
  range(0x1dc0, 0x1dff, 5);
  range(0x1e00, 0x1eff, 4);
  range(0x2000, 0x2bff, 12);
  range(0x3000, 0x303f, 12);
  range(0x3040, 0x30ff, 10);
  range(0x31f0, 0x31ff, 10);
  range(0x1100, 0x11ff, 11);
  range(0x3130, 0x318f, 11);
  range(0xac00, 0xd7af, 11);
  range(0x3400, 0x4dbf, 9);
  range(0x4e00, 0x9fff, 9);
  range(0xf900, 0xfaff, 9);
  range(0xfe00, 0xfe0f, 12);
  range(0xfe20, 0xfe2f, 5);
  range(0xff00, 0xffef, 12);
  return table;
})();

/** The feature of the character at `i` (its second unit, for a pair, is at `i + 1`). */
function featureAt(text: string, i: number, end: number, code: number): number {
  if (code < 0xd800 || code > 0xdbff || i + 1 >= end) return BMP_CLASS[code]!;
  const next = text.charCodeAt(i + 1);
  if (next < 0xdc00 || next > 0xdfff) return BMP_CLASS[code]!;
  const point = ((code - 0xd800) << 10) + (next - 0xdc00) + 0x10000;
  return point >= 0x1f000 && point <= 0x1faff ? EMOJI : OTHER_4BYTE;
}

/** Feature counts of `text[start, end)` as a text of its own (a lone surrogate counts as 3 bytes, as U+FFFD would). */
export function profileOf(text: string, start = 0, end = text.length): number[] {
  const counts = new Array<number>(CLASS_COUNT).fill(0);
  let inWord = false;
  for (let i = start; i < end; i++) {
    const feature = featureAt(text, i, end, text.charCodeAt(i));
    if (feature === ALNUM && !inWord) counts[WORD]! += 1;
    inWord = feature === ALNUM;
    counts[feature]! += 1;
    if (feature >= EMOJI) i++;
  }
  return counts;
}

/** The estimate of `text[start, end)` (as a text of its own) under `weights`: `estimate(profileOf(…))`. */
export function costOf(text: string, weights: Weights, start = 0, end = text.length): number {
  return prefixCost(text, weights, start, end, Number.POSITIVE_INFINITY).cost;
}

/**
 * The estimate of `text` when it is within `budget`, else undefined. The pass stops at the budget:
 * a long text that does not fit costs one chunk's worth of reading, not a whole pass.
 */
export function costWithin(text: string, weights: Weights, budget: number): number | undefined {
  const { cost, end } = prefixCost(text, weights, 0, text.length, budget);
  return end === text.length ? cost : undefined;
}

/** The dot product of a profile and weights. */
export function estimate(profile: readonly number[], weights: Weights): number {
  let sum = 0;
  for (let k = 0; k < CLASS_COUNT; k++) sum += profile[k]! * weights[k]!;
  return sum;
}

/**
 * The largest `cut` in `[start, end]` with `costOf(text, weights, start, cut) <= budget`, never
 * between the halves of a surrogate pair.
 */
export function prefixWithinCost(
  text: string,
  weights: Weights,
  start: number,
  end: number,
  budget: number,
): number {
  return prefixCost(text, weights, start, end, budget).end;
}

/**
 * The step of every ASCII character under `weights`, by whether the character before it was a
 * letter or digit (index 128 + code) or not (index code): a word's first letter or digit pays the
 * word weight too. Kept per weights object: a run estimates with one or two.
 */
function asciiSteps(weights: Weights): Float64Array {
  // The same weights as the last call's, nearly always: no WeakMap lookup per text.
  if (weights === lastSteps.weights) return lastSteps.steps;
  let steps = ASCII_STEPS.get(weights);
  if (steps) {
    lastSteps = { weights, steps };
    return steps;
  }
  steps = new Float64Array(256);
  for (let code = 0; code < 0x80; code++) {
    const feature = BMP_CLASS[code]!;
    steps[code] = feature === ALNUM ? weights[ALNUM]! + weights[WORD]! : weights[feature]!;
    steps[0x80 + code] = weights[feature]!;
  }
  ASCII_STEPS.set(weights, steps);
  lastSteps = { weights, steps };
  return steps;
}
const ASCII_STEPS = new WeakMap<Weights, Float64Array>();
let lastSteps: { weights: Weights | undefined; steps: Float64Array } = {
  weights: undefined,
  steps: new Float64Array(256),
};

/** 0x80 after an ASCII letter or digit (the next one continues a word), else 0. */
const IN_WORD_AFTER = Uint8Array.from({ length: 0x80 }, (_, code) => (BMP_CLASS[code] === ALNUM ? 0x80 : 0));

/**
 * One pass: the cost of the longest prefix of `text[start, end)` within `budget`, and where it ends.
 * ASCII (most of most texts) costs two table lookups a character; nothing outside ASCII is a letter
 * or digit of a word, so it ends one.
 */
function prefixCost(
  text: string,
  weights: Weights,
  start: number,
  end: number,
  budget: number,
): { cost: number; end: number } {
  const ascii = asciiSteps(weights);
  let cost = 0;
  let inWord = 0;
  let i = start;
  while (i < end) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      const step = ascii[inWord + code]!;
      if (cost + step > budget) break;
      cost += step;
      inWord = IN_WORD_AFTER[code]!;
      i += 1;
      continue;
    }
    const feature = featureAt(text, i, end, code);
    const step = weights[feature]!;
    if (cost + step > budget) break;
    cost += step;
    inWord = 0;
    i += feature >= EMOJI ? 2 : 1;
  }
  return { cost, end: i };
}
