/**
 * Where part files get encoded and written: in a worker thread when the compiled worker is there
 * (the CLI, from dist/), else on the calling thread (tests running the TypeScript sources). Both
 * run writePartFile; the worker keeps that CPU work off the thread that talks to the gateway.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { EmbedpipeError, OutputError } from '../errors.js';
import { type PartFileSpec, writePartFile } from './part-file.js';
import type { PartRows } from './rows.js';

export interface PartWriteRequest {
  readonly id: number;
  readonly spec: PartFileSpec;
  readonly rows: PartRows;
  readonly metadata: Record<string, string>;
}

export type PartWriteResponse =
  | { readonly id: number; readonly bytes: number }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string } };

export interface PartFileWriter {
  write(spec: PartFileSpec, rows: PartRows, metadata: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

const inThread: PartFileWriter = { write: writePartFile, close: async () => {} };

class WorkerPartFileWriter implements PartFileWriter {
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (bytes: number) => void; reject: (error: Error) => void }>();
  #nextId = 0;

  constructor(script: URL) {
    this.#worker = new Worker(script);
    this.#worker.unref();
    this.#worker.on('message', (response: PartWriteResponse) => {
      const waiting = this.#pending.get(response.id);
      if (!waiting) return;
      this.#pending.delete(response.id);
      if ('error' in response) {
        const ErrorClass = response.error.name === 'OutputError' ? OutputError : EmbedpipeError;
        waiting.reject(new ErrorClass(response.error.message));
      } else waiting.resolve(response.bytes);
    });
    this.#worker.on('error', (error) =>
      this.#failAll(new OutputError(`part writer crashed: ${error.message}`)),
    );
  }

  write(spec: PartFileSpec, rows: PartRows, metadata: Record<string, string>): Promise<number> {
    const id = this.#nextId++;
    return new Promise<number>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // The vectors move to the worker without a copy; the rows are not used here afterwards.
      const request: PartWriteRequest = { id, spec, rows, metadata };
      this.#worker.postMessage(request, [rows.embeddings.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
    this.#failAll(new OutputError('part writer closed'));
  }

  #failAll(error: Error): void {
    for (const waiting of this.#pending.values()) waiting.reject(error);
    this.#pending.clear();
  }
}

/** A worker-backed writer when `useWorker` and the compiled worker exist; else the in-thread one. */
export function createPartFileWriter(useWorker: boolean): PartFileWriter {
  const script = new URL('./part-worker.js', import.meta.url);
  if (!useWorker || !existsSync(fileURLToPath(script))) return inThread;
  return new WorkerPartFileWriter(script);
}
