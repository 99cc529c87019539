/**
 * Worker-thread entry of the part writer: encoding and writing a part is CPU work (Parquet in wasm,
 * ~2 ms a part) that would otherwise delay the main thread's handling of gateway responses.
 */
import { parentPort } from 'node:worker_threads';
import { writePartFile } from './part-file.js';
import type { PartWriteRequest, PartWriteResponse } from './part-writer.js';

const port = parentPort;
if (!port) throw new Error('part-worker.js runs as a worker thread only');

port.on('message', (request: PartWriteRequest) => {
  writePartFile(request.spec, request.rows, request.metadata).then(
    (bytes) => port.postMessage({ id: request.id, bytes } satisfies PartWriteResponse),
    (error: unknown) =>
      port.postMessage({
        id: request.id,
        error: { name: (error as Error).name ?? 'Error', message: (error as Error).message ?? String(error) },
      } satisfies PartWriteResponse),
  );
});
