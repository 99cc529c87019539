/**
 * Word-level pieces come from a scan with isSpace, not the regex `\s+` the other levels use: the
 * two must cut the same text at the same places, hostile whitespace included.
 */
import { describe, expect, it } from 'vitest';
import { isSpace, Level, type Piece, pieces } from '../../src/chunking/boundaries.js';
import { seeded } from '../helpers/corpus.js';

/** Word pieces as the regex defines them (what the scan replaced). */
function regexWords(text: string, start: number, end: number): Piece[] {
  const out: Piece[] = [];
  const separator = /\s+/gu;
  separator.lastIndex = start;
  let pieceStart = start;
  for (let match = separator.exec(text); match !== null; match = separator.exec(text)) {
    const cut = match.index + match[0].length;
    if (cut >= end) break;
    if (/\S/u.test(text.slice(pieceStart, match.index))) {
      out.push({ start: pieceStart, end: cut });
      pieceStart = cut;
    }
  }
  out.push({ start: pieceStart, end });
  return out;
}

const ALPHABET = [
  'a',
  'b',
  'x',
  'é',
  'ü',
  '😀',
  '\ud83d',
  '\u200b',
  '\u180e',
  '\u0301',
  '你',
  ' ',
  '  ',
  '\n',
  '\t',
  '\r\n',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u200a',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
  '\u000b',
  '\u000c',
  '\u0085',
];

describe('word pieces', () => {
  it('cut where the regex \\s+ cuts, on 20,000 random hostile texts and ranges', () => {
    const random = seeded(7);
    for (let t = 0; t < 20_000; t++) {
      let text = '';
      const length = Math.floor(random() * 30);
      for (let i = 0; i < length; i++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
      const start = Math.floor(random() * (text.length + 1));
      const end = start + Math.floor(random() * (text.length - start + 1));
      expect([...pieces(text, start, end, Level.word)], JSON.stringify({ text, start, end })).toEqual(
        regexWords(text, start, end),
      );
    }
  });

  it('isSpace is exactly what \\s matches, for every UTF-16 code unit', () => {
    for (let code = 0; code < 0x10000; code++) {
      expect(isSpace(code), code.toString(16)).toBe(/\s/u.test(String.fromCharCode(code)));
    }
  });
});
