import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inputBytes } from '../../src/corpus/input-stream.js';
import type { WholeRead } from '../../src/files/whole-read.js';
import { put, readBrief, tempFolder } from './helpers.js';

const folder = await tempFolder();
const openFiles = () => readdirSync('/proc/self/fd').length;

/** Pseudo-random bytes, the same for a seed. */
function noise(length: number, seed = 7): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = x >>> 16;
  }
  return out;
}

describe('inputBytes with reused buffers', () => {
  it('gives the whole file in pieces read into two buffers in turn, each valid until the next is asked for', async () => {
    const content = noise(3.5 * 4096);
    const path = await put(folder, 'plain.bin', content);
    let told = 0;
    const copies: Buffer[] = [];
    const backings = new Set<ArrayBufferLike>();
    for await (const piece of inputBytes(path, 'plain.bin', (n) => (told += n), {
      readBytes: 4096,
      reuseBuffers: true,
    })) {
      copies.push(Buffer.from(piece));
      backings.add(piece.buffer);
    }
    expect(Buffer.concat(copies).equals(content)).toBe(true);
    expect(copies.map((piece) => piece.length)).toEqual([4096, 4096, 4096, 2048]);
    expect(told).toBe(content.length);
    expect(backings.size).toBe(2);
  });

  it('gunzips a gzip file (fresh buffers) and reads an empty file as nothing', async () => {
    const content = noise(20_000, 3);
    const gz = await put(folder, 'packed.jsonl', gzipSync(content));
    const pieces: Buffer[] = [];
    for await (const piece of inputBytes(gz, 'packed.jsonl', () => {}, {
      readBytes: 4096,
      reuseBuffers: true,
    }))
      pieces.push(piece);
    expect(Buffer.concat(pieces).equals(content)).toBe(true);
    const empty = await put(folder, 'empty.jsonl', '');
    const none: Buffer[] = [];
    for await (const piece of inputBytes(empty, 'empty.jsonl', () => {}, { reuseBuffers: true }))
      none.push(piece);
    expect(none).toEqual([]);
  });

  it('closes the file when the caller stops early, with a read still under way', async () => {
    const path = await put(folder, 'early.bin', noise(64 * 1024));
    const before = openFiles();
    for await (const piece of inputBytes(path, 'early.bin', () => {}, {
      readBytes: 1024,
      reuseBuffers: true,
    })) {
      expect(piece.length).toBe(1024);
      break;
    }
    expect(openFiles()).toBe(before);
  });
});

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Every piece inputBytes gives, and what it told onWhole. */
async function readWithDigest(
  path: string,
  options: { readBytes?: number; reuseBuffers?: boolean; stopAfter?: number } = {},
): Promise<{ pieces: number; wholes: WholeRead[] }> {
  const wholes: WholeRead[] = [];
  let pieces = 0;
  for await (const _ of inputBytes(path, path, () => {}, { ...options, onWhole: (w) => wholes.push(w) })) {
    pieces += 1;
    if (pieces === options.stopAfter) break;
  }
  return { pieces, wholes };
}

describe('the digest of a read to the end of the file', () => {
  it('is the sha256 and size of the file, read into two buffers in turn', async () => {
    const content = noise(3.5 * 4096 + 17, 11);
    const path = await put(folder, 'digest.bin', content);
    const { pieces, wholes } = await readWithDigest(path, { readBytes: 4096, reuseBuffers: true });
    expect(pieces).toBe(4);
    expect(wholes).toEqual([{ sha256: sha256(content), bytes: content.length }]);
  });

  it('of a gzip file is that of its compressed bytes, as on disk; of an empty file, of nothing', async () => {
    const packed = gzipSync(noise(50_000, 5));
    const path = await put(folder, 'digest.jsonl.gz', packed);
    expect((await readWithDigest(path, { readBytes: 4096 })).wholes).toEqual([
      { sha256: sha256(packed), bytes: packed.length },
    ]);
    const empty = await put(folder, 'digest-empty.jsonl', '');
    expect((await readWithDigest(empty, { reuseBuffers: true })).wholes).toEqual([
      { sha256: sha256(Buffer.alloc(0)), bytes: 0 },
    ]);
  });

  it('is not told when the caller stops before the end', async () => {
    const path = await put(folder, 'digest-early.bin', noise(64 * 1024));
    expect(await readWithDigest(path, { readBytes: 1024, reuseBuffers: true, stopAfter: 3 })).toEqual({
      pieces: 3,
      wholes: [],
    });
    const gz = await put(folder, 'digest-early.gz', gzipSync(noise(256 * 1024, 9)));
    expect((await readWithDigest(gz, { readBytes: 1024, stopAfter: 1 })).wholes).toEqual([]);
  });
});

describe('JSONL read through reused buffers', () => {
  it('keeps every line that spans reads, in mixed scripts, whatever the read size does to them', async () => {
    const pieces = [
      '漢字かな',
      '👩‍👩‍👧‍👦🇯🇵',
      'مرحبا بالعالم',
      'e\u0301\u0323',
      'fn(x) => x\r\n',
      'Ω'.repeat(300),
    ];
    // Lines of up to ~40 KB, and one of ~2.5 MB that spans three reads.
    const texts = Array.from({ length: 400 }, (_, i) => {
      const unit = `${pieces[i % pieces.length]} ${i} `;
      return unit.repeat(i === 100 ? 100_000 : 1 + ((i * 7919) % 300));
    });
    const rows = texts.map((text, i) => JSON.stringify({ id: `d${i}`, text }));
    // CRLF endings on every third line, and one line of invalid UTF-8 in the middle.
    const bad = Buffer.from([0x7b, 0xff, 0x7d]);
    const body = Buffer.concat(
      rows.flatMap((row, i) => [
        Buffer.from(row),
        Buffer.from(i % 3 === 0 ? '\r\n' : '\n'),
        ...(i === 200 ? [bad, Buffer.from('\n')] : []),
      ]),
    );
    expect(body.length).toBeGreaterThan(3 * 2 ** 20);
    const path = await put(folder, 'mixed.jsonl', body);
    const entries = await readBrief({ path });
    const documents = entries.filter((entry) => 'doc' in entry);
    expect(documents.map((entry) => entry.doc)).toEqual(texts.map((_, i) => `d${i}`));
    expect(documents.every((entry, i) => entry.text === texts[i])).toBe(true);
    expect(entries.filter((entry) => 'reject' in entry)).toMatchObject([{ line: 202 }]);
  });
});
