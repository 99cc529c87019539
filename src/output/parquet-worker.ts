/**
 * The Parquet encoding thread's entry (see parquet-thread.ts): Arrow IPC in; the Parquet bytes and
 * their footer's row count out, the bytes moved back, not copied.
 */
import { parentPort } from 'node:worker_threads';
import { encodeParquetIpc } from './parquet.js';
import type { EncodeReply, EncodeRequest } from './parquet-thread.js';

const port = parentPort;
if (!port) throw new Error('parquet-worker.js runs as a worker thread only');

port.on('message', async ({ id, ipc, metadata, compression }: EncodeRequest) => {
  let reply: EncodeReply;
  try {
    const { bytes, rows } = await encodeParquetIpc(ipc, metadata, compression);
    reply = { id, bytes, rows };
  } catch (error) {
    reply = { id, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply, 'bytes' in reply ? [reply.bytes.buffer as ArrayBuffer] : []);
});
