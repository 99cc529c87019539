/**
 * The Parquet encoding thread: the compiled worker (npm test builds dist/ first) encodes the same
 * bytes as the calling thread, answers each request with its own file, and a failure there is an
 * OutputError that leaves the thread usable.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputError } from '../../src/errors.js';
import { encodeParquet, type ParquetCompression, parquetRowCount } from '../../src/output/parquet.js';
import { ParquetThread } from '../../src/output/parquet-thread.js';
import { partRowsFromBatch } from '../../src/output/rows.js';
import { makeBatch } from './fixtures.js';

const WORKER = new URL('../../dist/output/parquet-worker.js', import.meta.url);
if (!existsSync(fileURLToPath(WORKER))) {
  throw new Error(`${fileURLToPath(WORKER)} is missing: run \`npm run build\` first (npm test does)`);
}

const thread = new ParquetThread(WORKER);
afterAll(() => thread.close());

/**
 * A file's key-value metadata and every column's values. (Not its bytes: the writer orders the
 * key-value metadata differently from one call to the next.)
 */
async function contentOf(bytes: Uint8Array) {
  const file = await pw.ParquetFile.fromFile(new Blob([bytes]));
  const meta = file.metadata();
  const fileMeta = meta.fileMetadata();
  const metadata = Object.fromEntries(fileMeta.keyValueMetadata() as Map<string, string>);
  fileMeta.free();
  meta.free();
  file.free();
  const table = tableFromIPC(pw.readParquet(bytes).intoIPCStream());
  const columns = Object.fromEntries(
    table.schema.fields.map((field) => [
      field.name,
      field.name === 'embedding'
        ? Array.from(
            table
              .getChild('embedding')!
              .data.flatMap((d) => Array.from(d.children[0]!.values as Float32Array)),
          )
        : table.getChild(field.name)!.toArray(),
    ]),
  );
  delete metadata['ARROW:schema'];
  return { metadata, columns };
}

const rowsOf = (batchId: string, rows: number, dims: number) =>
  partRowsFromBatch(makeBatch({ batchId, rows, dims, seed: rows * 7 + dims }));

describe('ParquetThread', () => {
  it('encodes on the worker what the calling thread encodes, with the footer row count', async () => {
    const rows = rowsOf('b1', 300, 384);
    const metadata = { 'embedpipe.batch_id': 'b1', note: 'ünïcode ✓' };
    const encoded = await thread.encode(rows, metadata, 'snappy');
    expect(encoded.rows).toBe(300);
    expect(await parquetRowCount(encoded.bytes)).toBe(300);
    const inThread = encodeParquet(rows, metadata, { compression: 'snappy' });
    expect(await contentOf(encoded.bytes)).toEqual(await contentOf(inThread));
  });

  it('answers concurrent requests each with its own file', async () => {
    const sizes = [1, 17, 128, 5, 600];
    const compression = (i: number): ParquetCompression => (i % 2 ? 'zstd' : 'none');
    const encoded = await Promise.all(
      sizes.map((n, i) => thread.encode(rowsOf(`c${i}`, n, 8), { k: String(i) }, compression(i))),
    );
    expect(encoded.map((e) => e.rows)).toEqual(sizes);
    for (const [i, e] of encoded.entries()) {
      const again = encodeParquet(
        rowsOf(`c${i}`, sizes[i]!, 8),
        { k: String(i) },
        { compression: compression(i) },
      );
      expect(await contentOf(e.bytes)).toEqual(await contentOf(again));
    }
  });

  it('turns a failure on the worker into an OutputError and keeps working', async () => {
    const rows = rowsOf('bad', 4, 8);
    // Metadata that is not text fails inside the worker (the writer's properties), not before the post.
    const failed = thread.encode(rows, { k: 5 as never }, 'snappy');
    await expect(failed).rejects.toBeInstanceOf(OutputError);
    await expect(failed).rejects.toThrow(
      /^Parquet encoding failed: .*invalid type: floating point `5.0`, expected a string/,
    );
    expect((await thread.encode(rows, {}, 'snappy')).rows).toBe(4);
  });

  it('encodes on the calling thread when there is no compiled worker (run from the sources)', async () => {
    const inThread = new ParquetThread(undefined);
    const rows = rowsOf('s', 10, 4);
    const encoded = await inThread.encode(rows, {}, 'snappy');
    expect(encoded.rows).toBe(10);
    expect(await contentOf(encoded.bytes)).toEqual(
      await contentOf(encodeParquet(rows, {}, { compression: 'snappy' })),
    );
  });
});
