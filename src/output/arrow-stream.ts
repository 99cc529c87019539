/**
 * One Arrow IPC file of many rows, written as its batches arrive: the batches are merged into record
 * batches of about `recordBatchBytes` (readers pay per record batch, as Parquet readers do per row
 * group) and each is passed to the sink before the next is built, so memory holds about one.
 */
import { type RecordBatch, RecordBatchFileWriter, Schema } from 'apache-arrow';
import { batchBytes, concatBatches } from './concat.js';

export interface ArrowStreamOptions {
  /** Column bytes per record batch. */
  readonly recordBatchBytes: number;
}

/**
 * Writes `batches` (at least one; all with the first one's columns) as one Arrow IPC file whose
 * schema metadata is `metadata`, passing the bytes to `sink` in order.
 */
export async function writeArrowStream(
  metadata: Record<string, string>,
  batches: AsyncIterable<RecordBatch>,
  sink: (chunk: Uint8Array) => Promise<void>,
  options: ArrowStreamOptions,
): Promise<void> {
  const writer = new RecordBatchFileWriter();
  // The writer queues its output (views of the batches' buffers, not copies) in an async queue.
  const queue = writer[Symbol.asyncIterator]();
  // Written to the queue after a batch's bytes: reading up to it takes exactly what is queued.
  const mark = new Uint8Array(1);
  const drain = async (closing: boolean) => {
    if (!closing) queue.write(mark);
    for (;;) {
      const { done, value } = await queue.next();
      if (done || value.buffer === mark.buffer) return;
      await sink(value);
    }
  };

  let schema: Schema | undefined;
  let pending: RecordBatch[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pending.length === 0 || !schema) return;
    writer.write(concatBatches(schema, pending));
    pending = [];
    pendingBytes = 0;
    await drain(false);
  };
  try {
    for await (const batch of batches) {
      if (!schema) {
        schema = new Schema(batch.schema.fields, new Map(Object.entries(metadata)));
        writer.reset(undefined, schema);
      }
      if (batch.numRows === 0) continue;
      pending.push(batch);
      pendingBytes += batchBytes(batch);
      if (pendingBytes >= options.recordBatchBytes) await flush();
    }
    if (!schema) throw new Error('no record batch to take the columns from');
    await flush();
    writer.finish(); // writes the footer and closes the queue
    await drain(true);
  } catch (error) {
    try {
      writer.abort(error);
    } catch {
      // the writer may be closed already; the first error is the one to report
    }
    throw error;
  }
}
