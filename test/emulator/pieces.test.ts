import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  countPieces,
  piecesWithin,
  type RunningEmulator,
  startEmulator,
  truncateToPieces,
} from '../../src/emulator/index.js';
import { Sfc32 } from '../../src/emulator/prng.js';
import { embed } from './helpers.js';

/** Hand-computed counts; each comment shows the sum. */
const EXAMPLES: [name: string, text: string, tokens: number][] = [
  // The(1) quick(2) brown(2) fox(1) jumps(2) over(1) the(1) lazy(1) dog(1) .(1)
  ['English prose', 'The quick brown fox jumps over the lazy dog.', 13],
  // 11 code points, 33 UTF-8 bytes
  ['CJK', '東京は日本の首都です。', 11],
  // U+20000 is one code point (two UTF-16 units) + 2 BMP ideographs
  ['a non-BMP ideograph', '\u{20000}漢字', 3],
  // man ZWJ woman ZWJ girl ZWJ boy: 7 code points, 25 UTF-8 bytes
  ['an emoji ZWJ family', '👨‍👩‍👧‍👦', 7],
  // two regional indicators
  ['a flag', '🇫🇷', 2],
  // heart + variation selector 16
  ['an emoji with a variation selector', '❤️', 2],
  // مرحبا(5) space(0) بالعالم(7)
  ['Arabic', 'مرحبا بالعالم', 12],
  // שלום(4) space(0) עולם(4)
  ['Hebrew', 'שלום עולם', 8],
  // cafe(1) + U+0301(1) space(0) na(1) ï(1) ve(1)
  ['combining and precomposed accents', 'cafe\u0301 naïve', 5],
  // a(1) CR LF(0) b(1) CR LF(0)
  ['CRLF', 'a\r\nb\r\n', 2],
  ['only ASCII whitespace', ' \t\r\n\f\v', 0],
  // non-ASCII whitespace is not ASCII whitespace: NBSP and U+2028 count
  ['non-ASCII spaces', '\u00a0\u2028', 2],
  // before(2) <(1) |(1) endoftext(3) |(1) >(1) after(2)
  ['special-token text', 'before <|endoftext|> after', 11],
  // a(1) -(1) b(1) NUL(1) DEL(1)
  ['symbols and control characters', 'a-b\u0000\u007f', 5],
  ['a 4 KB unbroken ASCII run', 'a'.repeat(4096), 1024],
  ['a 4 KB + 1 ASCII run', 'Z9'.repeat(2048) + 'x', 1025],
  // lone surrogates count one each; a reversed pair is two lone surrogates
  ['lone surrogates', '\ud800x\udc00\ud800', 4],
];

/** An independent reading of the rules, with a Unicode regex (slow, but obviously right). */
const SEGMENTS = /[A-Za-z0-9]+|[\t\n\v\f\r ]|[\s\S]/gu;
function oracle(text: string): number {
  let tokens = 0;
  for (const [segment] of text.matchAll(SEGMENTS)) {
    if (/^[A-Za-z0-9]/.test(segment)) tokens += Math.ceil(segment.length / 4);
    else if (!/^[\t\n\v\f\r ]$/.test(segment)) tokens += 1;
  }
  return tokens;
}

/** Pieces chosen to be hard to cut: runs, surrogate pairs, joiners, marks, lone surrogates. */
const HOSTILE = [
  ...[' ', '\t', '\r\n', '\n', '\f', '\v', '\u00a0'],
  ...['.', ',', '-', '<|endoftext|>', '_', '\u0000', '\u007f'],
  ...['東', '字', '\u{20000}', '\u{2a6d6}', 'ب', 'ש', 'ж'],
  ...['e\u0301', '\u0301\u0308', 'é'],
  ...['👨‍👩‍👧‍👦', '🇫🇷', '❤️', '👍🏽', '\u200d', '\ufe0f', '\ufeff'],
  ...['\ud83d', '\udc00'],
];
const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function hostileString(rng: Sfc32, pieces: number): string {
  let text = '';
  for (let i = 0; i < pieces; i++) {
    if (rng.nextInt(3) === 0) {
      const length = 1 + rng.nextInt(rng.nextInt(4) === 0 ? 40 : 9);
      for (let j = 0; j < length; j++) text += ALNUM[rng.nextInt(ALNUM.length)];
    } else {
      text += HOSTILE[rng.nextInt(HOSTILE.length)];
    }
  }
  return text;
}

/** The code point starting at `index`, as a string (a lone surrogate stays one unit). */
function codePointAt(text: string, index: number): string {
  return String.fromCodePoint(text.codePointAt(index)!);
}

describe('countPieces', () => {
  it.each(EXAMPLES)('counts %s', (_name, text, tokens) => {
    expect(countPieces(text)).toBe(tokens);
    expect(oracle(text)).toBe(tokens);
  });

  it('gives different ratios per script, as real tokenizers do', () => {
    const perByte = (text: string) => countPieces(text) / Buffer.byteLength(text);
    expect(perByte('東京は日本の首都です')).toBeCloseTo(1 / 3, 5);
    expect(perByte('مرحبابالعالم')).toBeCloseTo(1 / 2, 5);
    expect(perByte('👍👍👍')).toBeCloseTo(1 / 4, 5);
    expect(perByte('Embedding pipelines count tokens before they send them.')).toBeLessThan(0.35);
  });

  it('agrees with the regex reading of the rules on random hostile strings', () => {
    const rng = Sfc32.fromLabel('pieces count');
    for (let i = 0; i < 500; i++) {
      const text = hostileString(rng, 1 + rng.nextInt(60));
      expect(countPieces(text), JSON.stringify(text)).toBe(oracle(text));
    }
  });
});

describe('piecesWithin', () => {
  it('is the count when within the limit, else false', () => {
    expect(piecesWithin('a'.repeat(4096), 1024)).toBe(1024);
    expect(piecesWithin('a'.repeat(4096), 1023)).toBe(false);
    expect(piecesWithin('👨‍👩‍👧‍👦', 7)).toBe(7);
    expect(piecesWithin('👨‍👩‍👧‍👦', 6)).toBe(false);
    expect(piecesWithin('   ', 0)).toBe(0);
    const rng = Sfc32.fromLabel('pieces within');
    for (let i = 0; i < 300; i++) {
      const text = hostileString(rng, 1 + rng.nextInt(40));
      const n = oracle(text);
      const limit = rng.nextInt(n + 3);
      expect(piecesWithin(text, limit), JSON.stringify(text)).toBe(n <= limit ? n : false);
    }
  });
});

describe('truncateToPieces', () => {
  it('cuts by hand-computed examples', () => {
    expect(truncateToPieces('a'.repeat(4096), 512)).toBe('a'.repeat(2048));
    // A run keeps 4×k characters: "abcdefghij" is 3 tokens, 2 keep "abcdefgh".
    expect(truncateToPieces('abcdefghij', 2)).toBe('abcdefgh');
    // Whitespace after the last piece costs nothing, so the longest prefix keeps it.
    expect(truncateToPieces('one two', 1)).toBe('one ');
    // Never half a surrogate pair.
    expect(truncateToPieces('😀'.repeat(600), 512)).toBe('😀'.repeat(512));
    expect(truncateToPieces('\u{20000}\u{20000}', 1)).toBe('\u{20000}');
    expect(truncateToPieces('🇫🇷', 1)).toBe('🇫');
    expect(truncateToPieces('short', 100)).toBe('short');
    expect(truncateToPieces('x', 0)).toBe('');
  });

  it('keeps the longest prefix within the limit on random hostile strings', () => {
    const rng = Sfc32.fromLabel('pieces truncate');
    for (let i = 0; i < 1000; i++) {
      const text = hostileString(rng, 1 + rng.nextInt(80));
      const total = oracle(text);
      const limit = rng.nextInt(total + 2);
      const cut = truncateToPieces(text, limit);
      const context = JSON.stringify({ text, limit, cut });
      expect(text.startsWith(cut), context).toBe(true);
      expect(oracle(cut), context).toBe(Math.min(limit, total));
      if (cut.length < text.length) {
        // Cut at a code point boundary, and the next code point would not fit.
        const last = cut.charCodeAt(cut.length - 1);
        const next = text.charCodeAt(cut.length);
        expect(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff, context).toBe(false);
        expect(oracle(cut + codePointAt(text, cut.length)), context).toBeGreaterThan(limit);
      }
    }
  });
});

describe('usage.prompt_tokens of the default models', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  it.each(EXAMPLES)('is the pieces count of %s', async (_, text, n) => {
    const reply = await embed(emu, { model: 'emu/embed-large', input: [text] });
    expect(reply.status).toBe(200);
    expect(reply.body.usage.prompt_tokens).toBe(n);
  });

  it('is the sum of the counts over a batch of random hostile strings', async () => {
    const rng = Sfc32.fromLabel('pieces usage');
    const input = Array.from({ length: 50 }, () => hostileString(rng, 1 + rng.nextInt(100)));
    const reply = await embed(emu, { model: 'emu/embed-nocontext', input });
    expect(reply.status).toBe(200);
    expect(reply.body.usage.prompt_tokens).toBe(input.reduce((sum, text) => sum + oracle(text), 0));
  });
});
