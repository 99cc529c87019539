/**
 * Parquet encoding off the main thread. The wasm writer runs for tens of milliseconds per group of
 * batches; on the main thread that held back reading the answers of the requests in flight (their
 * median time on the wire grew from 54 to 81 ms at C=8, B=128 against a 50 ms gateway), so the
 * wire idled. The main thread now only lays the rows out as one Arrow IPC stream, which is moved to
 * the worker, not copied; the Parquet bytes come back the same way, with their footer's row count.
 *
 * One worker, started on first use and unref'd while it has nothing to do, so it never keeps the
 * process alive. Run from the TypeScript sources (the unit tests) there is no compiled worker to
 * start: the same two calls run in-thread.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { OutputError } from '../errors.js';
import { type EncodedParquet, encodeParquetIpc, type ParquetCompression, partIpc } from './parquet.js';
import type { PartRows } from './rows.js';

/** What the main thread posts to the worker. */
export interface EncodeRequest {
  readonly id: number;
  readonly ipc: Uint8Array;
  readonly metadata: Record<string, string>;
  readonly compression: ParquetCompression;
}

/** What the worker answers. */
export type EncodeReply =
  | { readonly id: number; readonly bytes: Uint8Array; readonly rows: number }
  | { readonly id: number; readonly error: string };

interface Waiting {
  resolve(encoded: EncodedParquet): void;
  reject(error: Error): void;
}

export class ParquetThread {
  readonly #workerUrl: URL | undefined;
  readonly #waiting = new Map<number, Waiting>();
  #worker: Worker | undefined;
  #nextId = 0;

  /** `workerUrl`: the compiled worker entry; without one, encoding runs on the calling thread. */
  constructor(workerUrl: URL | undefined) {
    this.#workerUrl = workerUrl;
  }

  async encode(
    rows: PartRows,
    metadata: Record<string, string>,
    compression: ParquetCompression,
  ): Promise<EncodedParquet> {
    const ipc = partIpc(rows, metadata);
    if (!this.#workerUrl) return encodeParquetIpc(ipc, metadata, compression);
    const worker = this.#started(this.#workerUrl);
    // Only a buffer the view covers whole can be moved without taking its neighbours along.
    const movable = ipc.byteOffset === 0 && ipc.byteLength === ipc.buffer.byteLength ? ipc : ipc.slice();
    const id = this.#nextId++;
    const encoded = new Promise<EncodedParquet>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
    });
    if (this.#waiting.size === 1) worker.ref();
    const request: EncodeRequest = { id, ipc: movable, metadata, compression };
    worker.postMessage(request, [movable.buffer as ArrayBuffer]);
    return encoded;
  }

  /** Stops the worker (tests; the CLI just exits). Encodings waiting are refused. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#refuseAll(new OutputError('the Parquet encoding thread was closed'));
    await worker?.terminate();
  }

  #started(url: URL): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(url);
    worker.unref();
    worker.on('message', (reply: EncodeReply) => this.#answer(reply));
    worker.on('error', (error) => this.#failed(worker, error));
    worker.on('exit', (code) =>
      this.#failed(worker, new Error(`the Parquet encoding thread exited with code ${code}`)),
    );
    this.#worker = worker;
    return worker;
  }

  #answer(reply: EncodeReply): void {
    const waiting = this.#waiting.get(reply.id);
    if (!waiting) return;
    this.#waiting.delete(reply.id);
    if (this.#waiting.size === 0) this.#worker?.unref();
    if ('error' in reply) waiting.reject(new OutputError(`Parquet encoding failed: ${reply.error}`));
    else waiting.resolve({ bytes: reply.bytes, rows: reply.rows });
  }

  /** A dead worker fails what it held; the next encode starts a new one. */
  #failed(worker: Worker, error: Error): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    this.#refuseAll(new OutputError(`the Parquet encoding thread failed: ${error.message}`));
  }

  #refuseAll(error: OutputError): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const { reject } of waiting) reject(error);
  }
}

/** The compiled worker beside this module, when there is one (not when run from the sources). */
export function compiledWorker(): URL | undefined {
  const url = new URL('./parquet-worker.js', import.meta.url);
  return import.meta.url.endsWith('.js') && existsSync(fileURLToPath(url)) ? url : undefined;
}

/** The process's encoding thread. */
export const parquetThread = new ParquetThread(compiledWorker());
