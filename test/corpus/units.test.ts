import { describe, expect, it } from 'vitest';
import { IdRegistry } from '../../src/corpus/ids.js';
import { LineIndex } from '../../src/corpus/line-index.js';
import { decodeUtf8 } from '../../src/corpus/utf8.js';
import { withoutBom } from '../../src/files/bom.js';
import { LineSplitter } from '../../src/files/lines.js';
import { Utf8Buffer } from '../../src/files/utf8-buffer.js';
import { fingerprint } from '../../src/fingerprint.js';

/** `content` cut into chunks of `size` bytes. */
function chunks(content: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < content.length; i += size) out.push(content.subarray(i, i + size));
  return out;
}

describe('IdRegistry', () => {
  it('returns the first location of a repeated id, per file', () => {
    const ids = new IdRegistry();
    expect(ids.claim('a', 'x.csv', 2)).toBeUndefined();
    expect(ids.claim('b', 'y.csv', 3)).toBeUndefined();
    expect(ids.claim('a', 'x.csv', 9)).toBe('x.csv:2');
    expect(ids.claim('b', 'x.csv', 10)).toBe('y.csv:3');
    expect(ids.size).toBe(2);
  });

  it('keeps every id through growth, with no fingerprint collisions on 300k similar ids', () => {
    const ids = new IdRegistry();
    let collisions = 0;
    for (let i = 0; i < 300_000; i++) if (ids.claim(`doc-${i}`, 'f', i + 1) !== undefined) collisions += 1;
    expect(collisions).toBe(0);
    expect(ids.size).toBe(300_000);
    for (let i = 0; i < 300_000; i += 9973) expect(ids.claim(`doc-${i}`, 'f', 1)).toBe(`f:${i + 1}`);
  });

  it('keeps the first location of every id once its fingerprints and locations are on disk', () => {
    // 65 spills of 1,024 fingerprints, and locations well past the log's in-memory buffer.
    const ids = new IdRegistry({ memoryIds: 1024 });
    try {
      let refused = 0;
      for (let i = 0; i < 66_000; i++) {
        if (ids.claim(`row-${i}`, i < 33_000 ? 'a.jsonl' : 'b.jsonl', i + 1) !== undefined) refused += 1;
      }
      expect(refused).toBe(0);
      expect(ids.size).toBe(66_000);
      for (const i of [0, 1, 8191, 8192, 32_999, 33_000, 50_001, 65_999]) {
        expect(ids.claim(`row-${i}`, 'c.jsonl', 1)).toBe(`${i < 33_000 ? 'a' : 'b'}.jsonl:${i + 1}`);
      }
      expect(ids.claim('row-66000', 'c.jsonl', 7)).toBeUndefined();
      expect(ids.size).toBe(66_001);
    } finally {
      ids.close();
    }
  });

  it('tells apart ids that share the key but not the whole fingerprint', () => {
    // With 32 of the 64 bits in the key, ~10 pairs of 300k ids share one: none may be a duplicate.
    const ids = new IdRegistry({ memoryIds: 4096, checkBits: 32 });
    const byKey = new Map<number, number>();
    const sharing: number[] = [];
    try {
      let refused = 0;
      for (let i = 0; i < 300_000; i++) {
        const lo = fingerprint(`doc-${i}`)[1];
        const other = byKey.get(lo);
        if (other !== undefined) sharing.push(other, i);
        byKey.set(lo, i);
        if (ids.claim(`doc-${i}`, 'f', i + 1) !== undefined) refused += 1;
      }
      expect(refused).toBe(0);
      expect(ids.size).toBe(300_000);
      expect(sharing.length).toBeGreaterThan(0);
      // Every id of a shared key is still known, each at its own line; so are the others.
      for (const i of [...sharing, 0, 299_999]) expect(ids.claim(`doc-${i}`, 'g', 1)).toBe(`f:${i + 1}`);
    } finally {
      ids.close();
    }
  });

  it('fingerprints by UTF-16 content, including astral characters', () => {
    expect(fingerprint('😀')).not.toEqual(fingerprint('😁'));
    expect(fingerprint('ab')).not.toEqual(fingerprint('ba'));
    expect(fingerprint('')).not.toEqual(fingerprint('\u0000'));
    expect(fingerprint('same')).toEqual(fingerprint('same'));
  });
});

describe('LineSplitter', () => {
  const content = Buffer.from('one\r\ntwo\n\nfour\r\r\nlast');
  it.each([1, 2, 3, 5, 64])('splits on LF, drops a CR before it, at chunk size %i', (size) => {
    const splitter = new LineSplitter(1000);
    const lines = chunks(content, size).flatMap((chunk) => [...splitter.push(chunk)]);
    lines.push(...splitter.end());
    expect(lines.map((line) => [line.number, line.bytes?.toString()])).toEqual([
      [1, 'one'],
      [2, 'two'],
      [3, ''],
      [4, 'four\r'],
      [5, 'last'],
    ]);
  });

  it.each([1, 2, 3, 5, 7, 64])(
    'pushText gives the same lines as push at chunk size %i, decoded where whole and valid',
    (size) => {
      const mixed = Buffer.concat([
        Buffer.from('\ufeff{"a":"é"}\r\nCJK 漢字 🙂\n\n'),
        Buffer.from([0x62, 0x61, 0x64, 0xff, 0x0a]),
        Buffer.from('  \t\r\nlong line here\nlast'),
      ]);
      const expected = new LineSplitter(8);
      const byBytes = chunks(mixed, size).flatMap((chunk) => [...expected.push(chunk)]);
      byBytes.push(...expected.end());
      const splitter = new LineSplitter(8);
      const byText = chunks(mixed, size).flatMap((chunk) => [...splitter.pushText(chunk)]);
      byText.push(...splitter.end());
      const asText = (line: (typeof byText)[number]) =>
        'text' in line ? line.text : line.bytes && decodeUtf8(line.bytes);
      expect(byText.map((line) => [line.number, line.size, asText(line)])).toEqual(
        byBytes.map((line) => [line.number, line.size, line.bytes && decodeUtf8(line.bytes)]),
      );
      // The bad line never comes decoded; in one chunk with it, no line does.
      const decoded = byText.filter((line) => 'text' in line).map((line) => line.number);
      expect(decoded).not.toContain(4);
      if (size === 64) expect(decoded).toEqual([]);
    },
  );

  it('pushText decodes each whole line of a valid chunk within the limit (CR dropped, BOM left to the reader)', () => {
    const splitter = new LineSplitter(8);
    const lines = [...splitter.pushText(Buffer.from('\ufeffé\r\n\nover the limit\n🙂\nrest'))];
    expect(lines).toEqual([
      { number: 1, text: '\ufeffé', size: 6 },
      { number: 2, text: '', size: 0 },
      { number: 3, bytes: undefined, size: 14 },
      { number: 4, text: '🙂', size: 4 },
    ]);
    expect([...splitter.end()]).toEqual([{ number: 5, bytes: Buffer.from('rest'), size: 4 }]);
  });

  it('reports an over-long line by size only', () => {
    const splitter = new LineSplitter(4);
    const lines = [...splitter.push(Buffer.from('12345678\nok\n'))];
    expect(lines).toEqual([
      { number: 1, bytes: undefined, size: 8 },
      { number: 2, bytes: Buffer.from('ok'), size: 2 },
    ]);
  });
});

describe('LineIndex', () => {
  it('counts LF, CRLF and lone CR as one break each, across chunk boundaries', () => {
    const content = Buffer.from('a\nb\r\nc\rd\r\n\r\ne');
    for (let size = 1; size <= content.length; size++) {
      const index = new LineIndex();
      for (const chunk of chunks(content, size)) index.push(chunk);
      const lines = [...content.keys()].map((offset) => index.lineAt(offset));
      expect(lines).toEqual([1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6]);
    }
  });

  it('skips record delimiters and releases bytes before the last query', () => {
    const index = new LineIndex();
    index.push(Buffer.from('x\r\n\r\n'));
    index.push(Buffer.from('\r\ny'));
    expect(index.skipDelimiters(1, [Buffer.from('\r\n')])).toBe(7);
    expect(index.lineAt(7)).toBe(4);
    expect(index.retained).toBe(3); // whole chunks: the second one, from offset 5
    expect(() => index.lineAt(3)).toThrow(RangeError);
  });
});

describe('utf8', () => {
  it('decodes strictly, keeping U+FEFF and real U+FFFD', () => {
    expect(decodeUtf8(Buffer.from('\uFEFFa\uFFFD'))).toBe('\uFEFFa\uFFFD');
    expect(decodeUtf8(Buffer.from([0x61, 0xff]))).toBeUndefined();
    expect(decodeUtf8(Buffer.from([0xed, 0xa0, 0x80]))).toBeUndefined(); // an encoded surrogate
  });

  it.each([1, 2, 4])('drops a BOM split over chunks of %i bytes', async (size) => {
    async function* source() {
      yield* chunks(Buffer.from('\uFEFFhello'), size);
    }
    const out: Buffer[] = [];
    for await (const chunk of withoutBom(source())) out.push(chunk);
    expect(Buffer.concat(out).toString()).toBe('hello');
  });
});

describe('Utf8Buffer', () => {
  it('lays strings out after their UTF-8 length, big- or little-endian, growing past its first size', () => {
    const buffer = new Utf8Buffer(8);
    const texts = ['a', '', 'é漢😀', '\ud800', 'x'.repeat(100)];
    expect(texts.map((text, i) => buffer.writeLengthPrefixed(text, i % 2 === 1))).toEqual(
      texts.map((text) => Buffer.byteLength(text)),
    );
    const bytes = buffer.bytes();
    let at = 0;
    texts.forEach((text, i) => {
      const length = i % 2 === 1 ? bytes.readUInt32LE(at) : bytes.readUInt32BE(at);
      expect(bytes.toString('utf8', at + 4, at + 4 + length)).toBe(Buffer.from(text).toString());
      at += 4 + length;
    });
    expect(at).toBe(bytes.length);
    buffer.clear();
    expect(buffer.bytes().length).toBe(0);
  });

  it('writes exactly what Buffer.from writes: short and long, ASCII or not at any place', () => {
    const others = ['é', '漢', '😀', '\ud800', '\udc00', '\u0080', '\u007f', '\u0000', '\u2028', '\u0301'];
    const texts: string[] = ['', 'a', 'doc-1', '0', 'f'.repeat(64)];
    for (const length of [1, 2, 79, 80, 81, 200])
      for (const other of others)
        for (const place of [0, Math.floor(length / 2), length - 1]) {
          const ascii = Array.from({ length }, (_, i) => String.fromCharCode(0x20 + ((i * 7) % 95)));
          ascii[place] = other;
          texts.push(ascii.join(''), ascii.slice(0, place).join(''));
        }
    const buffer = new Utf8Buffer(16);
    const expected: Buffer[] = [];
    for (const text of texts) {
      expect(buffer.writeUtf8(text)).toBe(Buffer.byteLength(text));
      expected.push(Buffer.from(text));
    }
    expect(buffer.bytes().equals(Buffer.concat(expected))).toBe(true);
  });
});
