import { writeEmbedding } from './vectors.js';

/*
 * The vectors of the emulator's bag-of-words TEST models (semantics: 'bag-of-words'). They carry
 * word overlap, not meaning: texts that share words get close vectors, so retrieval evaluation and
 * model migrations can be tested against the emulator. They are not a real model. The function:
 *
 * 1. Tokens: maximal runs of letters and digits (\p{L}\p{N}, with combining marks \p{M} continuing
 *    a run), lowercased code point by code point; each Han, Hiragana or Katakana character is a token
 *    of its own. Everything else separates.
 * 2. A token's hash: FNV-1a 32-bit over its lowercased code points (one step per code point), from an
 *    offset basis that is FNV-1a of the model id (so each model has its own space).
 * 3. Features: each token, plus with `bigrams` each pair of adjacent tokens. A feature's id is
 *    fmix32 (murmur3's finaliser) of the token hash, or of imul(previous, 0x9e3779b1) ^ current ^
 *    0x5bd1e995 for a bigram, with its lowest bit set to 0 for a unigram and 1 for a bigram.
 * 4. Weights: a feature seen tf times adds sign * (1 + ln tf) * w to bucket floor(id * dims / 2^32),
 *    where sign is -1 if bit 1 of the id is set, else +1, and w is 1 for unigrams and BIGRAM_WEIGHT for
 *    bigrams. No idf: the weighting is fixed, whatever the corpus.
 * 5. L2-normalised (in float64, then rounded to float32). A text without tokens, or whose features
 *    cancel out, gets the hash model's vector (writeEmbedding): a unit vector, never NaN or zero.
 */

/** A bigram's weight against a unigram's 1. */
export const BIGRAM_WEIGHT = 0.75;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

const SEPARATOR = 0;
const WORD = 1;
/** A character that is a token by itself (Han, Hiragana, Katakana). */
const SINGLE = 2;
/** A combining mark: continues a word, separates otherwise. */
const MARK = 3;
const UNKNOWN = 255;

const SINGLE_PATTERN = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]$/u;
const WORD_PATTERN = /^[\p{L}\p{N}]$/u;
const MARK_PATTERN = /^\p{M}$/u;

/** The class and lowercase of each BMP code unit, learnt on first sight (ASCII never looks here). */
const classes = new Uint8Array(0x10000).fill(UNKNOWN);
const lowercase = new Uint16Array(0x10000);

function classify(char: string): number {
  if (SINGLE_PATTERN.test(char)) return SINGLE;
  if (WORD_PATTERN.test(char)) return WORD;
  return MARK_PATTERN.test(char) ? MARK : SEPARATOR;
}

function learn(unit: number): void {
  const char = String.fromCharCode(unit);
  classes[unit] = (unit & 0xf800) === 0xd800 ? SEPARATOR : classify(char);
  const lower = char.toLowerCase();
  lowercase[unit] = lower.length === 1 ? lower.charCodeAt(0) : unit;
}

function fnv1a(text: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Feature ids of the text being embedded, and the bucket sums: kept between calls, grown as needed. */
let features = new Uint32Array(1024);
let count = 0;
let sums = new Float64Array(0);
let lastModel = '';
let lastBasis = FNV_OFFSET;

function push(feature: number): void {
  if (count === features.length) {
    const grown = new Uint32Array(features.length * 2);
    grown.set(features);
    features = grown;
  }
  features[count++] = feature;
}

/** Collects the text's features into `features[0, count)`. */
function collect(text: string, basis: number, bigrams: boolean): void {
  count = 0;
  let hash = 0;
  let inWord = false;
  let previous = 0;
  let hasPrevious = false;
  const emit = (token: number) => {
    push((fmix32(token) & ~1) >>> 0);
    if (bigrams && hasPrevious) {
      push((fmix32(Math.imul(previous, 0x9e3779b1) ^ token ^ 0x5bd1e995) | 1) >>> 0);
    }
    previous = token;
    hasPrevious = true;
  };
  const length = text.length;
  for (let i = 0; i < length; i++) {
    let unit = text.charCodeAt(i);
    let kind: number;
    if (unit < 0x80) {
      if ((unit >= 0x61 && unit <= 0x7a) || (unit >= 0x30 && unit <= 0x39)) kind = WORD;
      else if (unit >= 0x41 && unit <= 0x5a) {
        kind = WORD;
        unit += 0x20;
      } else kind = SEPARATOR;
    } else if ((unit & 0xfc00) === 0xd800 && i + 1 < length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // An astral code point (rare: CJK extensions, historic scripts, emoji): the slow way.
      const char = String.fromCodePoint(text.codePointAt(i)!);
      i += 1;
      kind = classify(char);
      unit = char.toLowerCase().codePointAt(0)!;
    } else {
      if (classes[unit] === UNKNOWN) learn(unit);
      kind = classes[unit]!;
      unit = lowercase[unit]!;
    }
    if (kind === WORD || (kind === MARK && inWord)) {
      if (!inWord) {
        hash = basis;
        inWord = true;
      }
      hash = Math.imul(hash ^ unit, FNV_PRIME);
    } else {
      if (inWord) emit(hash);
      inWord = false;
      if (kind === SINGLE) emit(Math.imul(basis ^ unit, FNV_PRIME));
    }
  }
  if (inWord) emit(hash);
}

/**
 * The bag-of-words vector of `text` under model `model` into `out` (its length is the dims). The
 * emulator's hot path: a batch's vectors share one Float32Array, as with writeEmbedding.
 */
export function writeBagOfWords(model: string, text: string, out: Float32Array, bigrams: boolean): void {
  if (model !== lastModel) {
    lastModel = model;
    lastBasis = fnv1a(model);
  }
  collect(text, lastBasis, bigrams);
  const dims = out.length;
  if (sums.length < dims) sums = new Float64Array(dims);
  sums.fill(0, 0, dims);
  const sorted = features.subarray(0, count).sort();
  for (let i = 0; i < count; ) {
    const feature = sorted[i]!;
    let j = i + 1;
    while (j < count && sorted[j] === feature) j++;
    const tf = j - i;
    let weight = tf === 1 ? 1 : 1 + Math.log(tf);
    if (feature & 1) weight *= BIGRAM_WEIGHT;
    const bucket = Math.floor((feature * dims) / 2 ** 32);
    sums[bucket] = sums[bucket]! + (feature & 2 ? -weight : weight);
    i = j;
  }
  let squares = 0;
  for (let i = 0; i < dims; i++) squares += sums[i]! * sums[i]!;
  if (!(squares > 0)) {
    writeEmbedding(model, text, out);
    return;
  }
  const norm = Math.sqrt(squares);
  for (let i = 0; i < dims; i++) out[i] = sums[i]! / norm;
}

/** The bag-of-words vector of `text` as a new Float32Array of `dims` (see the spec above). */
export function bagOfWordsEmbedding(
  model: string,
  text: string,
  dims: number,
  options: { bigrams?: boolean } = {},
): Float32Array {
  const out = new Float32Array(dims);
  writeBagOfWords(model, text, out, options.bigrams ?? false);
  return out;
}
