/** The spill: embedded batches appended as they arrive, read back whole; a torn tail is skipped. */
import { appendFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
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

  it('deletes a segment once every batch in it is committed, and starts a new one after a commit', async () => {
    const dir = await tempFolder('embedpipe-spill-');
    const spill = await SpillLog.open(dir);
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
});
