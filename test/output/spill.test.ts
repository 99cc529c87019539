/** The spill: embedded batches appended as they arrive, read back whole; a torn tail is skipped. */
import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { EmbeddedBatch } from '../../src/domain.js';
import { readSpill, SPILL_DIR, SpillLog } from '../../src/output/spill.js';
import { textChunk } from '../helpers/chunks.js';
import { tempFolder } from '../helpers/temp.js';

function embedded(batchId: string, texts: string[], dims = 3): EmbeddedBatch {
  const chunks = texts.map((text, i) => textChunk(`${batchId}-doc`, i, text, 5, `h-${batchId}-${i}`));
  return {
    batchId,
    model: 'm',
    chunks,
    vectors: chunks.map((_, i) => Float32Array.from({ length: dims }, (_, k) => i + k / 10)),
    failures: [{ documentId: 'x', chunkIndex: 0, batchId, status: 400, message: 'refused' }],
    usage: { promptTokens: 12, cost: 0.001, requests: 2, retries: 1 },
    replanned: ['r'],
    provider: 'alpha',
  };
}

const segments = async (dir: string) => (await readdir(join(dir, SPILL_DIR))).sort();

describe('the spill', () => {
  it('keeps every field of a chunk, an image included', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    const plain = embedded('p', ['a caption', 'no image']);
    const image = {
      kind: 'file' as const,
      source: 'cats/1.png',
      path: '/data/cats/1.png',
      mime: 'image/png' as const,
      bytes: 1234,
      sha256: 'f'.repeat(64),
      urlBytes: 1700,
    };
    const withImage = { ...plain, chunks: [{ ...plain.chunks[0]!, image }, plain.chunks[1]!] };
    await spill.append({ plannedChunks: 2, embedded: withImage });
    const [read] = await readSpill(dir);
    expect(read!.embedded).toEqual(withImage);
    expect(read!.embedded.chunks[1]).not.toHaveProperty('image');
  });

  it('reads back every batch appended, vectors and accounting exact (CJK, emoji, RTL texts)', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    const a = embedded('a', ['漢字かな交じり文', '👩‍👩‍👧‍👦 family', 'שלום עולם']);
    const b = embedded('b', ['plain'], 5);
    await spill.append({ plannedChunks: 4, embedded: a });
    await spill.append({ plannedChunks: 1, embedded: b });
    const read = await readSpill(dir);
    expect(read.map((s) => s.plannedChunks)).toEqual([4, 1]);
    expect(read[0]!.embedded).toEqual(a);
    expect(read[1]!.embedded.vectors.map((v) => [...v])).toEqual(b.vectors.map((v) => [...v]));
  });

  it('writes a batch of more vectors than one writev takes (IOV_MAX 1024) whole', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    const big = embedded(
      'big',
      Array.from({ length: 2_048 }, (_, i) => `text ${i}`),
      8,
    );
    await spill.append({ plannedChunks: 2_048, embedded: big });
    const [read] = await readSpill(dir);
    expect(read!.embedded.vectors.map((v) => [...v])).toEqual(big.vectors.map((v) => [...v]));
  });

  it('skips a torn last entry (a process killed mid-write) and keeps the whole ones', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    await spill.append({ plannedChunks: 1, embedded: embedded('a', ['one']) });
    const [segment] = await segments(dir);
    await appendFile(join(dir, SPILL_DIR, segment!), Buffer.from([200, 0, 0, 0, 12, 0, 0, 0, 123, 34]));
    expect((await readSpill(dir)).map((s) => s.embedded.batchId)).toEqual(['a']);
  });

  it('keeps texts beside the json: every text back exact, empty and long ones, after a scratch that grew', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    const long = `${'ab'.repeat(40_000)}漢字${'🙂'.repeat(30_000)}`;
    const a = embedded('a', ['', 'e\u0301 ﷽ \r\n "quoted" \\ \u0000', long, 'x']);
    const b = embedded('b', ['short after long']);
    await spill.append({ plannedChunks: 4, embedded: a });
    await spill.append({ plannedChunks: 1, embedded: b });
    const read = await readSpill(dir);
    expect(read[0]!.embedded).toEqual(a);
    expect(read[1]!.embedded).toEqual(b);
  });

  it('a lone surrogate comes back as U+FFFD: the same UTF-8 (and so the same row) the file gets', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    await spill.append({ plannedChunks: 1, embedded: embedded('a', ['half \ud800 pair']) });
    const [read] = await readSpill(dir);
    const text = read!.embedded.chunks[0]!.text;
    expect(text).toBe('half \ufffd pair');
    expect(Buffer.from(text)).toEqual(Buffer.from('half \ud800 pair'));
  });

  it('refuses an entry whose text bytes were damaged (the crc covers them) and reads what precedes it', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
    await spill.append({ plannedChunks: 1, embedded: embedded('a', ['first']) });
    await spill.append({ plannedChunks: 1, embedded: embedded('b', ['UNIQUE-TEXT-MARK']) });
    const [segment] = await segments(dir);
    const path = join(dir, SPILL_DIR, segment!);
    const bytes = await readFile(path);
    const at = bytes.indexOf('UNIQUE-TEXT-MARK');
    expect(at).toBeGreaterThan(0);
    bytes[at] = 'X'.charCodeAt(0);
    await writeFile(path, bytes);
    expect((await readSpill(dir)).map((s) => s.embedded.batchId)).toEqual(['a']);
  });

  it("reads an older embedpipe's entries (texts inside the json) beside new ones", async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const old = embedded('old', ['漢字 older', 'two']);
    const { vectors, ...rest } = old;
    const json = Buffer.from(JSON.stringify({ plannedChunks: 2, embedded: rest }));
    const floats = Buffer.concat(vectors.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength)));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(json.length, 0);
    head.writeUInt32LE(floats.length, 4);
    const tail = Buffer.alloc(4);
    tail.writeUInt32LE(crc32(floats, crc32(json)), 0);
    const spill = await SpillLog.open(dir);
    await writeFile(join(dir, SPILL_DIR, '000000.spill'), Buffer.concat([head, json, floats, tail]));
    const next = await SpillLog.open(dir);
    await next.append({ plannedChunks: 1, embedded: embedded('new', ['newer']) });
    const read = await readSpill(dir);
    expect(read.map((s) => s.embedded.batchId)).toEqual(['old', 'new']);
    expect(read[0]!.embedded).toEqual(old);
    await spill.remove();
  });

  it('deletes a segment once every batch in it is committed, and starts a new one after a commit once it is full', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    // Every segment is full at its first entry.
    const spill = await SpillLog.open(dir, 1);
    await spill.append({ plannedChunks: 1, embedded: embedded('a', ['one']) });
    await spill.append({ plannedChunks: 1, embedded: embedded('b', ['two']) });
    await spill.committed(['a']);
    await spill.append({ plannedChunks: 1, embedded: embedded('c', ['three']) });
    expect(await segments(dir)).toEqual(['000000.spill', '000001.spill']);
    await spill.committed(['b']);
    expect(await segments(dir)).toEqual(['000001.spill']);
    expect((await readSpill(dir)).map((s) => s.embedded.batchId)).toEqual(['c']);
    // A new log on the folder (the next run) numbers after what is there.
    const next = await SpillLog.open(dir);
    await next.clear();
    expect(await segments(dir)).toEqual([]);
  });

  it('keeps appending to a segment that is not full across commits, and deletes it once full and committed', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const one = embedded('x', ['sizing']);
    const spill = await SpillLog.open(dir, 3_000);
    const ids = Array.from({ length: 40 }, (_, i) => `b${i}`);
    for (const id of ids) {
      await spill.append({ plannedChunks: 1, embedded: { ...one, batchId: id } });
      await spill.committed([id]);
    }
    await spill.append({ plannedChunks: 1, embedded: { ...one, batchId: 'last' } });
    const left = await segments(dir);
    // Far fewer files than commits, each but the open one deleted once full and committed.
    expect(left).toHaveLength(1);
    expect(Number.parseInt(left[0]!, 10)).toBeGreaterThan(2);
    expect(Number.parseInt(left[0]!, 10)).toBeLessThan(ids.length / 4);
    // The open segment may also hold committed batches: a resumed run skips those (spill-replay.ts).
    expect((await readSpill(dir)).map((s) => s.embedded.batchId).at(-1)).toBe('last');
    await spill.remove();
  });
});
