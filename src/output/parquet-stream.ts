/**
 * One Parquet file of many row groups, written as its record batches arrive: parquet-wasm's stream
 * writer (the Rust AsyncArrowWriter) buffers one row group, encoded, and hands its bytes on when it
 * closes it, so memory holds about a row group whatever the file's size.
 *
 * That writer ignores its own write errors and skips batches it cannot take, ending with a valid but
 * shorter file: the caller must check the row count in the footer of what was written.
 */
import { RecordBatch, Schema, Table, tableToIPC } from 'apache-arrow';
import type * as pw from 'parquet-wasm';
import { type ParquetCompression, type RowGroupLimits, writerProperties } from './parquet.js';
import { parquetWasm } from './parquet-wasm.js';

export interface ParquetStreamOptions {
  readonly compression: ParquetCompression;
  readonly rowGroups: RowGroupLimits;
}

/**
 * A batch to write: an Arrow JS batch, or one already in wasm memory (read from a Parquet file and
 * copied as it is), which the writer takes over.
 */
export type StreamBatch = RecordBatch | pw.RecordBatch;

/**
 * Encodes `batches` (at least one, an empty one for a file of no rows; all with the first one's
 * columns) into one Parquet file whose key-value metadata is `metadata`, passing the bytes to `sink`
 * in order. Rethrows the first error of `batches`.
 */
export async function writeParquetStream(
  metadata: Record<string, string>,
  batches: AsyncIterable<StreamBatch>,
  sink: (chunk: Uint8Array) => Promise<void>,
  options: ParquetStreamOptions,
): Promise<void> {
  const iterator = batches[Symbol.asyncIterator]();
  let first = true;
  let failure: { error: unknown } | undefined;
  // Set when the output fails: the writer keeps pulling batches after its own errors, so the
  // source has to end for it to stop.
  let stopped = false;

  const source = new ReadableStream<pw.RecordBatch>(
    {
      async pull(controller) {
        try {
          const next = stopped ? { done: true as const } : await iterator.next();
          if (next.done) {
            if (first && !stopped) throw new Error('no record batch to take the columns from');
            controller.close();
            return;
          }
          // The writer takes the file's schema from the first batch (it becomes ARROW:schema); later
          // batches go without the metadata, which would otherwise be encoded again with each.
          const schemaMetadata = new Map(first ? Object.entries(metadata) : []);
          const batch = next.value;
          controller.enqueue(
            batch instanceof RecordBatch
              ? toWasm(new RecordBatch(new Schema(batch.schema.fields, schemaMetadata), batch.data))
              : withSchemaMetadata(batch, schemaMetadata),
          );
          first = false;
        } catch (error) {
          failure ??= { error };
          controller.error(error);
        }
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );

  try {
    const output = await parquetWasm().transformParquetStream(
      source,
      writerProperties(metadata, options.compression, options.rowGroups),
    );
    for await (const chunk of output as unknown as AsyncIterable<Uint8Array>) await sink(chunk);
  } catch (error) {
    failure ??= { error };
    stopped = true;
  }
  if (failure) {
    await iterator.return?.().catch(() => {});
    throw failure.error;
  }
}

/** The wasm batch with its schema's metadata replaced (a part's own metadata is not the file's). */
function withSchemaMetadata(batch: pw.RecordBatch, metadata: Map<string, string>): pw.RecordBatch {
  const schema = batch.schema;
  try {
    return batch.withSchema(schema.withMetadata(metadata));
  } finally {
    schema.free();
    batch.free();
  }
}

/** A batch in wasm memory; the stream writer takes ownership of it. */
function toWasm(batch: RecordBatch): pw.RecordBatch {
  const table = parquetWasm().Table.fromIPCStream(tableToIPC(new Table([batch]), 'stream'));
  try {
    const [wasmBatch] = table.recordBatches();
    if (!wasmBatch) throw new Error('a record batch did not survive the trip to wasm');
    return wasmBatch;
  } finally {
    table.free();
  }
}
